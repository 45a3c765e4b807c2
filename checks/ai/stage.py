"""The model's part of a check, between deciding a page and recording it.

The judge stage's model (checks.pipeline.judge): for each page a batch
hands over, extracted and compared, in this order:

1. JSON extraction (formats ``json`` / changeTracking ``json``): the page's
   object, compared field by field with the baseline's; in JSON mode the
   page is ``changed`` only when a field is, in mixed mode when a field or the
   Markdown is. A page whose text is unchanged reuses the baseline's object:
   no model call, no false change; when what to extract was edited, its new
   object becomes the baseline, still without a change. No object -> the
   page is an ``error`` (the baseline is kept).
2. The ``summary`` format, reused the same way.
3. The goal judge, on ``changed`` pages of monitors with judgeEnabled and a
   goal, but those the monitor's change rules set aside (the judge stage
   decided them before): +1 credit when it gives a verdict; it fails open
   otherwise.

A team whose AI allowance for the month is used up (checks.ai.allowance)
gets no calls: as without a model, changes are reported not judged and
JSON extraction pages are errors, both saying why.

Calls run concurrently on the batch's event loop, beside its fetches, through
one LLM client (checks.ai.client). Nothing here touches the database but
prepare(), which reads the baselines' text a call needs, in one query.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from checks.ai import allowance
from checks.ai import extraction as extracting
from checks.ai.client import LLM, LLMError, Use, llm_available
from checks.ai.formats import Wants, wants
from checks.ai.judge import Verdict, judge, not_judged
from checks.content import (
    ExtractionError,
    field_diff,
    markdown_of,
    strip_noise,
    unpack,
)
from checks.errors import ErrorKind
from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import PageResult, PageState, Snapshot
from checks.pipeline.outcome import Item, Judged, Outcome
from monitors.models import Monitor

logger = logging.getLogger(__name__)

Status = PageResult.Status

NO_MODEL_MESSAGE = (
    "JSON extraction needs an AI model, and none is configured: set LLM_BASE_URL "
    "(and LLM_MODEL) to an OpenAI-compatible endpoint."
)
NO_RESULT_MESSAGE = "JSON extraction produced no result for this check."
NO_MODEL_REASON = "no AI model is configured (LLM_BASE_URL is empty)."
HELD_MESSAGE = "JSON extraction was not done: {why}."
HELD_SUMMARY = "No summary was made: {why}."
CRASH_MESSAGE = "The page could not be analysed because of an internal error."


@dataclass
class Page:
    job: PageJob
    outcome: Outcome
    state: PageState | None
    wants: Wants
    # The compared Markdown (noise removed), when known or loaded.
    text: str | None = None

    @property
    def previous(self) -> dict[str, Any]:
        return self.state.derived if self.state is not None else {}

    def reused(self, kind: str, key: str) -> tuple[bool, Any]:
        """(True, value) when the baseline's `kind` was made for `key` and the
        page's text is unchanged, so it still holds."""
        stored = self.previous.get(kind)
        outcome = self.outcome
        if not isinstance(stored, dict) or "value" not in stored:
            return False, None
        # A cached copy is the baseline's text too: what was extracted from it
        # holds only if it answered the same instructions.
        if stored.get("key") == key and (
            outcome.cache_hit or outcome.status == Status.SAME
        ):
            return True, stored["value"]
        return False, None


def _needs_calls(page: Page) -> bool:
    wanted = page.wants
    if wanted.extraction and not page.reused("json", wanted.extraction.key)[0]:
        return True
    return wanted.summary and not page.reused("summary", extracting.SUMMARY_KEY)[0]


class Enricher:
    """The model's work for one batch of one monitor's pages.

    prepare() (synchronous, may read the database) then `await enrich()` on
    the batch's event loop; aclose() on that loop at the end.
    """

    def __init__(self, monitor: Monitor, *, resolver: Resolver | None = None):
        self.monitor = monitor
        self._resolver = resolver
        self._llm: LLM | None = None
        # Why no call is made (the team's allowance is used up), asked once
        # per batch, before its first pages' calls.
        self.held: str | None = None
        self._allowance_asked = False

    @property
    def llm(self) -> LLM:
        if self._llm is None:  # made on the loop that uses it
            self._llm = LLM(resolver=self._resolver)
        return self._llm

    async def aclose(self) -> None:
        if self._llm is not None:
            await self._llm.aclose()

    def take_used(self) -> dict[str, Use]:
        return self._llm.take_used() if self._llm is not None else {}

    def _ask_allowance(self) -> None:
        if self._allowance_asked or not llm_available():
            return
        self._allowance_asked = True
        self.held = allowance.used_up(self.monitor.team_id, timezone.now())

    def prepare(self, items: Sequence[Item]) -> list[Page]:
        """The pages with model work to do, their text at hand."""
        pages = []
        for job, outcome, state in items:
            wanted = wants(job.options)
            judging = _judged_here(self.monitor, outcome)
            if not wanted.model_formats and not judging:
                continue
            if outcome.status in (Status.ERROR, Status.REMOVED):
                continue
            if outcome.is_still_gone:
                continue  # no text: the baseline's is of a page no longer there
            read = outcome.page_text
            text = read.markdown if read is not None else None
            pages.append(Page(job, outcome, state, wanted, text))
        self._load_texts([p for p in pages if p.text is None and _needs_calls(p)])
        if pages:
            self._ask_allowance()
        return pages

    def _load_texts(self, pages: list[Page]) -> None:
        baselines = [
            p.state.snapshot_id
            for p in pages
            if p.outcome.page_text is None and p.state is not None
        ]
        stored = Snapshot.packed(pk for pk in baselines if pk is not None)
        for page in pages:
            try:
                page.text = self._text(page, stored)
            except (ExtractionError, ValueError):
                page.text = None  # an unreadable copy: the call fails below

    @staticmethod
    def _text(page: Page, stored: dict[int, tuple[bytes, str]]) -> str | None:
        read = page.outcome.page_text
        if read is not None:
            source_format, source = read.source_format, read.source
        elif page.state is not None and page.state.snapshot_id in stored:
            data, source_format = stored[page.state.snapshot_id]
            source = unpack(data)
        else:
            return None
        return strip_noise(markdown_of(source_format, source), page.job.ignore_lines)

    async def enrich(self, pages: Sequence[Page]) -> None:
        """Every page's model work, concurrently (the client bounds how many
        calls are in flight); never raises for a page's problem."""
        await asyncio.gather(*(self._guarded(page) for page in pages))

    async def _guarded(self, page: Page) -> None:
        try:
            await self._enrich(page)
        except Exception:
            logger.exception("The model's work on %s crashed", page.job.url)
            _fail(page.outcome, ErrorKind.INTERNAL, CRASH_MESSAGE)

    async def _enrich(self, page: Page) -> None:
        outcome = page.outcome
        derived: dict[str, Any] = {}
        extracted = page.wants.extraction is None or await self._extract(page, derived)
        if not extracted:
            return
        if page.wants.summary:
            await self._summarize(page, derived)
        if page.wants.model_formats:
            outcome.judged.derived = derived
        if _judged_here(self.monitor, outcome):
            self._apply(outcome, await self._verdict(page))

    # --- 1. JSON extraction -------------------------------------------------------

    async def _extract(self, page: Page, derived: dict[str, Any]) -> bool:
        """False when the page became an error."""
        spec = page.wants.extraction
        assert spec is not None
        outcome = page.outcome
        previous = page.previous.get("json")
        before = previous.get("value") if isinstance(previous, dict) else None
        reused, current = page.reused("json", spec.key)
        if not reused:
            if not llm_available():
                _fail(outcome, ErrorKind.NO_MODEL, NO_MODEL_MESSAGE)
                return False
            if self.held is not None:
                _fail(outcome, ErrorKind.EXTRACTION, HELD_MESSAGE.format(why=self.held))
                return False
            try:
                if page.text is None:
                    raise LLMError("the page's text could not be read.")
                current = await extracting.extract(self.llm, spec, page.text)
            except LLMError as exc:
                _fail(
                    outcome, ErrorKind.EXTRACTION, f"{NO_RESULT_MESSAGE} {exc.message}"
                )
                return False
        outcome.judged.extraction = current
        # A reused object was read from the same text: as much of it as before.
        if reused:
            in_part = isinstance(previous, dict) and previous.get("inPart") is True
        else:
            assert page.text is not None
            in_part = extracting.extracted_in_part(self.llm, spec, page.text)
        derived["json"] = {"key": spec.key, "value": current}
        if in_part:
            outcome.metadata["extractedInPart"] = True
            derived["json"]["inPart"] = True
        if not reused and outcome.status == Status.SAME:
            # What to extract was edited and the page says what it said: the
            # old object answered other instructions, so a field it lacks is
            # no change of the page. The new one is the baseline from now on.
            before = None
        if outcome.status != Status.NEW:
            _compare(page, before, current)
        return True

    # --- 2. Summary --------------------------------------------------------------

    async def _summarize(self, page: Page, derived: dict[str, Any]) -> None:
        outcome = page.outcome
        reused, summary = page.reused("summary", extracting.SUMMARY_KEY)
        previous = page.previous.get("summary")
        if not reused:
            if not llm_available() or page.text is None:
                return  # listed in metadata.notApplied when there is no model
            if self.held is not None:
                outcome.metadata["summaryError"] = HELD_SUMMARY.format(why=self.held)
                return
            try:
                summary = await extracting.summarize(self.llm, page.text)
            except LLMError as exc:
                outcome.metadata["summaryError"] = exc.message
                return
        outcome.judged.summary = summary
        derived["summary"] = {"key": extracting.SUMMARY_KEY, "value": summary}
        # A reused summary was made from the same text: of as much of it.
        if reused:
            in_part = isinstance(previous, dict) and previous.get("inPart") is True
        else:
            assert page.text is not None
            in_part = extracting.summarized_in_part(self.llm, page.text)
        if in_part:
            outcome.metadata["summarizedInPart"] = True
            derived["summary"]["inPart"] = True

    # --- 3. The judge ----------------------------------------------------------

    async def _verdict(self, page: Page) -> Verdict:
        if not llm_available():
            return not_judged(NO_MODEL_REASON)
        if self.held is not None:
            return not_judged(f"{self.held}.")
        diff = page.outcome.diff or {}
        fields = diff.get("json") if page.wants.extraction is not None else None
        spec = page.wants.extraction
        return await judge(
            self.llm,
            goal=self.monitor.goal or "",
            prompt=spec.prompt if spec is not None else "",
            diff_text=diff.get("text") or None,
            fields=fields or None,
        )

    @staticmethod
    def _apply(outcome: Outcome, verdict: Verdict) -> None:
        outcome.judged.judgment = verdict.judgment
        if not verdict.judged:
            outcome.judged.verdict = PageResult.Verdict.NOT_JUDGED
            return
        if verdict.partial:
            outcome.metadata["judgedInPart"] = True
        meaningful = verdict.judgment["meaningful"]
        outcome.judged.verdict = (
            PageResult.Verdict.MEANINGFUL if meaningful else PageResult.Verdict.NOISE
        )
        # Page judging costs one credit per judged page, as Firecrawl bills it.
        credits = outcome.metadata.get("creditsUsed")
        outcome.metadata["creditsUsed"] = (
            credits if isinstance(credits, int) else 0
        ) + 1


def _judged_here(monitor: Monitor, outcome: Outcome) -> bool:
    """Whether the goal judge looks at this page: a change of a judging
    monitor that its change rules did not set aside already."""
    return (
        monitor.judging
        and outcome.status == Status.CHANGED
        and not outcome.set_aside_by_rules
    )


def _compare(page: Page, before: Any, current: Any) -> None:
    """Status and diff of a page in JSON or mixed mode."""
    outcome = page.outcome
    fields = field_diff(before, current) if before is not None else {}
    text_changed = outcome.status == Status.CHANGED
    diff_text = (outcome.diff or {}).get("text")
    if page.wants.markdown_too:
        changed = bool(fields) or text_changed
        diff: dict[str, Any] = {"json": fields}
        if text_changed and diff_text:
            diff = {"text": diff_text, "json": fields}
    else:
        changed = bool(fields)
        diff = {"json": fields}  # the dashboard shows the fields, not the text
    outcome.status = Status.CHANGED if changed else Status.SAME
    outcome.diff = diff if changed else None
    if outcome.set_aside_by_rules and not (changed and page.wants.markdown_too):
        # No change left to set aside (the extracted fields are the same), or
        # a JSON-only page: the rules read the text, the change is the
        # fields', so they do not decide it.
        outcome.judged.judgment = None
        outcome.judged.verdict = ""
        del outcome.metadata["judgedBy"]


def _fail(outcome: Outcome, kind: str, message: str) -> None:
    """The page as an error; its baseline stays (nothing new is stored)."""
    outcome.status = Status.ERROR
    outcome.error = message
    outcome.error_kind = kind
    outcome.diff = None
    outcome.content = None
    outcome.cache_hit = False
    outcome.judged = Judged()
    outcome.metadata.pop("judgedBy", None)
    outcome.metadata["creditsUsed"] = 0
