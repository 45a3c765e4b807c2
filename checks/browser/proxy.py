"""The browser's only way out: a filtering forward proxy, one per page.

Every browser context is created with its proxy set to one of these (and the
browser-wide proxy to one that refuses everything), so each request a page
makes -- its navigation, redirects, sub-resources, iframes, fetch/XHR, and
WebSockets, which Chromium tunnels with CONNECT -- arrives here as a host name
and a port. The proxy asks our resolver once, judges every answer with the
HTTP door's address policy (checks.fetch.transport.vetted_addresses) and opens
the connection to the vetted IP itself. Chromium never resolves or connects on
its own, so a DNS answer that changes between the check and the connection
(rebinding) cannot slip a private address past the policy. TLS stays end to
end inside CONNECT tunnels: Chromium still checks certificates.

Plain-HTTP requests are forwarded one per proxy connection (`Connection:
close` both ways), so a later request on a kept-alive connection can never
ride along to an earlier request's host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from checks.errors import ErrorKind
from checks.fetch import FetchError, Resolver
from checks.fetch.errors import human_size
from checks.fetch.transport import vetted_addresses

logger = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024  # bytes of a request or response head
HEAD_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
PIECE = 64 * 1024
# Headers about the connection to the proxy (or the one we open): never passed on.
_HOP_HEADERS = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te"}
)
_REFUSED = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_BAD_GATEWAY = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
    b"Connection: close\r\nProxy-Connection: close\r\n"
)
OUTSIDE_A_PAGE = "requests the browser makes outside a page are not allowed"


class GuardProxy:
    """One page's proxy on 127.0.0.1: `url` is what the browser context is
    given. Remembers what it refused (by host, for the page's error when the
    page itself was refused) and stops the page's traffic past `max_bytes`."""

    def __init__(
        self, resolver: Resolver, *, max_bytes: int, refuse_all: bool = False
    ) -> None:
        self.resolver = resolver
        self.max_bytes = max_bytes
        self.refuse_all = refuse_all
        self.received = 0
        self.too_large = False
        # Refusals by "host:port", the latest of each (the page's error when
        # the page itself was refused).
        self.refusals: dict[str, FetchError] = {}
        self.url = ""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT
        )
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def close(self) -> None:
        """Stop listening and cut every connection still open."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def refusal_for(self, host: str, port: int | None) -> FetchError | None:
        return self.refusals.get(refusal_key(host, port))

    @property
    def refused(self) -> list[str]:
        """What was refused, one line per host (for the page's metadata)."""
        return [error.message for error in self.refusals.values()]

    # --- One client connection ----------------------------------------------------

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self._one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the browser or the server went away: nothing to report
        except asyncio.LimitOverrunError:
            logger.info("Browser proxy: a head larger than %d bytes", HEAD_LIMIT)
        except asyncio.CancelledError:
            # close() ended this connection. Not re-raised: asyncio's server
            # would log a cancelled connection handler as an error.
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            # close(), not abort(): what is still buffered for the browser (up
            # to a write buffer's worth) is sent before the connection ends.
            writer.close()

    async def _one(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT_SECONDS):
            head = await reader.readuntil(b"\r\n\r\n")
        request_line, *lines = head[:-4].split(b"\r\n")
        parts = request_line.split(b" ")
        if len(parts) != 3:
            writer.write(_REFUSED)
            return
        method, target, _version = parts
        if method == b"CONNECT":
            await self._tunnel(target.decode("latin-1"), reader, writer)
        else:
            await self._forward(method, target.decode("latin-1"), lines, reader, writer)

    async def _tunnel(
        self, authority: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """CONNECT host:port (HTTPS, and WebSockets of either scheme)."""
        host, port = _split_authority(authority)
        upstream = await self._open(host, port)
        if upstream is None:
            writer.write(_REFUSED)
            await writer.drain()
            return
        up_reader, up_writer = upstream
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        await self._splice(reader, writer, up_reader, up_writer)

    async def _forward(
        self,
        method: bytes,
        target: str,
        lines: list[bytes],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """An absolute-form plain-HTTP request, sent on as origin-form."""
        try:
            url = urlsplit(target)
            port = url.port or 80
        except ValueError:
            url, port = None, 0
        if url is None or url.scheme != "http" or not url.hostname:
            writer.write(_REFUSED)
            return
        upstream = await self._open(url.hostname, port)
        if upstream is None:
            await self._answer_refused(writer, url.hostname, port)
            return
        up_reader, up_writer = upstream
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        up_writer.write(
            method + b" " + path.encode("latin-1") + b" HTTP/1.1\r\n"
            + _without_hop_headers(lines)
            + b"Connection: close\r\n\r\n"
        )  # fmt: skip
        await up_writer.drain()
        await self._splice(reader, writer, up_reader, up_writer, _response_head)

    async def _answer_refused(
        self, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        # An answer rather than a dropped connection: the browser would retry
        # a request whose connection closed without a word.
        error = self.refusal_for(host, port)
        body = (error.message if error else "Refused").encode()
        writer.write(_BAD_GATEWAY + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    # --- Connections out ----------------------------------------------------------

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to a vetted address of `host`, or None (refusal noted)."""
        host = host.lower().strip("[]")
        try:
            return await self._connect(host, port)
        except FetchError as exc:
            self.refusals[refusal_key(host, port)] = exc
            log = logger.debug if self.refuse_all else logger.info
            log("Browser proxy refused %s:%s: %s", host, port, exc.message)
            return None

    async def _connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.refuse_all:
            raise FetchError(ErrorKind.BLOCKED_ADDRESS, detail=OUTSIDE_A_PAGE)
        if self.too_large:
            raise FetchError(ErrorKind.TOO_LARGE, detail=human_size(self.max_bytes))
        if not 1 <= port <= 65535:
            raise FetchError(ErrorKind.INVALID_URL, detail="URL has an invalid port.")
        ips = await vetted_addresses(self.resolver, host, port, CONNECT_TIMEOUT_SECONDS)
        error = FetchError(ErrorKind.CONNECT, host=host)
        for ip in ips:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
                    return await asyncio.open_connection(
                        str(ip), port, limit=HEAD_LIMIT
                    )
            except ConnectionRefusedError:
                error = FetchError(ErrorKind.REFUSED, host=host)
            except TimeoutError:
                waited = f"{CONNECT_TIMEOUT_SECONDS:g} s while connecting"
                error = FetchError(ErrorKind.TIMEOUT, host=host, detail=waited)
            except OSError:
                error = FetchError(ErrorKind.CONNECT, host=host)
        raise error

    # --- Relaying -----------------------------------------------------------------

    async def _splice(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        first: Callable[[asyncio.StreamReader], Awaitable[bytes]] | None = None,
    ) -> None:
        """Bytes both ways until either side ends; `first` rewrites what the
        server sends first (a plain-HTTP response head)."""
        self._writers.add(up_writer)
        out = asyncio.create_task(_pump(reader, up_writer))
        back = asyncio.create_task(self._pump_back(up_reader, writer, first))
        try:
            await asyncio.wait({out, back}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (out, back):
                task.cancel()
            await asyncio.gather(out, back, return_exceptions=True)
            self._writers.discard(up_writer)
            up_writer.transport.abort()

    async def _pump_back(
        self,
        up_reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        first: Callable[[asyncio.StreamReader], Awaitable[bytes]] | None,
    ) -> None:
        if first is not None:
            head = await first(up_reader)
            self._count(len(head))
            writer.write(head)
        while piece := await up_reader.read(PIECE):
            self._count(len(piece))
            writer.write(piece)
            await writer.drain()
        await writer.drain()

    def _count(self, size: int) -> None:
        self.received += size
        if self.received > self.max_bytes and not self.too_large:
            self.too_large = True
            for writer in list(self._writers):
                writer.transport.abort()  # every connection of this page
            raise ConnectionAbortedError("page too large")


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while piece := await reader.read(PIECE):
        writer.write(piece)
        await writer.drain()


async def _response_head(reader: asyncio.StreamReader) -> bytes:
    """The server's response head(s), told that this connection closes after
    it, so the browser sends its next request on a new proxy connection."""
    heads = b""
    while True:
        async with asyncio.timeout(HEAD_TIMEOUT_SECONDS):
            head = await reader.readuntil(b"\r\n\r\n")
        status_line, *lines = head[:-4].split(b"\r\n")
        informational = status_line[9:10] == b"1" and status_line[9:12] != b"101"
        if informational:
            heads += head  # 100 Continue and friends: a final head follows
            continue
        return (
            heads + status_line + b"\r\n" + _without_hop_headers(lines)
            + b"Connection: close\r\nProxy-Connection: close\r\n\r\n"
        )  # fmt: skip


def _without_hop_headers(lines: list[bytes]) -> bytes:
    named: set[bytes] = set()
    for line in lines:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"connection":
            named |= {v.strip().lower() for v in value.split(b",")}
    kept = [
        line
        for line in lines
        if line.partition(b":")[0].strip().lower() not in _HOP_HEADERS | named
    ]
    return b"".join(line + b"\r\n" for line in kept)


def refusal_key(host: str, port: int | None) -> str:
    return f"{host.lower().strip('[]')}:{port}"


def _split_authority(authority: str) -> tuple[str, int]:
    host, _, port = authority.rpartition(":")
    with contextlib.suppress(ValueError):
        return host.strip("[]"), int(port)
    return authority.strip("[]"), 0
