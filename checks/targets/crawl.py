"""Crawl targets: a whole site from its start page and sitemaps; the crawl's
own code is checks.crawl (scope, discovery, frontier)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from rest_framework import serializers

from checks.crawl import frontier, waiting
from checks.crawl.frontier import Frontier
from checks.crawl.source import CrawlSource
from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check, Crawl
from checks.pipeline.record import record_many
from checks.targets.options import (
    CrawlOptionsSerializer,
    ScrapeOptionsSerializer,
    StrictMixin,
    StrictUUIDField,
    UrlField,
)
from checks.targets.scrape import PAGE_FIELDS
from monitors import rules
from monitors.models import Target
from monitors.target_kinds import FormField, TargetKind
from monitors.url_rule import short_url


class CrawlTargetSerializer(StrictMixin, serializers.Serializer):
    id = StrictUUIDField(required=False, allow_null=True)
    type = serializers.ChoiceField(choices=["crawl"])
    url = UrlField()
    crawlOptions = CrawlOptionsSerializer(required=False, allow_null=True)
    scrapeOptions = ScrapeOptionsSerializer(required=False, allow_null=True)


class CrawlKind(TargetKind):
    name = "crawl"
    label = "Website crawl"
    finds_pages = True
    watched_keys = ("url",)
    serializer = CrawlTargetSerializer
    form_fields = (
        FormField(
            "url", "Start address",
            "We follow links from here and compare every page we find.",
            path=("url",), widget="url", always=True,
            attrs={"placeholder": "https://"},
        ),
        FormField(
            "limit", "Most pages per check", "Empty means up to 10,000.",
            path=("crawlOptions", "limit"), shape="number", widget="number",
            row="size",
            attrs={"min": rules.CRAWL_LIMIT_MIN, "max": rules.CRAWL_LIMIT_MAX},
        ),
        FormField(
            "depth", "Link depth",
            "How many clicks away from the start page; empty means no limit.",
            path=("crawlOptions", "maxDiscoveryDepth"), shape="number",
            widget="number", row="size",
            attrs={"min": 0, "max": rules.CRAWL_DEPTH_MAX},
        ),
        FormField(
            "include_paths", "Only paths matching",
            "Patterns, one per line: ^/blog/ means addresses whose path starts "
            "with /blog/.",
            path=("crawlOptions", "includePaths"), shape="lines",
            widget="textarea", row="paths", attrs={"rows": 2},
        ),
        FormField(
            "exclude_paths", "Skip paths matching", "Patterns, one per line, as above.",
            path=("crawlOptions", "excludePaths"), shape="lines",
            widget="textarea", row="paths", attrs={"rows": 2},
        ),
        *PAGE_FIELDS,
    )  # fmt: skip
    kept_objects = ("crawlOptions", "scrapeOptions")
    advanced_label = "Advanced page options"
    summary_template = "monitors/targets/crawl.html"
    check_template = "checks/targets/crawl.html"

    def describe(self, target: Target) -> str:
        return f"{self.label} from {short_url(target.url, 80)}"

    def summary_items(self, target: Target) -> list[str]:
        return [f"{short_url(target.url, 40)} (whole site)"]

    def check_result(self, check: Check, result: dict[str, Any]) -> dict[str, Any]:
        """With `foundThere`: the pages found that are there, not a link to
        a page that answered gone; and `reasonShown`: whether the check's
        error says why the crawl is incomplete already (a crawl that failed,
        see failure), so the check page says it once."""
        gone = check.pages.linked_but_gone().get(str(result.get("targetId")), 0)
        found = int(result.get("pagesFound") or 0)
        reason = str(result.get("truncatedReason") or "")
        shown = bool(reason) and reason in (check.error or "")
        return result | {"foundThere": max(found - gone, 0), "reasonShown": shown}

    def failure(self, result: Mapping[str, Any]) -> str:
        """Why a crawl checked no page at all (the site down, robots.txt
        keeping it out, no sitemap for a sitemap-only crawl): the check
        failed, in the crawl's own words, rather than completed with
        nothing to show."""
        if result.get("pagesFound") or not result.get("truncated"):
            return ""
        return str(result.get("truncatedReason") or "")

    def addresses(self, target: Target) -> list[str]:
        return [target.url]

    def ignores_robots(self, target: Target) -> bool:
        options = target.crawl_options or {}
        agent = options.get("robotsUserAgent")
        return options.get("ignoreRobotsTxt") is True or (
            isinstance(agent, str) and bool(agent.strip())
        )

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
        self,
        target: Target,
        stored: Mapping[str, Any],
        resolver: Resolver | None,
        alive: Callable[[], object],
    ) -> CrawlSource:
        return CrawlSource(target, stored, resolver, alive)

    def batch_group(self, target: Target) -> object:
        # Its pace and the links its pages bring belong to its own batches.
        return target.id

    def pace(self, check_id: uuid.UUID, target: Target) -> tuple[int | None, float]:
        crawl = Crawl.objects.filter(check_run_id=check_id, target_id=target.id)
        row = crawl.only("start_url", "robots").first()
        if row is None:
            return None, 0.0
        delay = frontier.scope_of(target, row).delay()
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
        # Every crawl batch: a page whose links are not followed (a sitemap's,
        # another site's) may still redirect (Frontier.redirected).
        return Frontier(check)

    def held_back(self, check_id: uuid.UUID) -> list[Any]:
        return waiting.admit_waiting(check_id)

    def finish(self, check_id: uuid.UUID) -> None:
        frontier.close(check_id, record_many)
