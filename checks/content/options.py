"""Firecrawl ``scrapeOptions`` (camelCase keys) as the extractor reads them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Options:
    formats: frozenset[str]
    only_main_content: bool
    include_tags: tuple[str, ...]
    exclude_tags: tuple[str, ...]
    remove_base64_images: bool
    block_ads: bool
    parse_pdf: bool
    # A PDF parser's maxPages: its first pages are read, the rest are not.
    pdf_max_pages: int | None = None
    # The pdf parser's mode ("fast", "auto", "ocr"); None when not given,
    # which reads as "auto", Firecrawl's default.
    pdf_mode: str | None = None


def _type_names(items: Any) -> Iterable[str]:
    """Format/parser lists hold strings or objects such as ``{"type": "pdf"}``."""
    if not isinstance(items, list | tuple):
        return ()
    names = []
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, Mapping) and isinstance(item.get("type"), str):
            names.append(item["type"])
    return names


def _pdf_max_pages(parsers: Any) -> int | None:
    for item in parsers if isinstance(parsers, list | tuple) else ():
        if isinstance(item, Mapping) and item.get("type") == "pdf":
            pages = item.get("maxPages")
            if isinstance(pages, int) and not isinstance(pages, bool) and pages > 0:
                return pages
    return None


def pdf_mode(parsers: Any) -> str | None:
    """The mode a pdf parser object names, if any."""
    for item in parsers if isinstance(parsers, list | tuple) else ():
        if isinstance(item, Mapping) and item.get("type") == "pdf":
            mode = item.get("mode")
            if mode in ("fast", "auto", "ocr"):
                return mode
    return None


def _selectors(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(s.strip() for s in value if isinstance(s, str) and s.strip())


def parse_options(options: Mapping[str, Any]) -> Options:
    parsers = options.get("parsers")
    if parsers is None:  # absent or null: Firecrawl's default
        parsers = ["pdf"]
    return Options(
        formats=frozenset(_type_names(options.get("formats"))),
        only_main_content=options.get("onlyMainContent", True) is not False,
        include_tags=_selectors(options.get("includeTags")),
        exclude_tags=_selectors(options.get("excludeTags")),
        remove_base64_images=options.get("removeBase64Images", True) is not False,
        block_ads=options.get("blockAds", True) is not False,
        parse_pdf="pdf" in _type_names(parsers),
        pdf_max_pages=_pdf_max_pages(parsers),
        pdf_mode=pdf_mode(parsers),
    )
