"""Search targets: the web's results for the monitor's goal; the search's own
code is checks.search (providers, gather, stage, report)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from checks.search import providers, report
from checks.search.gather import CREDITS_PER_TEN_RESULTS, search
from checks.search.source import SearchSource
from checks.search.stage import SearchStage
from monitors import rules
from monitors.models import Target
from monitors.search_provider import not_run_reason
from monitors.target_kinds import TargetKind


class SearchKind(TargetKind):
    name = "search"
    label = "Web search"

    def estimated_credits(self, target: Target, *, judging: bool) -> int:
        """Its search (per ten results of every query) and, when judging,
        one credit per result judged."""
        results = target.max_results or rules.MAX_RESULTS_DEFAULT
        tens = math.ceil(results * len(target.queries) / 10)
        return tens * CREDITS_PER_TEN_RESULTS + (results if judging else 0)

    def unavailable(self) -> str:
        return not_run_reason()

    def represent(self, target: Target) -> dict[str, Any]:
        shape: dict[str, Any] = {
            "queries": target.queries,
            "searchWindow": target.search_window,
            "maxResults": target.max_results,
        }
        if target.include_domains:
            shape["includeDomains"] = target.include_domains
        if target.exclude_domains:
            shape["excludeDomains"] = target.exclude_domains
        return shape

    def plan(
        self, target: Target, stored: Mapping[str, Any], resolver: Resolver | None
    ) -> SearchSource:
        provider = providers.configured(resolver)
        if provider is None:  # checks.sources asks unavailable() first
            raise RuntimeError("no search provider is configured")
        gathered = search(provider, target, timezone.now())
        return SearchSource(target, provider.name, provider.address, gathered)

    def for_batch(
        self,
        check: Check,
        jobs: Sequence[PageJob],
        resolver: Resolver | None,
        now: datetime,
    ) -> SearchStage | None:
        stage = SearchStage(check, jobs, resolver=resolver, now=now)
        return stage if stage.runs else None

    def finish(self, check_id: uuid.UUID) -> None:
        report.close(check_id)
