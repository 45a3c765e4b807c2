"""Scrape targets: a list of pages, every one fetched on every check."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from monitors.models import Target
from monitors.target_kinds import TargetKind


class ScrapeKind(TargetKind):
    name = "scrape"
    label = "Pages"

    def page_budget(self, target: Target) -> int:
        return len(target.urls)

    def represent(self, target: Target) -> dict[str, Any]:
        return {"urls": target.urls, "scrapeOptions": target.scrape_options}

    def plan(
        self, target: Target, stored: Mapping[str, Any], resolver: Resolver | None
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
