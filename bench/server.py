"""A fast loopback HTTP/1.1 server for the benchmark pages, in its own process.

    python -m bench.server --pages 50      # prints its port, serves until killed

It must never be the bottleneck, so it runs in a separate process (no GIL shared
with the runner), on asyncio with keep-alive, and serves responses built ahead
of time: head and body as one buffer, gzip precompressed (sent when the client
accepts it, as real sites do).

Paths: /articles/<i> for i < pages. Control (used by the bench, never by the
code under test):
    /__control/set?gen=G&variant=V&delay_ms=D
                                     rebuild every page for that generation/variant;
                                     answer pages after D ms (network latency,
                                     simulated without using any CPU)
    /__control/stats                 {"cpu": process CPU seconds, "requests": n}
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import time
from urllib.parse import parse_qs, urlsplit

from bench.pages import article_page

_MAX_HEAD = 16 * 1024


class _Pages:
    def __init__(self, count: int) -> None:
        self.count = count
        self.plain: dict[str, bytes] = {}
        self.gzipped: dict[str, bytes] = {}
        self.requests = 0
        self.delay = 0.0

    def build(self, generation: int, variant: int) -> None:
        plain, gzipped = {}, {}
        for index in range(self.count):
            body = article_page(generation, index, variant).encode()
            path = f"/articles/{index}"
            plain[path] = _response(200, "text/html; charset=utf-8", body)
            gzipped[path] = _response(
                200, "text/html; charset=utf-8", gzip.compress(body, 6), "gzip"
            )
        self.plain, self.gzipped = plain, gzipped


def _response(
    status: int, content_type: str, body: bytes, encoding: str | None = None
) -> bytes:
    reason = {200: "OK", 404: "Not Found"}.get(status, "OK")
    head = [
        f"HTTP/1.1 {status} {reason}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Cache-Control: no-cache",
    ]
    if encoding:
        head += [f"Content-Encoding: {encoding}", "Vary: Accept-Encoding"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_NOT_FOUND = _response(404, "text/plain", b"Not found")


def _control(pages: _Pages, target: str) -> bytes:
    parts = urlsplit(target)
    if parts.path == "/__control/set":
        query = parse_qs(parts.query)
        pages.build(int(query["gen"][0]), int(query["variant"][0]))
        pages.delay = int(query.get("delay_ms", ["0"])[0]) / 1000
        return _response(200, "text/plain", b"ok")
    stats = {"cpu": time.process_time(), "requests": pages.requests}
    return _response(200, "application/json", json.dumps(stats).encode())


async def _serve(
    pages: _Pages, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEAD:
                break
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            target = parts[1] if len(parts) > 1 else "/"
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in lines[1:])
                if name
            }
            if target.startswith("/__control/"):
                writer.write(_control(pages, target))
            else:
                pages.requests += 1
                if pages.delay:
                    await asyncio.sleep(pages.delay)
                accepts_gzip = "gzip" in headers.get("accept-encoding", "")
                table = pages.gzipped if accepts_gzip else pages.plain
                writer.write(table.get(target, _NOT_FOUND))
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
        pass
    finally:
        writer.close()


async def _main(count: int) -> None:
    pages = _Pages(count)
    pages.build(0, 0)
    server = await asyncio.start_server(
        lambda r, w: _serve(pages, r, w), "127.0.0.1", 0, backlog=512
    )
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()
    try:
        asyncio.run(_main(args.pages))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
