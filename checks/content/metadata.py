"""A page's metadata in Firecrawl's shape: title, description, language,
Open Graph fields, and the base URL its relative links resolve against."""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

# Keys of a page's metadata kept for Pagewatch's own use and never sent to
# clients (monitors.api.checks): what read a PDF's scanned pages, the OCR
# engine's exact version, says what software the server runs.
INTERNAL_KEYS = frozenset({"ocrEngine"})


def for_clients(metadata: dict[str, Any]) -> dict[str, Any]:
    """`metadata` without its INTERNAL_KEYS."""
    return {k: v for k, v in metadata.items() if k not in INTERNAL_KEYS}


def base_metadata(content_type: str, url: str) -> dict[str, Any]:
    """What every page has, whatever its kind."""
    return {
        "title": None,
        "description": None,
        "language": None,
        "contentType": content_type,
        "sourceURL": url,
    }


_META_ATTRIBUTES = ("name", "property", "http-equiv")


def _meta_index(tree: LexborHTMLParser) -> dict[tuple[str, str], LexborNode]:
    """The first ``<meta>`` (document order) per (attribute, lowercase value) of
    its name/property/http-equiv: what ``css_first('meta[attr="value" i]')``
    finds, from one pass over the document instead of one per selector. The
    ``i`` flag folds ASCII letters only, so a non-ASCII value never matches
    our (ASCII) keys and is left out."""
    index: dict[tuple[str, str], LexborNode] = {}
    for node in tree.css("meta"):
        attrs = node.attributes
        for attr in _META_ATTRIBUTES:
            value = attrs.get(attr)
            if value and value.isascii():
                index.setdefault((attr, value.lower()), node)
    return index


def _meta(
    index: dict[tuple[str, str], LexborNode], attr: str, value: str
) -> str | None:
    node = index.get((attr, value))
    if node is None:
        return None
    content = (node.attributes.get("content") or "").strip()
    return content or None


def html_metadata(
    tree: LexborHTMLParser, content_type: str, url: str
) -> dict[str, Any]:
    metadata = base_metadata(content_type, url)
    metas = _meta_index(tree)
    title_node = tree.css_first("head title") or tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node else ""
    metadata["title"] = title or _meta(metas, "property", "og:title")
    metadata["description"] = _meta(metas, "name", "description") or _meta(
        metas, "property", "og:description"
    )
    html_node = tree.css_first("html")
    language = (html_node.attributes.get("lang") or "").strip() if html_node else ""
    metadata["language"] = language or _meta(metas, "http-equiv", "content-language")
    for key, attr, value in (
        ("keywords", "name", "keywords"),
        ("ogTitle", "property", "og:title"),
        ("ogDescription", "property", "og:description"),
        ("ogImage", "property", "og:image"),
        ("ogSiteName", "property", "og:site_name"),
    ):
        content = _meta(metas, attr, value)
        if content:
            metadata[key] = content
    return metadata


def base_url(tree: LexborHTMLParser, url: str) -> str:
    base = tree.css_first("base[href]")
    href = (base.attributes.get("href") or "").strip() if base else ""
    if href:
        try:
            resolved = urljoin(url, href)
        except ValueError:
            return url
        if urlsplit(resolved).scheme in ("http", "https"):
            return resolved
    return url
