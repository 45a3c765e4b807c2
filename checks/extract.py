"""Turn a fetched response body into the text Pagewatch compares.

``extract()`` takes the raw bytes of a page plus a Firecrawl ``scrapeOptions``
mapping (camelCase keys) and returns Markdown, optional cleaned/raw HTML, links,
images and metadata. It is pure: no Django models, no network, no clock.

HTML is parsed once with selectolax (lexbor), cleaned in place, and the chosen
subtree is handed to html-to-markdown with options pinned for stable output,
because every formatting wobble between two checks would show up as a change.

The Markdown of an HTML page is a pure function of its *source*: the cleaned
HTML plus the base URL its links resolve against (``Extracted.source``). A
check stores and compares sources and converts to Markdown only when a page's
source differs from its baseline's (``markdown_of``): the conversion is most of
a page's CPU cost, and most checks find most pages unchanged.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from html_to_markdown import ConversionOptions, PreprocessingOptions, convert
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

__all__ = [
    "SOURCE_HTML",
    "SOURCE_MARKDOWN",
    "Extracted",
    "ExtractionError",
    "extract",
    "invalid_selectors",
    "markdown_of",
]

# What a stored source holds: final Markdown text (plain text, JSON, PDF text),
# or a header line and cleaned HTML that markdown_of() converts.
SOURCE_MARKDOWN = "markdown"
SOURCE_HTML = "html"


class ExtractionError(Exception):
    """The body cannot be turned into comparable text; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Extracted:
    """An extracted page. ``source`` (with ``source_format``) is what a check
    stores and compares; ``markdown`` is derived from it on first use."""

    source: str
    source_format: str = SOURCE_MARKDOWN
    html: str | None = None
    raw_html: str | None = None
    links: list[str] | None = None
    images: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def markdown(self) -> str:
        return markdown_of(self.source_format, self.source)


def _html_source(html: str, base: str, *, drop_data_images: bool) -> str:
    """Cleaned HTML with what its conversion depends on in a first line, so a
    stored source converts the same way later, wherever it is read."""
    header = json.dumps({"base": base, "dropDataImages": drop_data_images})
    return f"{header}\n{html}"


def markdown_of(source_format: str, source: str) -> str:
    """The Markdown of a source (see Extracted). Raises ExtractionError when
    the converter fails on it."""
    if source_format != SOURCE_HTML:
        return source
    header, _, html = source.partition("\n")
    settings = json.loads(header)
    try:
        return _markdown(
            html, settings["base"], drop_data_images=settings["dropDataImages"]
        )
    except Exception as exc:  # the converter's own error types vary by version
        raise ExtractionError(
            f"The page could not be converted: {_short(exc)}"
        ) from exc


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    formats: frozenset[str]
    only_main_content: bool
    include_tags: tuple[str, ...]
    exclude_tags: tuple[str, ...]
    remove_base64_images: bool
    block_ads: bool
    parse_pdf: bool


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


def _selectors(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(s.strip() for s in value if isinstance(s, str) and s.strip())


def _parse_options(options: Mapping[str, Any]) -> _Options:
    parsers = options.get("parsers")
    if parsers is None:  # absent or null: Firecrawl's default
        parsers = ["pdf"]
    return _Options(
        formats=frozenset(_type_names(options.get("formats"))),
        only_main_content=options.get("onlyMainContent", True) is not False,
        include_tags=_selectors(options.get("includeTags")),
        exclude_tags=_selectors(options.get("excludeTags")),
        remove_base64_images=options.get("removeBase64Images", True) is not False,
        block_ads=options.get("blockAds", True) is not False,
        parse_pdf="pdf" in _type_names(parsers),
    )


def invalid_selectors(options: Mapping[str, Any]) -> list[str]:
    """Messages for ``includeTags``/``excludeTags`` entries lexbor cannot parse.

    Lets the API and the dashboard refuse a bad selector when the monitor is
    saved, instead of every check failing later.
    """
    probe = LexborHTMLParser("<p></p>")  # parsers are not thread-safe: one per call
    problems = []
    for key in ("includeTags", "excludeTags"):
        for selector in _selectors(options.get(key)):
            try:
                probe.css(selector)
            except SelectolaxError:
                problems.append(f"{key}: {selector!r} is not a valid CSS selector")
    return problems


# --------------------------------------------------------------------------
# Content type sniffing and decoding
# --------------------------------------------------------------------------

_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_TEXT_TYPES = {
    "application/json",
    "application/ld+json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/rss+xml",
    "application/atom+xml",
    "application/x-ndjson",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/csv",
}
_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/", "model/")
_KIND_WORDS = {
    "image/": "an image",
    "audio/": "audio",
    "video/": "a video",
    "font/": "a font",
}
# WHATWG maps these labels to windows-1252; pages labelled latin-1 routinely
# contain curly quotes in the 0x80-0x9F range.
_CHARSET_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252"}
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE
)


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().lower()
    label = _CHARSET_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _bom_codec(body: bytes) -> str | None:
    if body.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def _decode(body: bytes, content_type: str, *, html: bool) -> str:
    """BOM, then the header's charset, then ``<meta charset>``, then UTF-8."""
    codec = _bom_codec(body)
    if codec is None:
        match = _CHARSET_PARAM.search(content_type)
        codec = _codec(match.group(1)) if match else None
    if codec is None and html:
        match = _META_CHARSET.search(body[:4096])
        codec = _codec(match.group(1).decode("ascii", "replace")) if match else None
        # A page that was transcoded to UTF-16 by a proxy still says utf-16 in
        # its meta tag, but without a BOM the bytes are ASCII-compatible.
        if codec and codec.startswith("utf-16"):
            codec = "utf-8"
    return body.decode(codec or "utf-8", errors="replace")


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or (
        start.startswith(b"<")
        and (b"<html" in head.lower() or b"<body" in head.lower())
    )


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head and _bom_codec(head) != "utf-16"


def _kind(body: bytes, media_type: str) -> str:
    """One of ``pdf``, ``html``, ``text`` or ``binary``."""
    head = body[:1024]
    if b"%PDF-" in head:  # the spec lets junk precede the header
        return "pdf"
    if media_type == "application/pdf":
        # Servers send login or error pages with the PDF's content type.
        return "html" if _looks_like_html(head) else "pdf"
    if media_type in _HTML_TYPES:
        return "html"
    if media_type.startswith(_BINARY_PREFIXES):
        return "binary"
    if (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml"))
    ):
        return "text"
    # Missing or generic types (application/octet-stream): trust the bytes.
    if _looks_like_html(head):
        return "html"
    if not _looks_binary(head):
        try:
            body[:4096].decode("utf-8")
        except UnicodeDecodeError as exc:
            # A multi-byte character cut at the 4 KiB boundary is still text.
            if exc.start < 4090:
                return "binary"
        return "text"
    return "binary"


def _binary_message(media_type: str) -> str:
    for prefix, words in _KIND_WORDS.items():
        if media_type.startswith(prefix):
            return f"The page is {words} ({media_type}); nothing to compare"
    label = media_type or "unknown content type"
    return f"The page is binary content ({label}); nothing to compare"


# --------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------


def extract(
    body: bytes, *, content_type: str, url: str, options: Mapping[str, Any]
) -> Extracted:
    """Extract comparable Markdown (and the requested formats) from ``body``.

    Raises ``ExtractionError`` when there is no text to compare: images and
    other binary bodies, unreadable PDFs, or PDFs with PDF parsing turned off.
    """
    opts = _parse_options(options or {})
    media_type = _media_type(content_type or "")
    kind = _kind(body, media_type)
    if kind == "pdf":
        return _extract_pdf(body, content_type or "application/pdf", url, opts)
    if kind == "binary":
        raise ExtractionError(_binary_message(media_type))
    if kind == "text":
        return _extract_text(body, content_type, media_type, url, opts)
    return _extract_html(body, content_type or "text/html", url, opts)


def _base_metadata(content_type: str, url: str) -> dict[str, Any]:
    return {
        "title": None,
        "description": None,
        "language": None,
        "contentType": content_type,
        "sourceURL": url,
    }


def _extract_text(
    body: bytes, content_type: str, media_type: str, url: str, opts: _Options
) -> Extracted:
    text = _decode(body, content_type, html=False)
    if media_type == "application/json" or media_type.endswith("+json"):
        text = _pretty_json(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return Extracted(
        source=text,
        raw_html=text if "rawHtml" in opts.formats else None,
        links=[] if "links" in opts.formats else None,
        images=[] if "images" in opts.formats else None,
        metadata=_base_metadata(content_type or media_type or "text/plain", url),
    )


def _pretty_json(text: str) -> str:
    """Minified JSON is one line; indent it so a change diffs as one line."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------


def _extract_pdf(body: bytes, content_type: str, url: str, opts: _Options) -> Extracted:
    if not opts.parse_pdf:
        raise ExtractionError(
            "The page is a PDF and PDF parsing is turned off (parsers); "
            "nothing to compare"
        )
    from pypdf import PdfReader  # imported lazily: most checks never see a PDF

    # pypdf parses untrusted bytes and raises many exception types on damaged
    # files (KeyError, ValueError, its own PdfReadError, ...): any of them means
    # "this PDF could not be read", which is a page result, not a crash.
    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            reader.decrypt("")
        pages = [(page.extract_text() or "") for page in reader.pages]
        info = reader.metadata
        title = str(info.title) if info and info.title else None
    except Exception as exc:
        raise ExtractionError(f"PDF could not be read: {_short(exc)}") from exc

    text = "\n\n".join(
        "\n".join(line.rstrip() for line in page.strip().splitlines())
        for page in pages
        if page.strip()
    )
    metadata = _base_metadata(content_type, url)
    metadata["title"] = title
    metadata["numPages"] = len(pages)
    return Extracted(
        source=text + "\n" if text else "",
        links=[] if "links" in opts.formats else None,
        images=[] if "images" in opts.formats else None,
        metadata=metadata,
    )


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------

# Never content, whatever the options say.
_ALWAYS_DROP = (
    "script, style, noscript, template, svg, canvas, object, embed, link, meta"
)

# onlyMainContent: chrome by tag or ARIA role. header/footer are handled apart
# because inside an <article> or <main> they hold the article's own title/byline.
# lexbor walks the tree once per alternative of a selector list, so roles and
# form controls are found with one short query each and sorted out in Python.
_CHROME_TAGS = "nav, aside, dialog"
_CHROME_ROLES = frozenset(
    {
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "search",
        "dialog",
        "alertdialog",
    }
)
_FORM_CONTROLS = "input, button, select, textarea, label"
_SCOPED_CHROME_TAGS = "header, footer"
_CONTENT_SCOPES = {"article", "main"}

# Class/id words (split on - _ and camelCase) that mark page chrome or ads.
# A strong word marks the element wherever it appears ("site-footer",
# "mainNav"). A weak word only counts when the rest of the name is chrome too:
# "share-buttons" and "promo-banner" go, "share-price" and "promo-price" stay.
_CHROME_STRONG = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "navmenu",
        "menubar",
        "sidebar",
        "footer",
        "breadcrumb",
        "breadcrumbs",
        "sharing",
        "sharebar",
        "cookie",
        "cookies",
        "consent",
        "gdpr",
        "newsletter",
    }
)
_CHROME_WEAK = frozenset({"menu", "share", "social", "modal", "popup"})
_AD_STRONG = frozenset(
    {
        "ad",
        "ads",
        "advert",
        "adverts",
        "advertisement",
        "advertisements",
        "advertising",
        "adsbygoogle",
        "adslot",
        "adunit",
        "adbox",
        "adbanner",
        "adcontainer",
        "adsense",
        "dfp",
        "sponsored",
        "taboola",
        "outbrain",
    }
)
_AD_WEAK = frozenset({"adv", "sponsor", "sponsors", "promo", "promoted", "promotion"})
# Words that may accompany a weak word in a chrome/ad element's name.
_FILLER = frozenset(
    {
        *("area", "bar", "block", "box", "button", "buttons", "container", "content"),
        *("dialog", "icon", "icons", "inner", "item", "items", "link", "links"),
        *("list", "main", "media", "mobile", "desktop", "outer", "overlay", "panel"),
        *("primary", "secondary", "section", "site", "slot", "toggle", "tools"),
        *("top", "bottom", "left", "right", "widget", "window", "wrap", "wrapper"),
        *("banner", "unit", "placement", "label", "header", "footer", "global"),
    }
)


# blockAds: ad slots by tag or attribute. Ad ids ("div-gpt-ad-…") and AdSense's
# <ins class="adsbygoogle"> are recognised in the class/id pass instead.
_AD_SELECTOR = ", ".join(
    [
        "[data-ad-slot]",
        "[data-ad-client]",
        "[data-ad-unit]",
        "[data-google-query-id]",
        "amp-ad",
        "amp-embed",
    ]
)
_AD_ID_PREFIXES = ("div-gpt-ad", "google_ads")
_AD_HOSTS = (
    "doubleclick.net",
    "googlesyndication.com",
    "googleadservices.com",
    "googletagservices.com",
    "google-analytics.com",
    "adservice.google.com",
    "amazon-adsystem.com",
    "adnxs.com",
    "adsrvr.org",
    "advertising.com",
    "criteo.com",
    "criteo.net",
    "pubmatic.com",
    "rubiconproject.com",
    "openx.net",
    "casalemedia.com",
    "taboola.com",
    "outbrain.com",
    "moatads.com",
    "adsafeprotected.com",
    "scorecardresearch.com",
    "quantserve.com",
    "media.net",
    "yieldmo.com",
    "sharethrough.com",
    "teads.tv",
    "facebook.com/tr",
    "bat.bing.com",
)
_PROTECTED_CONTENT = "main, [role=main], article, h1"
# Heuristic matches refused for holding most of the text before giving up.
_MAX_REFUSALS = 50
_STATE_TOKEN = re.compile(r"(?:has|with|no|is|show|hide)[-_]", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@dataclass(frozen=True)
class _Vocabulary:
    strong: frozenset[str]
    weak: frozenset[str]


_CHROME = _Vocabulary(_CHROME_STRONG, _CHROME_WEAK)
_ADS = _Vocabulary(_AD_STRONG, _AD_WEAK)


@lru_cache(maxsize=8192)
def _names(attr_value: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each class/id token with its lowercase word parts:
    ``"MainNav ad_slot"`` → ``(("mainnav", {main, nav}), ("ad_slot", {ad, slot}))``.
    """
    names = []
    for token in attr_value.split():
        if _STATE_TOKEN.match(token):  # "has-sidebar", "is-nav-open": layout state
            continue
        parts = {
            word.lower()
            for piece in re.split(r"[-_:.]+", token)
            for word in _WORD_RE.findall(piece)
            if not word.isdigit()
        }
        names.append((token.lower(), frozenset(parts)))
    return tuple(names)


@lru_cache(maxsize=8192)
def _matches(attr_value: str, vocabulary: _Vocabulary) -> bool:
    for token, parts in _names(attr_value):
        if token in vocabulary.strong or not parts.isdisjoint(vocabulary.strong):
            return True
        if not parts.isdisjoint(vocabulary.weak) and parts <= (
            vocabulary.weak | _FILLER
        ):
            return True
    return False


def _class_id(node: LexborNode) -> str:
    attrs = node.attributes
    return f"{attrs.get('class') or ''} {attrs.get('id') or ''}"


_NOT_WEB = ("#", "data:", "javascript:", "mailto:", "tel:")


def _http_url(value: str, base: str) -> str | None:
    """Absolute http(s) URL without its fragment, or None."""
    value = value.strip()
    if not value or value.lower().startswith(_NOT_WEB):
        return None
    try:
        absolute = value.lower().startswith(("http://", "https://"))
        parts = urlsplit(value if absolute else urljoin(base, value))
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit(parts._replace(fragment=""))


def _http_urls(values: Iterable[str | None], base: str) -> list[str]:
    """Resolved, de-duplicated, in first-seen order; each distinct raw value is
    resolved once (pages repeat the same href dozens of times)."""
    seen: dict[str, None] = {}
    out: dict[str, None] = {}
    for value in values:
        if not value or value in seen:
            continue
        seen[value] = None
        resolved = _http_url(value, base)
        if resolved:
            out[resolved] = None
    return list(out)


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


def _metadata(tree: LexborHTMLParser, content_type: str, url: str) -> dict[str, Any]:
    metadata = _base_metadata(content_type, url)
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


def _base_url(tree: LexborHTMLParser, url: str) -> str:
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


def _css(node: LexborNode | LexborHTMLParser, selector: str, key: str) -> list:
    try:
        return node.css(selector)
    except SelectolaxError as exc:
        raise ExtractionError(
            f"{key}: {selector!r} is not a valid CSS selector"
        ) from exc


def _has_text(node: LexborNode) -> bool:
    # Not text(strip=True), which strips and joins every text node: one
    # non-space character is enough, and isspace() stops at the first.
    text = node.text()
    return bool(text) and not text.isspace()


def _main_root(body: LexborNode) -> LexborNode:
    """``<main>``/``[role=main]``, else a lone ``<article>``, else ``<body>``."""
    for node in body.css("main, [role=main]"):
        if "hidden" not in node.attributes and _has_text(node):
            return node
    articles = body.css("article")
    if len(articles) == 1 and _has_text(articles[0]):
        return articles[0]
    return body


def _inside_content_scope(node: LexborNode, stop: LexborNode) -> bool:
    parent = node.parent
    stop_id = stop.mem_id
    while parent is not None and parent.mem_id != stop_id:
        if parent.tag in _CONTENT_SCOPES or parent.attributes.get("role") == "main":
            return True
        parent = parent.parent
    return stop.tag in _CONTENT_SCOPES or stop.attributes.get("role") == "main"


def _is_ad_frame(node: LexborNode) -> bool:
    src = (node.attributes.get("src") or "").lower()
    return any(host in src for host in _AD_HOSTS)


def _is_tracking_pixel(node: LexborNode) -> bool:
    attrs = node.attributes
    if (attrs.get("width") or "").strip() in ("0", "1") and (
        attrs.get("height") or ""
    ).strip() in ("0", "1"):
        return True
    return _is_ad_frame(node)


def _within(
    node: LexborNode, marked: set[int], memo: dict[int, bool], stop: int
) -> bool:
    """Whether a strict ancestor of ``node`` (below ``stop``) is in ``marked``.

    ``memo`` remembers the answer for every node walked, so a whole pass costs
    O(nodes) even on a page nested 10 000 deep. Valid while ``marked`` only
    gains nodes in document order (ancestors are decided before descendants).
    """
    path = []
    result = False
    parent = node.parent
    while parent is not None:
        parent_id = parent.mem_id
        if parent_id == stop:
            break
        if parent_id in marked:
            result = True
            break
        if parent_id in memo:
            result = memo[parent_id]
            break
        path.append(parent_id)
        parent = parent.parent
    for parent_id in path:
        memo[parent_id] = result
    return result


def _guarded(candidates: list[LexborNode], root: LexborNode) -> list[LexborNode]:
    """Drop heuristic matches that would take the real content with them: any
    holding ``main``/``article``/``h1`` or most of the text ("page-wrapper
    cookie-consent-active")."""
    stop = root.mem_id
    protected: set[int] = set()
    for node in root.css(_PROTECTED_CONTENT):
        current: LexborNode | None = node
        while current is not None and current.mem_id not in protected:
            protected.add(current.mem_id)
            if current.mem_id == stop:
                break
            current = current.parent
    root_text_len = len(root.text())
    kept: list[LexborNode] = []
    kept_ids: set[int] = set()
    memo: dict[int, bool] = {}
    refused = 0
    for node in candidates:  # document order
        if node.mem_id in protected:
            continue
        if _within(node, kept_ids, memo, stop):
            continue  # goes with its removed ancestor
        # Kept matches are disjoint subtrees, so measuring them is linear;
        # refused ones can nest, so their number is capped.
        if len(node.text()) > root_text_len * 0.6:
            refused += 1
            if refused >= _MAX_REFUSALS:
                break  # hostile nesting: keep the rest rather than go quadratic
            continue
        kept.append(node)
        kept_ids.add(node.mem_id)
    return kept


def _is_chrome_role(node: LexborNode) -> bool:
    # Exact, case-sensitive values, as the attribute selectors they replace.
    attrs = node.attributes
    return attrs.get("role") in _CHROME_ROLES or attrs.get("aria-modal") == "true"


def _form_controls(root: LexborNode) -> list[LexborNode]:
    """Controls inside a <form>, the form possibly enclosing ``root`` itself
    (ASP.NET pages wrap the whole body in one)."""
    node: LexborNode | None = root
    while node is not None:
        if node.tag == "form":
            return list(root.css(_FORM_CONTROLS))
        node = node.parent
    return [
        control for form in root.css("form") for control in form.css(_FORM_CONTROLS)
    ]


def _is_ad_slot(node: LexborNode) -> bool:
    """An ad container named by id prefix, or AdSense's <ins class="adsbygoogle">."""
    attrs = node.attributes
    if (attrs.get("id") or "").startswith(_AD_ID_PREFIXES):
        return True
    return node.tag == "ins" and "adsbygoogle" in (attrs.get("class") or "").split()


def _removals(root: LexborNode, opts: _Options, *, main_content: bool) -> list:
    """Every node to drop from ``root``; decided before the tree is touched."""
    remove: list[LexborNode] = list(root.css(_ALWAYS_DROP))
    for selector in opts.exclude_tags:
        remove.extend(_css(root, selector, "excludeTags"))
    if opts.remove_base64_images:
        remove.extend(root.css('img[src^="data:" i], source[srcset^="data:" i]'))

    if main_content:
        remove.extend(root.css(_CHROME_TAGS))
        remove.extend(n for n in root.css("[role], [aria-modal]") if _is_chrome_role(n))
        remove.extend(_form_controls(root))
        remove.extend(
            node
            for node in root.css(_SCOPED_CHROME_TAGS)
            if not _inside_content_scope(node, root)
        )
    if opts.block_ads:
        remove.extend(root.css(_AD_SELECTOR))
        remove.extend(n for n in root.css("iframe[src]") if _is_ad_frame(n))
        remove.extend(n for n in root.css("img") if _is_tracking_pixel(n))

    # One Python pass over class/id words (cached per attribute value) is
    # cheaper than lexbor running a dozen case-insensitive substring selectors.
    vocabularies = [
        v for v, on in ((_CHROME, main_content), (_ADS, opts.block_ads)) if on
    ]
    heuristic = []
    if vocabularies:
        for node in root.css("[class], [id]"):
            if opts.block_ads and _is_ad_slot(node):
                remove.append(node)
                continue
            names = _class_id(node)
            if any(_matches(names, vocabulary) for vocabulary in vocabularies):
                heuristic.append(node)
    if heuristic:
        remove.extend(_guarded(heuristic, root))
    return remove


def _remove_all(nodes: list[LexborNode], root: LexborNode) -> None:
    """Decompose ``nodes``, skipping the root and anything inside another
    removed node (touching a node of a freed subtree would crash lexbor)."""
    stop = root.mem_id
    doomed = {n.mem_id for n in nodes} - {stop}
    memo: dict[int, bool] = {}
    outermost: dict[int, LexborNode] = {}
    for node in nodes:
        node_id = node.mem_id
        if (
            node_id in doomed
            and node_id not in outermost
            and not _within(node, doomed, memo, stop)
        ):
            outermost[node_id] = node
    for node in outermost.values():
        node.decompose()


def _included(tree: LexborHTMLParser, selectors: tuple[str, ...]) -> LexborHTMLParser:
    """A new document holding only the elements matching ``includeTags``."""
    probe = LexborHTMLParser("<p></p>")
    for selector in selectors:  # name the bad selector before querying them all
        _css(probe, selector, "includeTags")
    matches: dict[int, LexborNode] = {}
    # One selector list: lexbor returns document order, whatever order the
    # selectors were given in (duplicates removed here).
    for node in tree.css(", ".join(selectors)):
        matches.setdefault(node.mem_id, node)
    chosen = []
    for node in matches.values():
        parent = node.parent
        while parent is not None and parent.mem_id not in matches:
            parent = parent.parent
        if parent is None:  # not nested inside another match
            chosen.append(node)
    return LexborHTMLParser(
        "<html><body>" + "".join(n.html or "" for n in chosen) + "</body></html>"
    )


def _absolutize(root: LexborNode, base: str) -> None:
    """Rewrite relative ``href``/``src`` in the cleaned HTML to absolute URLs."""
    resolved: dict[str, str] = {}
    for selector, attr in (("a[href]", "href"), ("img[src]", "src")):
        for node in root.css(selector):
            value = (node.attributes.get(attr) or "").strip()
            if not value or value.lower().startswith(_NOT_WEB):
                continue
            if value not in resolved:
                try:
                    resolved[value] = urljoin(base, value)
                except ValueError:
                    resolved[value] = value
            if resolved[value] != value:
                node.attrs[attr] = resolved[value]


_MARKDOWN_OPTIONS = dict(
    heading_style="atx",
    bullets="-",
    list_indent_width=2,
    strong_em_symbol="*",
    code_block_style="backticks",
    newline_style="backslash",  # no trailing double spaces for <br>
    wrap=False,
    extract_metadata=False,  # metadata comes from our own pass; no front matter
    whitespace_mode="normalized",
    hidden_content="drop",
    autolinks=True,
    # Cleaning is ours and driven by scrapeOptions; the library's own
    # navigation/form stripping would ignore onlyMainContent=false.
    preprocessing=PreprocessingOptions(enabled=False),
)


# Blocks whose line breaks are content; everywhere else a browser folds them.
_PREFORMATTED = re.compile(r"(<pre\b.*?</pre>|<textarea\b.*?</textarea>)", re.S | re.I)


def _fold_source_newlines(html: str) -> str:
    """Fold line breaks of the HTML source into spaces, as a browser renders
    them, so a site that merely re-wraps its source is not reported changed."""
    parts = _PREFORMATTED.split(html)
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("\r", " ").replace("\n", " ")
    return "".join(parts)


def _markdown(html: str, base: str, *, drop_data_images: bool) -> str:
    html = _fold_source_newlines(html)
    options = ConversionOptions(
        **_MARKDOWN_OPTIONS,
        base_url=base,
        inline_data_media="drop_element" if drop_data_images else "keep",
    )
    result = convert(html, options)
    text = result.content or ""
    return text.strip("\n") + "\n" if text.strip() else ""


def _extract_html(
    body: bytes, content_type: str, url: str, opts: _Options
) -> Extracted:
    text = _decode(body, content_type, html=True)
    tree = LexborHTMLParser(text)
    base = _base_url(tree, url)
    metadata = _metadata(tree, content_type, url)

    links = images = None
    if "links" in opts.formats:
        links = _http_urls(
            (n.attributes.get("href") for n in tree.css("a[href]")), base
        )
    if "images" in opts.formats:
        images = _http_urls(
            (n.attributes.get("src") for n in tree.css("img[src]")), base
        )

    if opts.include_tags:
        # The caller picked the content explicitly: don't second-guess it with
        # the main-content heuristics (Firecrawl would strip an included <nav>).
        tree = _included(tree, opts.include_tags)
        root = tree.body
        main_content = False
    else:
        root = tree.body
        main_content = opts.only_main_content
        if root is not None and main_content:
            root = _main_root(root)
    if root is None:  # lexbor always builds <body>; be defensive anyway
        root = tree.root

    _remove_all(_removals(root, opts, main_content=main_content), root)
    source = _html_source(
        root.html or "", base, drop_data_images=opts.remove_base64_images
    )

    html_out = None
    if "html" in opts.formats:
        _absolutize(root, base)
        html_out = root.html or ""
    return Extracted(
        source=source,
        source_format=SOURCE_HTML,
        html=html_out,
        raw_html=text if "rawHtml" in opts.formats else None,
        links=links,
        images=images,
        metadata=metadata,
    )
