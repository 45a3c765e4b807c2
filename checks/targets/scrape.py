"""Scrape targets: a list of pages, every one fetched on every check."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from rest_framework import serializers

from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from checks.targets.options import (
    ScrapeOptionsSerializer,
    StrictMixin,
    StrictUUIDField,
    UrlField,
)
from monitors import rules
from monitors.models import Target
from monitors.target_kinds import FormField, TargetKind
from monitors.url_rule import short_url

# The options of fetching a page, which scrape and crawl targets share; the
# dashboard shows these few and keeps the others (set through the API).
PAGE_FIELDS = (
    FormField(
        "screenshot", "Take screenshots and compare how the pages look",
        "Opens the pages in a real browser and shows, next to the text, what "
        "looks different from the last check.",
        path=("scrapeOptions", "formats"), shape="format", format="screenshot",
        widget="checkbox", initial=False,
    ),
    FormField(
        "only_main_content", "Only the main content (skip menus, headers and footers)",
        path=("scrapeOptions", "onlyMainContent"), shape="check", widget="checkbox",
        initial=True, advanced=True,
    ),
    FormField(
        "mobile", "Load pages as a phone would",
        "Opens the pages in a real browser with a phone's screen.",
        path=("scrapeOptions", "mobile"), shape="check", widget="checkbox",
        initial=False, advanced=True,
    ),
    FormField(
        "include_tags", "Only these HTML tags or selectors",
        "Separated by commas, e.g. article, .price",
        path=("scrapeOptions", "includeTags"), shape="items", joiner=", ",
        advanced=True, row="tags",
    ),
    FormField(
        "exclude_tags", "Leave out these tags or selectors",
        "Separated by commas, e.g. nav, .cookie-banner",
        path=("scrapeOptions", "excludeTags"), shape="items", joiner=", ",
        advanced=True, row="tags",
    ),
    FormField(
        "headers", "Request headers", "One per line, as Name: value.",
        path=("scrapeOptions", "headers"), shape="pairs", widget="textarea",
        advanced=True, attrs={"rows": 2, "placeholder": "Accept-Language: de"},
    ),
    FormField(
        "timeout", "Give up after (milliseconds)",
        "1,000 (one second) to 300,000 (five minutes).",
        path=("scrapeOptions", "timeout"), shape="number", widget="number",
        advanced=True, row="time",
        attrs={"min": rules.TIMEOUT_MIN, "max": rules.TIMEOUT_MAX, "step": 1000},
    ),
    FormField(
        "wait_for", "Wait before reading (milliseconds)",
        "For pages that load slowly; up to 60,000 (one minute). Opens the pages "
        "in a real browser, which waits this long before reading them.",
        path=("scrapeOptions", "waitFor"), shape="number", widget="number",
        advanced=True, row="time",
        attrs={"min": 0, "max": rules.WAIT_FOR_MAX, "step": 500},
    ),
)  # fmt: skip


class ScrapeTargetSerializer(StrictMixin, serializers.Serializer):
    id = StrictUUIDField(required=False, allow_null=True)
    type = serializers.ChoiceField(choices=["scrape"])
    urls = serializers.ListField(
        child=UrlField(), min_length=1, max_length=rules.URLS_PER_TARGET_MAX
    )
    scrapeOptions = ScrapeOptionsSerializer(required=False, allow_null=True)

    def validate_urls(self, urls: list[str]) -> list[str]:
        return list(dict.fromkeys(urls))


class ScrapeKind(TargetKind):
    name = "scrape"
    label = "Pages"
    serializer = ScrapeTargetSerializer
    form_fields = (
        FormField(
            "urls", "Page addresses",
            "One address per line. Every page is fetched on every check.",
            path=("urls",), shape="lines", widget="textarea", always=True,
            attrs={
                "rows": 3,
                "placeholder": "https://example.com/pricing\nhttps://example.com/terms",
            },
        ),
        *PAGE_FIELDS,
    )  # fmt: skip
    kept_objects = ("scrapeOptions",)
    advanced_label = "Advanced page options"
    watched_keys = ("urls",)
    summary_template = "monitors/targets/scrape.html"

    def describe(self, target: Target) -> str:
        count = len(target.urls)
        return f"{count} page{'' if count == 1 else 's'}"

    def summary_items(self, target: Target) -> list[str]:
        return [short_url(url, 40) for url in target.urls]

    def addresses(self, target: Target) -> list[str]:
        return list(target.urls or [])

    def for_pages(
        self, urls: list[str], scrape_options: Mapping[str, Any]
    ) -> dict[str, Any]:
        shape: dict[str, Any] = {"type": self.name, "urls": list(urls)}
        if scrape_options:
            shape["scrapeOptions"] = dict(scrape_options)
        return shape

    def page_budget(self, target: Target) -> int:
        return len(target.urls)

    def represent(self, target: Target) -> dict[str, Any]:
        return {"urls": target.urls, "scrapeOptions": target.scrape_options}

    def plan(
        self,
        target: Target,
        stored: Mapping[str, Any],
        resolver: Resolver | None,
        alive: Callable[[], object],
    ) -> ScrapeSource:
        return ScrapeSource(target, stored)


class ScrapeSource:
    """A scrape target's list of URLs, in order.

    Scrape ids are kept in targetResults.expectedJobs, so a check planned
    again (a taken-over check) reuses them and its pages stay consistent.
    """

    def __init__(self, target: Target, stored: Mapping[str, Any]) -> None:
        self.target = target
        ids = stored.get("expectedJobs") or []
        if len(ids) != len(target.urls):
            ids = [str(uuid.uuid4()) for _ in target.urls]
        self.scrape_ids: list[str] = ids

    def jobs(self) -> list[PageJob]:
        target = self.target
        credits = target.credits_per_page()
        options = target.scrape_options or {}
        return [
            PageJob(target.id, url, options, credits, uuid.UUID(scrape_id))
            for url, scrape_id in zip(target.urls, self.scrape_ids, strict=True)
        ]

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        return None

    def target_result(self) -> dict[str, Any]:
        return {
            "targetId": str(self.target.id),
            "type": self.target.type,
            "expectedJobs": self.scrape_ids,
        }
