"""The outbound HTTP door: address policy, URL rules, redirects, caps, limits.

Every server here is started by the test on 127.0.0.1; "public" and hostile DNS
answers come from injected resolvers, never from the real network.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import hashlib
import ipaddress
import json
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import brotli
import httpcore
import httpx
import pytest
import zstandard

from checks import fetch
from checks.content.sniff import SNIFF_BYTES
from checks.errors import FETCH_KINDS, ErrorKind
from checks.fetch import body, transport
from checks.fetch.body import ACCEPT_ENCODING, BodyReader
from checks.fetch.errors import MESSAGES
from checks.fetch.transport import GuardedBackend

BOMB = gzip.compress(b"\0" * (20 * 1024 * 1024), compresslevel=9)
BROTLI_BOMB = brotli.compress(b"\0" * (20 * 1024 * 1024))
ZSTD_BOMB = zstandard.ZstdCompressor(level=19).compress(b"\0" * (20 * 1024 * 1024))
# Letters, spaces, full stops and newlines in no order that repeats.
_LETTERS = bytes.maketrans(bytes(range(256)), b"abcdefghijklmnopqrstuvwxyz  \n.,e" * 8)


@functools.cache
def varied_text(size: int) -> bytes:
    return hashlib.shake_256(b"page text").digest(size).translate(_LETTERS)


@functools.cache
def brotli_text(size: int) -> bytes:
    return brotli.compress(varied_text(size), quality=1)


@functools.cache
def zstd_text(size: int) -> bytes:
    return zstandard.ZstdCompressor(level=1).compress(varied_text(size))


class Handler(BaseHTTPRequestHandler):
    """Routes for the local test site."""

    disable_nagle_algorithm = True  # headers and body are separate writes

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._route(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._route(self.rfile.read(length))

    def _route(self, body: bytes) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        segments = parts.path.strip("/").split("/")
        if parts.path == "/page":
            self._send(200, b"hello", {"Content-Type": "text/html; charset=utf-8"})
        elif parts.path == "/undefined-charset":
            headers = {"Content-Type": "text/plain; charset=undefined"}
            self._send(200, "café".encode(), headers)
        elif parts.path == "/redirect":
            self._send(int(query.get("status", 302)), b"", {"Location": query["to"]})
        elif segments[0] == "loop":
            self._send(302, b"", {"Location": f"/loop/{int(segments[1]) + 1}"})
        elif segments[0] == "chain":
            left = int(segments[1])
            if left:
                self._send(302, b"", {"Location": f"/chain/{left - 1}"})
            else:
                self._send(200, b"end")
        elif parts.path == "/echo":
            echo = {
                "method": self.command,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode(),
            }
            self._send(200, json.dumps(echo).encode())
        elif parts.path == "/gzip":
            self._send(200, gzip.compress(b"hello gzip"), {"Content-Encoding": "gzip"})
        elif parts.path == "/deflate":
            raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
            body = raw.compress(b"hello deflate") + raw.flush()
            self._send(200, body, {"Content-Encoding": "deflate"})
        elif parts.path == "/brotli":
            self._send(200, brotli.compress(b"hello"), {"Content-Encoding": "br"})
        elif segments[0] == "brotli-text":
            body = brotli_text(int(segments[1]))
            headers = {"Content-Encoding": "br", "Content-Type": "text/plain"}
            self._send(200, body, headers)
        elif parts.path == "/brotli-bomb":
            self._send(200, BROTLI_BOMB, {"Content-Encoding": "br"})
        elif parts.path == "/brotli-damaged":
            self._send(200, b"not brotli at all", {"Content-Encoding": "br"})
        elif parts.path == "/zstd":
            body = zstandard.ZstdCompressor().compress(b"hello")
            self._send(200, body, {"Content-Encoding": "zstd"})
        elif segments[0] == "zstd-text":
            body = zstd_text(int(segments[1]))
            headers = {"Content-Encoding": "zstd", "Content-Type": "text/plain"}
            self._send(200, body, headers)
        elif parts.path == "/zstd-bomb":
            self._send(200, ZSTD_BOMB, {"Content-Encoding": "zstd"})
        elif parts.path == "/zstd-damaged":
            self._send(200, b"not zstd at all", {"Content-Encoding": "zstd"})
        elif parts.path == "/compress":
            self._send(200, b"\x1f\x9d\x90hello", {"Content-Encoding": "compress"})
        elif parts.path == "/bomb":
            self._send(200, BOMB, {"Content-Encoding": "gzip"})
        elif parts.path == "/big":
            self._send(200, b"x" * 2000)
        elif parts.path == "/long-page":
            page = b"<html><body>" + b"<p>\x00</p>" * 20_000 + b"</body></html>"
            self._send(200, page, {"Content-Type": "text/html"})
        elif parts.path == "/set-cookie":
            self._send(200, b"ok", {"Set-Cookie": "session=secret; Path=/"})
        else:
            self._send(404, b"not found")

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def port(site: str) -> int:
    return int(site.rsplit(":", 1)[1])


@pytest.fixture
def private_allowed(settings: Any) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def private_forbidden(settings: Any) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False


@pytest.fixture
def site_counts_as_public(
    monkeypatch: pytest.MonkeyPatch, private_forbidden: None
) -> None:
    """Let 127.0.0.1 stand in for a public web server; every other address is
    judged by the real policy with private targets forbidden."""
    real = fetch.address_block_reason
    site_ip = ipaddress.ip_address("127.0.0.1")

    def policy(ip: Any, allow_private: bool) -> str | None:
        return None if ip == site_ip else real(ip, allow_private)

    monkeypatch.setattr(transport, "address_block_reason", policy)


class Resolver:
    """A scripted DNS: each name answers from its list of replies in turn."""

    def __init__(self, answers: dict[str, list[list[str]]]):
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        replies = self.answers[host]
        return replies.pop(0) if len(replies) > 1 else replies[0]


def no_dns(host: str, port: int) -> Sequence[str]:
    raise AssertionError(f"{host} should never have reached the resolver")


def run_fetch(
    url: str, resolver: fetch.Resolver | None = None, **options: Any
) -> fetch.FetchResult:
    """Fetch through a client of its own, as a check does."""

    async def go() -> fetch.FetchResult:
        async with fetch.OutboundClient(resolver=resolver) as client:
            return await client.fetch(url, **options)

    return asyncio.run(go())


def fetch_error(url: str, **options: Any) -> fetch.FetchError:
    with pytest.raises(fetch.FetchError) as caught:
        run_fetch(url, **options)
    return caught.value


# --- Address policy -----------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "2606:4700:4700::1111",
        "::ffff:93.184.216.34",
        "64:ff9b::5db8:d822",
    ],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert fetch.address_block_reason(ipaddress.ip_address(address), False) is None


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),
        ("10.0.0.5", "10.0.0.5 is a private address"),
        ("172.16.0.1", "172.16.0.1 is a private address"),
        ("192.168.1.1", "192.168.1.1 is a private address"),
        ("169.254.1.1", "169.254.1.1 is a link-local address"),
        ("100.64.0.1", "100.64.0.1 is a carrier-grade NAT address"),
        ("::1", "::1 is a loopback address"),
        ("fc00::1", "fc00::1 is a private address"),
        ("fe80::1", "fe80::1 is a link-local address"),
    ],
)
def test_internal_addresses_are_blocked_unless_private_targets_are_allowed(
    address: str, reason: str
) -> None:
    ip = ipaddress.ip_address(address)
    assert fetch.address_block_reason(ip, False) == reason
    assert fetch.address_block_reason(ip, True) is None


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "169.254.170.2",
        "100.100.100.200",
        "fd00:ec2::254",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "0.0.0.0",
        "0.1.2.3",
        "255.255.255.255",
        "224.0.0.1",
        "239.1.1.1",
        "240.0.0.1",
        "198.18.0.1",
        "192.0.2.1",
        "198.51.100.1",
        "203.0.113.1",
        "192.0.0.192",
        "::",
        "::7f00:1",
        "2001:db8::1",
        "3fff::1",
        "2001::1",
        "ff02::1",
        "fec0::1",
    ],
)
def test_metadata_and_special_addresses_stay_blocked_when_private_targets_are_allowed(
    address: str,
) -> None:
    assert fetch.address_block_reason(ipaddress.ip_address(address), True) is not None


@pytest.mark.parametrize(
    ("address", "wrapper"),
    [
        ("::ffff:10.0.0.1", "an IPv4-mapped address"),
        ("64:ff9b::a00:1", "a NAT64 address"),
        ("2002:a00:1::", "a 6to4 address"),
    ],
)
def test_ipv6_forms_wrapping_a_private_ipv4_are_judged_by_that_ipv4(
    address: str, wrapper: str
) -> None:
    ip = ipaddress.ip_address(address)
    assert fetch.address_block_reason(ip, False) == (
        f"{ip} is {wrapper} for 10.0.0.1, which is a private address"
    )


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("08.0.0.1", None),
        ("256.0.0.1", None),
    ],
)
def test_ip_literals_are_read_the_way_a_resolver_reads_them(
    host: str, expected: str | None
) -> None:
    literal = fetch.ip_literal(host)
    assert (str(literal) if literal else None) == expected


# --- URL syntax -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com",
        "https://example.com/path?q=1#frag",
        "HTTPS://Example.COM:8443/",
        "https://münchen.de/",
        "http://[2606:4700::1111]/",
        "http://2130706433/",  # syntactically fine; the address policy refuses it
    ],
)
def test_url_syntax_accepts_ordinary_web_urls(url: str) -> None:
    assert fetch.url_syntax_error(url) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/file", "Only http:// and https:// URLs are allowed."),
        ("javascript:alert(1)", "Only http:// and https:// URLs are allowed."),
        ("file:///etc/passwd", "Only http:// and https:// URLs are allowed."),
        (
            "example.com",
            "Start the address with https:// or http://, e.g. https://example.com",
        ),
        ("localhost:8000/x", "e.g. https://localhost:8000/x"),
        ("127.0.0.1:8833", "e.g. https://127.0.0.1:8833"),
        ("mailto:someone@example.com", "Only http:// and https:// URLs are allowed."),
        ("tel:12345", "Only http:// and https:// URLs are allowed."),
        ("javascript:1", "Only http:// and https:// URLs are allowed."),
        ("/pricing", "Only http:// and https:// URLs are allowed."),
        ("//example.com/x", "Only http:// and https:// URLs are allowed."),
        ("shop.example.com:8443/x", "e.g. https://shop.example.com:8443/x"),
        ("http://user:pass@example.com/", "must not contain a user name or password"),
        ("http://example.com@evil.test/", "must not contain a user name or password"),
        ("http://example.com\\@evil.test/", "must not contain backslashes"),
        ("https://" + "a" * 2041, "longer than 2048 characters"),
        # Says how to fix it (and no "control characters" for a plain space).
        (
            "http://exa mple.com/",
            "URL must not contain spaces: remove them, or write a space in the "
            "path as %20.",
        ),
        ("http://example.com/\r\nX-Injected: 1", "spaces or control characters"),
        ("http:///path-only", "must include a host name"),
        ("http://example.com:99999/", "invalid port"),
        ("http://example.com:0/", "invalid port"),
        ("http://example.com:http/", "invalid port"),
        ("http://%31%32%37.0.0.1/", "host contains characters that are not allowed"),
        ("", "Enter a URL."),
    ],
)
def test_url_syntax_error_explains_what_is_wrong(url: str, message: str) -> None:
    error = fetch.url_syntax_error(url)
    assert error is not None and message in error


def test_url_of_exactly_2048_characters_is_accepted() -> None:
    url = "https://example.com/" + "a" * (2048 - len("https://example.com/"))
    assert fetch.url_syntax_error(url) is None
    assert fetch.url_syntax_error(url + "a") is not None


def test_fetching_an_invalid_url_fails_before_any_network_use() -> None:
    error = fetch_error("ftp://example.com/", resolver=no_dns)
    assert error.kind == "invalid_url"


# --- Address policy at fetch time ----------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/",
        "http://017700000001/",
        "http://0x7f000001/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[2002:a00:1::]/",
        "http://[64:ff9b::a00:1]/",
        "http://0.0.0.0/",
        "http://10.0.0.5/",
    ],
)
def test_hostile_ip_literals_are_refused_without_asking_dns(
    url: str, private_forbidden: None
) -> None:
    error = fetch_error(url, resolver=no_dns)
    assert error.kind == "blocked_address"
    assert error.message.startswith("Blocked: ")


def test_numeric_loopback_encodings_are_normalised_before_judging(
    private_forbidden: None,
) -> None:
    error = fetch_error("http://0x7f.1/", resolver=no_dns)
    assert error.message == "Blocked: 127.0.0.1 is a loopback address"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://0xa9fea9fe/",
        # EKS Pod Identity Agent: hands out the pod's AWS credentials.
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
    ],
)
def test_metadata_address_is_refused_even_when_private_targets_are_allowed(
    url: str, private_allowed: None
) -> None:
    error = fetch_error(url, resolver=no_dns)
    assert error.kind == "blocked_address"
    assert "cloud metadata address" in error.message


def test_page_on_loopback_is_fetched_when_private_targets_are_allowed(
    site: str, private_allowed: None
) -> None:
    result = run_fetch(f"{site}/page")
    assert result.status_code == 200
    assert result.content == b"hello"
    assert result.text == "hello"
    assert result.url == result.final_url == f"{site}/page"
    assert result.redirects == []
    assert result.headers["content-type"].startswith("text/html")
    assert result.elapsed_ms >= 0


def test_a_charset_that_decodes_nothing_gives_the_text_as_utf8(
    site: str, private_allowed: None
) -> None:
    # robots.txt is read this way; Python's "undefined" codec refuses all.
    assert run_fetch(f"{site}/undefined-charset").text == "café"


def test_page_on_loopback_is_refused_when_private_targets_are_not_allowed(
    site: str, private_forbidden: None
) -> None:
    error = fetch_error(f"{site}/page")
    assert error.kind == "blocked_address"
    assert error.message == "Blocked: 127.0.0.1 is a loopback address"


def test_module_level_afetch_uses_the_same_policy(site: str, settings: Any) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    assert asyncio.run(fetch.afetch(f"{site}/page")).content == b"hello"
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    with pytest.raises(fetch.FetchError, match="loopback"):
        asyncio.run(fetch.afetch(f"{site}/page"))


def test_decimal_host_reaches_the_same_server_a_resolver_would_when_allowed(
    port: int, private_allowed: None
) -> None:
    result = run_fetch(f"http://2130706433:{port}/page", resolver=no_dns)
    assert result.content == b"hello"


def test_name_resolving_to_public_and_private_addresses_is_refused_before_connecting(
    private_forbidden: None,
) -> None:
    dns = Resolver({"mixed.test": [["93.184.216.34", "10.0.0.5"]]})
    error = fetch_error("http://mixed.test/", resolver=dns)
    # Blocked, not "connect"/"timeout": nothing tried the unreachable public IP.
    assert error.kind == "blocked_address"
    assert error.message == (
        "Blocked: 10.0.0.5 is a private address (mixed.test resolves to it)"
    )


def test_dns_rebinding_cannot_move_a_connection_to_a_second_answer(
    port: int, private_allowed: None
) -> None:
    # Only our resolver knows "rebind.test": the page can only load if the
    # connection went to the address that resolver gave and we vetted.
    dns = Resolver({"rebind.test": [["127.0.0.1"], ["169.254.169.254"]]})

    async def scenario() -> tuple[fetch.FetchResult, fetch.FetchError]:
        async with fetch.OutboundClient(resolver=dns) as client:
            first = await client.fetch(f"http://rebind.test:{port}/page")
            with pytest.raises(fetch.FetchError) as second:
                await client.fetch(f"http://rebind.test:{port}/page")
            return first, second.value

    first, second = asyncio.run(scenario())
    assert first.content == b"hello"
    assert second.kind == "blocked_address"
    assert "cloud metadata" in second.message
    assert dns.calls == ["rebind.test", "rebind.test"]  # once per connection


def test_tls_uses_the_host_name_while_connecting_to_the_vetted_address(
    private_allowed: None,
) -> None:
    hello = bytearray()
    listener = socket.create_server(("127.0.0.1", 0))

    def read_client_hello() -> None:
        conn, _ = listener.accept()
        with conn:
            while len(hello) < 5 or len(hello) < 5 + int.from_bytes(hello[3:5]):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                hello.extend(chunk)

    thread = threading.Thread(target=read_client_hello, daemon=True)
    thread.start()
    dns = Resolver({"sni.test": [["127.0.0.1"]]})
    with listener:
        error = fetch_error(
            f"https://sni.test:{listener.getsockname()[1]}/",
            resolver=dns,
            timeout=5,
        )
    thread.join(5)
    assert b"sni.test" in hello  # SNI carries the name, the socket went to the IP
    assert error.kind == "tls"


def test_keep_alive_probe_tells_an_idle_open_connection_from_one_the_server_closed(
    private_allowed: None,
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    where = listener.getsockname()
    accepted: list[socket.socket] = []

    async def go() -> tuple[bool, bool, Any]:
        backend = GuardedBackend(resolver=no_dns)
        stream = await backend.connect_tcp("127.0.0.1", where[1])
        server_side, _ = listener.accept()
        accepted.append(server_side)
        idle = stream.get_extra_info("is_readable")
        server_side.close()
        await asyncio.sleep(0.05)
        closed = stream.get_extra_info("is_readable")
        address = stream.get_extra_info("server_addr")
        await stream.aclose()
        return idle, closed, address

    with listener:
        idle, closed, address = asyncio.run(go())
    assert (idle, closed) == (False, True)
    assert address == where  # other questions still reach the socket


def test_a_keep_alive_connection_the_server_closed_is_not_reused(
    private_allowed: None,
) -> None:
    """The server answers each connection once, then hangs up while the
    client keeps it idle in its pool: the next request must get a new
    connection instead of failing on the dead one."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections = []

    def serve() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                connections.append(conn)
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                    b"Connection: keep-alive\r\n\r\nok"
                )
                time.sleep(0.05)  # then closes, the client none the wiser

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"

    async def go() -> list[bytes]:
        async with fetch.OutboundClient() as client:
            first = await client.fetch(url, timeout=5)
            await asyncio.sleep(0.2)
            second = await client.fetch(url, timeout=5)
        return [first.content, second.content]

    with listener:
        assert asyncio.run(go()) == [b"ok", b"ok"]
    thread.join(5)
    assert len(connections) == 2


# --- Redirects --------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.5/admin",
        "http://[::1]:{port}/page",
        "http://2130706434:{port}/page",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
def test_redirect_to_a_private_address_is_refused_when_private_targets_are_not_allowed(
    site: str, port: int, target: str, site_counts_as_public: None
) -> None:
    url = f"{site}/redirect?to={target.format(port=port)}"
    assert run_fetch(f"{site}/page").content == b"hello"  # the "public" hop
    error = fetch_error(url)
    assert error.kind == "blocked_address"


@pytest.mark.parametrize(
    "target", ["file:///etc/passwd", "gopher://example.com/", "http://a.test\\@b/"]
)
def test_redirect_to_a_non_web_url_is_refused(
    site: str, target: str, private_allowed: None
) -> None:
    error = fetch_error(f"{site}/redirect?to={target}")
    assert error.kind == "invalid_url"


def test_five_redirects_are_followed_and_recorded(
    site: str, private_allowed: None
) -> None:
    result = run_fetch(f"{site}/chain/5")
    assert result.content == b"end"
    assert result.redirects == [f"{site}/chain/{n}" for n in range(4, -1, -1)]
    assert result.final_url == f"{site}/chain/0"
    assert result.url == f"{site}/chain/5"


def test_more_than_five_redirects_are_refused(site: str, private_allowed: None) -> None:
    error = fetch_error(f"{site}/loop/0")
    assert error.kind == "too_many_redirects"
    assert error.message == "Stopped after 5 redirects"


def test_credentials_and_caller_headers_are_dropped_when_the_origin_changes(
    site: str, port: int, private_allowed: None
) -> None:
    dns = Resolver({"other.test": [["127.0.0.1"]]})
    secrets = {"Authorization": "Bearer s3cret", "Cookie": "a=b", "X-Api-Key": "k"}
    url = f"{site}/redirect?to=http://other.test:{port}/echo"
    result = run_fetch(url, resolver=dns, headers=secrets)
    seen = json.loads(result.content)["headers"]
    assert result.final_url == f"http://other.test:{port}/echo"
    assert not {"authorization", "cookie", "x-api-key"} & seen.keys()
    assert seen["user-agent"].startswith("Pagewatch/")


def test_caller_headers_are_kept_on_a_same_origin_redirect(
    site: str, private_allowed: None
) -> None:
    headers = {"Authorization": "Bearer s3cret"}
    result = run_fetch(f"{site}/redirect?to=/echo", headers=headers)
    assert json.loads(result.content)["headers"]["authorization"] == "Bearer s3cret"


def test_see_other_turns_a_post_into_a_get_without_body(
    site: str, private_allowed: None
) -> None:
    result = run_fetch(
        f"{site}/redirect?status=303&to=/echo",
        method="POST",
        content=b'{"a": 1}',
        headers={"Content-Type": "application/json"},
    )
    echo = json.loads(result.content)
    assert echo["method"] == "GET"
    assert echo["body"] == ""
    assert "content-type" not in echo["headers"]


def test_temporary_redirect_keeps_the_method_and_body(
    site: str, private_allowed: None
) -> None:
    url = f"{site}/redirect?status=307&to=/echo"
    result = run_fetch(url, method="POST", content=b"payload")
    echo = json.loads(result.content)
    assert (echo["method"], echo["body"]) == ("POST", "payload")


def test_redirect_is_returned_as_is_when_not_following(
    site: str, private_allowed: None
) -> None:
    result = run_fetch(f"{site}/redirect?to=/page", follow_redirects=False)
    assert result.status_code == 302
    assert result.headers["location"] == "/page"
    assert result.redirects == []
    assert result.final_url == result.url


# --- Headers and cookies ----------------------------------------------------------


def test_user_agent_comes_from_settings_unless_the_caller_sets_one(
    site: str, settings: Any, private_allowed: None
) -> None:
    settings.OUTBOUND_USER_AGENT = "PagewatchTest/1"
    default = run_fetch(f"{site}/echo")
    chosen = run_fetch(f"{site}/echo", headers={"User-Agent": "Custom/2"})
    assert json.loads(default.content)["headers"]["user-agent"] == "PagewatchTest/1"
    assert json.loads(chosen.content)["headers"]["user-agent"] == "Custom/2"


def test_every_request_carries_the_usual_headers_and_the_callers(
    site: str, private_allowed: None
) -> None:
    seen = json.loads(
        run_fetch(f"{site}/echo", headers={"Accept": "text/html", "X-A": "1"}).content
    )["headers"]

    assert seen["accept"] == "text/html"  # the caller's, in place of */*
    assert seen["connection"] == "keep-alive"
    assert seen["accept-encoding"] == ACCEPT_ENCODING
    assert seen["user-agent"]
    assert seen["x-a"] == "1"
    assert seen["host"] == site.removeprefix("http://")
    assert "cookie" not in seen


def test_accept_defaults_to_anything(site: str, private_allowed: None) -> None:
    seen = json.loads(run_fetch(f"{site}/echo").content)["headers"]

    assert seen["accept"] == "*/*"


def test_caller_cannot_override_connection_headers_such_as_host(
    site: str, private_allowed: None
) -> None:
    headers = {"Host": "internal.example", "Transfer-Encoding": "chunked"}
    seen = json.loads(run_fetch(f"{site}/echo", headers=headers).content)
    assert seen["headers"]["host"] == site.removeprefix("http://")
    assert "transfer-encoding" not in seen["headers"]


def test_cookies_set_by_one_response_are_never_sent_with_the_next(
    site: str, private_allowed: None
) -> None:
    async def scenario() -> fetch.FetchResult:
        async with fetch.OutboundClient() as client:
            await client.fetch(f"{site}/set-cookie")
            return await client.fetch(f"{site}/echo")

    assert "cookie" not in json.loads(asyncio.run(scenario()).content)["headers"]


# --- Body size, timeouts and connection errors -----------------------------------


def test_gzip_body_is_returned_decoded(site: str, private_allowed: None) -> None:
    assert run_fetch(f"{site}/gzip").content == b"hello gzip"


def test_raw_deflate_body_is_returned_decoded(site: str, private_allowed: None) -> None:
    assert run_fetch(f"{site}/deflate").content == b"hello deflate"


def test_a_brotli_body_sent_unasked_is_returned_decoded(
    site: str, private_allowed: None
) -> None:
    # Servers that keep pre-compressed files send them whatever was asked.
    assert run_fetch(f"{site}/brotli").content == b"hello"


def test_a_brotli_bomb_is_stopped_at_the_decoded_byte_cap(
    site: str, private_allowed: None
) -> None:
    assert len(BROTLI_BOMB) < 64 * 1024
    error = fetch_error(f"{site}/brotli-bomb", max_bytes=1024 * 1024)
    assert (error.kind, error.message) == ("too_large", "Page is larger than 1 MB")


@pytest.mark.parametrize("size", [1_200_000, 10_000_000])
def test_a_brotli_body_past_one_decoded_piece_is_returned_whole(
    site: str, private_allowed: None, size: int
) -> None:
    fetched = run_fetch(f"{site}/brotli-text/{size}", max_bytes=16 * 1024 * 1024)

    assert len(fetched.content) == size
    assert fetched.content == varied_text(size)


@pytest.mark.parametrize("size", [1_200_000, 10_000_000])
@pytest.mark.parametrize("raw_piece", [16 * 1024, None], ids=["in pieces", "whole"])
def test_a_brotli_body_reader_decodes_every_byte_however_it_is_fed(
    size: int, raw_piece: int | None
) -> None:
    compressed = brotli_text(size)
    step = raw_piece or len(compressed)
    reader = BodyReader("br", 16 * 1024 * 1024)

    for start in range(0, len(compressed), step):
        reader.feed(compressed[start : start + step])

    assert reader.finish() == varied_text(size)


def test_a_brotli_bomb_fed_to_a_body_reader_stops_at_the_cap() -> None:
    reader = BodyReader("br", 1024 * 1024)

    with pytest.raises(fetch.FetchError) as caught:
        reader.feed(BROTLI_BOMB)

    assert caught.value.kind == "too_large"
    cut = BodyReader("br", 1024 * 1024, truncate=True)
    cut.feed(BROTLI_BOMB)
    assert (cut.full, cut.finish()) == (True, b"\0" * (1024 * 1024))


def test_a_damaged_brotli_body_is_a_protocol_error(
    site: str, private_allowed: None
) -> None:
    error = fetch_error(f"{site}/brotli-damaged")
    assert (error.kind, error.message) == (
        "protocol",
        "Server sent a br body that could not be decoded",
    )


def test_a_zstd_body_sent_unasked_is_returned_decoded(
    site: str, private_allowed: None
) -> None:
    assert run_fetch(f"{site}/zstd").content == b"hello"


def test_a_zstd_bomb_is_stopped_at_the_decoded_byte_cap(
    site: str, private_allowed: None
) -> None:
    assert len(ZSTD_BOMB) < 64 * 1024
    error = fetch_error(f"{site}/zstd-bomb", max_bytes=1024 * 1024)
    assert (error.kind, error.message) == ("too_large", "Page is larger than 1 MB")
    # Cut as it decodes, not decoded whole and then refused: the stage hands
    # out no more than the cap and the one piece that passed it.
    decoded = sum(map(len, body._ZstdStage(1024 * 1024).feed(ZSTD_BOMB)))
    assert 1024 * 1024 < decoded <= 1024 * 1024 + 1 + 64 * 1024


@pytest.mark.parametrize("size", [1_200_000, 10_000_000])
def test_a_zstd_body_past_one_decoded_piece_is_returned_whole(
    site: str, private_allowed: None, size: int
) -> None:
    fetched = run_fetch(f"{site}/zstd-text/{size}", max_bytes=16 * 1024 * 1024)

    assert len(fetched.content) == size
    assert fetched.content == varied_text(size)


@pytest.mark.parametrize("size", [1_200_000, 10_000_000])
@pytest.mark.parametrize("raw_piece", [16 * 1024, None], ids=["in pieces", "whole"])
def test_a_zstd_body_reader_decodes_every_byte_however_it_is_fed(
    size: int, raw_piece: int | None
) -> None:
    compressed = zstd_text(size)
    step = raw_piece or len(compressed)
    reader = BodyReader("zstd", 16 * 1024 * 1024)

    for start in range(0, len(compressed), step):
        reader.feed(compressed[start : start + step])

    assert reader.finish() == varied_text(size)


def test_a_zstd_body_of_several_frames_is_decoded_whole() -> None:
    frames = b"".join(zstandard.ZstdCompressor().compress(w) for w in (b"a", b"b"))
    reader = BodyReader("zstd", 1024)

    reader.feed(frames)

    assert reader.finish() == b"ab"


def test_a_zstd_bomb_fed_to_a_body_reader_stops_at_the_cap() -> None:
    reader = BodyReader("zstd", 1024 * 1024)

    with pytest.raises(fetch.FetchError) as caught:
        reader.feed(ZSTD_BOMB)

    assert caught.value.kind == "too_large"
    cut = BodyReader("zstd", 1024 * 1024, truncate=True)
    cut.feed(ZSTD_BOMB)
    assert (cut.full, cut.finish()) == (True, b"\0" * (1024 * 1024))


def test_a_zstd_bomb_is_decoded_no_further_than_the_cap(monkeypatch) -> None:
    decoded: list[int] = []
    real_write = body._ZstdSink.write

    def counting(sink: body._ZstdSink, piece: bytes) -> int:
        decoded.append(len(piece))
        return real_write(sink, piece)

    monkeypatch.setattr(body._ZstdSink, "write", counting)
    reader = BodyReader("zstd", 1024 * 1024, truncate=True)

    reader.feed(ZSTD_BOMB)
    reader.feed(b"")

    # The cap and the one decoder piece that passed it, not 20 MB.
    assert 1024 * 1024 < sum(decoded) <= 1024 * 1024 + 64 * 1024 + 1


def test_a_zstd_frame_asking_for_more_than_8_mb_of_memory_is_refused() -> None:
    # Streamed without its size, a 16 MB window is what the decoder must hold.
    params = zstandard.ZstdCompressionParameters(window_log=24)
    streamed = zstandard.ZstdCompressor(compression_params=params).compressobj()
    frame = streamed.compress(b"hello") + streamed.flush()
    reader = BodyReader("zstd", 1024 * 1024)

    with pytest.raises(fetch.FetchError) as caught:
        reader.feed(frame)

    assert caught.value.kind == "protocol"
    assert zstandard.get_frame_parameters(frame).window_size == 16 * 1024 * 1024


def test_a_damaged_zstd_body_is_a_protocol_error(
    site: str, private_allowed: None
) -> None:
    error = fetch_error(f"{site}/zstd-damaged")
    assert (error.kind, error.message) == (
        "protocol",
        "Server sent a zstd body that could not be decoded",
    )


def test_an_encoding_we_cannot_decode_is_a_protocol_error(
    site: str, private_allowed: None
) -> None:
    error = fetch_error(f"{site}/compress")
    assert (error.kind, error.message) == (
        "protocol",
        "Server sent an unsupported encoding (compress)",
    )


def test_gzip_bomb_is_stopped_at_the_decoded_byte_cap(
    site: str, private_allowed: None
) -> None:
    assert len(BOMB) < 64 * 1024  # 20 MB of zeros in a tiny transfer
    error = fetch_error(f"{site}/bomb", max_bytes=1024 * 1024)
    assert error.kind == "too_large"
    assert error.message == "Page is larger than 1 MB"


def test_body_larger_than_the_configured_cap_is_refused(
    site: str, settings: Any, private_allowed: None
) -> None:
    settings.FETCH_MAX_BYTES = 1024
    error = fetch_error(f"{site}/big")
    assert (error.kind, error.message) == ("too_large", "Page is larger than 1 KB")
    assert len(run_fetch(f"{site}/big", max_bytes=2000).content) == 2000


def test_a_body_past_the_cap_can_be_cut_at_the_cap_instead(
    site: str, private_allowed: None
) -> None:
    # robots.txt is read this way: its first part counts, the rest is dropped.
    cut = run_fetch(f"{site}/big", max_bytes=1024, truncate=True)
    assert cut.status_code == 200 and len(cut.content) == 1024
    bomb = run_fetch(f"{site}/bomb", max_bytes=1024 * 1024, truncate=True)
    assert bomb.content == b"\0" * (1024 * 1024)


def test_a_page_fetch_reads_a_file_only_as_far_as_it_takes_to_know_it_is_one(
    site: str, private_allowed: None
) -> None:
    whole = 32 * 1024 * 1024
    file = run_fetch(f"{site}/bomb", max_bytes=whole, pages_only=True)
    assert file.status_code == 200
    assert 4096 <= len(file.content) <= 256 * 1024  # not its 20 MB
    assert len(run_fetch(f"{site}/bomb", max_bytes=whole).content) == 20 * 1024**2
    # A page is read whole, whatever its bytes look like.
    page = run_fetch(f"{site}/long-page", pages_only=True)
    assert len(page.content) == 12 + 20_000 * 8 + 14


def test_a_body_cut_at_the_cap_stays_full_when_its_first_bytes_are_a_page() -> None:
    # Cut at the cap in the piece that also reaches SNIFF_BYTES: the cut
    # says to stop reading, whatever the file test would find.
    limit = SNIFF_BYTES + 100
    reader = BodyReader("", limit, truncate=True, is_a_file=lambda head: False)
    reader.feed(b"<html><p>" + b"a" * 2 * SNIFF_BYTES)

    assert reader.full is True
    assert len(reader.finish()) == limit


def test_server_that_never_answers_times_out_quickly(private_allowed: None) -> None:
    # The kernel completes the handshake into the backlog; nobody ever reads.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        started = time.monotonic()
        error = fetch_error(f"http://127.0.0.1:{silent.getsockname()[1]}/", timeout=0.2)
    assert error.kind == "timeout"
    assert time.monotonic() - started < 2


def serve_once(answer: bytes) -> tuple[socket.socket, str]:
    """A listener that answers one request with `answer`, then hangs up."""
    listener = socket.create_server(("127.0.0.1", 0))

    def reply() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(answer)

    threading.Thread(target=reply, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}/"


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n400\r\npartial",
            id="chunked-cut-mid-chunk",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nonly this much",
            id="shorter-than-content-length",
        ),
    ],
)
def test_a_body_cut_off_midway_is_called_incomplete(
    private_allowed: None, answer: bytes
) -> None:
    listener, url = serve_once(answer)
    with listener:
        error = fetch_error(url)
    assert (error.kind, error.message) == (
        "protocol",
        "Server sent an incomplete page (the connection closed before its end)",
    )


def test_a_broken_status_line_is_still_an_invalid_response(
    private_allowed: None,
) -> None:
    listener, url = serve_once(b"HTTP/1.1 abc nonsense\r\n\r\n")
    with listener:
        error = fetch_error(url)
    assert error.message == "Server sent an invalid HTTP response"


def test_connection_refused_gives_a_clear_message(private_allowed: None) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free_port = probe.getsockname()[1]
    error = fetch_error(f"http://127.0.0.1:{free_port}/")
    assert (error.kind, error.message) == ("refused", "Connection refused by 127.0.0.1")


def test_unresolvable_name_gives_a_clear_message(private_allowed: None) -> None:
    def nxdomain(host: str, port: int) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    error = fetch_error("http://nowhere.test/", resolver=nxdomain)
    assert (error.kind, error.message) == ("dns", "Could not resolve nowhere.test")


# --- Concurrency ------------------------------------------------------------------


class HoldingServer:
    """Holds each request until `hold_until` are in flight together (or no more
    can arrive), recording the peak. No sleeps: a client that respects its
    bound fills it and is released; one that exceeds it shows in `peak`."""

    def __init__(self, hold_until: int, total: int):
        self.hold_until, self.total = hold_until, total
        self.active = self.started = self.peak = 0
        self.changed = asyncio.Condition()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        await reader.readuntil(b"\r\n\r\n")
        async with self.changed:
            self.active += 1
            self.started += 1
            self.peak = max(self.peak, self.active)
            self.changed.notify_all()
            await self.changed.wait_for(
                lambda: self.active >= self.hold_until or self.started == self.total
            )
            # Count it finished before answering, so the client's next request
            # can never overlap with this one in our bookkeeping.
            self.active -= 1
            self.changed.notify_all()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        )
        await writer.drain()
        writer.close()


async def fetch_or_error(
    client: fetch.OutboundClient, url: str
) -> fetch.FetchResult | fetch.FetchError:
    try:
        return await client.fetch(url, timeout=5)
    except fetch.FetchError as exc:
        return exc


def run_against_holding_server(
    hosts: list[str], hold_until: int, make_client: Callable[[], fetch.OutboundClient]
) -> tuple[HoldingServer, list[fetch.FetchResult | fetch.FetchError]]:
    holder = HoldingServer(hold_until, total=len(hosts))

    async def scenario() -> list[fetch.FetchResult | fetch.FetchError]:
        server = await asyncio.start_server(holder.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, make_client() as client:
            urls = [f"http://{host}:{port}/" for host in hosts]
            return await asyncio.gather(*(fetch_or_error(client, url) for url in urls))

    return holder, asyncio.run(scenario())


def test_overall_concurrency_is_bounded(private_allowed: None) -> None:
    hosts = [f"h{n}.test" for n in range(9)]
    dns = Resolver({host: [["127.0.0.1"]] for host in hosts})
    holder, results = run_against_holding_server(
        hosts,
        hold_until=3,
        make_client=lambda: fetch.OutboundClient(
            resolver=dns, concurrency=3, per_host_concurrency=4
        ),
    )
    assert all(isinstance(r, fetch.FetchResult) for r in results)
    assert holder.peak == 3


def test_per_host_concurrency_is_bounded(settings: Any, private_allowed: None) -> None:
    settings.FETCH_PER_HOST_CONCURRENCY = 2
    holder, results = run_against_holding_server(
        ["127.0.0.1"] * 6,
        hold_until=2,
        make_client=lambda: fetch.OutboundClient(concurrency=16),
    )
    assert all(isinstance(r, fetch.FetchResult) for r in results)
    assert holder.peak == 2


def test_waiting_for_a_slot_does_not_spend_the_timeout_budget(
    private_allowed: None,
) -> None:
    """One slot: the second request queues behind a first that takes longer
    than the second's whole budget, and still succeeds once its turn comes."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"GET /slow "):
            await asyncio.sleep(0.4)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    async def scenario() -> list[bytes]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with server, fetch.OutboundClient(concurrency=1) as client:
            slow, queued = await asyncio.gather(
                client.fetch(f"{base}/slow", timeout=5),
                client.fetch(f"{base}/fast", timeout=0.2),
            )
        return [slow.content, queued.content]

    assert asyncio.run(scenario()) == [b"ok", b"ok"]


# --- Errors and the transport ------------------------------------------------------


def test_every_kind_of_fetch_failure_has_its_message() -> None:
    assert MESSAGES.keys() == FETCH_KINDS
    error = fetch.FetchError(ErrorKind.TOO_LARGE, detail="1 KB")
    assert (error.kind, error.message, str(error)) == (
        "too_large",
        "Page is larger than 1 KB",
        "Page is larger than 1 KB",
    )


def test_the_guarded_transport_raises_httpx_errors_for_httpx_clients(
    private_allowed: None,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free_port = probe.getsockname()[1]

    async def scenario() -> None:
        guarded = transport.GuardedTransport(
            verify=True, max_connections=1, resolver=no_dns
        )
        async with httpx.AsyncClient(transport=guarded) as client:
            await client.get(f"http://127.0.0.1:{free_port}/")

    with pytest.raises(httpx.ConnectError) as caught:
        asyncio.run(scenario())
    assert isinstance(caught.value.__cause__, httpcore.ConnectError)


def test_the_debug_log_names_the_origin_of_a_request_never_its_path_or_query(
    site: str, private_allowed: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A webhook's address is often its receiver's credential: at DEBUG, the
    log a self-hoster shares when asking for help must not hold it."""
    caplog.set_level("DEBUG", logger="checks.fetch.client")

    run_fetch(f"{site}/page?hooks=T0SECRET&token=QUERYSECRET", method="POST")

    assert [r.getMessage() for r in caplog.records] == [f"POST {site} -> 200"]
