"""What a crawl knows before its first page: robots.txt and the sitemaps.

Both are fetched through the one outbound door (checks.fetch), under the
same address policy and limits as pages (checks.crawl.sitemaps: the
adapter that lets ultimate-sitemap-parser read through it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from urllib.parse import urljoin

from checks.fetch import FetchError, OutboundClient, Resolver

ROBOTS_MAX_BYTES = 512 * 1024  # Google reads the first 500 KiB


@dataclass
class Discovery:
    robots_txt: str = ""
    sitemap_urls: list[str] = field(default_factory=list)
    sitemaps_read: int = 0


def discover(
    start_url: str, *, sitemaps: bool, resolver: Resolver | None = None
) -> Discovery:
    """robots.txt of the start URL's site, and (when wanted) the page URLs
    of the sitemaps it declares."""
    # Imported here: ultimate-sitemap-parser brings requests and urllib3,
    # which only a worker process that crawls needs.
    from checks.crawl.sitemaps import DoorWebClient, sitemap_pages

    found = Discovery()
    with asyncio.Runner() as runner:
        client = OutboundClient(resolver=resolver, concurrency=1)
        try:
            web = DoorWebClient(runner, client)
            found.robots_txt = web.text(
                urljoin(start_url, "/robots.txt"), ROBOTS_MAX_BYTES
            )
            if sitemaps and "sitemap:" in found.robots_txt.lower():
                web.set_max_response_data_length(None)
                found.sitemap_urls = sitemap_pages(start_url, web)
                found.sitemaps_read = len(web.answers) - 1
        finally:
            runner.run(client.aclose())
    return found


async def robots_of(origin: str, client: OutboundClient) -> str:
    """robots.txt of another host met during the crawl ("" when it has none
    or it cannot be read: everything is then allowed, as crawlers agree)."""
    try:
        fetched = await client.fetch(
            urljoin(origin, "/robots.txt"), max_bytes=ROBOTS_MAX_BYTES
        )
    except FetchError:
        return ""
    return fetched.text if fetched.status_code < 400 else ""
