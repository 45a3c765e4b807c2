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
  page of the crawl, as a link answering 404 is (checks.crawl.frontier);
  never a site's root ("/"), nor the very address the made-up one landed on
  (a site answering unknown addresses with its home page or an app's shell
  answers them with that page, which is no not-found page)

When it answers 404 (or any error), or other text, the page is what it says
(a search page's "no results found" is a change). The made-up address goes
through the page's own fetcher (the one outbound door, its address policy,
the page's headers, without its actions or screenshot), about once per host,
fetcher, set of options and robots.txt rules in a check: the batch keeps the
answer, and the cache shares it with the check's other batches (batches
running at the same moment on other workers may each ask before one has
kept it).

The made-up address is a request nobody asked for, so it obeys the site's
robots.txt as a crawl does (checks.crawl.scope), even for a page the user
asked for by its address: a crawl's page uses the rules its crawl read; any
other page's host (or one the crawl is still reading) has its robots.txt
read once in a check, as the page is fetched (its TLS verification, its
timeout), and kept as the made-up address's answer is. When robots.txt keeps
crawlers out of the made-up address, nothing is confirmed: the page is what
it says, and its result says why it could not be made sure of.

A page reported gone that still shows the not-found page it was confirmed
as (its fingerprint kept with its state: its words but those holding digits,
so the time or a request id it shows changes nothing) is still gone without
asking again; another text (the site's new design, the page back) is asked
about.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from protego import Protego

from checks.browser.options import screenshot_format
from checks.content import ExtractionError
from checks.content.not_found import fingerprint, probe_url, same_text
from checks.crawl.discovery import read_robots
from checks.crawl.scope import Scope, user_agent_token
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
# Why a suspected page could not be confirmed, kept in its result's metadata
# for the page's words (templates/checks/page_diff.html).
UNCONFIRMED_KEY = "notFoundUnconfirmed"
KEPT_OUT_BY_ROBOTS = "robots"
# A crawl's rules for a page, None for a page of no crawl (Frontier.scope).
ScopeOf = Callable[[PageJob], Scope | None]
# A made-up address's answer: the address, where it landed, its text (None
# when it answered no page) and why it was not asked ("" when it was).
Answer = tuple[str, str, str | None, str]


class NotFoundProbe:
    """One batch's made-up addresses: asked at most once per host, fetcher,
    set of options and robots.txt rules, their answers' text kept for the
    check; robots.txt read at most once per host and way of reading it
    (`scope_of`: a crawl page's rules, read by its crawl already)."""

    def __init__(
        self,
        fetchers: Fetchers,
        check_id: uuid.UUID,
        scope_of: ScopeOf | None = None,
    ) -> None:
        self.fetchers = fetchers
        self.check_id = check_id
        self.scope_of = scope_of
        self.asked: dict[str, asyncio.Task[Answer]] = {}
        self.robots: dict[tuple[str, bool, float | None], asyncio.Task[str]] = {}

    async def confirm(
        self, job: PageJob, outcome: Outcome, state: PageState | None
    ) -> Outcome:
        """The page's outcome, gone when the site's unknown addresses answer
        what it answers; as it was otherwise."""
        if outcome.not_found is None:
            return outcome
        text, outcome.not_found = outcome.not_found, None
        if still_the_same(text, state):
            return gone(job, outcome, state, text)
        scope = self.scope_of(job) if self.scope_of is not None else None
        key = _key(job, scope)
        task = self.asked.get(key)
        if task is None:
            task = asyncio.ensure_future(self._ask(key, job, scope))
            self.asked[key] = task
        try:
            probe, landed, probe_text, unconfirmed = await task
        except Exception:  # the page keeps what its own answer says
            logger.exception("Asking %s for a made-up address crashed", job.url)
            return outcome
        if unconfirmed:
            outcome.metadata[UNCONFIRMED_KEY] = unconfirmed
        if probe_text is None:
            return outcome
        addresses = (urlsplit(job.url).path, urlsplit(probe).path)
        if not same_text(text, probe_text, addresses):
            return outcome
        if first_seen(state) and _where_unknown_addresses_land(job, landed):
            return outcome
        return gone(job, outcome, state, text)

    async def _ask(self, key: str, job: PageJob, scope: Scope | None) -> Answer:
        """(the made-up address, where it landed, its answer's text or None
        when it answered no page, why it was not asked or ""), from the
        check's cache or asked now."""
        cache_key = f"not-found-probe:{self.check_id}:{key}"
        shared = await _cached(cache_key)
        if isinstance(shared, list) and len(shared) == 4:
            return shared[0], shared[1], shared[2], shared[3]
        probe = probe_url(job.url)
        if await self._allowed(job, probe, scope):
            landed, text = await self._text_of(job, probe)
            answer: Answer = (probe, landed, text, "")
        else:
            answer = (probe, probe, None, KEPT_OUT_BY_ROBOTS)
        await _keep(cache_key, list(answer))
        return answer

    async def _allowed(self, job: PageJob, probe: str, scope: Scope | None) -> bool:
        """Whether robots.txt lets our crawler ask for the made-up address:
        the rules the page's crawl read (and whether it may ignore them),
        else its host's, read once in the check as the page is fetched."""
        origin = Scope.host_of(probe)
        if scope is not None and scope.knows_robots(origin):
            return scope.robots_allow(probe)
        read_as = (origin, job.verify_tls, job.timeout)
        task = self.robots.get(read_as)
        if task is None:
            task = asyncio.ensure_future(self._robots_txt(*read_as))
            self.robots[read_as] = task
        text = await task
        if not text.strip():
            return True
        agent = scope.agent if scope is not None else settings.OUTBOUND_USER_AGENT
        return Protego.parse(text).can_fetch(probe, user_agent_token(agent))

    async def _robots_txt(
        self, origin: str, verify: bool, timeout: float | None
    ) -> str:
        """The rules of robots.txt of a host, read with or without TLS
        verification and within a timeout, from the check's cache or read
        now (a robots.txt that cannot be read disallows all, as RFC 9309
        asks: checks.crawl.discovery)."""
        read_as = json.dumps([origin, verify, timeout])
        digest = hashlib.sha256(read_as.encode()).hexdigest()[:32]
        cache_key = f"not-found-robots:{self.check_id}:{digest}"
        shared = await _cached(cache_key)
        if isinstance(shared, str):
            return shared
        robots = await read_robots(
            f"{origin}/robots.txt",
            self.fetchers.client,
            verify=verify,
            timeout=timeout,
        )
        await _keep(cache_key, robots.text)
        return robots.text

    async def _text_of(self, job: PageJob, probe: str) -> tuple[str, str | None]:
        """Where the made-up address landed, and its text (None when it
        answered no page)."""
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
            return probe, None  # refused, blocked, timed out: nothing confirmed
        landed = fetched.final_url or probe
        if not 200 <= fetched.status_code < 300:
            return landed, None  # a real 404: the site says what is gone
        try:  # read as the page is, under its own options
            page = read_page(job, fetched)
        except ExtractionError:
            return landed, None
        return landed, text_of(job, page.source_format, page.source)[:KEPT_CHARS]


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


def still_the_same(text: str, state: PageState | None) -> bool:
    """Whether a page reported gone shows the not-found page it was
    confirmed as (but for the digits of a time or a request id)."""
    return (
        state is not None
        and state.is_removed
        and bool(state.not_found_hash)
        and state.not_found_hash == fingerprint(text)
    )


def first_seen(state: PageState | None) -> bool:
    """Whether a page has neither content nor a removal to compare with:
    confirmed gone, its result is the first check's error."""
    return state is None or not (state.has_baseline or state.is_removed)


def gone(job: PageJob, outcome: Outcome, state: PageState | None, text: str) -> Outcome:
    """The outcome of a page confirmed to be the site's not-found page, as
    a 404 would have it for its kind: only what the answer said (address,
    status, type) is kept of it, and the fingerprint of its text (`text`)."""
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
            not_found_hash=fingerprint(text),
        )
    if state is not None and state.is_removed:
        # Still gone, as a page answering 404 again is: it costs what any
        # fetched page costs (checks.pipeline.extract).
        metadata["creditsUsed"] = job.credits
        return Outcome(
            PageResult.Status.SAME,
            metadata,
            status_code=code,
            error_kind=kind,
            not_found_hash=fingerprint(text),
        )
    return Outcome(
        PageResult.Status.ERROR,
        metadata,
        status_code=code,
        error=FIRST_WORDS.format(code=code),
        error_kind=kind,
    )


async def _cached(key: str) -> Any:
    try:
        return await cache.aget(key)
    except Exception:  # no cache: ask the site, as if none was kept
        logger.warning("The cache could not be read", exc_info=True)
        return None


async def _keep(key: str, value: Any) -> None:
    try:
        await cache.aset(key, value, SHARED_SECONDS)
    except Exception:
        logger.warning("The cache could not be written", exc_info=True)


def _where_unknown_addresses_land(job: PageJob, landed: str) -> bool:
    """Whether a page is its site's root, or the very page the made-up
    address landed on: where a site sends its unknown addresses is its home
    page or its app, whatever its words, never a page that is gone."""
    page, there = urlsplit(job.url), urlsplit(landed)
    if (page.path or "/") == "/":
        return True
    return (page.netloc.lower(), page.path) == (there.netloc.lower(), there.path)


def _key(job: PageJob, scope: Scope | None) -> str:
    """Which made-up address answers for this page: its host's, as this
    page's fetcher sees it, as its options and lines to ignore read it (two
    targets on one host may extract, or ask, otherwise), and as the rules of
    robots.txt it obeys allow it (its crawl's, which may name its own
    crawler or ignore them, or none)."""
    parts = urlsplit(job.url)
    robots = None if scope is None else [scope.ignore_robots, scope.agent]
    seen = [
        f"{parts.scheme}://{parts.netloc}",
        "browser" if job.browser else "http",
        job.options,
        job.ignore_lines,
        robots,
    ]
    canonical = json.dumps(seen, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]
