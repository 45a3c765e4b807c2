"""The confirm step, between extract and compare: a page that may be the
site's "not found" page answered with HTTP 200 (a "soft 404",
Outcome.not_found) is confirmed or cleared by asking the site for a made-up
address beside it, as crawlers do.

When the made-up address answers with near-identical text, the page is the
site's not-found page and is gone, as a real 404 would say for its kind:

* a page with a baseline                -> removed (the baseline kept as a
  404 keeps it), with words that say why
* a page reported removed before        -> same, still gone
* a page never seen (a first check)     -> error; a crawl's link to it is no
  page of the crawl, as a link answering 404 is (checks.crawl.frontier)

When it answers 404 (or any error), or other text, the page is what it says
(a search page's "no results found" is a change). The made-up address goes
through the page's own fetcher (the one outbound door, its address policy,
the page's headers, without its actions or screenshot), about once per host,
fetcher and set of options in a check: the batch keeps the answer, and the
cache shares it with the check's other batches (batches running at the same
moment on other workers may each ask before one has kept it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.core.cache import cache

from checks.browser.options import screenshot_format
from checks.content import ExtractionError
from checks.content.not_found import probe_url, same_text
from checks.errors import ErrorKind
from checks.fetch import FetchError
from checks.jobs import PageJob
from checks.models import PageResult, PageState
from checks.pipeline.extract import read_page, text_of
from checks.pipeline.fetch import Fetchers
from checks.pipeline.outcome import Outcome, base_metadata

logger = logging.getLogger(__name__)

REMOVED_WORDS = (
    "The page now shows the site's “not found” page although the server"
    " answered HTTP {code}."
)
FIRST_WORDS = (
    "The page looks like the site's “not found” page although the server"
    " answered HTTP {code}, so there is nothing to watch yet."
)
# A made-up address's answer is kept for the check's other batches this long.
SHARED_SECONDS = 3600
# The longest text of a made-up address's answer kept: a not-found page is
# short (checks.content.not_found compares no longer texts anyway).
KEPT_CHARS = 50_000


class NotFoundProbe:
    """One batch's made-up addresses: asked at most once per host, fetcher
    and set of options, their answers' text kept for the check."""

    def __init__(self, fetchers: Fetchers, check_id: uuid.UUID) -> None:
        self.fetchers = fetchers
        self.check_id = check_id
        self.asked: dict[str, asyncio.Task[tuple[str, str | None]]] = {}

    async def confirm(
        self, job: PageJob, outcome: Outcome, state: PageState | None
    ) -> Outcome:
        """The page's outcome, gone when the site's unknown addresses answer
        what it answers; as it was otherwise."""
        if outcome.not_found is None:
            return outcome
        text, outcome.not_found = outcome.not_found, None
        key = _key(job)
        task = self.asked.get(key)
        if task is None:
            task = asyncio.ensure_future(self._ask(key, job))
            self.asked[key] = task
        try:
            probe, probe_text = await task
        except Exception:  # the page keeps what its own answer says
            logger.exception("Asking %s for a made-up address crashed", job.url)
            return outcome
        if probe_text is None:
            return outcome
        addresses = (urlsplit(job.url).path, urlsplit(probe).path)
        if not same_text(text, probe_text, addresses):
            return outcome
        return gone(job, outcome, state)

    async def _ask(self, key: str, job: PageJob) -> tuple[str, str | None]:
        """(the made-up address, its answer's text, None when it answered
        no page), from the check's cache or asked now."""
        cache_key = f"not-found-probe:{self.check_id}:{key}"
        try:
            shared = await cache.aget(cache_key)
        except Exception:  # no cache: ask the site, as if none was kept
            logger.warning("The cache could not be read", exc_info=True)
            shared = None
        if isinstance(shared, list) and len(shared) == 2:
            return shared[0], shared[1]
        probe = probe_url(job.url)
        answer = (probe, await self._text_of(job, probe))
        try:
            await cache.aset(cache_key, list(answer), SHARED_SECONDS)
        except Exception:
            logger.warning("The cache could not be written", exc_info=True)
        return answer

    async def _text_of(self, job: PageJob, probe: str) -> str | None:
        made_up = dataclasses.replace(
            job,
            url=probe,
            options=probe_options(job.options),
            follow=False,
            record=False,
        )
        try:
            fetched = await self.fetchers.fetch(made_up, job.headers)
        except FetchError:
            return None  # refused, blocked, timed out: nothing confirmed
        if not 200 <= fetched.status_code < 300:
            return None  # a real 404: the site says what is gone
        try:  # read as the page is, under its own options
            page = read_page(job, fetched)
        except ExtractionError:
            return None
        return text_of(job, page.source_format, page.source)[:KEPT_CHARS]


def probe_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The page's scrapeOptions for its made-up address: what shapes the text
    (extraction, headers, waitFor, device, languages) without the actions,
    which would look for the page's elements on the not-found page until
    their time runs out, and without the screenshot, of no use here."""
    kept = {key: value for key, value in options.items() if key != "actions"}
    formats = options.get("formats")
    if isinstance(formats, list) and screenshot_format(options) is not None:
        kept["formats"] = [
            fmt for fmt in formats if screenshot_format({"formats": [fmt]}) is None
        ]
    return kept


def gone(job: PageJob, outcome: Outcome, state: PageState | None) -> Outcome:
    """The outcome of a page confirmed to be the site's not-found page, as
    a 404 would have it for its kind: only what the answer said (address,
    status, type) is kept of it."""
    code = outcome.status_code or 200
    metadata = base_metadata(job) | {"url": outcome.metadata.get("url", job.url)}
    metadata["statusCode"] = code
    if outcome.metadata.get("contentType"):
        metadata["contentType"] = outcome.metadata["contentType"]
    kind = ErrorKind.NOT_FOUND_PAGE
    if state is not None and state.has_baseline:
        return Outcome(
            PageResult.Status.REMOVED,
            metadata,
            status_code=code,
            error=REMOVED_WORDS.format(code=code),
            error_kind=kind,
        )
    if state is not None and state.is_removed:
        # Still gone, as a page answering 404 again is: it costs what any
        # fetched page costs (checks.pipeline.extract).
        metadata["creditsUsed"] = job.credits
        return Outcome(
            PageResult.Status.SAME, metadata, status_code=code, error_kind=kind
        )
    return Outcome(
        PageResult.Status.ERROR,
        metadata,
        status_code=code,
        error=FIRST_WORDS.format(code=code),
        error_kind=kind,
    )


def _key(job: PageJob) -> str:
    """Which made-up address answers for this page: its host's, as this
    page's fetcher sees it and as its options and lines to ignore read it
    (two targets on one host may extract, or ask, otherwise)."""
    parts = urlsplit(job.url)
    seen = [
        f"{parts.scheme}://{parts.netloc}",
        "browser" if job.browser else "http",
        job.options,
        job.ignore_lines,
    ]
    canonical = json.dumps(seen, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]
