"""OutboundClient: the bounded async client every outbound request goes through.

One limiter (overall and per host), redirects followed here hop by hop and
each target re-validated, the decoded body capped, an overall deadline, and
httpx's exceptions turned into FetchError. Requests go straight to the guarded
transport: httpx's client would add a cookie jar, auth, redirect and hook
machinery that Pagewatch never uses (and cookies must never be kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import httpx
from django.conf import settings

from checks.content.guess import guessed_encoding
from checks.content.sniff import body_kind, media_type_of
from checks.errors import ErrorKind
from checks.fetch.body import BodyReader, check_declared_length
from checks.fetch.errors import FetchError, translate
from checks.fetch.hops import (
    REFRESH_STATUS,
    Hop,
    Options,
    first_hop,
    next_hop,
    wants_redirect,
)
from checks.fetch.refresh import refresh_location
from checks.fetch.transport import GuardedTransport, Resolver, system_resolver

logger = logging.getLogger(__name__)

# What httpx's client would add to every request.
_DEFAULT_HEADERS = (("Accept", "*/*"), ("Connection", "keep-alive"))


@dataclass
class FetchResult:
    url: str  # as requested
    final_url: str  # after redirects
    status_code: int
    headers: httpx.Headers
    # Decoded (gzip/deflate removed), at most the byte cap; only the first
    # bytes of a file that is not a page when fetched with pages_only.
    content: bytes
    redirects: list[str] = field(default_factory=list)  # each hop's target, in order
    elapsed_ms: int = 0
    _guessed_encoding: str | None = field(default=None, init=False, repr=False)

    def guessed_encoding(self) -> str:
        """The legacy encoding the body reads best in, for when it names none
        (checks.content.guess): guessed once, however many readers decode
        this response (its text, the scripts question, a crawl's links)."""
        if self._guessed_encoding is None:
            self._guessed_encoding = guessed_encoding(self.content, self.final_url)
        return self._guessed_encoding

    @property
    def text(self) -> str:
        """The body as text using the declared charset (page parsers sniff further)."""
        charset = httpx.Response(200, headers=self.headers).charset_encoding or "utf-8"
        try:
            return self.content.decode(charset, errors="replace")
        except (LookupError, UnicodeError):  # unknown, or a codec that reads nothing
            return self.content.decode("utf-8", errors="replace")


class _HostLimiter:
    """One overall semaphore plus one per host; idle hosts are forgotten so a
    long-lived client crawling many sites does not grow without bound."""

    def __init__(self, total: int, per_host: int):
        self._total = asyncio.Semaphore(total)
        self._per_host = per_host
        self._hosts: dict[str, tuple[asyncio.Semaphore, int]] = {}

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        semaphore, users = self._hosts.get(host, (asyncio.Semaphore(self._per_host), 0))
        self._hosts[host] = (semaphore, users + 1)
        try:
            # Host first, then the overall slot: a request queued behind its own
            # host must not sit on an overall slot other hosts could use.
            async with semaphore, self._total:
                yield
        finally:
            semaphore, users = self._hosts[host]
            if users == 1:
                del self._hosts[host]
            else:
                self._hosts[host] = (semaphore, users - 1)


class OutboundClient:
    """Shared, bounded async client: use one per worker or per crawl.

    `async with OutboundClient() as client: await client.fetch(url)`. Its pools
    and semaphores belong to the event loop that first uses them, so do not
    share one instance across loops (one per `asyncio.run`).
    """

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        concurrency: int | None = None,
        per_host_concurrency: int | None = None,
        private_hosts: frozenset[str] = frozenset(),
    ) -> None:
        self._total = concurrency or int(getattr(settings, "FETCH_CONCURRENCY", 16))
        per_host = per_host_concurrency or int(
            getattr(settings, "FETCH_PER_HOST_CONCURRENCY", 4)
        )
        self._resolver = resolver or system_resolver
        # Hosts allowed to be private addresses (see GuardedBackend).
        self._private_hosts = private_hosts
        self._limiter = _HostLimiter(self._total, per_host)
        self._transports: dict[bool, GuardedTransport] = {}

    async def __aenter__(self) -> OutboundClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        transports, self._transports = self._transports, {}
        for transport in transports.values():
            await transport.aclose()

    def _transport(self, verify: bool) -> GuardedTransport:
        # One per verify mode: the TLS context lives in the pool.
        if verify not in self._transports:
            self._transports[verify] = GuardedTransport(
                verify=verify,
                max_connections=self._total,
                resolver=self._resolver,
                private_hosts=self._private_hosts,
            )
        return self._transports[verify]

    async def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        timeout: float | None = None,
        max_bytes: int | None = None,
        follow_redirects: bool = True,
        max_redirects: int = 5,
        verify: bool = True,
        truncate: bool = False,
        follow_refresh: bool = False,
        pages_only: bool = False,
        stop_at: Callable[[str], bool] | None = None,
    ) -> FetchResult:
        """Same contract as `afetch`."""
        options = Options.build(
            timeout,
            max_bytes,
            follow_redirects,
            max_redirects,
            truncate,
            follow_refresh,
            pages_only,
        )
        hop = first_hop(url, method, headers, content)
        try:
            # No deadline until the first slot is ours: a request waiting for
            # its turn must not spend its own budget queueing.
            async with asyncio.timeout(None) as deadline:
                return await self._follow(
                    url, hop, options, self._transport(verify), deadline, stop_at
                )
        except TimeoutError:
            waited = f"{options.budget:g} s"
            raise FetchError(
                ErrorKind.TIMEOUT, host=hop.url.host, detail=waited
            ) from None

    async def _follow(
        self,
        url: str,
        hop: Hop,
        options: Options,
        transport: GuardedTransport,
        deadline: asyncio.Timeout,
        stop_at: Callable[[str], bool] | None = None,
    ) -> FetchResult:
        redirects: list[str] = []
        started = 0.0
        while True:
            async with self._limiter.slot(hop.url.host):
                if not started:
                    started = time.monotonic()
                    loop = asyncio.get_running_loop()
                    deadline.reschedule(loop.time() + options.budget)
                response, body = await self._send(transport, hop, options)
            status, location = response.status_code, None
            if wants_redirect(status, response.headers, options):
                location = response.headers["location"]
            elif options.follow_refresh:
                location = refresh_location(hop.url, status, response.headers, body)
                status = REFRESH_STATUS
            if location is None:
                return FetchResult(
                    url=url,
                    final_url=str(hop.url),
                    status_code=response.status_code,
                    headers=response.headers,
                    content=body,
                    redirects=redirects,
                    elapsed_ms=int((time.monotonic() - started) * 1000),
                )
            hop = next_hop(hop, status, location, len(redirects), options)
            redirects.append(str(hop.url))
            if stop_at is not None and stop_at(str(hop.url)):
                # Not followed: the redirect itself is the answer (a meta
                # refresh's as its 303), and the address it leads to is
                # where the page went.
                return FetchResult(
                    url=url,
                    final_url=str(hop.url),
                    status_code=status,
                    headers=response.headers,
                    content=b"",
                    redirects=redirects,
                    elapsed_ms=int((time.monotonic() - started) * 1000),
                )

    async def _send(
        self, transport: GuardedTransport, hop: Hop, options: Options
    ) -> tuple[httpx.Response, bytes]:
        timeout = options.httpx_timeout()
        request = _request(hop, timeout)
        try:
            response = await transport.handle_async_request(request)
            response.request = request
            # The origin only: a webhook's path and query are often its
            # receiver's credential (Slack, Discord), and a page's may be too.
            host = hop.url.netloc.rpartition(b"@")[2].decode("ascii")
            origin = f"{hop.url.scheme}://{host}"
            logger.debug("%s %s -> %s", hop.method, origin, response.status_code)
            try:
                if wants_redirect(response.status_code, response.headers, options):
                    return response, b""  # never read bodies we are about to leave
                try:
                    if not options.truncate:
                        check_declared_length(response.headers, options.max_bytes)
                    sniff = options.pages_only and 200 <= response.status_code < 300
                    reader = BodyReader(
                        response.headers.get("content-encoding", ""),
                        options.max_bytes,
                        truncate=options.truncate,
                        is_a_file=_file_test(response.headers) if sniff else None,
                    )
                    async for raw in response.aiter_raw():
                        reader.feed(raw)
                        if reader.full:
                            break  # the rest is never read; closing drops it
                    return response, reader.finish()
                except FetchError as exc:
                    exc.content_type = response.headers.get("content-type", "")
                    exc.status_code = response.status_code
                    raise
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise translate(exc, hop.url.host, timeout) from exc


def _file_test(headers: httpx.Headers) -> Callable[[bytes], bool]:
    """Whether a body's first bytes show a file that is not a page (an
    image, an archive, a binary download), as the extract stage will find
    it: its kind is decided from them alone (checks.content.sniff)."""
    media_type = media_type_of(headers.get("content-type", ""))
    return lambda head: body_kind(head, media_type) == "binary"


def _request(hop: Hop, timeout: httpx.Timeout) -> httpx.Request:
    headers = httpx.Headers(_DEFAULT_HEADERS)
    headers.update(hop.headers)
    return httpx.Request(
        hop.method,
        hop.url,
        headers=headers,
        content=hop.content,
        extensions={"timeout": timeout.as_dict()},
    )


async def afetch(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    timeout: float | None = None,
    max_bytes: int | None = None,
    follow_redirects: bool = True,
    max_redirects: int = 5,
    verify: bool = True,
    truncate: bool = False,
    follow_refresh: bool = False,
    pages_only: bool = False,
    stop_at: Callable[[str], bool] | None = None,
    client: OutboundClient | None = None,
) -> FetchResult:
    """Fetch one URL under the outbound policy; raises FetchError on any failure.

    `timeout` is the budget for the whole call, redirects included (default
    FETCH_TIMEOUT_SECONDS), counted from when the request may start (the
    client's limiter); connecting gets at most 10 s of it. Bodies larger than
    `max_bytes` after decompression (default FETCH_MAX_BYTES) are an error.
    With follow_redirects=False a 3xx is returned as-is (webhooks). With
    truncate=True a longer body is cut at `max_bytes` instead (robots.txt).
    With follow_refresh=True a page that is only a short <meta> refresh is
    followed like a redirect, in the same count (checks.fetch.refresh).
    With pages_only=True a successful answer whose first bytes show a file
    that is not a page (checks.content.sniff: an image, an archive) is read
    no further: its content is those bytes, which say so just as well, and
    a large download never sits in memory (page fetches).
    A redirect to an address `stop_at` is true of is not followed: the
    redirect's own answer is returned, bodiless, with `final_url` the
    address it leads to (a crawl never fetches a page out of its scope).
    """
    async with contextlib.AsyncExitStack() as own:
        if client is None:
            client = await own.enter_async_context(OutboundClient())
        return await client.fetch(
            url,
            method=method,
            headers=headers,
            content=content,
            timeout=timeout,
            max_bytes=max_bytes,
            follow_redirects=follow_redirects,
            max_redirects=max_redirects,
            verify=verify,
            truncate=truncate,
            follow_refresh=follow_refresh,
            pages_only=pages_only,
            stop_at=stop_at,
        )
