"""One batch's pages taken through the stages on an event loop run a step at
a time from synchronous code (checks.runner calls run_pages).

Each page is a task on the loop: fetch, then extract inline (a PDF, which
may be read with OCR, in a thread), then a page that may be the site's "not
found" page confirmed or cleared (checks.pipeline.not_found). The loop hands
over what is done, a few pages at a time; between its steps, in plain
synchronous Django, a crawl sets aside the pages that are copies of another
(checks.crawl.frontier.copies) and admits the links they brought, then they are
compared, judged (the judges' calls run on the same loop, beside the
fetches) and recorded. A page whose plain fetch looks built by scripts is
not extracted further: it is handed over to a new browser batch of the same
check, queued for the workers that run a browser, so one slow browser page
never holds up a batch of plain fetches.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from checks import shared_clock
from checks.browser.executable import available as browser_available
from checks.browser.result import BrowserResult
from checks.crawl.frontier import Frontier
from checks.errors import ErrorKind
from checks.fetch import FetchError
from checks.jobs import PageJob, Via
from checks.models import AIUse, Check, CheckBatch, PageState
from checks.pipeline.compare import compare
from checks.pipeline.extract import Fetched, extract_page, reads_slowly
from checks.pipeline.fetch import Fetchers, built_by_scripts, request_headers
from checks.pipeline.judge import Judge, judge, take_used
from checks.pipeline.not_found import NotFoundProbe
from checks.pipeline.outcome import CheckAbandoned, Item, PageWork, failed
from checks.pipeline.record import RECORD_BATCH, record_many

logger = logging.getLogger(__name__)

CRASHED = "The page could not be analysed because of an internal error."
# A running batch writes its heartbeat at least this often while alive.
HEARTBEAT_SECONDS = 10.0
# Results that arrive together share a transaction, waiting up to this long
# for each other (at most RECORD_BATCH of them).
RECORD_LINGER_SECONDS = 0.02
PLAIN_AGAIN_NOTE = (
    " Its content is now there without scripts: the next check fetches it plainly."
)
NO_BROWSER_NOTE = (
    "A plain fetch found it built by scripts ({reason}), but no browser is "
    "available to see it (see BROWSER_EXECUTABLE)."
)


@dataclass
class BatchPages:
    """What a batch hands the stages: the pages to fetch with `fetchers`,
    those decided without a fetch (cached, a search result seen before), the
    batch's crawls (None when it follows no links) and its judges."""

    fetchers: Fetchers
    to_fetch: list[PageWork]
    decided: list[Item] = field(default_factory=list)
    crawls: Frontier | None = None
    judges: list[Judge] = field(default_factory=list)


def run_pages(check: Check, batch: CheckBatch, pages: BatchPages) -> list[CheckBatch]:
    """Take the pages through fetch .. record as they arrive; the batches
    their links added to a crawl (admitted before the pages are recorded),
    and the browser batches of pages handed over."""
    arriving = _Arriving(check, pages)
    added: list[CheckBatch] = []
    with asyncio.Runner() as loop:
        try:
            loop.run(arriving.start())
            while arriving.left:
                done = loop.run(arriving.take(HEARTBEAT_SECONDS))
                if done:
                    added += _settle(loop, check, batch, pages, done)
                else:
                    heartbeat(check, batch)
        finally:
            # Leaving early (time limit, abandoned check) cancels what is in
            # flight rather than waiting for slow pages; the model's answers
            # received by then were used all the same, so they are recorded.
            loop.run(arriving.close())
            used = take_used(pages.judges)
            for one in pages.judges:
                loop.run(one.aclose())
            AIUse.objects.record(check, used)
    return added + hand_over(check, arriving.handed_over)


def _settle(
    loop: asyncio.Runner,
    check: Check,
    batch: CheckBatch,
    pages: BatchPages,
    done: list[Item],
) -> list[CheckBatch]:
    """Pages that arrived: their links admitted, then compared, judged and
    recorded; the batches their links added."""
    added: list[CheckBatch] = []
    if pages.crawls is not None:
        done = pages.crawls.redirected(done)
        done = pages.crawls.copies(done)
        added = pages.crawls.admit(done)
    compare(done)
    judge(
        loop,
        pages.judges,
        done,
        heartbeat=lambda: heartbeat(check, batch),
        every=HEARTBEAT_SECONDS,
    )
    AIUse.objects.record(check, take_used(pages.judges))
    record_many(check, done, batch)
    return added


class _Arriving:
    """The pages of one batch being fetched and extracted concurrently;
    take() hands over those that are done (pages decided without a fetch
    first: done from the start). Bodies live only inside their page's task
    (fetch, then extract inline), so memory stays bounded by the limiter."""

    def __init__(self, check: Check, pages: BatchPages) -> None:
        self.fetchers = pages.fetchers
        self.not_found = NotFoundProbe(
            pages.fetchers,
            check.pk,
            pages.crawls.scope if pages.crawls is not None else None,
        )
        self.crawls = pages.crawls
        self.to_fetch = pages.to_fetch
        self.done: list[Item] = list(pages.decided)
        self.left = len(self.to_fetch) + len(self.done)
        # Pages whose plain fetch looked built by scripts: for the browser.
        self.handed_over: list[PageJob] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.arrived: asyncio.Event | None = None

    async def start(self) -> None:
        self.arrived = asyncio.Event()
        if self.done:
            self.arrived.set()
        self.tasks = [asyncio.create_task(self._one(page)) for page in self.to_fetch]

    async def _one(self, page: PageWork) -> None:
        job, state = page.job, page.baseline
        fetched: Fetched
        try:
            stop_at = self.crawls.out_of_scope(job) if self.crawls else None
            if state is not None and state.metadata.get("ocrPages"):
                # What read its PDF is compared with the engine's version,
                # which a worker asks the engine for (up to seconds): off the
                # loop, where the batch's other pages are being fetched.
                headers = await asyncio.to_thread(request_headers, job, state)
            else:
                headers = request_headers(job, state)
            fetched = await self.fetchers.fetch(job, headers, stop_at)
        except FetchError as exc:
            fetched = exc
        except Exception as exc:  # extracted as an internal error of this page
            fetched = exc
        assert self.arrived is not None
        try:
            item = await self._read(job, fetched, state)
        except Exception:
            # A bug in reading one page costs that page, not the batch: a
            # task dying here would leave the batch waiting for it forever,
            # heart-beating, so no sweep would ever end the check.
            logger.exception("Reading %s crashed", job.url)
            item = Item(job, failed(job, ErrorKind.INTERNAL, CRASHED), state)
        if item is not None:
            self.done.append(item)
        self.arrived.set()

    async def _read(
        self, job: PageJob, fetched: Fetched, state: PageState | None
    ) -> Item | None:
        """The fetched page extracted, looked at for scripts, as a possible
        "not found" page and for its canonical address; None when it was
        handed over to the browser."""
        # Extracted first: a page whose text is still what a plain fetch saw
        # last time needs no second parse to look for scripts.
        if reads_slowly(fetched):
            # OCR waits on its engine for seconds a page: off the loop, so
            # the other pages' fetches go on meanwhile.
            outcome = await asyncio.to_thread(extract_page, job, fetched, state)
        else:
            outcome = extract_page(job, fetched, state)
        scripts = built_by_scripts(job, fetched, state, outcome)
        if scripts is not None and browser_available():
            self.handed_over.append(job.via(Via.DETECTED, scripts))
            self.left -= 1
            return None
        if (
            job.browser == Via.REMEMBERED
            and isinstance(fetched, BrowserResult)
            and fetched.plain_would_do
        ):
            outcome.fetcher = "http"
            reason = outcome.metadata.get("fetchedWithReason", "")
            outcome.metadata["fetchedWithReason"] = reason + PLAIN_AGAIN_NOTE
        if scripts is not None:
            outcome.metadata["fetchedWithReason"] = NO_BROWSER_NOTE.format(
                reason=scripts
            )
            outcome.fetcher = ""  # look again next time: a browser may be there
        # A page that may be the site's "not found" page: confirmed (gone)
        # or cleared by a made-up address of the site.
        outcome = await self.not_found.confirm(job, outcome, state)
        if self.crawls is not None:
            outcome.canonical = self.crawls.canonical(job, fetched)
        if self.crawls is not None and (outcome.links or outcome.canonical):
            await self.crawls.learn_robots(job, outcome, self.fetchers.client)
        return Item(job, outcome, state)

    async def take(self, timeout: float) -> list[Item]:
        assert self.arrived is not None
        if not self.done:
            try:
                await asyncio.wait_for(self.arrived.wait(), timeout)
            except TimeoutError:
                return []
        if len(self.done) < min(RECORD_BATCH, self.left):
            await asyncio.sleep(RECORD_LINGER_SECONDS)
        handed, self.done = self.done[:RECORD_BATCH], self.done[RECORD_BATCH:]
        if not self.done:
            self.arrived.clear()
        self.left -= len(handed)
        return handed

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.fetchers.aclose()


def hand_over(check: Check, jobs: list[PageJob]) -> list[CheckBatch]:
    """New browser batches of the check for these pages (committed before
    the batch that found them completes, so the check cannot finish early;
    the check row is locked so batch numbers cannot collide)."""
    if not jobs:
        return []
    with transaction.atomic():
        Check.objects.select_for_update().filter(pk=check.pk).first()
        return CheckBatch.objects.append(
            check,
            [job.ref() for job in jobs],
            size=int(settings.BROWSER_BATCH_SIZE),
            uses_browser=True,
        )


def heartbeat(check: Check, batch: CheckBatch) -> None:
    now = shared_clock.now()
    CheckBatch.objects.filter(pk=batch.pk).update(heartbeat_at=now)
    if not check.heartbeat(now):
        raise CheckAbandoned
