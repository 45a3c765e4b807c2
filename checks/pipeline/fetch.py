"""The fetch stage: a page's work -> its response, or its cached copy.

One Fetcher class per way of getting a page: plain HTTP through the one
outbound door (checks.fetch), or a real browser (checks.browser) whose every
request goes through a proxy applying the same address policy. A batch holds
both (Fetchers) and each job goes to the one the plan chose for it
(PageJob.browser). A fetcher raises checks.fetch.FetchError for anything that
produced no response; HTTP error statuses are responses, read by the extract
stage. A page whose maxAge allows it is served from its baseline instead
(`from_cache`), and a page fetched before asks the server whether it changed
(`request_headers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings

from checks.browser import detect
from checks.errors import ErrorKind
from checks.fetch import FetchResult, OutboundClient, Pace, Resolver
from checks.jobs import PageJob
from checks.models import PageResult, PageState
from checks.pipeline.outcome import (
    Outcome,
    base_metadata,
    failed,
    options_hash,
    read_by_another_engine,
)
from monitors.time_words import wire_time


class Fetcher(Protocol):
    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult: ...

    async def aclose(self) -> None: ...


class HttpFetcher:
    """Pages over HTTP(S), under the client's one limiter (overall and per
    host); with a `delay`, at least that many seconds between two requests
    (a crawl's crawlOptions.delay or robots.txt Crawl-delay)."""

    def __init__(self, client: OutboundClient, delay: float = 0.0) -> None:
        self.client = client
        self.pace = Pace(delay)

    async def fetch(
        self,
        job: PageJob,
        headers: Mapping[str, str],
        stop_at: Callable[[str], bool] | None = None,
    ) -> FetchResult:
        await self.pace.wait_turn()
        # A refresh-only page is followed here, like a redirect; the browser
        # (BrowserFetcher) follows it itself, and is always handed job.url.
        # A file that is not a page (a crawl's link to a download) is read
        # only as far as it takes to know.
        return await self.client.fetch(
            job.url,
            headers=headers,
            timeout=job.timeout,
            verify=job.verify_tls,
            follow_refresh=True,
            pages_only=True,
            stop_at=stop_at,
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

    async def fetch(
        self,
        job: PageJob,
        headers: Mapping[str, str],
        stop_at: Callable[[str], bool] | None = None,
    ) -> FetchResult:
        """`stop_at`: addresses a plain fetch's redirects are not followed to
        (see checks.fetch.afetch); a crawl's browser pages are in its scope
        as the browser leaves them."""
        if not job.browser:
            return await self.http.fetch(job, headers, stop_at)
        await self.http.pace.wait_turn()  # a paced crawl's pace holds for both
        return await self.browser.fetch(job, headers)

    async def aclose(self) -> None:
        await self.http.aclose()
        await self.browser.aclose()


# --- Asking less of the server, or nothing --------------------------------------


def request_headers(job: PageJob, state: PageState | None) -> dict[str, str]:
    """The job's headers, plus the baseline's validators when the page was
    fetched with the same options: the server may then answer 304 Not
    Modified, which costs neither a body nor an extraction."""
    headers = job.headers
    if state is None or not state.has_baseline or job.follow:
        return headers  # a crawl page's links are read from its body
    if state.options_hash != options_hash(job.options):
        return headers
    if read_by_another_engine(state):
        return headers  # its body is to be read again
    validators = {"If-None-Match": state.etag, "If-Modified-Since": state.last_modified}
    present = {k.lower() for k in headers}
    for name, value in validators.items():
        if value and name.lower() not in present:
            headers[name] = value
    return headers


def _milliseconds(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def from_cache(job: PageJob, state: PageState | None, now: datetime) -> Outcome | None:
    """Serve the page from its last good fetch when maxAge/minAge allow it.

    Monitors default to maxAge 0 (always fetch). With minAge, only the cache
    may answer (as in Firecrawl); no old-enough copy is a page error.
    """
    max_age = _milliseconds(job.options.get("maxAge")) or 0
    min_age = _milliseconds(job.options.get("minAge"))
    cached_at = state.cached_at if state is not None and state.is_cacheable else None
    age_ms = (now - cached_at).total_seconds() * 1000 if cached_at else None
    if min_age is not None and min_age > 0:
        if age_ms is None or age_ms < min_age:
            return failed(
                job,
                ErrorKind.NOT_CACHED,
                f"No cached copy at least {min_age} ms old is available "
                "(minAge), so the page was not fetched.",
            )
    elif age_ms is None or age_ms > max_age:
        return None
    assert state is not None and cached_at is not None
    metadata = {**state.metadata, **base_metadata(job)}
    if "fetchedWith" in state.metadata:  # how the cached copy was fetched
        metadata.pop("fetchedWithReason", None)
        for key in ("fetchedWith", "fetchedWithReason"):
            if key in state.metadata:
                metadata[key] = state.metadata[key]
    metadata |= {
        "creditsUsed": job.credits,
        "cacheState": "hit",
        "cachedAt": wire_time(cached_at),
    }
    return Outcome(
        PageResult.Status.SAME,
        metadata,
        status_code=metadata.get("statusCode"),
        cache_hit=True,
    )


# --- After a plain fetch ------------------------------------------------------------


def built_by_scripts(
    job: PageJob, fetched: Any, state: PageState | None, outcome: Outcome
) -> str | None:
    """Why a plain fetch's page looks built by scripts, so the browser should
    fetch it; None when it does not, or when that was settled already: a page
    found plain before whose body, or whose text, is still the same (its
    content is there without scripts)."""
    if job.browser or job.fetch_with == "http" or not settings.BROWSER_AUTO_DETECT:
        return None
    if not isinstance(fetched, FetchResult) or not 200 <= fetched.status_code < 300:
        return None
    if not detect.has_scripts(fetched.content):
        return None
    if state is not None and state.fetcher == "http" and outcome.is_settled_same:
        return None
    return detect.script_built(
        fetched.content,
        fetched.headers.get("content-type", ""),
        url=fetched.final_url,
        guess=fetched.guessed_encoding,
    )
