"""Search providers behind one small interface (base.Provider): one class
each, chosen by settings (monitors.search_provider)."""

from __future__ import annotations

from django.conf import settings

from checks.fetch import Resolver
from checks.search.providers.base import Hit, Provider, Query, SearchError
from checks.search.providers.brave import BraveProvider
from checks.search.providers.firecrawl import FirecrawlProvider
from checks.search.providers.searxng import SearxngProvider
from checks.search.providers.tavily import TavilyProvider
from monitors.search_provider import configured_provider

__all__ = [
    "BraveProvider",
    "FirecrawlProvider",
    "Hit",
    "Provider",
    "Query",
    "SearchError",
    "SearxngProvider",
    "TavilyProvider",
    "configured",
]


def configured(resolver: Resolver | None = None) -> Provider | None:
    """The provider settings choose, ready to search; None when none is
    configured. Use it on one event loop (`async with`)."""
    name = configured_provider()
    if name == "searxng":
        return SearxngProvider(settings.SEARXNG_URL, resolver=resolver)
    if name == "brave":
        return BraveProvider(settings.BRAVE_API_KEY, resolver=resolver)
    if name == "tavily":
        return TavilyProvider(settings.TAVILY_API_KEY, resolver=resolver)
    if name == "firecrawl":
        return FirecrawlProvider(
            settings.FIRECRAWL_API_KEY, settings.FIRECRAWL_API_URL, resolver=resolver
        )
    return None
