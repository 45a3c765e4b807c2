"""Sitemaps read by ultimate-sitemap-parser through an adapter to the one
outbound door (checks.fetch): the sitemaps robots.txt declares, or when it
declares none the one at /sitemap.xml (as Firecrawl's crawler; no other
guessed paths), index sitemaps followed. robots.txt itself is read by
checks.crawl.discovery and handed to the adapter, so it is fetched once.
"""

from __future__ import annotations

import logging
from urllib.parse import urljoin

from usp.fetch_parse import SitemapFetcher
from usp.objects.sitemap import AbstractSitemap
from usp.tree import sitemap_tree_for_homepage
from usp.web_client.abstract_client import (
    AbstractWebClient,
    AbstractWebClientResponse,
    AbstractWebClientSuccessResponse,
    WebClientErrorResponse,
)

from checks.crawl.door import Paced
from checks.errors import ErrorKind, kind_of_status
from checks.fetch import FetchError, FetchResult

logger = logging.getLogger(__name__)

# Sitemap URLs read at most, whatever the crawl limit (a 50,000-URL sitemap
# index of indexes would otherwise be read in full).
SITEMAP_MAX_URLS = 50_000


class _Response(AbstractWebClientSuccessResponse):
    def __init__(self, fetched: FetchResult) -> None:
        self.fetched = fetched

    def status_code(self) -> int:
        return self.fetched.status_code

    def status_message(self) -> str:
        return ""

    def header(self, case_insensitive_name: str) -> str | None:
        return self.fetched.headers.get(case_insensitive_name)

    def raw_data(self) -> bytes:
        return self.fetched.content

    def url(self) -> str:
        return self.fetched.final_url


class DoorWebClient(AbstractWebClient):
    """usp's HTTP client: our door, at the crawl's pace, one request at a
    time; answers are remembered, so robots.txt is fetched once."""

    def __init__(self, door: Paced) -> None:
        self.door = door
        self.max_bytes: int | None = None
        self.answers: dict[str, AbstractWebClientResponse] = {}
        # The sitemaps that could not be fetched, with why: the error's kind
        # and the status answered, if any (checks.crawl.source tells a
        # failure that may pass from a sitemap that is gone).
        self.failed: dict[str, tuple[ErrorKind | None, int | None]] = {}

    def set_max_response_data_length(
        self, max_response_data_length: int | None
    ) -> None:
        self.max_bytes = max_response_data_length

    def remember(self, url: str, fetched: FetchResult) -> None:
        """An answer fetched already (robots.txt), so usp does not ask again."""
        self.answers[url] = _Response(fetched)

    def get(self, url: str) -> AbstractWebClientResponse:
        if url not in self.answers:
            self.answers[url] = self._get(url)
        return self.answers[url]

    def _get(self, url: str) -> AbstractWebClientResponse:
        try:
            fetched = self.door.fetch(url, max_bytes=self.max_bytes)
        except FetchError as exc:
            self.failed[url] = (exc.kind, None)
            return WebClientErrorResponse(exc.message, retryable=False)
        if fetched.status_code >= 400:
            code = fetched.status_code
            self.failed[url] = (kind_of_status(code), code)
            return WebClientErrorResponse(
                f"HTTP {fetched.status_code}", retryable=False
            )
        return _Response(fetched)


def sitemap_pages(start_url: str, web: DoorWebClient, *, declared: bool) -> list[str]:
    """The page URLs of the sitemaps robots.txt declares (`declared`), or
    else of the one at the site's /sitemap.xml."""
    try:
        tree: AbstractSitemap
        if declared:
            tree = sitemap_tree_for_homepage(
                start_url, web_client=web, use_robots=True, use_known_paths=False
            )
        else:
            tree = SitemapFetcher(
                url=urljoin(start_url, "/sitemap.xml"),
                recursion_level=0,
                web_client=web,
                quiet_404=True,
            ).sitemap()
        urls: dict[str, None] = {}
        for page in tree.all_pages():
            urls[page.url] = None
            if len(urls) >= SITEMAP_MAX_URLS:
                break
        return list(urls)
    except Exception:  # a broken sitemap must not stop the crawl
        logger.warning("Reading the sitemaps of %s failed", start_url, exc_info=True)
        return []
