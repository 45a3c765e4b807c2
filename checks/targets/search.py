"""Search targets: the web's results for the monitor's goal; the search's own
code is checks.search (providers, gather, stage, report)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from checks.search import providers, report
from checks.search.gather import CREDITS_PER_TEN_RESULTS, search
from checks.search.source import SearchSource
from checks.search.stage import SearchStage
from checks.targets.options import (
    StrictCharField,
    StrictIntegerField,
    StrictMixin,
    StrictUUIDField,
)
from monitors import rules
from monitors.models import Target
from monitors.search_provider import not_run_reason
from monitors.target_kinds import FormField, TargetKind


class SearchTargetSerializer(StrictMixin, serializers.Serializer):
    # Keys Firecrawl once documented and now drops silently; so do we.
    allow_extra = ("depth", "alertMode", "recheckAfter", "scrapeOptions")

    id = StrictUUIDField(required=False, allow_null=True)
    type = serializers.ChoiceField(choices=["search"])
    queries = serializers.ListField(
        child=StrictCharField(max_length=rules.QUERY_MAX),
        min_length=1,
        max_length=rules.QUERIES_MAX,
        error_messages={"min_length": "Give at least one search query."},
    )
    searchWindow = serializers.ChoiceField(
        choices=rules.SEARCH_WINDOWS, default=rules.SEARCH_WINDOW_DEFAULT
    )
    maxResults = StrictIntegerField(
        min_value=rules.MAX_RESULTS_MIN,
        max_value=rules.MAX_RESULTS_MAX,
        default=rules.MAX_RESULTS_DEFAULT,
    )
    includeDomains = serializers.ListField(
        child=StrictCharField(max_length=rules.DOMAIN_MAX),
        max_length=rules.DOMAINS_MAX,
        required=False,
    )
    excludeDomains = serializers.ListField(
        child=StrictCharField(max_length=rules.DOMAIN_MAX),
        max_length=rules.DOMAINS_MAX,
        required=False,
    )

    def _domains(self, value: list[str]) -> list[str]:
        cleaned = [d.strip().lower().rstrip(".") for d in value]
        errors = {i: [e] for i, d in enumerate(cleaned) if (e := rules.domain_error(d))}
        if errors:
            raise ValidationError(errors)
        return list(dict.fromkeys(rules.ascii_domain(d) for d in cleaned))

    def validate_queries(self, value: list[str]) -> list[str]:
        errors = {i: [e] for i, q in enumerate(value) if (e := rules.query_error(q))}
        if errors:
            raise ValidationError(errors)
        # Every query is a search on every check, billed by its results: the
        # same one twice costs twice and finds nothing more.
        return list(dict.fromkeys(value))

    def validate_includeDomains(self, value: list[str]) -> list[str]:  # noqa: N802
        return self._domains(value)

    def validate_excludeDomains(self, value: list[str]) -> list[str]:  # noqa: N802
        return self._domains(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for legacy in SearchTargetSerializer.allow_extra:
            attrs.pop(legacy, None)
        if attrs.get("includeDomains") and attrs.get("excludeDomains"):
            rule = rules.DOMAINS_EXCLUSIVE
            raise ValidationError({"excludeDomains": [rule.api]}, code=rule.code)
        return attrs


class SearchKind(TargetKind):
    name = "search"
    label = "Web search"
    serializer = SearchTargetSerializer
    needs_goal = True
    finds_results = True
    watched_keys = ("queries",)
    form_fields = (
        FormField(
            "queries", "Search for", "One search per line, up to 12.",
            path=("queries",), shape="lines", widget="textarea", always=True,
            attrs={"rows": 3},
        ),
        FormField(
            "search_window", "Published within", path=("searchWindow",),
            shape="choice", widget="select", initial=rules.SEARCH_WINDOW_DEFAULT,
            always=True, row="when",
            choices=tuple(rules.SEARCH_WINDOW_LABELS.items()),
        ),
        FormField(
            "max_results", "Most results", "Across all searches, 1 to 50.",
            path=("maxResults",), shape="number", widget="number",
            initial=rules.MAX_RESULTS_DEFAULT, row="when",
            attrs={"min": rules.MAX_RESULTS_MIN, "max": rules.MAX_RESULTS_MAX},
        ),
        FormField(
            "include_domains", "Only these sites",
            "Host names such as example.com, one per line.",
            path=("includeDomains",), shape="items", widget="textarea",
            row="sites", attrs={"rows": 2}, show_item=rules.unicode_domain,
        ),
        FormField(
            "exclude_domains", "Never these sites", "Host names, one per line.",
            path=("excludeDomains",), shape="items", widget="textarea",
            row="sites", attrs={"rows": 2}, show_item=rules.unicode_domain,
        ),
    )  # fmt: skip
    summary_template = "monitors/targets/search.html"
    check_template = "checks/targets/search.html"

    def describe(self, target: Target) -> str:
        queries = ", ".join(f"“{query}”" for query in target.queries)
        return f"{self.label} for {queries}"

    def watched(self, target: Target) -> list[str]:
        return list(target.queries)

    def summary_items(self, target: Target) -> list[str]:
        return [f"search “{query}”" for query in target.queries]

    def failure(self, result: Mapping[str, Any]) -> str:
        """The web search's reason when it failed (some query or all of
        them); a search that ran and judged nothing is degraded, not failed."""
        if result.get("searchCompleted") is not False:
            return ""
        return str(result.get("degradedReason") or "The web search failed.")

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
        self,
        target: Target,
        stored: Mapping[str, Any],
        resolver: Resolver | None,
        alive: Callable[[], object],
    ) -> SearchSource:
        provider = providers.configured(resolver)
        if provider is None:  # checks.pipeline.sources asks unavailable() first
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
