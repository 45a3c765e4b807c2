"""How a page job is fetched: one Fetcher class per way of getting a page.

Today that is plain HTTP through the one outbound door (checks.fetch); a
browser fetcher arrives as a second class behind the same small interface.
A fetcher raises checks.fetch.FetchError for anything that produced no
response; HTTP error statuses are responses, judged by checks.pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol

from checks.fetch import FetchResult, OutboundClient
from checks.jobs import PageJob


class Fetcher(Protocol):
    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult: ...

    async def aclose(self) -> None: ...


class HttpFetcher:
    """Pages over HTTP(S), under the client's one limiter (overall and per
    host); with a `delay`, at least that many seconds between two requests
    (a crawl's crawlOptions.delay or robots.txt Crawl-delay)."""

    def __init__(self, client: OutboundClient, delay: float = 0.0) -> None:
        self.client = client
        self.delay = delay
        self._pace = asyncio.Lock()
        self._last: float | None = None

    async def _wait_turn(self) -> None:
        """The first request waits too: the crawl's previous request (robots.txt,
        or the last page of its previous batch) was just before."""
        async with self._pace:
            loop = asyncio.get_running_loop()
            last = loop.time() if self._last is None else self._last
            wait = last + self.delay - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last = loop.time()

    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult:
        if self.delay > 0:
            await self._wait_turn()
        return await self.client.fetch(
            job.url, headers=headers, timeout=job.timeout, verify=job.verify_tls
        )

    async def aclose(self) -> None:
        await self.client.aclose()
