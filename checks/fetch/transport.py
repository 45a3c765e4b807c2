"""The guarded connection: DNS answered once, every answer judged, and the
socket opened to the very address that was judged.

GuardedBackend is an httpcore network backend: it resolves the host, refuses
if any answer is forbidden (a rebinding attacker controls their order) and
connects to a vetted IP, while httpcore still does TLS with the original host
name (SNI and certificate checks). GuardedTransport is a small httpx transport
over an httpcore connection pool that uses that backend, built from public
APIs only.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any

import anyio
import httpcore
import httpx

from checks.errors import ErrorKind
from checks.fetch.errors import FetchError
from checks.fetch.policy import (
    IPAddress,
    address_block_reason,
    allow_private_targets,
    ip_literal,
)

# host, port -> IP address strings. Injectable so tests can play a hostile DNS.
Resolver = Callable[[str, int], Sequence[str]]

# A host name with several addresses gets this many connection attempts at most,
# so a long answer list cannot multiply the connect timeout without bound.
MAX_CONNECT_ATTEMPTS = 3
# How long an idle keep-alive connection is kept for the next request (httpx's
# default; httpcore alone would keep it forever).
KEEPALIVE_EXPIRY_SECONDS = 5.0


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's answer for `host`, unique addresses in its order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchError(ErrorKind.DNS, host=host) from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _ask(resolver: Resolver, host: str, port: int) -> Sequence[str]:
    try:
        return resolver(host, port)
    except OSError as exc:
        raise FetchError(ErrorKind.DNS, host=host) from exc


def _vetted(host: str, answers: Sequence[str], allow_private: bool) -> list[IPAddress]:
    """Parse a resolver's answers and refuse them all if any one is forbidden.

    All-or-nothing because a rebinding attacker controls the order of answers.
    """
    if not answers:
        raise FetchError(ErrorKind.DNS, host=host)
    try:
        ips = [ipaddress.ip_address(answer.split("%", 1)[0]) for answer in answers]
    except ValueError as exc:
        raise FetchError(ErrorKind.DNS, host=host) from exc
    for ip in ips:
        reason = address_block_reason(ip, allow_private)
        if reason is not None:
            suffix = "" if ip_literal(host) is not None else f" ({host} resolves to it)"
            raise FetchError(ErrorKind.BLOCKED_ADDRESS, detail=reason + suffix)
    return ips[:MAX_CONNECT_ATTEMPTS]


async def vetted_addresses(
    resolver: Resolver,
    host: str,
    port: int,
    timeout: float | None,
    allow_private: bool | None = None,
) -> list[IPAddress]:
    """The addresses `host` may be reached at, asked once and every answer
    judged (at most MAX_CONNECT_ATTEMPTS of them, in the resolver's order);
    raises FetchError (dns, timeout, blocked_address) otherwise. The caller
    connects to one of these exact IPs, never to the name: the HTTP door's
    backend below and the browser's proxy (checks.browser.proxy) both do.
    `allow_private` defaults to ALLOW_PRIVATE_NETWORK_TARGETS."""
    if allow_private is None:
        allow_private = allow_private_targets()
    literal = ip_literal(host)
    if literal is not None:
        return _vetted(host, [str(literal)], allow_private)
    # getaddrinfo cannot be interrupted; abandoning the thread keeps a slow
    # DNS server from holding the caller past its connect timeout.
    try:
        with anyio.fail_after(timeout):
            answers = await anyio.to_thread.run_sync(
                _ask, resolver, host, port, abandon_on_cancel=True
            )
    except TimeoutError:
        waited = f"{timeout:g} s while looking up its address"
        raise FetchError(ErrorKind.TIMEOUT, host=host, detail=waited) from None
    return _vetted(host, answers, allow_private)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve once, vet every answer, connect to a vetted IP; the resolver
    runs in a worker thread.

    `private_hosts` are host names (as written in the URL) that may resolve
    to private addresses even when ALLOW_PRIVATE_NETWORK_TARGETS is off: the
    operator's own services, such as the configured LLM endpoint. Cloud
    metadata addresses stay forbidden for them too."""

    def __init__(
        self,
        resolver: Resolver,
        inner: httpcore.AsyncNetworkBackend | None = None,
        private_hosts: frozenset[str] = frozenset(),
    ):
        self._resolver = resolver
        self._inner = inner or httpcore.AnyIOBackend()
        self._private_hosts = frozenset(h.lower() for h in private_hosts)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        last_error: Exception | None = None
        allow_private = allow_private_targets() or host.lower() in self._private_hosts
        addresses = await vetted_addresses(
            self._resolver, host, port, timeout, allow_private
        )
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(ip), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        detail = "Unix sockets are not allowed"
        raise FetchError(ErrorKind.BLOCKED_ADDRESS, detail=detail)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def _ssl_context(verify: bool) -> ssl.SSLContext:
    # Loading the CA bundle is slow; contexts are safe to share, and a
    # webhook delivery builds a client per call.
    return httpx.create_ssl_context(verify=verify, trust_env=False)


# httpcore's exceptions as httpx's, most specific first (the first match wins),
# so callers see the exceptions httpx's own transport would raise.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except httpx.HTTPError:
        raise
    except Exception as exc:
        for core_error, httpx_error in _HTTPX_ERRORS:
            if isinstance(exc, core_error):
                raise httpx_error(str(exc)) from exc
        raise  # ours (FetchError from the backend) or a bug: as it is


class _ResponseStream(httpx.AsyncByteStream):
    """An httpcore response's body, read and closed through its public API."""

    def __init__(self, response: httpcore.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._response.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        with _as_httpx_errors():
            await self._response.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose connections are all made by GuardedBackend.

    One per TLS verify mode: the SSL context belongs to the pool. Keep-alive
    connections are pooled up to `max_connections`; an idle one the server
    closed is detected by httpcore before reuse.
    """

    def __init__(
        self,
        *,
        verify: bool,
        max_connections: int,
        resolver: Resolver,
        private_hosts: frozenset[str] = frozenset(),
    ):
        self._connections = httpcore.AsyncConnectionPool(
            ssl_context=_ssl_context(verify),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS,
            network_backend=GuardedBackend(resolver, private_hosts=private_hosts),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self._connections.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._connections.aclose()
