"""A tiny web server on 127.0.0.1 whose pages a test controls.

    with Site() as site:
        site.page("/pricing", "<h1>Plans</h1><p>$19</p>")
        url = site.url("/pricing")
        ...                       # run a check against url
        site.page("/pricing", "<h1>Plans</h1><p>$24</p>")   # change it
        site.remove("/pricing")   # now 404
        site.stop()               # now "connection refused"

Pages can also be any status (`status=410`), slow (`delay=`), or computed per
request (`handler=`); a handler's body may be an iterable of pieces, sent
chunked as it yields them (a download that trickles, a client that hangs
up). Every request is recorded (method, path, headers, body), so the same
server works as a webhook receiver: `site.wait_for_requests(1)`.

Fetching these pages through checks.fetch needs ALLOW_PRIVATE_NETWORK_TARGETS
(the `settings` fixture) since 127.0.0.1 is a loopback address.

A fixture per test module keeps it to one line of setup:

    @pytest.fixture
    def site():
        with Site() as running:
            yield running
"""

from __future__ import annotations

import datetime
import itertools
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "Page",
    "Request",
    "Site",
    "refused_url",
    "sections_site",
    "self_signed",
    "sessions_site",
]

# What a handler answers: (status, headers, body), the body whole or in pieces.
Answer = tuple[int, dict[str, str], bytes | Iterable[bytes]]


@dataclass(frozen=True)
class Request:
    """One request the site received."""

    method: str
    path: str  # with the query string
    headers: dict[str, str]
    body: bytes
    time: float = field(default_factory=time.monotonic)  # when it arrived
    # The client's port: requests over one kept-alive connection share it.
    client_port: int = 0

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)


@dataclass
class Page:
    """What one path answers."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (slow pages, timeouts)
    # Computes the answer per request instead (status, headers, body).
    handler: Callable[[Request], Answer] | None = None


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-answer (a byte cap reached, a time-out) is
    what many tests ask for: not a traceback in the test output."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Site:
    """A threaded HTTP server on 127.0.0.1 with an ephemeral port.

    Paths not set answer 404, or what `otherwise()` set (a site whose unknown
    addresses answer its own "not found" page). Thread-safe: tests change
    pages while a worker or the check runner is fetching them.
    """

    def __init__(self, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        """`port=0` picks a free port; pass an old site's port to bring it back.
        `tls`, a server-side context, makes it an HTTPS site."""
        self._pages: dict[str, Page] = {}
        self._otherwise: Page | None = None
        self._requests: list[Request] = []
        self._lock = threading.Condition()
        self._server = _QuietServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread: threading.Thread | None = None
        self.port = self._server.server_address[1]
        self.stopped = False

    # --- lifecycle ------------------------------------------------------------

    def start(self) -> Site:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"test-site-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the port: later requests are refused."""
        if self.stopped:
            return
        self.stopped = True
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> Site:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- pages ----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def page(
        self,
        path: str,
        body: str | bytes = "",
        *,
        status: int = 200,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> str:
        """Serve `body` at `path` (replacing what was there); returns its URL."""
        data = body.encode() if isinstance(body, str) else body
        return self._set(
            path, Page(data, status, content_type, dict(headers or {}), delay)
        )

    def html(self, path: str, title: str, content: str, **options: object) -> str:
        """A small but complete HTML document; returns its URL."""
        document = (
            f"<!doctype html><html><head><title>{title}</title></head>"
            f"<body><main>{content}</main></body></html>"
        )
        return self.page(path, document, **options)  # type: ignore[arg-type]

    def handle(self, path: str, handler: Callable[[Request], Answer]) -> str:
        """Answer `path` with `handler(request) -> (status, headers, body)`."""
        return self._set(path, Page(handler=handler))

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        return self.page(path, status=status, headers={"Location": location})

    def otherwise(
        self, body: str | bytes, *, status: int = 200, **options: object
    ) -> None:
        """Answer every path not set with `body` (the site's own "not found"
        page, with HTTP 200 unless `status` says otherwise); `page()`'s
        options apply (headers= makes it a redirect)."""
        data = body.encode() if isinstance(body, str) else body
        with self._lock:
            self._otherwise = Page(data, status, **options)  # type: ignore[arg-type]

    def remove(self, path: str) -> None:
        """Forget `path`: it answers 404 from now on."""
        with self._lock:
            self._pages.pop(path, None)

    def _set(self, path: str, page: Page) -> str:
        if not path.startswith("/"):
            path = "/" + path
        with self._lock:
            self._pages[path] = page
        return self.url(path)

    def _lookup(self, path: str) -> Page | None:
        with self._lock:
            found = self._pages.get(path) or self._pages.get(urlsplit(path).path)
            return found or self._otherwise

    # --- requests received ----------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[Request]:
        return [r for r in self.requests if urlsplit(r.path).path == path]

    def wait_for_requests(
        self, count: int, *, path: str | None = None, timeout: float = 10.0
    ) -> list[Request]:
        """Block until `count` requests (to `path`, if given) arrived, or fail."""

        def matching() -> list[Request]:
            return [
                r
                for r in self._requests
                if path is None or urlsplit(r.path).path == path
            ]

        deadline = time.monotonic() + timeout
        with self._lock:
            while len(found := matching()) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"expected {count} requests{f' to {path}' if path else ''}, "
                        f"got {len(found)} within {timeout:g} s"
                    )
                self._lock.wait(remaining)
            return found

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    # --- the handler ----------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(
                    self.command,
                    self.path,
                    dict(self.headers.items()),
                    body,
                    client_port=self.client_address[1],
                )
                site._record(request)
                page = site._lookup(self.path)
                if page is None:
                    status, headers, data = 404, {}, b"Not found"
                    content_type = "text/plain"
                elif page.handler is not None:
                    status, headers, data = page.handler(request)
                    headers = dict(headers)
                    content_type = headers.pop("Content-Type", "text/html")
                else:
                    if page.delay:
                        time.sleep(page.delay)
                    status, headers, data = page.status, page.headers, page.body
                    content_type = page.content_type
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                if isinstance(data, bytes):
                    self.send_header("Content-Length", str(len(data)))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command == "HEAD":
                    return
                if isinstance(data, bytes):
                    self.wfile.write(data)
                    return
                for piece in data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output quiet

        return Handler


def refused_url(path: str = "/") -> str:
    """A 127.0.0.1 URL where nothing listens, so connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


# --- Shapes of real sites --------------------------------------------------------


def self_signed(folder: Path, host: str) -> ssl.SSLContext:
    """A server-side TLS context with a certificate for `host` that no one
    signed: `Site(tls=self_signed(tmp_path, host))` is an HTTPS site that
    only a client skipping verification reads."""
    # Imported here: few tests need a certificate.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), False)
        .sign(key, hashes.SHA256())
    )
    pem = folder / "site.pem"
    pem.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    return context


def _links(*paths: str) -> str:
    return "".join(f'<a href="{path}">{path}</a> ' for path in paths)


def sections_site(site: Site, order: int) -> None:
    """Home → 12 sections → 4 pages each (61 pages). `order` sets which
    sections answer first, as a real site's answers come in any order."""
    sections = [f"/s{i}" for i in range(12)]
    site.html("/", "Home", _links(*sections))
    for i, section in enumerate(sections):
        late = i if order % 2 == 0 else len(sections) - i
        pages = [f"{section}/p{j}" for j in range(4)]
        site.html(section, section, _links(*pages), delay=0.03 * late)
        for page in pages:
            site.html(page, page, f"<p>{page}</p>")


def sessions_site(site: Site) -> None:
    """Home and four pages, every answer linking them with a new session id,
    in the path (Java's ;jsessionid=) or the query (PHP's PHPSESSID, a bare
    sid), and one with campaign tags (utm_*)."""
    sessions = itertools.count()

    def answer(request: Request) -> Answer:
        sid = f"{next(sessions):032x}"
        links = _links(
            f"/a;jsessionid={sid}",
            f"/b?PHPSESSID={sid}&page=2",
            f"/c?sid={sid}",
            "/d?utm_source=news&utm_medium=mail&id=7",
        )
        title = request.path.split("?", 1)[0].split(";", 1)[0]
        body = f"<html><head><title>{title}</title></head><body>{links}</body></html>"
        return 200, {"Content-Type": "text/html"}, body.encode()

    for path in ("/", "/a", "/b", "/c", "/d"):
        site.handle(path, answer)
