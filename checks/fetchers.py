"""How a page job is fetched: one Fetcher class per way of getting a page.

Plain HTTP through the one outbound door (checks.fetch), or a real browser
(checks.browser) whose every request goes through a proxy applying the same
address policy. A batch holds both (Fetchers) and each job goes to the one
chosen for it (PageJob.browser). A fetcher raises checks.fetch.FetchError for
anything that produced no response; HTTP error statuses are responses,
judged by checks.pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol

from checks.browser.executable import available
from checks.browser.options import browser_options
from checks.fetch import FetchResult, OutboundClient, Resolver
from checks.jobs import PageJob, Via


def choose(job: PageJob, remembered: str) -> PageJob:
    """The job, with the fetcher it gets: the browser when its options need
    one or its monitor always uses one (a page error says so when there is
    none), when an earlier check found the page built by scripts
    (`remembered`, PageState.fetcher) and a browser is there, or when this
    check's plain fetch found it so (a job handed over keeps that); plain
    HTTP otherwise, and always for a monitor set to plain HTTP."""
    if job.browser == Via.DETECTED:
        return job
    needed = browser_options(job.options)
    if needed:
        return job.via(Via.OPTIONS, ", ".join(needed))
    if job.fetch_with == "browser":
        return job.via(Via.MONITOR)
    if job.fetch_with == "http":
        return job.via("")
    if remembered == "browser" and available():
        return job.via(Via.REMEMBERED)
    return job.via("")


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

    async def wait_turn(self) -> None:
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
            await self.wait_turn()
        return await self.client.fetch(
            job.url, headers=headers, timeout=job.timeout, verify=job.verify_tls
        )

    async def aclose(self) -> None:
        await self.client.aclose()


class BrowserFetcher:
    """Pages rendered by this process's Chromium (checks.browser): a fresh
    context per page, behind a filtering proxy using `resolver`."""

    def __init__(self, resolver: Resolver | None = None) -> None:
        self.resolver = resolver

    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult:
        # Imported here: only a process that opens a browser loads Playwright.
        from checks.browser.page import fetch_page

        return await fetch_page(job, headers, self.resolver)

    async def aclose(self) -> None:
        return None  # the browser outlives batches (checks.browser.chromium)


class Fetchers:
    """A batch's fetchers: each job goes to the browser when one was chosen
    for it (PageJob.browser), else over plain HTTP."""

    def __init__(self, http: HttpFetcher, browser: BrowserFetcher) -> None:
        self.http = http
        self.browser = browser

    @property
    def client(self) -> OutboundClient:
        return self.http.client  # a crawl's robots.txt and sitemaps

    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult:
        if not job.browser:
            return await self.http.fetch(job, headers)
        if self.http.delay > 0:
            await self.http.wait_turn()  # a paced crawl's pace holds for both
        return await self.browser.fetch(job, headers)

    async def aclose(self) -> None:
        await self.http.aclose()
        await self.browser.aclose()
