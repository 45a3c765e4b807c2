"""The door for discovery's requests after robots.txt (where the start page
leads, each sitemap): the one outbound client, at the crawl's pace, driven
from synchronous code. Used by checks.crawl.discovery and by the sitemaps'
reader it hands the door to (checks.crawl.sitemaps)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checks.fetch import FetchError, FetchResult, OutboundClient, Pace


@dataclass
class Paced:
    """Each request waits for the crawl's pace, and the check is told it is
    alive first (many sitemaps, paced or slow to answer, outlast the time
    after which a silent check counts as lost)."""

    runner: asyncio.Runner
    client: OutboundClient
    pace: Pace
    alive: Callable[[], object]
    # What stopped discovery (the check no longer ours, the task's time
    # limit): nothing more is fetched, and discover raises it again once the
    # sitemaps' reader, which turns every error into a sitemap that failed,
    # is done.
    stopped: BaseException | None = None

    def fetch(self, url: str, **options: Any) -> FetchResult:
        if self.stopped is not None:
            raise self.stopped
        try:
            self.alive()
            return self.runner.run(self._fetch(url, options))
        except FetchError:
            raise
        except BaseException as exc:
            self.stopped = exc
            raise

    async def _fetch(self, url: str, options: dict[str, Any]) -> FetchResult:
        await self.pace.wait_turn()
        return await self.client.fetch(url, **options)
