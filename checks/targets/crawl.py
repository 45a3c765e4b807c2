"""Crawl targets: a whole site from its start page and sitemaps; the crawl's
own code is checks.crawl (scope, discovery, frontier)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings

from checks.crawl import frontier
from checks.crawl.frontier import Frontier
from checks.crawl.source import CrawlSource
from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check, Crawl
from checks.recording import record_many
from monitors.models import Target
from monitors.target_kinds import TargetKind


class CrawlKind(TargetKind):
    name = "crawl"
    label = "Website crawl"

    def page_budget(self, target: Target) -> int:
        limit = int((target.crawl_options or {}).get("limit") or 10000)
        return min(limit, settings.CRAWL_MAX_PAGES)

    def represent(self, target: Target) -> dict[str, Any]:
        return {
            "url": target.url,
            "crawlOptions": target.crawl_options,
            "scrapeOptions": target.scrape_options,
        }

    def plan(
        self, target: Target, stored: Mapping[str, Any], resolver: Resolver | None
    ) -> CrawlSource:
        return CrawlSource(target, stored, resolver)

    def batch_group(self, target: Target) -> object:
        # Its pace and the links its pages bring belong to its own batches.
        return target.id

    def pace(self, check_id: uuid.UUID, target: Target) -> tuple[int | None, float]:
        crawl = Crawl.objects.filter(check_run_id=check_id, target_id=target.id)
        row = crawl.only("robots").first()
        if row is None:
            return None, 0.0
        delay = frontier.scope_of(target, row.robots).delay()
        cap = (target.crawl_options or {}).get("maxConcurrency")
        if delay > 0:
            return 1, delay
        if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
            return cap, 0.0
        return None, 0.0

    def for_batch(
        self,
        check: Check,
        jobs: Sequence[PageJob],
        resolver: Resolver | None,
        now: datetime,
    ) -> Frontier | None:
        return Frontier(check) if any(job.follow for job in jobs) else None

    def finish(self, check_id: uuid.UUID) -> None:
        frontier.close(check_id, record_many)
