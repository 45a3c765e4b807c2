"""An HTML page's source: parsed once with selectolax (lexbor), its metadata
and links read, then cleaned in place down to the chosen subtree, whose HTML
(with the base URL it depends on) is what a check stores and compares."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urljoin, urlsplit, urlunsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from checks.content.clean import clean, included, main_root
from checks.content.metadata import base_url, html_metadata
from checks.content.options import Options
from checks.content.sniff import body_kind, decode, media_type_of
from checks.content.source import SOURCE_HTML, Extracted, html_source

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


def page_links(
    body: bytes, content_type: str, url: str, guess: Callable[[], str] | None = None
) -> list[str]:
    """The absolute http(s) links of an HTML page (a crawl's next pages), in
    page order; [] for anything that is not HTML. `guess`: the response's
    own encoding guess (see sniff.decode)."""
    if body_kind(body, media_type_of(content_type)) != "html":
        return []
    tree = LexborHTMLParser(decode(body, content_type, html=True, url=url, guess=guess))
    base = base_url(tree, url)
    return _http_urls(
        (n.attributes.get("href") for n in tree.css("a[href], area[href]")), base
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


def extract_html(
    body: bytes,
    content_type: str,
    url: str,
    opts: Options,
    guess: Callable[[], str] | None = None,
) -> Extracted:
    text = decode(body, content_type, html=True, url=url, guess=guess)
    tree = LexborHTMLParser(text)
    base = base_url(tree, url)
    metadata = html_metadata(tree, content_type, url)

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
        tree = included(tree, opts.include_tags)
        root = tree.body
        main_content = False
    else:
        root = tree.body
        main_content = opts.only_main_content
        if root is not None and main_content:
            root = main_root(root)
    if root is None:  # lexbor always builds <body>; be defensive anyway
        root = tree.root

    clean(root, opts, main_content=main_content)
    source = html_source(
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
