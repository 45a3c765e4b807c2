"""The kinds of target, one class each, and what a batch asks of them.

    scrape  a list of pages, fetched one by one
    crawl   a whole site from its start page and sitemaps (checks.crawl)
    search  the web's results for a goal (checks.search)

The registry is built from the classes (monitors.target_kinds): adding a kind
is one module with one TargetKind subclass and one line in KIND_CLASSES. The
runner, the API, the dashboard and the models ask the registry and never
name a kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from checks.pipeline.outcome import Outcome
from checks.targets.crawl import CrawlKind
from checks.targets.scrape import ScrapeKind
from checks.targets.search import SearchKind
from monitors.target_kinds import TargetKind, all_kinds, kind_for, register

__all__ = ["KIND_CLASSES", "BatchParts", "TargetKind", "all_kinds", "kind_for"]

KIND_CLASSES: tuple[type[TargetKind], ...] = (ScrapeKind, CrawlKind, SearchKind)

for _cls in KIND_CLASSES:
    register(_cls)


class BatchParts:
    """What the kinds of a batch's targets do in it beyond fetching pages:
    decide some pages without a fetch, follow the links pages bring, judge
    what was fetched. Each part is its kind's; the runner and checks.pipeline
    ask for the role, never for a kind."""

    def __init__(
        self,
        check: Check,
        jobs: Sequence[PageJob],
        kinds: Sequence[TargetKind],
        *,
        resolver: Resolver | None,
        now: datetime,
    ) -> None:
        found = (kind.for_batch(check, jobs, resolver, now) for kind in kinds)
        self.parts = [part for part in found if part is not None]

    def decided(self, job: PageJob) -> Outcome | None:
        """The page's outcome when a part knows it without a fetch."""
        for part in self.parts:
            decide = getattr(part, "decided", None)
            outcome = decide(job) if decide is not None else None
            if outcome is not None:
                return outcome
        return None

    @property
    def links(self) -> Any:
        """The part that admits the links of fetched pages, if any."""
        return next((p for p in self.parts if hasattr(p, "admit")), None)

    @property
    def judge(self) -> Any:
        """The part that judges fetched pages on the batch's loop, if any."""
        return next((p for p in self.parts if hasattr(p, "enrich")), None)
