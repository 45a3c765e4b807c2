"""A reverse proxy on 127.0.0.1 in front of the live server, as README's
nginx example for a sub-path sets one up: `/pagewatch/...` is passed on
with the prefix stripped, and only the other paths given (`/v2/` for
clients that drop the sub-path) are passed on as they are. Anything else
is a 404 the live server never sees. Every request is recorded (method and
path as the client sent them), so a test can tell where a client went.

    with SubPathProxy(live_server.url, "/pagewatch", also=["/v2/"]) as proxy:
        proxy.url             # http://127.0.0.1:<port>/pagewatch
        proxy.requests        # [("GET", "/pagewatch/v2/monitor"), ...]
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["SubPathProxy"]

# Not passed on, either way: they are about one connection, not the request.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class SubPathProxy:
    def __init__(self, upstream: str, prefix: str, also: Iterable[str] = ()) -> None:
        self.upstream = urlsplit(upstream)
        self.prefix = prefix.rstrip("/")
        self.also = tuple(also)
        self._requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.origin + self.prefix

    @property
    def requests(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> SubPathProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _upstream_path(self, path: str) -> str | None:
        """Where `path` goes on the live server, or None (not passed on)."""
        if path.startswith(self.prefix + "/"):
            return path[len(self.prefix) :]
        if path.startswith(self.also):
            return path
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _pass_on(self) -> None:
                with proxy._lock:
                    proxy._requests.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                path = proxy._upstream_path(self.path)
                if path is None:
                    self._send(404, [("Content-Type", "text/plain")], b"Not proxied")
                    return
                upstream = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                try:
                    headers = {
                        name: value
                        for name, value in self.headers.items()
                        if name.lower() not in HOP_BY_HOP
                    }
                    upstream.request(self.command, path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                    passed = [
                        (name, value)
                        for name, value in answer.getheaders()
                        if name.lower() not in HOP_BY_HOP
                    ]
                    self._send(answer.status, passed, data)
                finally:
                    upstream.close()

            def _send(
                self, status: int, headers: list[tuple[str, str]], data: bytes
            ) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _pass_on

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
