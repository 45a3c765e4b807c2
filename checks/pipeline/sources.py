"""Where a check's pages come from (the plan stage's first half): each
target's kind plans its source.

A source turns a target into page jobs when the check is planned. Scrape
targets list their URLs, crawls their start page and sitemaps, searches the
results their provider found: each kind's own class (checks.targets), looked
up by the target's type, not a branch in the runner. A target that cannot
run (a type no kind is registered for, or a kind not available here, such as
a search with no provider configured) is recorded in targetResults as
skipped, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from checks import shared_clock
from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check
from checks.pipeline.outcome import CheckAbandoned
from monitors.models import Target


class Source(Protocol):
    """Page jobs of one target, and what targetResults says about it."""

    def jobs(self) -> list[PageJob]: ...

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        """Save what the source needs beyond its batches (in the transaction
        that writes them)."""

    def target_result(self) -> dict[str, Any]: ...


class SkippedTarget:
    """A target checks cannot run: no kind is registered for its type, or its
    kind is not available here (no search provider configured). No pages, a
    stated reason."""

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
    target: Target,
    stored: Mapping[str, Any],
    resolver: Resolver | None = None,
    alive: Callable[[], object] = lambda: None,
) -> Source:
    kind = target.kind
    if kind is None:
        return SkippedTarget(target)
    reason = kind.unavailable()
    if reason:
        return SkippedTarget(target, reason)
    source: Source = kind.plan(target, stored, resolver, alive)
    return source


def plan(
    check: Check, targets: Sequence[Target], resolver: Resolver | None = None
) -> list[tuple[Source, list[PageJob]]]:
    """Each target's source and its first page jobs."""
    stored = {r.get("targetId"): r for r in check.target_results or []}

    def alive() -> None:
        """Planning that waits (a crawl's sitemaps, paced or slow) says the
        check is alive, as a running batch does, or stops when it is no
        longer running."""
        if not check.heartbeat(shared_clock.now()):
            raise CheckAbandoned

    planned = []
    for target in targets:
        source = source_for(target, stored.get(str(target.id), {}), resolver, alive)
        planned.append((source, source.jobs()))
    return planned
