"""Asking another service for its watches, through the one outbound door
(checks.fetch): its address policy, timeouts and body cap apply to an import
as to every page Pagewatch fetches."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from checks.errors import ErrorKind
from checks.fetch import FetchError, OutboundClient
from monitors.moving.base import ELSEWHERE, Bounds, ImportRefused, max_bytes
from monitors.url_rule import url_syntax_error

# How many watches a reader reads between two reports of its progress; and
# how long one may take to read a service in all (the preview task's time
# limit is above it, with room to judge what was read): past it the service
# is too slow for one import, and the page says so rather than the worker
# being killed mid-way.
PROGRESS_EVERY = 25
READ_BUDGET_SECONDS = 8 * 60
# While a request waits (POST /v2/import reads a service in its request, as
# its dry run answers with the watches read): gunicorn ends a request silent
# for 30 seconds, so reading stops well before, and a service of more
# watches than can be read in that time is refused before any is read.
REQUEST_BUDGET_SECONDS = 20
REQUEST_MAX_WATCHES = 250
# The longest one answer of the service may take; less when the reading has
# less time left, so that one slow answer cannot carry a reading (and the
# request waiting for it) past its budget.
ANSWER_SECONDS = 30
# How many requests to the service are in flight at once, each on a
# connection kept open for the next: a few, as a browser would, so that a
# service of thousands of watches is read in minutes without being flooded.
CONCURRENCY = 4

# Told how many of how many watches were read (0: how many is not known yet).
Progress = Callable[[int, int], None]
T = TypeVar("T")
R = TypeVar("R")


def in_background() -> Bounds:
    """A worker's reading (the Import page's preview, importmonitors)."""
    return Bounds(READ_BUDGET_SECONDS)


def in_request() -> Bounds:
    """A reading while a web request waits."""
    return Bounds(REQUEST_BUDGET_SECONDS, REQUEST_MAX_WATCHES)


class NotFound(ImportRefused):
    """The service answered 404: an address that is not its API, or a watch
    removed between listing and reading it."""


class Reading:
    """One reading of a service: its requests go through one outbound client
    (checks.fetch), so its connections are kept alive from one request to
    the next; how far it got is told to `progress` now and then, and it is
    refused once it has taken longer than READ_BUDGET_SECONDS.

    `with Reading(service, progress) as reading:` in synchronous code (the
    preview task): the client lives on an event loop of the reading's own,
    which runs only while a request or a group of watches is read, so that
    `progress` (which writes to the database) is never called inside it."""

    def __init__(
        self,
        service: str,
        progress: Progress | None = None,
        bounds: Bounds | None = None,
    ) -> None:
        self.service = service
        self.progress = progress
        self.bounds = bounds or in_background()
        self.deadline = time.monotonic() + self.bounds.seconds
        # How many watches were read, of how many (0: not known yet): what
        # a reading refused for its time says it got through.
        self.read = 0
        self.of = 0
        self._runner = asyncio.Runner()
        self._client = OutboundClient(
            concurrency=CONCURRENCY, per_host_concurrency=CONCURRENCY
        )

    def __enter__(self) -> Reading:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self._runner.run(self._client.aclose())
        finally:
            self._runner.close()

    def at(self, done: int, total: int = 0) -> None:
        """About to read watch number `done` (from 0) of `total`."""
        self.read, self.of = done, total
        self._in_time()
        if self.progress is not None and done % PROGRESS_EVERY == 0:
            self.progress(done, total)

    def count(self, watches: int) -> None:
        """The service holds this many watches (or more): refused, before
        any is read, when more than the reading may read."""
        most = self.bounds.watches
        if most is not None and watches > most:
            raise ImportRefused(
                f"{self.service} holds {watches:,} watches, more than the "
                f"{most:,} Pagewatch reads while a request waits. {ELSEWHERE}"
            )

    def _in_time(self) -> None:
        if time.monotonic() >= self.deadline:
            raise self._too_slow()

    def _too_slow(self) -> ImportRefused:
        of = f" of {self.of:,}" if self.of else ""
        return ImportRefused(
            f"{self.service} answered too slowly: {self.read:,}{of} watches were "
            f"read {self.bounds.too_slow()}"
        )

    def get(self, url: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        return self._runner.run(self.aget(url, headers))

    def get_json(self, url: str, headers: Mapping[str, str]) -> Any:
        return self._runner.run(self.aget_json(url, headers))

    async def aget(self, url: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        """The status and body of one request to the service, given no more
        than the time the reading has left (and at least a second)."""
        timeout = max(1.0, min(ANSWER_SECONDS, self.deadline - time.monotonic()))
        try:
            fetched = await self._client.fetch(
                url, headers=dict(headers), max_bytes=max_bytes(), timeout=timeout
            )
        except FetchError as exc:
            if exc.kind is ErrorKind.TIMEOUT and timeout < ANSWER_SECONDS:
                # Cut short by the reading's budget, not slow by itself.
                raise self._too_slow() from None
            raise ImportRefused(f"Could not read {url[:200]}: {exc}") from None
        return fetched.status_code, fetched.content

    async def aget_json(self, url: str, headers: Mapping[str, str]) -> Any:
        """The service's JSON answer; its refusals in plain words."""
        status, body = await self.aget(url, headers)
        service = self.service
        if status in (401, 403):
            raise ImportRefused(
                f"{service} refused the key ({status}): check the API key."
            )
        if status == 404:
            raise NotFound(f"{service} answered HTTP 404 for {url[:200]}.")
        if status != 200:
            raise ImportRefused(f"{service} answered HTTP {status} for {url[:200]}.")
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise ImportRefused(
                f"{service} did not answer JSON at {url[:200]}."
            ) from None

    def each(self, items: Sequence[T], read: Callable[[T], Awaitable[R]]) -> list[R]:
        """`read(item)` for every item, CONCURRENCY at a time, the answers in
        the items' order; progress told between groups of PROGRESS_EVERY."""
        answers: list[R] = []
        for start in range(0, len(items), PROGRESS_EVERY):
            self.at(start, len(items))
            group = items[start : start + PROGRESS_EVERY]
            answers += self._runner.run(self._together(group, read))
        return answers

    async def _together(
        self, group: Sequence[T], read: Callable[[T], Awaitable[R]]
    ) -> list[R]:
        slots = asyncio.Semaphore(CONCURRENCY)

        async def one(item: T) -> R:
            async with slots:
                self._in_time()
                answer = await read(item)
                self.read += 1
                return answer

        try:
            # A refusal (a key revoked mid-way, the budget spent) stops the
            # rest of the group at once.
            async with asyncio.TaskGroup() as tasks:
                reads = [tasks.create_task(one(item)) for item in group]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [done.result() for done in reads]


def base_url(url: str) -> str:
    url = (url or "").strip()
    problem = url_syntax_error(url) if url else "Give the address of the service."
    if problem:
        raise ImportRefused(f"The source address cannot be used: {problem}")
    return url.rstrip("/")
