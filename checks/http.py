"""The one door for outbound HTTP in Pagewatch.

Page fetches, the crawler, robots/sitemaps, webhooks, the search backend and the
LLM judge all call `fetch` / `afetch` / `OutboundClient` here, never httpx
directly, so every request gets the same guarantees:

* the address policy is applied to the address actually connected to: a custom
  httpcore network backend resolves the host once, refuses if any answer is
  forbidden and connects to that exact IP (TLS still verifies the hostname), so
  DNS rebinding cannot slip a second, private answer past the check;
* redirects are followed here, hop by hop, each target re-validated, with
  credentials and caller headers dropped when the origin changes;
* connect/read timeouts plus an overall deadline, a cap on the *decoded* body
  (gzip bombs), bounded concurrency overall and per host, `trust_env=False`,
  no cookie jar, a fixed User-Agent.

Settings (read lazily, so tests can override them): ALLOW_PRIVATE_NETWORK_TARGETS,
FETCH_TIMEOUT_SECONDS, FETCH_MAX_BYTES, FETCH_CONCURRENCY,
FETCH_PER_HOST_CONCURRENCY, OUTBOUND_USER_AGENT.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import re
import select
import socket
import ssl
import time
import unicodedata
import zlib
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx
from django.conf import settings
from isal import isal_zlib

logger = logging.getLogger(__name__)

__all__ = [
    "FetchError",
    "FetchErrorKind",
    "FetchRequest",
    "FetchResult",
    "OutboundClient",
    "Resolver",
    "address_block_reason",
    "afetch",
    "fetch",
    "fetch_many",
    "ip_literal",
    "system_resolver",
    "url_syntax_error",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> IP address strings. Injectable so tests can play a hostile DNS.
Resolver = Callable[[str, int], Sequence[str]]

MAX_URL_LENGTH = 2048
DEFAULT_USER_AGENT = "Pagewatch/0.1 (+https://github.com/pagewatch)"
CONNECT_TIMEOUT_SECONDS = 10.0
# A host name with several addresses gets this many connection attempts at most,
# so a long answer list cannot multiply the connect timeout without bound.
MAX_CONNECT_ATTEMPTS = 3
# We decode bodies ourselves (to cap them while decompressing), so we only
# advertise the encodings we can decode with a bounded output size.
ACCEPT_ENCODING = "gzip, deflate"
_DECODE_PIECE = 64 * 1024
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_TRANSPORT_HEADERS = (
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "proxy-authorization",
    "te",
    "upgrade",
)
_BODY_HEADERS = (
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
)


# --- Settings -------------------------------------------------------------------
# Read on every call, never at import: the lead's settings may load after us and
# tests flip them with pytest-django's `settings` fixture.


def _allow_private() -> bool:
    return bool(getattr(settings, "ALLOW_PRIVATE_NETWORK_TARGETS", False))


def _default_timeout() -> float:
    return float(getattr(settings, "FETCH_TIMEOUT_SECONDS", 30))


def _default_max_bytes() -> int:
    return int(getattr(settings, "FETCH_MAX_BYTES", 10 * 1024 * 1024))


def _user_agent() -> str:
    return str(getattr(settings, "OUTBOUND_USER_AGENT", DEFAULT_USER_AGENT))


# --- Address policy -------------------------------------------------------------

# Blocked even when ALLOW_PRIVATE_NETWORK_TARGETS is on: a self-hoster who wants
# to watch their NAS must not also hand out the cloud instance's credentials.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, DigitalOcean, OpenStack...
        "169.254.170.2",  # AWS ECS task credentials
        "100.100.100.200",  # Alibaba Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "168.63.129.16",  # Azure WireServer (not private, but never a web page)
    )
)

# (network, what it is, may ALLOW_PRIVATE_NETWORK_TARGETS open it?). Ordered:
# more specific networks before the ones containing them. Python's `is_global`
# misses several of these (192.0.0.0/24, multicast, 3fff::/20...), hence a list.
_RANGES: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str, bool], ...] = (
    tuple(
        (ipaddress.ip_network(net), label, allowable)
        for net, label, allowable in (
            ("0.0.0.0/8", "a 'this network' address", False),
            ("10.0.0.0/8", "a private address", True),
            # CGNAT is allowable because Tailscale and similar VPNs live here.
            ("100.64.0.0/10", "a carrier-grade NAT address", True),
            ("127.0.0.0/8", "a loopback address", True),
            ("169.254.0.0/16", "a link-local address", True),
            ("172.16.0.0/12", "a private address", True),
            ("192.0.0.0/24", "an IETF protocol assignment address", False),
            ("192.0.2.0/24", "a documentation address", False),
            ("192.88.99.0/24", "a 6to4 relay address", False),
            ("192.168.0.0/16", "a private address", True),
            ("198.18.0.0/15", "a benchmarking address", False),
            ("198.51.100.0/24", "a documentation address", False),
            ("203.0.113.0/24", "a documentation address", False),
            ("224.0.0.0/4", "a multicast address", False),
            ("255.255.255.255/32", "the broadcast address", False),
            ("240.0.0.0/4", "a reserved address", False),
            ("::/128", "the unspecified address", False),
            ("::1/128", "a loopback address", True),
            ("::/96", "a deprecated IPv4-compatible address", False),
            ("64:ff9b:1::/48", "a local-use NAT64 address", False),
            ("100::/64", "a discard-only address", False),
            ("2001::/32", "a Teredo tunnel address", False),
            ("2001::/23", "an IETF protocol assignment address", False),
            ("2001:db8::/32", "a documentation address", False),
            ("3fff::/20", "a documentation address", False),
            ("fc00::/7", "a private address", True),
            ("fe80::/10", "a link-local address", True),
            ("fec0::/10", "a deprecated site-local address", False),
            ("ff00::/8", "a multicast address", False),
        )
    )
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def address_block_reason(ip: IPAddress, allow_private: bool) -> str | None:
    """Why Pagewatch must not connect to `ip`, or None when it may.

    `allow_private` opens loopback, private, link-local and CGNAT ranges (for
    self-hosters and tests); metadata addresses and everything else stay shut.
    """
    label = _forbidden_label(ip, allow_private)
    return None if label is None else f"{ip} is {label}"


def _forbidden_label(ip: IPAddress, allow_private: bool) -> str | None:
    if ip in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        wrapped = _wrapped_ipv4(ip)
        if wrapped is not None:
            # Packets really go to (or are translated to) the IPv4 inside, so
            # that address is what we judge.
            kind, v4 = wrapped
            inner = _forbidden_label(v4, allow_private)
            return None if inner is None else f"{kind} for {v4}, which is {inner}"
    for network, label, allowable in _RANGES:
        if ip in network:
            return None if allowable and allow_private else label
    if not ip.is_global or ip.is_reserved or ip.is_multicast:
        return "not a public address"
    return None


def _wrapped_ipv4(
    ip: ipaddress.IPv6Address,
) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address carried inside an IPv4-mapped, NAT64 or 6to4 address."""
    if ip.ipv4_mapped is not None:
        return "an IPv4-mapped address", ip.ipv4_mapped
    if ip in _NAT64:
        return "a NAT64 address", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return "a 6to4 address", ip.sixtofour
    return None


def ip_literal(host: str) -> IPAddress | None:
    """The address `host` denotes if it is an IP literal, the way a resolver reads it.

    Besides dotted quads and IPv6 this accepts the inet_aton(3) forms that
    getaddrinfo also accepts (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`), so
    they are judged as the loopback address they are, not as host names.
    """
    bare = host.removeprefix("[").removesuffix("]")
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(bare)
    return _inet_aton(bare)


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # "127.1." is still 127.0.0.1 to most resolvers
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_inet_number(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = (n for n in numbers if n is not None)
    # The last part fills all the bytes the earlier parts did not: 127.1 -> 127.0.0.1.
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = sum(n << (8 * (3 - i)) for i, n in enumerate(head)) + last
    return ipaddress.IPv4Address(value)


def _inet_number(part: str) -> int | None:
    if re.fullmatch(r"0[xX][0-9a-fA-F]*", part):
        return int(part[2:] or "0", 16)
    if re.fullmatch(r"0[0-7]*", part):
        return int(part, 8)
    if re.fullmatch(r"[1-9][0-9]*", part):
        return int(part)
    return None


# --- URL syntax -----------------------------------------------------------------

_HOST_NAME = re.compile(r"[a-z0-9._-]+")


def url_syntax_error(url: str) -> str | None:
    """The one URL rule shared by the API, the forms and every fetch hop.

    Returns a message fit to show a user, or None. Addresses are not judged here
    (that needs DNS); they are judged at connect time.
    """
    return _checked_url(url)[1]


def _checked_url(url: str) -> tuple[httpx.URL | None, str | None]:
    """(the parsed URL, None) when url_syntax_error() finds nothing, else
    (None, its message): a fetch hop needs the parsed URL anyway."""
    if not url:
        return None, "Enter a URL."
    if len(url) > MAX_URL_LENGTH:
        return None, f"URL is longer than {MAX_URL_LENGTH} characters."
    if _has_space_or_control(url):
        return None, "URL must not contain spaces or control characters."
    if "\\" in url:
        # Browsers read "\" as "/", Python does not: refuse the ambiguity.
        return None, "URL must not contain backslashes."
    try:
        parts = urlsplit(url)
    except ValueError:
        return None, "URL is not valid."
    if parts.scheme.lower() not in ("http", "https"):
        return None, "Only http:// and https:// URLs are allowed."
    if "@" in parts.netloc:
        return None, "URL must not contain a user name or password."
    if not parts.hostname:
        return None, "URL must include a host name."
    error = _port_error(url)
    if error is not None:
        return None, error
    return _parsed_host(url)


def _has_space_or_control(url: str) -> bool:
    if url.isascii():  # the usual URL: C-speed checks, no per-character loop
        return not url.isprintable() or " " in url
    return any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in url)


def _port_error(url: str) -> str | None:
    try:
        port = urlsplit(url).port
    except ValueError:
        return "URL has an invalid port."
    if port is not None and not 1 <= port <= 65535:
        return "URL has an invalid port."
    return None


def _parsed_host(url: str) -> tuple[httpx.URL | None, str | None]:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return None, "URL is not valid."
    host = parsed.raw_host.decode("ascii")
    if ":" in host:  # IPv6 literal, already validated by httpx; zone ids are not
        return (parsed, None) if "%" not in host else (None, "URL host is not valid.")
    if not _HOST_NAME.fullmatch(host):
        return None, "URL host contains characters that are not allowed."
    return parsed, None


# --- Results and errors ---------------------------------------------------------

FetchErrorKind = Literal[
    "blocked",
    "invalid_url",
    "timeout",
    "connect",
    "tls",
    "too_large",
    "too_many_redirects",
    "protocol",
]


class FetchError(Exception):
    """A fetch that did not produce a response; `message` is safe to show users."""

    def __init__(self, kind: FetchErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: FetchErrorKind = kind
        self.message = message

    def __repr__(self) -> str:
        return f"FetchError({self.kind!r}, {self.message!r})"


@dataclass
class FetchResult:
    url: str  # as requested
    final_url: str  # after redirects
    status_code: int
    headers: httpx.Headers
    # Decoded (gzip/deflate removed), at most the byte cap; unless the fetch
    # asked for decode=False: then as received, still encoded with
    # `content_encoding`, for decode_body() to undo where the body is used.
    content: bytes
    redirects: list[str] = field(default_factory=list)  # each hop's target, in order
    elapsed_ms: int = 0
    content_encoding: str = ""

    @property
    def text(self) -> str:
        """The body as text using the declared charset (page parsers sniff further)."""
        charset = httpx.Response(200, headers=self.headers).charset_encoding or "utf-8"
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class FetchRequest:
    """One item for `fetch_many` when a plain URL is not enough."""

    url: str
    method: str = "GET"
    headers: Mapping[str, str] | None = None
    content: bytes | None = None


# --- Resolution and the guarded network backends --------------------------------


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's answer for `host`, unique addresses in its order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchError("connect", f"Could not resolve {host}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _ask(resolver: Resolver, host: str, port: int) -> Sequence[str]:
    try:
        return resolver(host, port)
    except OSError as exc:
        raise FetchError("connect", f"Could not resolve {host}") from exc


def _vetted(host: str, answers: Sequence[str]) -> list[IPAddress]:
    """Parse a resolver's answers and refuse them all if any one is forbidden.

    All-or-nothing because a rebinding attacker controls the order of answers.
    """
    if not answers:
        raise FetchError("connect", f"Could not resolve {host}")
    try:
        ips = [ipaddress.ip_address(answer.split("%", 1)[0]) for answer in answers]
    except ValueError as exc:
        raise FetchError("connect", f"Could not resolve {host}") from exc
    allow_private = _allow_private()
    for ip in ips:
        reason = address_block_reason(ip, allow_private)
        if reason is not None:
            suffix = "" if ip_literal(host) is not None else f" ({host} resolves to it)"
            raise FetchError("blocked", f"Blocked: {reason}{suffix}")
    return ips[:MAX_CONNECT_ATTEMPTS]


class GuardedBackend(httpcore.NetworkBackend):
    """Sync backend: resolve once, vet every answer, connect to a vetted IP.

    httpcore still does TLS with the original host name (SNI and certificate
    checks), because it passes its origin host to `start_tls`, not ours.
    """

    def __init__(
        self, resolver: Resolver, inner: httpcore.NetworkBackend | None = None
    ):
        self._resolver = resolver
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        literal = ip_literal(host)
        if literal is not None:
            answers: Sequence[str] = [str(literal)]
        else:
            answers = _ask(self._resolver, host, port)
        last_error: Exception | None = None
        for ip in _vetted(host, answers):
            try:
                return self._inner.connect_tcp(
                    str(ip), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        raise FetchError("blocked", "Blocked: Unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _readable(sock: socket.socket | None) -> bool:
    """Whether a read on `sock` would return at once (data, or the end of an
    idle keep-alive connection the server closed); a gone socket counts."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _KeepAliveStream(httpcore.AsyncNetworkStream):
    """The inner stream, with its liveness probe answered from the socket
    kept at connect time. httpcore probes every idle connection of the pool
    ("is_readable") each time it hands out a request; anyio rebuilds its whole
    attribute table for each probe (a getpeername() call among others): about
    5% of a page fetch's CPU time on loopback."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        tls = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _KeepAliveStream(tls)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


class AsyncGuardedBackend(httpcore.AsyncNetworkBackend):
    """Async twin of `GuardedBackend`; the resolver runs in a worker thread."""

    def __init__(
        self, resolver: Resolver, inner: httpcore.AsyncNetworkBackend | None = None
    ):
        self._resolver = resolver
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        literal = ip_literal(host)
        if literal is not None:
            answers: Sequence[str] = [str(literal)]
        else:
            answers = await self._resolve(host, port, timeout)
        last_error: Exception | None = None
        for ip in _vetted(host, answers):
            try:
                stream = await self._inner.connect_tcp(
                    str(ip), port, timeout, local_address, socket_options
                )
                return _KeepAliveStream(stream)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def _resolve(
        self, host: str, port: int, timeout: float | None
    ) -> Sequence[str]:
        # getaddrinfo cannot be interrupted; abandoning the thread keeps a slow
        # DNS server from holding the caller past its connect timeout.
        try:
            with anyio.fail_after(timeout):
                return await anyio.to_thread.run_sync(
                    _ask, self._resolver, host, port, abandon_on_cancel=True
                )
        except TimeoutError:
            raise FetchError("timeout", f"Timed out resolving {host}") from None

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise FetchError("blocked", "Blocked: Unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def _ssl_context(verify: bool) -> ssl.SSLContext:
    # Loading the CA bundle costs ~20 ms; contexts are safe to share, and the
    # sync door builds a client per call.
    return httpx.create_ssl_context(verify=verify, trust_env=False)


def _pool_options(verify: bool, limits: httpx.Limits) -> dict[str, Any]:
    return {
        "ssl_context": _ssl_context(verify),
        "max_connections": limits.max_connections,
        "max_keepalive_connections": limits.max_keepalive_connections,
        "keepalive_expiry": limits.keepalive_expiry,
    }


class _GuardedTransport(httpx.HTTPTransport):
    # httpx 0.28 takes no network backend, so we swap in a pool built like its
    # own but with ours. Pinned by httpx<1; tests fail loudly if this breaks.
    def __init__(self, *, verify: bool, limits: httpx.Limits, resolver: Resolver):
        super().__init__(verify=_ssl_context(verify), limits=limits, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            **_pool_options(verify, limits), network_backend=GuardedBackend(resolver)
        )


class _AsyncGuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, *, verify: bool, limits: httpx.Limits, resolver: Resolver):
        super().__init__(verify=_ssl_context(verify), limits=limits, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            **_pool_options(verify, limits),
            network_backend=AsyncGuardedBackend(resolver),
        )


# What httpx's client would add to every request; requests go straight to
# the transport (the client's cookie jar, auth, redirect and hook machinery
# cost about a tenth of a fetch's CPU, and cookies must never be kept anyway).
_DEFAULT_HEADERS = (("Accept", "*/*"), ("Connection", "keep-alive"))


def _request(hop: _Hop, timeout: httpx.Timeout) -> httpx.Request:
    headers = httpx.Headers(_DEFAULT_HEADERS)
    headers.update(hop.headers)
    return httpx.Request(
        hop.method,
        hop.url,
        headers=headers,
        content=hop.content,
        extensions={"timeout": timeout.as_dict()},
    )


def _sent(request: httpx.Request, response: httpx.Response) -> None:
    response.request = request
    logger.debug("%s %s -> %s", request.method, request.url, response.status_code)


# --- Redirect chain (pure, shared by sync and async) ----------------------------


@dataclass(frozen=True)
class _Options:
    budget: float  # seconds for the whole call, redirects included
    max_bytes: int
    follow_redirects: bool
    max_redirects: int
    decode: bool = True

    @classmethod
    def build(
        cls,
        timeout: float | None,
        max_bytes: int | None,
        follow_redirects: bool,
        max_redirects: int,
        decode: bool = True,
    ) -> _Options:
        return cls(
            budget=timeout if timeout is not None else _default_timeout(),
            max_bytes=max_bytes if max_bytes is not None else _default_max_bytes(),
            follow_redirects=follow_redirects,
            max_redirects=max_redirects,
            decode=decode,
        )

    def httpx_timeout(self, remaining: float) -> httpx.Timeout:
        budget = max(min(self.budget, remaining), 0.001)
        return httpx.Timeout(budget, connect=min(CONNECT_TIMEOUT_SECONDS, budget))


@dataclass
class _Hop:
    method: str
    url: httpx.URL
    headers: httpx.Headers
    content: bytes | None


def _first_hop(
    url: str, method: str, headers: Mapping[str, str] | None, content: bytes | None
) -> _Hop:
    parsed, error = _checked_url(url)
    if parsed is None:
        raise FetchError("invalid_url", error or "URL is not valid.")
    hop_headers = httpx.Headers(headers or {})
    for name in _TRANSPORT_HEADERS:
        # These describe the connection, which is ours to manage: a caller's
        # Host or Content-Length could only confuse or smuggle.
        hop_headers.pop(name, None)
    hop_headers.setdefault("User-Agent", _user_agent())
    hop_headers["Accept-Encoding"] = ACCEPT_ENCODING
    return _Hop(method.upper(), parsed, hop_headers, content)


def _wants_redirect(status: int, headers: httpx.Headers, options: _Options) -> bool:
    return (
        options.follow_redirects
        and status in _REDIRECT_STATUSES
        and "location" in headers
    )


def _next_hop(
    hop: _Hop, status: int, headers: httpx.Headers, done: int, options: _Options
) -> _Hop:
    if done >= options.max_redirects:
        raise FetchError(
            "too_many_redirects", f"Stopped after {options.max_redirects} redirects"
        )
    target = _redirect_target(hop.url, headers["location"])
    method, content, hop_headers = hop.method, hop.content, hop.headers.copy()
    # What browsers do: 303 always, and 301/302 after a POST, become a bodiless GET.
    if (status == 303 and method != "HEAD") or (
        status in (301, 302) and method == "POST"
    ):
        method, content = "GET", None
        for name in _BODY_HEADERS:
            hop_headers.pop(name, None)
    if not _may_keep_headers(hop.url, target):
        # Caller headers (Authorization, Cookie, API keys...) were meant for the
        # first origin only. The User-Agent is not a secret and stays.
        kept = {
            "User-Agent": hop_headers["user-agent"],
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        if content is not None and "content-type" in hop_headers:
            kept["Content-Type"] = hop_headers["content-type"]  # 307/308 keep the body
        hop_headers = httpx.Headers(kept)
    return _Hop(method, target, hop_headers, content)


def _redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    if "\\" in location:
        raise FetchError("invalid_url", "Redirect location contains a backslash")
    try:
        target = current.join(location)
    except httpx.InvalidURL:
        raise FetchError(
            "invalid_url", "Redirect location is not a valid URL"
        ) from None
    error = url_syntax_error(str(target))
    if error is not None:
        raise FetchError(
            "invalid_url", f"Redirect to {str(target)[:200]} refused: {error}"
        )
    return target


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _may_keep_headers(current: httpx.URL, target: httpx.URL) -> bool:
    if _origin(current) == _origin(target):
        return True
    # http://host -> https://host on default ports is an upgrade, not a new
    # party: nothing is sent that the first hop did not already expose.
    return _origin(current) == ("http", target.host, 80) and _origin(target) == (
        "https",
        target.host,
        443,
    )


# --- Body decoding with a cap ---------------------------------------------------


# ISA-L's inflate: the zlib interface, about three times faster on gzip pages.
_INFLATE_ERRORS = (isal_zlib.error, zlib.error)


class _ZlibStage:
    """Decompresses in bounded pieces so a 1 KB bomb never becomes 1 GB in RAM."""

    def __init__(self, coding: str):
        self._coding = coding
        self._raw_deflate = False
        self._started = False
        self._z = isal_zlib.decompressobj(self._wbits())

    def _wbits(self) -> int:
        if self._coding == "deflate":
            return -zlib.MAX_WBITS if self._raw_deflate else zlib.MAX_WBITS
        return 16 + zlib.MAX_WBITS

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            yield from self._drain(data)
        except _INFLATE_ERRORS as exc:
            if self._coding != "deflate" or self._started or self._raw_deflate:
                raise FetchError(
                    "protocol", f"Could not decode the {self._coding} body"
                ) from exc
            # Many servers send raw deflate without the zlib header.
            self._raw_deflate = True
            self._z = isal_zlib.decompressobj(self._wbits())
            yield from self.feed(data)

    def _drain(self, data: bytes) -> Iterator[bytes]:
        while True:
            out = self._z.decompress(data, _DECODE_PIECE)
            self._started = True  # past the header: no more format guessing
            data = self._z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < _DECODE_PIECE:
                return

    def flush(self) -> Iterator[bytes]:
        with contextlib.suppress(*_INFLATE_ERRORS):  # truncated: keep what decoded
            tail = self._z.flush()
            if tail:
                yield tail


class _BodyReader:
    """Turns raw (still content-encoded) chunks into the decoded body, or raises
    `too_large` the moment the decoded size passes the cap."""

    def __init__(self, content_encoding: str, limit: int):
        self._stages = _stages_for(content_encoding)
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, raw: bytes) -> None:
        for piece in self._through(raw, 0):
            self._keep(piece)

    def finish(self) -> bytes:
        for index, stage in enumerate(self._stages):
            for piece in stage.flush():
                for decoded in self._through(piece, index + 1):
                    self._keep(decoded)
        return b"".join(self._parts)

    def _through(self, data: bytes, start: int) -> Iterator[bytes]:
        if start == len(self._stages):
            yield data
            return
        for piece in self._stages[start].feed(data):
            yield from self._through(piece, start + 1)

    def _keep(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._size > self._limit:
            raise FetchError(
                "too_large", f"Page is larger than {_human_size(self._limit)}"
            )
        self._parts.append(piece)


def _stages_for(content_encoding: str) -> list[_ZlibStage]:
    # Encodings are listed in the order applied, so they are undone in reverse.
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    stages = []
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip", "deflate"):
            stages.append(_ZlibStage("deflate" if coding == "deflate" else "gzip"))
        elif coding in ("br", "zstd", "compress", "x-compress"):
            raise FetchError(
                "protocol", f"Server sent an unsupported encoding ({coding})"
            )
        # Anything else ("identity", or junk like "utf-8") is passed through, as
        # browsers and httpx do.
    return stages


def _check_declared_length(response: httpx.Response, limit: int) -> None:
    # Refuse before reading when an uncompressed body says it is too big.
    if "content-encoding" in response.headers:
        return
    with contextlib.suppress(KeyError, ValueError):
        if int(response.headers["content-length"]) > limit:
            raise FetchError("too_large", f"Page is larger than {_human_size(limit)}")


def _human_size(n: int) -> str:
    mb = 1024 * 1024
    if n >= mb:
        return f"{n / mb:.3g} MB"
    if n >= 1024:
        return f"{n / 1024:.3g} KB"
    return f"{n} bytes"


# --- Error translation ----------------------------------------------------------


def _translate(exc: httpx.HTTPError, url: httpx.URL) -> FetchError:
    """An httpx exception as a FetchError whose message a user can act on."""
    host = url.host
    if isinstance(exc, httpx.ConnectTimeout):
        return FetchError("timeout", f"Timed out connecting to {host}")
    if isinstance(exc, httpx.TimeoutException):
        return FetchError("timeout", f"{host} did not respond in time")
    verify_error = _cause(exc, ssl.SSLCertVerificationError)
    if verify_error is not None:
        detail = getattr(verify_error, "verify_message", "") or "certificate rejected"
        return FetchError("tls", f"TLS certificate of {host} is not valid ({detail})")
    if _cause(exc, ssl.SSLError) is not None:
        return FetchError("tls", f"TLS handshake with {host} failed")
    if _cause(exc, ConnectionRefusedError) is not None:
        return FetchError("connect", f"Connection refused by {host}")
    if isinstance(exc, httpx.ConnectError):
        return FetchError("connect", f"Could not connect to {host}")
    if isinstance(exc, httpx.NetworkError):
        return FetchError("connect", f"Connection to {host} was interrupted")
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return FetchError("invalid_url", f"URL is not valid: {exc}")
    return FetchError("protocol", f"{host} sent an invalid HTTP response")


def _cause[E: BaseException](exc: BaseException, kind: type[E]) -> E | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _result(
    url: str,
    hop: _Hop,
    response: httpx.Response,
    body: bytes,
    redirects: list[str],
    started: float,
    options: _Options,
) -> FetchResult:
    return FetchResult(
        url=url,
        final_url=str(hop.url),
        status_code=response.status_code,
        headers=response.headers,
        content=body,
        redirects=redirects,
        elapsed_ms=int((time.monotonic() - started) * 1000),
        content_encoding=(
            "" if options.decode else response.headers.get("content-encoding", "")
        ),
    )


def decode_body(body: bytes, content_encoding: str, max_bytes: int) -> bytes:
    """Undo `content_encoding` on a body fetched with decode=False, in bounded
    pieces; raises FetchError("too_large") past `max_bytes` decoded, as the
    fetch itself would have."""
    if not content_encoding:
        return body
    reader = _BodyReader(content_encoding, max_bytes)
    reader.feed(body)
    return reader.finish()


# --- Async API ------------------------------------------------------------------


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
    ) -> None:
        total = concurrency or int(getattr(settings, "FETCH_CONCURRENCY", 16))
        per_host = per_host_concurrency or int(
            getattr(settings, "FETCH_PER_HOST_CONCURRENCY", 4)
        )
        self._resolver = resolver or system_resolver
        self._limiter = _HostLimiter(total, per_host)
        self._limits = httpx.Limits(
            max_connections=total, max_keepalive_connections=total
        )
        self._transports: dict[bool, _AsyncGuardedTransport] = {}

    async def __aenter__(self) -> OutboundClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        transports, self._transports = self._transports, {}
        for transport in transports.values():
            await transport.aclose()

    def _transport(self, verify: bool) -> _AsyncGuardedTransport:
        # One per verify mode: the TLS context lives in the pool.
        if verify not in self._transports:
            self._transports[verify] = _AsyncGuardedTransport(
                verify=verify, limits=self._limits, resolver=self._resolver
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
        decode: bool = True,
    ) -> FetchResult:
        """Same contract as `afetch`. With decode=False the body comes back as
        received (see FetchResult.content_encoding): a caller that parses it
        in another process decodes it there, with the same cap."""
        options = _Options.build(
            timeout, max_bytes, follow_redirects, max_redirects, decode
        )
        hop = _first_hop(url, method, headers, content)
        started = time.monotonic()
        try:
            async with asyncio.timeout(options.budget):
                return await self._follow(
                    url, hop, options, self._transport(verify), started
                )
        except TimeoutError:
            raise FetchError(
                "timeout", f"Gave up on {hop.url.host} after {options.budget:g} s"
            ) from None

    async def _follow(
        self,
        url: str,
        hop: _Hop,
        options: _Options,
        transport: _AsyncGuardedTransport,
        started: float,
    ) -> FetchResult:
        redirects: list[str] = []
        while True:
            async with self._limiter.slot(hop.url.host):
                response, body = await self._send(transport, hop, options)
            if not _wants_redirect(response.status_code, response.headers, options):
                return _result(url, hop, response, body, redirects, started, options)
            hop = _next_hop(
                hop, response.status_code, response.headers, len(redirects), options
            )
            redirects.append(str(hop.url))

    async def _send(
        self, transport: _AsyncGuardedTransport, hop: _Hop, options: _Options
    ) -> tuple[httpx.Response, bytes]:
        request = _request(hop, options.httpx_timeout(options.budget))
        try:
            response = await transport.handle_async_request(request)
            _sent(request, response)
            try:
                if _wants_redirect(response.status_code, response.headers, options):
                    return response, b""  # never read bodies we are about to leave
                _check_declared_length(response, options.max_bytes)
                # Undecoded, the reader still caps what is received.
                encoding = response.headers.get("content-encoding", "")
                reader = _BodyReader(
                    encoding if options.decode else "", options.max_bytes
                )
                async for raw in response.aiter_raw():
                    reader.feed(raw)
                return response, reader.finish()
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise _translate(exc, hop.url) from exc

    async def fetch_many(
        self, items: Iterable[str | FetchRequest], **options: Any
    ) -> list[FetchResult | FetchError]:
        """Fetch all items concurrently within the limits; results keep input order."""
        return list(
            await asyncio.gather(*(self._fetch_one(item, options) for item in items))
        )

    async def _fetch_one(
        self, item: str | FetchRequest, options: dict[str, Any]
    ) -> FetchResult | FetchError:
        request = FetchRequest(item) if isinstance(item, str) else item
        try:
            return await self.fetch(
                request.url,
                method=request.method,
                headers=request.headers,
                content=request.content,
                **options,
            )
        except FetchError as exc:
            return exc


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
    client: OutboundClient | None = None,
) -> FetchResult:
    """Fetch one URL under the outbound policy; raises FetchError on any failure.

    `timeout` is the budget for the whole call, redirects included (default
    FETCH_TIMEOUT_SECONDS); connecting gets at most 10 s of it. Bodies larger
    than `max_bytes` after decompression (default FETCH_MAX_BYTES) are an error.
    With follow_redirects=False a 3xx is returned as-is (webhooks).
    """
    options = {
        "method": method,
        "headers": headers,
        "content": content,
        "timeout": timeout,
        "max_bytes": max_bytes,
        "follow_redirects": follow_redirects,
        "max_redirects": max_redirects,
        "verify": verify,
    }
    if client is not None:
        return await client.fetch(url, **options)
    async with OutboundClient() as own_client:
        return await own_client.fetch(url, **options)


async def fetch_many(
    items: Iterable[str | FetchRequest],
    *,
    client: OutboundClient | None = None,
    **options: Any,
) -> list[FetchResult | FetchError]:
    """`OutboundClient.fetch_many` with a client made for the occasion if none given."""
    if client is not None:
        return await client.fetch_many(items, **options)
    async with OutboundClient() as own_client:
        return await own_client.fetch_many(items, **options)


# --- Sync API -------------------------------------------------------------------


def fetch(
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
    resolver: Resolver | None = None,
) -> FetchResult:
    """Blocking `afetch` for Celery tasks (webhook deliveries).

    Same contract, one short-lived client per call. The overall deadline is
    checked between reads and shortens each hop's timeouts, since blocking
    sockets cannot be cancelled from outside.
    """
    options = _Options.build(timeout, max_bytes, follow_redirects, max_redirects)
    hop = _first_hop(url, method, headers, content)
    with _GuardedTransport(
        verify=verify,
        limits=httpx.Limits(max_connections=1),
        resolver=resolver or system_resolver,
    ) as transport:
        return _follow_sync(transport, url, hop, options)


def _follow_sync(
    transport: _GuardedTransport, url: str, hop: _Hop, options: _Options
) -> FetchResult:
    started = time.monotonic()
    deadline = started + options.budget
    redirects: list[str] = []
    while True:
        response, body = _send_sync(transport, hop, options, deadline)
        if not _wants_redirect(response.status_code, response.headers, options):
            return _result(url, hop, response, body, redirects, started, options)
        hop = _next_hop(
            hop, response.status_code, response.headers, len(redirects), options
        )
        redirects.append(str(hop.url))


def _send_sync(
    transport: _GuardedTransport, hop: _Hop, options: _Options, deadline: float
) -> tuple[httpx.Response, bytes]:
    request = _request(hop, options.httpx_timeout(_remaining(deadline, hop, options)))
    try:
        response = transport.handle_request(request)
        _sent(request, response)
        try:
            if _wants_redirect(response.status_code, response.headers, options):
                return response, b""
            _check_declared_length(response, options.max_bytes)
            reader = _BodyReader(
                response.headers.get("content-encoding", ""), options.max_bytes
            )
            for raw in response.iter_raw():
                reader.feed(raw)
                _remaining(deadline, hop, options)
            return response, reader.finish()
        finally:
            response.close()
    except httpx.HTTPError as exc:
        raise _translate(exc, hop.url) from exc


def _remaining(deadline: float, hop: _Hop, options: _Options) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise FetchError(
            "timeout", f"Gave up on {hop.url.host} after {options.budget:g} s"
        )
    return remaining
