"""What a crawl knows before its first page: robots.txt and the sitemaps.

Both are fetched through the one outbound door (checks.fetch), under the
same address policy and limits as pages (checks.crawl.sitemaps: the
adapter that lets ultimate-sitemap-parser read through it).

robots.txt is read as RFC 9309 says: the first ROBOTS_MAX_BYTES of a larger
file (cut at its last whole line), as UTF-8 without a byte-order mark; up to
five redirects, each through the door; a 4xx answer (but 429) means there is
no robots.txt, so everything is allowed; a 5xx or 429 answer, or a server
that cannot be reached, means the site is fully disallowed for this crawl.
A refusal by our own address policy (a redirect to a private address) or a
redirect chain longer than five also counts as no robots.txt: the site did
not fail, we chose not to follow it, and its pages face the same policy.

A start URL that redirects to another site (example.com to example.co.uk)
moves the crawl there, as Firecrawl's crawler does: the first kilobyte of
the start page is fetched to learn where it leads, and that site's
robots.txt and sitemaps are the ones read.

The sitemaps read are those robots.txt declares; when it declares none (or
there is none), the one at /sitemap.xml, as Firecrawl's crawler reads it.

Every request after robots.txt keeps the crawl's pace (its `delay` option,
or the Crawl-delay robots.txt asks for), as its pages do.
"""

from __future__ import annotations

import asyncio
import codecs
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import urljoin

from checks.crawl.door import Paced
from checks.crawl.scope import Scope
from checks.errors import ErrorKind
from checks.fetch import FetchError, FetchResult, OutboundClient, Pace, Resolver

ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309: parse at least the first 500 KiB
# The rules of a site whose robots.txt could not be read; stored as its
# robots.txt (Crawl.robots), so every batch of the crawl obeys it too.
DISALLOW_ALL = "User-agent: *\nDisallow: /\n"
# Bytes of the start page read to learn where it redirects.
START_PROBE_BYTES = 1024
# Failures that are ours, not the site's: see the module's docstring.
_OUR_REFUSALS = frozenset(
    {ErrorKind.BLOCKED_ADDRESS, ErrorKind.INVALID_URL, ErrorKind.TOO_MANY_REDIRECTS}
)


@dataclass(frozen=True)
class Robots:
    text: str  # the rules to obey ("" allows everything)
    # Why robots.txt could not be read, in words ("" when it could, or when
    # there is none); `text` is then DISALLOW_ALL.
    unreadable: str = ""
    # The server could not be reached at all (no answer, not an error
    # answer): the site is down, not only its robots.txt.
    unreachable: bool = False
    fetched: FetchResult | None = None  # the answer whose body `text` is


@dataclass
class Discovery:
    # The crawl's rules, obeying the robots.txt read: those of the site the
    # start URL redirects to when it leads to another one (as Firecrawl's
    # crawler, the crawl moves there: its robots.txt, sitemaps and links are
    # that site's).
    scope: Scope
    robots_txt: str = ""
    robots_unreadable: str = ""
    site_unreachable: bool = False
    sitemap_urls: list[str] = field(default_factory=list)
    # Sitemaps that could not be fetched, with the error's kind and the
    # status answered, if any (checks.crawl.sitemaps.DoorWebClient.failed).
    sitemaps_failed: dict[str, tuple[ErrorKind | None, int | None]] = field(
        default_factory=dict
    )

    @property
    def start_url(self) -> str:
        """Where the crawl starts: its start URL, or the page on another
        site that it redirects to."""
        return self.scope.start_url


def discover(
    scope: Scope,
    *,
    sitemaps: bool,
    resolver: Resolver | None = None,
    alive: Callable[[], object] = lambda: None,
    verify: bool = True,
    timeout: float | None = None,
) -> Discovery:
    """robots.txt of the start URL's site, and (when wanted) the page URLs
    of the sitemaps it declares; of the site the start URL redirects to
    instead, when that is another one. The start page is asked where it
    leads only when its robots.txt lets the crawl fetch it. `alive` says
    the check is still running, before each request after robots.txt.
    robots.txt is read as the crawl's pages are fetched: with or without
    TLS verification (`verify`), within their `timeout`."""
    # Imported here: ultimate-sitemap-parser brings requests and urllib3,
    # which only a worker process that crawls needs.
    from checks.crawl.sitemaps import DoorWebClient, sitemap_pages

    with asyncio.Runner() as runner:
        client = OutboundClient(resolver=resolver, concurrency=1)
        try:
            read_as = {"verify": verify, "timeout": timeout}
            robots_url = urljoin(scope.start_url, "/robots.txt")
            robots = runner.run(read_robots(robots_url, client, **read_as))
            scope.obey(robots.text)
            door = Paced(runner, client, Pace(scope.delay()), alive)
            moved = None
            if not robots.unreadable and scope.robots_allow(scope.start):
                moved = redirect_of(scope.start_url, door)
            if moved is not None and not scope.is_same_site(moved):
                scope = Scope(moved, scope.options)
                robots_url = urljoin(moved, "/robots.txt")
                robots = runner.run(read_robots(robots_url, client, **read_as))
                scope.obey(robots.text)
                door = Paced(runner, client, Pace(scope.delay()), alive)
            found = Discovery(
                scope,
                robots_txt=robots.text,
                robots_unreadable=robots.unreadable,
                site_unreachable=robots.unreachable,
            )
            if sitemaps and not robots.unreadable:
                web = DoorWebClient(door)
                declared = "sitemap:" in robots.text.lower()
                if declared and robots.fetched:
                    web.remember(robots_url, robots.fetched)  # fetched once
                found.sitemap_urls = sitemap_pages(
                    scope.start_url, web, declared=declared
                )
                found.sitemaps_failed = web.failed
            if door.stopped is not None:
                raise door.stopped  # the sitemaps' reader keeps errors to itself
        finally:
            runner.run(client.aclose())
    return found


def redirect_of(url: str, door: Paced) -> str | None:
    """Where the page at `url` redirects to (None when it does not, or
    cannot be fetched): its first bytes are enough to know."""
    try:
        fetched = door.fetch(url, max_bytes=START_PROBE_BYTES, truncate=True)
    except FetchError:
        return None
    return fetched.final_url if fetched.redirects else None


async def robots_of(
    origin: str,
    client: OutboundClient,
    *,
    verify: bool = True,
    timeout: float | None = None,
) -> str:
    """The rules of robots.txt of another host met during the crawl, read
    as the page that links to it was fetched (see read_robots)."""
    url = urljoin(origin, "/robots.txt")
    return (await read_robots(url, client, verify=verify, timeout=timeout)).text


async def read_robots(
    url: str,
    client: OutboundClient,
    *,
    verify: bool = True,
    timeout: float | None = None,
) -> Robots:
    """robots.txt at `url`, read as a page asking for it is fetched (with or
    without TLS verification, within its timeout)."""
    try:
        fetched = await client.fetch(
            url,
            max_bytes=ROBOTS_MAX_BYTES,
            truncate=True,
            verify=verify,
            timeout=timeout,
        )
    except FetchError as exc:
        if exc.kind in _OUR_REFUSALS:
            return Robots("")
        return Robots(DISALLOW_ALL, unreadable=exc.message, unreachable=True)
    status = fetched.status_code
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return _unreadable(f"the server answered {status}: too many requests")
    if status >= 500:
        return _unreadable(f"the server answered {status}: an error on its side")
    if not 200 <= status < 300:
        return Robots("")  # 4xx, or a 3xx without a place to go: none
    content = fetched.content
    if len(content) >= ROBOTS_MAX_BYTES and b"\n" in content:
        content = content[: content.rindex(b"\n") + 1]  # no half rule
    text = content.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")
    body = dataclasses.replace(fetched, content=text.encode())
    return Robots(text, fetched=body)


def _unreadable(why: str) -> Robots:
    return Robots(DISALLOW_ALL, unreadable=why)
