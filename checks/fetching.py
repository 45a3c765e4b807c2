"""A batch's pages fetched and judged on an event loop run a step at a time
from synchronous code (checks.runner calls fetch_and_record).

Each page is a task: fetch (checks.fetchers), then judge inline
(checks.pages); the loop hands over what is done, the model does its part
(checks.ai.stage) on the same loop, and everything touching the database
runs between its steps, in plain synchronous Django. A page
whose plain fetch looks built by scripts (checks.browser.detect) is not
judged here: it is handed over to a new browser batch of the same check,
queued for the workers that run a browser, so one slow browser page never
holds up a batch of plain fetches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from checks import pages
from checks.ai.stage import Enricher
from checks.browser import detect
from checks.browser.executable import available as browser_available
from checks.browser.result import BrowserResult
from checks.crawl.frontier import Frontier
from checks.fetch import FetchError, FetchResult
from checks.fetchers import Fetchers
from checks.jobs import PageJob, Via
from checks.models import Check, CheckBatch, PageState
from checks.recording import (
    RECORD_BATCH,
    CheckAbandoned,
    Item,
    reconcile,
    record_many,
)
from checks.search.stage import SearchStage

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


class Fetching:
    """The pages of one batch being fetched and judged concurrently; take()
    hands over those that are done (cache hits first: done from the start).
    Bodies live only inside their page's task (fetch, then judge inline), so
    memory stays bounded by the limiter."""

    def __init__(
        self,
        fetcher: Fetchers,
        items: list[tuple[PageJob, PageState | None]],
        crawls: Frontier | None = None,
        done: list[Item] | None = None,
    ):
        self.fetcher = fetcher
        self.crawls = crawls
        self.items = items
        self.done: list[Item] = list(done or [])
        self.left = len(items) + len(self.done)
        # Pages whose plain fetch looked built by scripts: for the browser.
        self.handed_over: list[PageJob] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.arrived: asyncio.Event | None = None

    async def start(self) -> None:
        self.arrived = asyncio.Event()
        if self.done:
            self.arrived.set()
        self.tasks = [asyncio.create_task(self._one(*item)) for item in self.items]

    async def _one(self, job: PageJob, state: PageState | None) -> None:
        fetched: Any
        try:
            fetched = await self.fetcher.fetch(job, pages.request_headers(job, state))
        except FetchError as exc:
            fetched = exc
        except Exception as exc:  # judged as an internal error of this page
            fetched = exc
        assert self.arrived is not None
        # Judged first: a page whose text is still what a plain fetch saw
        # last time needs no second parse to look for scripts.
        outcome = pages.judge(job, fetched, state)
        built_by_scripts = _built_by_scripts(job, fetched, state, outcome)
        if built_by_scripts is not None and browser_available():
            self.handed_over.append(job.via(Via.DETECTED, built_by_scripts))
            self.left -= 1
            self.arrived.set()
            return
        if (
            job.browser == Via.REMEMBERED
            and isinstance(fetched, BrowserResult)
            and fetched.plain_would_do
        ):
            outcome.fetcher = "http"
            reason = outcome.metadata.get("fetchedWithReason", "")
            outcome.metadata["fetchedWithReason"] = reason + PLAIN_AGAIN_NOTE
        if built_by_scripts is not None:
            note = NO_BROWSER_NOTE.format(reason=built_by_scripts)
            outcome.metadata["fetchedWithReason"] = note
            outcome.fetcher = ""  # look again next time: a browser may be there
        if self.crawls is not None and outcome.links:
            await self.crawls.learn_robots(job, outcome, self.fetcher.client)
        self.done.append((job, outcome, state))
        self.arrived.set()

    async def take(self, timeout: float) -> list[Item]:
        assert self.arrived is not None
        if not self.done:
            try:
                await asyncio.wait_for(self.arrived.wait(), timeout)
            except TimeoutError:
                return []
        if len(self.done) < min(RECORD_BATCH, self.left):
            await asyncio.sleep(RECORD_LINGER_SECONDS)
        taken, self.done = self.done[:RECORD_BATCH], self.done[RECORD_BATCH:]
        if not self.done:
            self.arrived.clear()
        self.left -= len(taken)
        return taken

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.fetcher.aclose()


def _built_by_scripts(
    job: PageJob, fetched: Any, state: PageState | None, outcome: pages.Outcome
) -> str | None:
    """Why a plain fetch's page looks built by scripts; None when it does not,
    or when that was settled already: a page judged plain before whose body,
    or whose text, is still the same (its content is there without scripts)."""
    if job.browser or job.fetch_with == "http" or not settings.BROWSER_AUTO_DETECT:
        return None
    if not isinstance(fetched, FetchResult) or not 200 <= fetched.status_code < 300:
        return None
    if not detect.has_scripts(fetched.content):
        return None
    if state is not None and state.fetcher == "http" and outcome.is_settled_same:
        return None
    return detect.script_built(fetched.content, fetched.headers.get("content-type", ""))


def fetch_and_record(
    check: Check,
    batch: CheckBatch,
    items: list[tuple[PageJob, PageState | None]],
    fetcher: Fetchers,
    crawls: Frontier | None,
    *,
    cached: list[Item] | None = None,
    enricher: Enricher | None = None,
    searches: SearchStage | None = None,
) -> list[CheckBatch]:
    """Fetch and judge the pages (`cached` ones are decided already), let the
    model do its part, and record them as they arrive; the batches their links
    added to a crawl (admitted before the pages are recorded), and the browser
    batches of pages handed over."""
    fetching = Fetching(fetcher, items, crawls, cached)
    enricher = enricher or Enricher(check.monitor)
    stages: list[ModelStage] = [enricher]
    if searches is not None and searches.runs:
        # First: it settles each result's status (never "changed"), so the
        # Enricher's change judge leaves search results alone.
        stages.insert(0, searches)
    found: list[CheckBatch] = []
    with asyncio.Runner() as loop:
        try:
            loop.run(fetching.start())
            while fetching.left:
                taken = loop.run(fetching.take(HEARTBEAT_SECONDS))
                if taken:
                    if crawls is not None:
                        found += crawls.admit(taken)
                    reconcile(taken)
                    for stage in stages:
                        _enrich(loop, stage, taken, check, batch)
                    record_many(check, taken, batch)
                else:
                    heartbeat(check, batch)
        finally:
            # Leaving early (time limit, abandoned check) cancels what is in
            # flight rather than waiting for slow pages.
            loop.run(fetching.close())
            for stage in stages:
                loop.run(stage.aclose())
    return found + hand_over(check, fetching.handed_over)


async def _spawn(coroutine: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(coroutine)


class ModelStage(Protocol):
    """The model's part of a batch: checks.ai.stage.Enricher and
    checks.search.stage.SearchStage."""

    def prepare(self, items: Sequence[Item]) -> Sequence[Any]: ...

    async def enrich(self, work: Any) -> None: ...

    async def aclose(self) -> None: ...


def _enrich(
    loop: asyncio.Runner,
    enricher: ModelStage,
    items: list[Item],
    check: Check,
    batch: CheckBatch,
) -> None:
    """The model's work on these pages (checks.ai.stage), on the batch's loop
    so fetches go on meanwhile; the check heart-beats while it waits."""
    work = enricher.prepare([item for item in items if item[0].record])
    if not work:
        return
    task = loop.run(_spawn(enricher.enrich(work)))
    try:
        while not task.done():
            loop.run(asyncio.wait({task}, timeout=HEARTBEAT_SECONDS))
            if not task.done():
                heartbeat(check, batch)
    finally:
        if not task.done():
            task.cancel()
            loop.run(asyncio.wait({task}))
    task.result()


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
    now = timezone.now()
    CheckBatch.objects.filter(pk=batch.pk).update(heartbeat_at=now)
    if not check.heartbeat(now):
        raise CheckAbandoned
