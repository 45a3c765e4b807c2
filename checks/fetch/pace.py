"""Requests to one site kept apart: a crawl's `delay` option or its
robots.txt Crawl-delay, for every request after robots.txt (where the start
page leads, the sitemaps and the pages); robots.txt itself waits for none."""

from __future__ import annotations

import asyncio


class Pace:
    """At least `delay` seconds between the starts of two requests that wait
    their turn. The first waits too: the request before it (robots.txt, or
    the last page of the crawl's previous batch) was just made."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self._lock = asyncio.Lock()
        self._last: float | None = None

    async def wait_turn(self) -> None:
        if self.delay <= 0:
            return
        async with self._lock:
            loop = asyncio.get_running_loop()
            last = loop.time() if self._last is None else self._last
            wait = last + self.delay - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last = loop.time()
