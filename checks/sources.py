"""Where a check's pages come from: one Source class per kind of target.

A source turns a target into page jobs when the check is planned. Scrape
targets list their URLs, crawls their start page and sitemaps, searches the
results their provider found: each a class registered in SOURCES, not a
branch in the runner. A target that cannot run (a type without a source, or
no search provider configured) is recorded in targetResults as skipped, with
the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from checks.crawl.source import CrawlSource
from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from checks.search.source import SearchSource
from monitors.models import Target


class Source(Protocol):
    """Page jobs of one target, and what targetResults says about it."""

    @staticmethod
    def unavailable() -> str:
        """Why targets of this kind cannot run here ("" when they can)."""

    def jobs(self) -> list[PageJob]: ...

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        """Save what the source needs beyond its batches (in the transaction
        that writes them)."""

    def target_result(self) -> dict[str, Any]: ...


class ScrapeSource:
    """A scrape target: its list of URLs, in order.

    Scrape ids are kept in targetResults.expectedJobs, so a check planned
    again (a taken-over check) reuses them and its pages stay consistent.
    """

    def __init__(
        self, target: Target, stored: Mapping[str, Any], resolver: Resolver | None
    ) -> None:
        self.target = target
        ids = stored.get("expectedJobs") or []
        if len(ids) != len(target.urls):
            ids = [str(uuid.uuid4()) for _ in target.urls]
        self.scrape_ids: list[str] = ids

    @staticmethod
    def unavailable() -> str:
        return ""

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


SOURCES: dict[str, type[ScrapeSource] | type[CrawlSource] | type[SearchSource]] = {
    Target.Type.SCRAPE: ScrapeSource,
    Target.Type.CRAWL: CrawlSource,
    Target.Type.SEARCH: SearchSource,
}


class SkippedTarget:
    """A target checks cannot run: its type has no source, or its source is
    not available here (no search provider configured). No pages, a stated
    reason."""

    UNSUPPORTED: ClassVar[str] = (
        "{kind} targets are not supported yet; this target was skipped."
    )

    def __init__(self, target: Target, reason: str = "") -> None:
        self.target = target
        self.reason = reason or self.UNSUPPORTED.format(kind=target.type.capitalize())

    def jobs(self) -> list[PageJob]:
        return []

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        return None

    def target_result(self) -> dict[str, Any]:
        return {
            "targetId": str(self.target.id),
            "type": self.target.type,
            "skipped": True,
            "reason": self.reason,
        }


def source_for(
    target: Target, stored: Mapping[str, Any], resolver: Resolver | None = None
) -> Source:
    kind = SOURCES.get(target.type)
    if kind is None:
        return SkippedTarget(target)
    reason = kind.unavailable()
    if reason:
        return SkippedTarget(target, reason)
    return kind(target, stored, resolver)


def plan(
    check: Check, targets: Sequence[Target], resolver: Resolver | None = None
) -> list[tuple[Source, list[PageJob]]]:
    """Each target's source and its first page jobs."""
    stored = {r.get("targetId"): r for r in check.target_results or []}
    planned = []
    for target in targets:
        source = source_for(target, stored.get(str(target.id), {}), resolver)
        planned.append((source, source.jobs()))
    return planned
