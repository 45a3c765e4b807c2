"""The judge stage: compared pages -> the model's part added to them.

Three judges run, in this order, on the pages a batch hands over: a
search's (checks.search.stage.SearchStage: each result's status against the
goal), the monitor's change rules (RulesJudge, checks.content.change_rules)
and the model's (checks.ai.stage.Enricher: JSON extraction, summaries, the
goal judge on changed pages). The search's goes first: it settles each
result's status (never "changed"), so the later ones leave search results
alone. The rules decide without any model which changed pages' changes
matter: one they set aside is recorded as not meaningful, with their reason,
as a judge's "not meaningful" is (metadata.judgedBy "rules" says who
decided), and the Enricher does not ask the model about it.

A judge prepares its work synchronously (it may read the database), then
awaits it on the batch's event loop, so fetches go on meanwhile; the batch
heart-beats while it waits. What their calls to the model used is taken
by take_used(), for the batch to record (checks.models.AIUse), also when a
wait ends early: answers already received were used all the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from checks.ai.client import Use
from checks.content import set_aside_reason
from checks.models import PageResult
from checks.pipeline.outcome import RULES_JUDGED, Item, Outcome

logger = logging.getLogger(__name__)


class Judge(Protocol):
    """checks.ai.stage.Enricher and checks.search.stage.SearchStage."""

    def prepare(self, items: Sequence[Item]) -> Sequence[Any]: ...

    async def enrich(self, work: Any) -> None: ...

    async def aclose(self) -> None: ...

    def take_used(self) -> dict[str, Use]: ...


def judge(
    loop: asyncio.Runner,
    judges: Sequence[Judge],
    items: Sequence[Item],
    *,
    heartbeat: Callable[[], None],
    every: float,
) -> None:
    """Each judge's work on the recorded pages among `items`, one judge after
    the other; `heartbeat` is called every `every` seconds while one waits."""
    recorded = [item for item in items if item.job.record]
    for one in judges:
        work = one.prepare(recorded)
        if work:
            _wait(loop, one.enrich(work), heartbeat, every)


class RulesJudge:
    """The monitor's change rules, as a judge that asks no model: it decides
    in prepare() and leaves nothing to await. It runs after a search's judge
    (which settles search results, never "changed") and before the model's,
    which then leaves the pages it set aside alone."""

    def prepare(self, items: Sequence[Item]) -> Sequence[Any]:
        apply_change_rules(items)
        return []

    async def enrich(self, work: Any) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def take_used(self) -> dict[str, Use]:
        return {}


def apply_change_rules(items: Sequence[Item]) -> None:
    """Each changed page's change against its monitor's change rules; the
    texts compare kept for them are let go here. A change whose baseline
    text could not be read, or that the rules fail to decide (logged), goes
    through: a rule never loses a change by failing."""
    for job, outcome, _ in items:
        texts, outcome.compared = outcome.compared, None
        rules = job.change_rules
        if (
            rules is None
            or outcome.status != PageResult.Status.CHANGED
            or outcome.baseline_unread
        ):
            continue
        diff_text = (outcome.diff or {}).get("text") or ""
        try:
            reason = set_aside_reason(rules, diff_text, texts)
        except Exception:
            logger.exception("change rules failed on %s; change let through", job.url)
            continue
        if reason is not None:
            set_aside(outcome, reason)


def set_aside(outcome: Outcome, reason: str) -> None:
    """The change as not meaningful, in the judge's shape (Firecrawl's
    judgment), decided by the rules: certain, and free."""
    outcome.judged.judgment = {
        "meaningful": False,
        "confidence": "high",
        "reason": reason,
        "meaningfulChanges": [],
    }
    outcome.judged.verdict = PageResult.Verdict.NOISE
    outcome.metadata["judgedBy"] = RULES_JUDGED


def take_used(judges: Sequence[Judge]) -> dict[str, Use]:
    """What the judges' calls to the model used since the last time, added
    up by kind of call (a search's and the Enricher's may share a kind)."""
    used: dict[str, Use] = {}
    for one in judges:
        for kind, use in one.take_used().items():
            used.setdefault(kind, Use()).add(use)
    return used


async def _spawn(coroutine: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(coroutine)


def _wait(
    loop: asyncio.Runner, coroutine: Any, heartbeat: Callable[[], None], every: float
) -> None:
    task = loop.run(_spawn(coroutine))
    try:
        while not task.done():
            loop.run(asyncio.wait({task}, timeout=every))
            if not task.done():
                heartbeat()
    finally:
        if not task.done():
            task.cancel()
            loop.run(asyncio.wait({task}))
    task.result()
