"""The browser's only way out: a filtering forward proxy, one per page
(GuardProxy); and, for clients that open their own connections (Apprise's
`requests`), one shared by every send of a process (SharedGuardProxy).

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

What a user of a proxy was refused and how many bytes it received are kept in
its Ledger: a page's proxy has one; the shared proxy one per send, chosen by
the credentials its proxy URL carries (`http://send:<token>@127.0.0.1:<port>`,
which `requests` sends as Proxy-Authorization), so a refusal or a byte cap
concerns only the send whose request it was.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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
_UNKNOWN_USER = (
    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)
_BAD_GATEWAY = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
    b"Connection: close\r\nProxy-Connection: close\r\n"
)
OUTSIDE_A_PAGE = "requests the browser makes outside a page are not allowed"


@dataclass(eq=False)
class Ledger:
    """One user's share of a proxy: its byte budget, what it received, what
    was refused to it (by "host:port", the latest of each), and its open
    connections (cut together when the budget runs out)."""

    max_bytes: int
    received: int = 0
    too_large: bool = False
    refusals: dict[str, FetchError] = field(default_factory=dict)
    writers: set[asyncio.StreamWriter] = field(default_factory=set)

    def refusal_for(self, host: str, port: int | None) -> FetchError | None:
        return self.refusals.get(refusal_key(host, port))

    @property
    def refused(self) -> list[str]:
        """What was refused, one line per host."""
        return [error.message for error in self.refusals.values()]


class GuardProxy:
    """One page's proxy on 127.0.0.1: `url` is what the browser context is
    given. Remembers what it refused (by host, for the page's error when the
    page itself was refused) and stops the page's traffic past `max_bytes`."""

    def __init__(
        self, resolver: Resolver, *, max_bytes: int, refuse_all: bool = False
    ) -> None:
        self.resolver = resolver
        self.refuse_all = refuse_all
        self.ledger = Ledger(max_bytes)
        self.url = ""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT
        )
        self.url = f"http://127.0.0.1:{self.port}"
        return self.url

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening and cut every connection still open."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def max_bytes(self) -> int:
        return self.ledger.max_bytes

    @property
    def too_large(self) -> bool:
        return self.ledger.too_large

    @property
    def refusals(self) -> dict[str, FetchError]:
        return self.ledger.refusals

    def refusal_for(self, host: str, port: int | None) -> FetchError | None:
        return self.ledger.refusal_for(host, port)

    @property
    def refused(self) -> list[str]:
        """What was refused, one line per host (for the page's metadata)."""
        return self.ledger.refused

    def _ledger_for(self, lines: list[bytes]) -> Ledger | None:
        """Whose request this is, from its head (None: nobody's, refused)."""
        return self.ledger

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
        ledger = self._ledger_for(lines)
        if ledger is None:
            writer.write(_UNKNOWN_USER)
            return
        ledger.writers.add(writer)
        try:
            if method == b"CONNECT":
                await self._tunnel(ledger, target.decode("latin-1"), reader, writer)
            else:
                await self._forward(
                    ledger, method, target.decode("latin-1"), lines, reader, writer
                )
        finally:
            ledger.writers.discard(writer)

    async def _tunnel(
        self,
        ledger: Ledger,
        authority: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """CONNECT host:port (HTTPS, and WebSockets of either scheme)."""
        host, port = _split_authority(authority)
        upstream = await self._open(ledger, host, port)
        if upstream is None:
            writer.write(_REFUSED)
            await writer.drain()
            return
        up_reader, up_writer = upstream
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        await self._splice(ledger, reader, writer, up_reader, up_writer)

    async def _forward(
        self,
        ledger: Ledger,
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
        upstream = await self._open(ledger, url.hostname, port)
        if upstream is None:
            await self._answer_refused(ledger, writer, url.hostname, port)
            return
        up_reader, up_writer = upstream
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        up_writer.write(
            method + b" " + path.encode("latin-1") + b" HTTP/1.1\r\n"
            + _without_hop_headers(lines)
            + b"Connection: close\r\n\r\n"
        )  # fmt: skip
        await up_writer.drain()
        await self._splice(ledger, reader, writer, up_reader, up_writer, _response_head)

    async def _answer_refused(
        self, ledger: Ledger, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        # An answer rather than a dropped connection: the browser would retry
        # a request whose connection closed without a word.
        error = ledger.refusal_for(host, port)
        body = (error.message if error else "Refused").encode()
        writer.write(_BAD_GATEWAY + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    # --- Connections out ----------------------------------------------------------

    async def _open(
        self, ledger: Ledger, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """A connection to a vetted address of `host`, or None (refusal noted
        in the requester's ledger)."""
        host = host.lower().strip("[]")
        try:
            return await self._connect(ledger, host, port)
        except FetchError as exc:
            ledger.refusals[refusal_key(host, port)] = exc
            log = logger.debug if self.refuse_all else logger.info
            log("Guard proxy refused %s:%s: %s", host, port, exc.message)
            return None

    async def _connect(
        self, ledger: Ledger, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.refuse_all:
            raise FetchError(ErrorKind.BLOCKED_ADDRESS, detail=OUTSIDE_A_PAGE)
        if ledger.too_large:
            raise FetchError(ErrorKind.TOO_LARGE, detail=human_size(ledger.max_bytes))
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
        ledger: Ledger,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        first: Callable[[asyncio.StreamReader], Awaitable[bytes]] | None = None,
    ) -> None:
        """Bytes both ways until either side ends; `first` rewrites what the
        server sends first (a plain-HTTP response head)."""
        self._writers.add(up_writer)
        ledger.writers.add(up_writer)
        out = asyncio.create_task(_pump(reader, up_writer))
        back = asyncio.create_task(self._pump_back(ledger, up_reader, writer, first))
        try:
            await asyncio.wait({out, back}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (out, back):
                task.cancel()
            await asyncio.gather(out, back, return_exceptions=True)
            self._writers.discard(up_writer)
            ledger.writers.discard(up_writer)
            up_writer.transport.abort()

    async def _pump_back(
        self,
        ledger: Ledger,
        up_reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        first: Callable[[asyncio.StreamReader], Awaitable[bytes]] | None,
    ) -> None:
        if first is not None:
            head = await first(up_reader)
            _count(ledger, len(head))
            writer.write(head)
        while piece := await up_reader.read(PIECE):
            _count(ledger, len(piece))
            writer.write(piece)
            await writer.drain()
        await writer.drain()


class SharedGuardProxy(GuardProxy):
    """One proxy for many sends at once (every Apprise send of a process):
    each send opens a ledger of its own and gives its client
    `url_for(token)`; a request whose Proxy-Authorization names no open
    ledger is answered 407 and goes nowhere."""

    def __init__(self, resolver: Resolver) -> None:
        super().__init__(resolver, max_bytes=0)
        # Opened and closed from the senders' threads, read on the proxy's
        # loop: single dict operations, atomic under the GIL.
        self._ledgers: dict[str, Ledger] = {}

    def open_ledger(self, max_bytes: int) -> tuple[str, Ledger]:
        token = secrets.token_hex(16)
        ledger = Ledger(max_bytes)
        self._ledgers[token] = ledger
        return token, ledger

    def close_ledger(self, token: str) -> None:
        self._ledgers.pop(token, None)

    def url_for(self, token: str) -> str:
        # A password, not only a user name: `requests` drops proxy
        # credentials without one.
        return f"http://send:{token}@127.0.0.1:{self.port}"

    def _ledger_for(self, lines: list[bytes]) -> Ledger | None:
        for line in lines:
            name, _, value = line.partition(b":")
            if name.strip().lower() != b"proxy-authorization":
                continue
            scheme, _, credentials = value.strip().partition(b" ")
            if scheme.lower() != b"basic":
                return None
            try:
                decoded = base64.b64decode(credentials, validate=True)
            except (binascii.Error, ValueError):
                return None
            user, _, token = decoded.partition(b":")
            if user != b"send":
                return None
            return self._ledgers.get(token.decode("latin-1"))
        return None


def _count(ledger: Ledger, size: int) -> None:
    ledger.received += size
    if ledger.received > ledger.max_bytes and not ledger.too_large:
        ledger.too_large = True
        for writer in list(ledger.writers):
            writer.transport.abort()  # every connection of this page or send
        raise ConnectionAbortedError("too large")


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
