"""A fast loopback HTTP/1.1 server for the benchmark pages, in its own process.

    python -m bench.server --hosts 4     # prints its addresses, serves until killed

It must never be the bottleneck, so it runs in a separate process (no GIL shared
with anything measured), on asyncio with keep-alive, and serves responses built
ahead of time: head and body as one buffer, gzip precompressed (sent when the
client accepts it, as real sites do).

It listens on 127.0.0.1, 127.0.0.2, ... (one port each; Linux routes all of
127.0.0.0/8 to the loopback interface): the fetcher limits its concurrency per
host name, so pages spread over several addresses behave like several sites.
Every address serves the same pages.

Paths: /articles/<i> for i < pages, or the pages of bench.site.Site and its
robots.txt. Control (used by the bench, never by the code under test):
    /__control/set?pages=N&gen=G&variant=V&edited=E&delay_ms=D[&scripted=1]
                                     rebuild pages 0..N-1 (bench.pages.article_page,
                                     or app_page: built by a script in the browser);
                                     answer pages after D ms (network latency,
                                     simulated without using any CPU)
    /__control/site?pages=N&gen=G&delay_ms=D
                                     serve a site of N pages instead (built once
                                     per N and G, then kept), after D ms
    /__control/stats                 {"cpu": process CPU seconds, "requests": n}
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import time
from collections.abc import Iterable
from urllib.parse import parse_qs, urlsplit

from bench.pages import app_page, article_page
from bench.site import ROBOTS_TXT, Site

_MAX_HEAD = 16 * 1024


class _Pages:
    def __init__(self) -> None:
        self.plain: dict[str, bytes] = {}
        self.gzipped: dict[str, bytes] = {}
        self.requests = 0
        self.delay = 0.0
        # Sites by (pages, generation): a 2,000-page site takes seconds to build.
        self.sites: dict[tuple[int, int], tuple[dict[str, bytes], ...]] = {}

    def build(
        self, count: int, generation: int, variant: int, edited: bool, scripted: bool
    ) -> None:
        page = app_page if scripted else article_page
        self.plain, self.gzipped = _tables(
            (f"/articles/{index}", page(generation, index, variant, edited))
            for index in range(count)
        )

    def show_site(self, count: int, generation: int) -> None:
        key = (count, generation)
        if key not in self.sites:
            self.sites[key] = _tables(Site(count).html(generation))
            robots = _response(200, "text/plain", ROBOTS_TXT.encode())
            for table in self.sites[key]:
                table["/robots.txt"] = robots
        self.plain, self.gzipped = self.sites[key]


def _tables(pages: Iterable[tuple[str, str]]) -> tuple[dict[str, bytes], ...]:
    """Responses by path: plain, and gzip-encoded."""
    plain, gzipped = {}, {}
    for path, html in pages:
        body = html.encode()
        plain[path] = _response(200, "text/html; charset=utf-8", body)
        gzipped[path] = _response(
            200, "text/html; charset=utf-8", gzip.compress(body, 6), "gzip"
        )
    return plain, gzipped


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
        query = {key: int(values[0]) for key, values in parse_qs(parts.query).items()}
        pages.build(
            query["pages"],
            query["gen"],
            query["variant"],
            bool(query["edited"]),
            bool(query.get("scripted", 0)),
        )
        pages.delay = query["delay_ms"] / 1000
        return _response(200, "text/plain", b"ok")
    if parts.path == "/__control/site":
        query = {key: int(values[0]) for key, values in parse_qs(parts.query).items()}
        pages.show_site(query["pages"], query["gen"])
        pages.delay = query["delay_ms"] / 1000
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


async def _main(hosts: int) -> None:
    pages = _Pages()
    servers = [
        await asyncio.start_server(
            lambda r, w: _serve(pages, r, w), f"127.0.0.{n}", 0, backlog=512
        )
        for n in range(1, hosts + 1)
    ]
    origins = [
        "http://{}:{}".format(*server.sockets[0].getsockname()[:2])
        for server in servers
    ]
    print(json.dumps(origins), flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1)
    args = parser.parse_args()
    try:
        asyncio.run(_main(args.hosts))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
