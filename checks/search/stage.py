"""A search target's results within one batch: which need
their page fetched and judged, and what each one is.

    seen before and alerted            -> already_seen (same), not fetched
    judging off, or no model           -> alert (new) once per URL, "not
                                          judged", not fetched
    ignored under this goalVersion     -> ignored (same), not fetched
    otherwise (new, watching, could    -> fetched like any page, then judged
    not be judged, or a stale verdict)    against the goal:
        relevant, high/medium confidence  -> alert (new)
        relevant, low confidence          -> watching (same)
        not relevant                      -> ignored (same)
        the page or the judge failed      -> skipped (error), tried again
                                             when it turns up next

Each outcome carries the result's new SearchResultState (Outcome.search),
written by checks.pipeline.record in the transaction that records the page, so a
result alerts once whatever worker dies where. A search that failed has no
page (see checks.search.source). decided() is synchronous; prepare() may read the
database; enrich() runs on the batch's event loop (checks.pipeline.judge).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.utils import timezone

from checks.ai import allowance
from checks.ai.client import LLM, Use, llm_available
from checks.ai.judge import Verdict, not_judged
from checks.ai.relevance import judge_result
from checks.content import ExtractionError, markdown_of, strip_noise, unpack
from checks.errors import ErrorKind
from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check, PageResult
from checks.pipeline.outcome import Item, Judged, Outcome
from checks.search.models import SearchResultState, SearchRun
from checks.search.providers.base import published as parse_time
from checks.search.source import SEARCH_FAILED
from monitors.models import Target

logger = logging.getLogger(__name__)

Status = PageResult.Status
State = SearchResultState.Status

NOT_JUDGED_MESSAGE = "This result could not be judged against the goal: {reason}"
JUDGING_OFF_REASON = "judging is off for this monitor, so every new result is reported."
NO_MODEL_REASON = (
    "no AI model is configured (LLM_BASE_URL is empty), so every new result is "
    "reported."
)
HELD_REASON = "{why}, so every new result is reported."
CRASH_MESSAGE = "The result could not be judged because of an internal error."


def goal_version(target: Target, goal: str | None) -> str:
    """A search target's goalVersion: editing the goal or the queries makes
    the verdicts given under the previous one stale."""
    shape = {"goal": (goal or "").strip(), "queries": sorted(target.queries or [])}
    encoded = json.dumps(shape, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


class SearchStatus(StrEnum):
    """metadata.searchStatus of a search page."""

    ALERT = "alert"
    ALREADY_SEEN = "already_seen"
    WATCHING = "watching"
    IGNORED = "ignored"
    SKIPPED = "skipped"


PAGE_STATUS = {
    SearchStatus.ALERT: Status.NEW,
    SearchStatus.ALREADY_SEEN: Status.SAME,
    SearchStatus.WATCHING: Status.SAME,
    SearchStatus.IGNORED: Status.SAME,
    SearchStatus.SKIPPED: Status.ERROR,
}
STORED_STATUS = {
    SearchStatus.ALERT: State.ALERTED,
    SearchStatus.WATCHING: State.WATCHING,
    SearchStatus.IGNORED: State.IGNORED,
    SearchStatus.SKIPPED: State.SKIPPED,
}


@dataclass
class _Run:
    target: Target
    row: SearchRun
    goal_version: str
    results: dict[str, dict[str, Any]]


@dataclass
class Work:
    """A fetched result to judge."""

    job: PageJob
    outcome: Outcome
    result: dict[str, Any]
    state: SearchResultState | None
    run: _Run
    text: str | None = None


class SearchStage:
    """The search results among one batch's pages."""

    def __init__(
        self,
        check: Check,
        jobs: Sequence[PageJob],
        *,
        resolver: Resolver | None = None,
        now: datetime | None = None,
    ) -> None:
        self.monitor = check.monitor
        self.check_id: uuid.UUID = check.pk
        self.now = now or timezone.now()
        self.runs = self._runs(check, jobs)
        self.states = self._states(jobs)
        self.judging = self.monitor.judging and llm_available()
        # The team's allowance used up: no calls, as without a model.
        self.held = (
            allowance.used_up(self.monitor.team_id, timezone.now())
            if self.judging and self.runs
            else None
        )
        if self.held is not None:
            self.judging = False
        self._resolver = resolver
        self._llm: LLM | None = None

    def _runs(self, check: Check, jobs: Sequence[PageJob]) -> dict[uuid.UUID, _Run]:
        rows = list(
            SearchRun.objects.filter(
                check_run=check, target_id__in={job.target_id for job in jobs}
            )
        )
        if not rows:
            return {}
        # Only a search target has SearchRun rows: its kind's plan writes them.
        targets = {
            t.id: t
            for t in self.monitor.targets.filter(pk__in={row.target_id for row in rows})
        }
        goal = self.monitor.goal
        return {
            row.target_id: _Run(
                targets[row.target_id],
                row,
                goal_version(targets[row.target_id], goal),
                {result["url"]: result for result in row.results},
            )
            for row in rows
            if row.target_id in targets
        }

    def _states(
        self, jobs: Sequence[PageJob]
    ) -> dict[tuple[uuid.UUID, str], SearchResultState]:
        keys = {
            run.results[job.url]["key"]
            for job in jobs
            if (run := self.runs.get(job.target_id)) and job.url in run.results
        }
        if not keys:
            return {}
        rows = SearchResultState.objects.filter(
            monitor=self.monitor, target_id__in=set(self.runs), key__in=keys
        )
        return {(row.target_id, row.key): row for row in rows}

    # --- Without fetching ------------------------------------------------------

    def decided(self, job: PageJob) -> Outcome | None:
        """The outcome of a search page that needs no fetch; None for pages
        that are not search results, or that must be fetched and judged."""
        run = self.runs.get(job.target_id)
        if run is None:
            return None
        result = run.results.get(job.url)
        if result is None:
            # Only a batch planned by an older Pagewatch, which gave a failed
            # search a page at the provider's address, holds such a job: it
            # is recorded as that version would have, never fetched.
            return _failed_search(job, run.row)
        state = self.states.get((job.target_id, result["key"]))
        if state is not None and state.status == State.ALERTED:
            return self._outcome(job, run, result, state, SearchStatus.ALREADY_SEEN)
        if not self.judging:
            if state is not None and state.status != State.SKIPPED:
                return self._outcome(job, run, result, state, SearchStatus.ALREADY_SEEN)
            why = JUDGING_OFF_REASON if not self.monitor.judging else NO_MODEL_REASON
            if self.held is not None:
                why = HELD_REASON.format(why=self.held)
            return self._outcome(
                job, run, result, state, SearchStatus.ALERT, verdict=not_judged(why)
            )
        if (
            state is not None
            and state.status == State.IGNORED
            and state.goal_version == run.goal_version
        ):
            return self._outcome(job, run, result, state, SearchStatus.IGNORED)
        return None

    def _outcome(
        self,
        job: PageJob,
        run: _Run,
        result: dict[str, Any],
        state: SearchResultState | None,
        status: SearchStatus,
        *,
        verdict: Verdict | None = None,
        base: Outcome | None = None,
    ) -> Outcome:
        """The page of a search result (`base`: its fetched page)."""
        outcome = base or Outcome(Status.SAME, {"sourceURL": job.url})
        outcome.status = PAGE_STATUS[status]
        outcome.diff = None
        title = result.get("title") or outcome.metadata.get("title") or ""
        outcome.metadata |= {
            "creditsUsed": 0,  # billed flat (targetResults searchCredits, judgeCredits)
            "searchStatus": status.value,
            "title": title,
            "snippet": result.get("snippet") or "",
            "publishedAt": result.get("publishedAt"),
            "queries": list(result.get("queries") or []),
            "goalVersion": run.goal_version,
        }
        if verdict is not None:
            outcome.judged.judgment = verdict.judgment
            outcome.judged.verdict = _verdict(verdict)
            if verdict.partial:
                outcome.metadata["judgedInPart"] = True
        elif state is not None:
            outcome.judged.judgment = state.judgment  # the standing verdict's words
        outcome.search = self._remembered(run, result, state, status, verdict)
        return outcome

    def _remembered(
        self,
        run: _Run,
        result: dict[str, Any],
        state: SearchResultState | None,
        status: SearchStatus,
        verdict: Verdict | None,
    ) -> dict[str, Any]:
        """The result's SearchResultState after this check (see recording)."""
        alerted = status == SearchStatus.ALERT
        kept = status == SearchStatus.ALREADY_SEEN or (
            status == SearchStatus.IGNORED and verdict is None
        )
        stored = STORED_STATUS.get(status)
        if kept and state is not None:
            stored = State(state.status)
        return {
            "target_id": run.target.id,
            "key": result["key"],
            "url": result["url"],
            "title": (result.get("title") or "")[:500],
            "snippet": result.get("snippet") or "",
            "published_at": parse_time(result.get("publishedAt")),
            "queries": list(result.get("queries") or []),
            "status": stored,
            "goal_version": state.goal_version
            if kept and state is not None
            else run.goal_version,
            "judgment": verdict.judgment
            if verdict is not None
            else (state.judgment if state is not None else None),
            "first_seen_at": state.first_seen_at if state is not None else self.now,
            "last_seen_at": self.now,
            "alerted_at": self.now
            if alerted
            else (state.alerted_at if state is not None else None),
            "alert_check_id": self.check_id
            if alerted
            else (state.alert_check_id if state is not None else None),
        }

    # --- Fetched, then judged ------------------------------------------------------

    def prepare(self, items: Sequence[Item]) -> list[Work]:
        """The fetched search results of these pages, their text at hand."""
        work = []
        for job, outcome, _state in items:
            run = self.runs.get(job.target_id)
            if run is None or outcome.search is not None:
                continue  # not a search result, or decided without a fetch
            result = run.results.get(job.url)
            if result is None:
                continue
            state = self.states.get((job.target_id, result["key"]))
            work.append(Work(job, outcome, result, state, run, _text(job, outcome)))
        return work

    @property
    def llm(self) -> LLM:
        if self._llm is None:  # made on the loop that uses it
            self._llm = LLM(resolver=self._resolver)
        return self._llm

    async def enrich(self, work: Sequence[Work]) -> None:
        """Judge every fetched result, concurrently (the client bounds the
        calls in flight); never raises for one result's problem."""
        await asyncio.gather(*(self._guarded(item) for item in work))

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()

    def take_used(self) -> dict[str, Use]:
        return self._llm.take_used() if self._llm is not None else {}

    async def _guarded(self, work: Work) -> None:
        try:
            await self._judge(work)
        except Exception:
            logger.exception("Judging the search result %s crashed", work.job.url)
            self._skipped(work, ErrorKind.INTERNAL, CRASH_MESSAGE)

    async def _judge(self, work: Work) -> None:
        outcome = work.outcome
        if outcome.status == Status.ERROR:  # the page could not be fetched or read
            self._skipped(work, outcome.error_kind, outcome.error or "")
            return
        if work.text is None:
            verdict = not_judged("the page's text could not be read.")
        else:
            verdict = await judge_result(
                self.llm,
                goal=self.monitor.goal or "",
                title=work.result.get("title") or "",
                url=work.job.url,
                snippet=work.result.get("snippet") or "",
                published=parse_time(work.result.get("publishedAt")),
                text=work.text,
            )
        if not verdict.judged:
            reason = str(verdict.judgment.get("reason", "")).removeprefix(
                "Not judged: "
            )
            message = NOT_JUDGED_MESSAGE.format(reason=reason)
            self._skipped(work, ErrorKind.NOT_JUDGED, message)
            return
        self._outcome(
            work.job,
            work.run,
            work.result,
            work.state,
            _status_of(verdict),
            verdict=verdict,
            base=outcome,
        )

    def _skipped(self, work: Work, kind: str, message: str) -> None:
        """No verdict this time: an error page, tried again next time."""
        outcome = self._outcome(
            work.job, work.run, work.result, work.state, SearchStatus.SKIPPED,
            base=work.outcome,
        )  # fmt: skip
        outcome.error, outcome.error_kind = message, kind
        outcome.content = None
        outcome.judged = Judged()
        assert outcome.search is not None
        outcome.search["judgment"] = work.state.judgment if work.state else None


def _status_of(verdict: Verdict) -> SearchStatus:
    judgment = verdict.judgment
    if not judgment.get("meaningful"):
        return SearchStatus.IGNORED
    if judgment.get("confidence") == "low":
        return SearchStatus.WATCHING
    return SearchStatus.ALERT


def _verdict(verdict: Verdict) -> str:
    if not verdict.judged:
        return PageResult.Verdict.NOT_JUDGED
    meaningful = verdict.judgment.get("meaningful")
    return PageResult.Verdict.MEANINGFUL if meaningful else PageResult.Verdict.NOISE


def _failed_search(job: PageJob, row: SearchRun) -> Outcome:
    failure = row.failure or "the result was not found among the search's results."
    return Outcome(
        Status.ERROR,
        {"sourceURL": job.url, "creditsUsed": 0, "searchProvider": row.provider},
        error=SEARCH_FAILED.format(failure=failure),
        error_kind=ErrorKind.SEARCH_FAILED,
    )


def _text(job: PageJob, outcome: Outcome) -> str | None:
    """The fetched page's Markdown (noise lines out), None when it has none."""
    if outcome.status == Status.ERROR:
        return None
    try:
        if outcome.page_text is not None:
            source_format = outcome.page_text.source_format
            source = outcome.page_text.source
        elif outcome.snapshot is not None and outcome.snapshot[1]:
            source_format, source = outcome.snapshot[3], unpack(outcome.snapshot[1])
        else:
            return None
        return strip_noise(markdown_of(source_format, source), job.ignore_lines)
    except (ExtractionError, ValueError):
        return None
