"""Cleaning an HTML page down to its content.

Chrome (navigation, headers and footers outside the article, sidebars, cookie
banners, forms), ads and tracking pixels are found by tag, ARIA role and
class/id words, decided before the tree is touched, then removed outermost
first. ``includeTags``/``excludeTags`` selectors come from the monitor's
``scrapeOptions``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from checks.content.options import Options
from checks.content.source import ExtractionError

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
# A class or id piece a build tool made up (a CSS-in-JS hash, new at each
# deploy or even each load): letters and digits interleaved ("1ad2x3"), or a
# short jumble of capitals ("bNavQk"). Its letters spell words by chance, and
# one spelling "ad" or "nav" would make the element vanish now and then.
_INTERLEAVED = re.compile(r"[a-z]\d+[a-z]|\d[a-z]+\d", re.IGNORECASE)
# A word ending in a banner's size or a picture's density is no hash
# ("ad300x250", "adslot728x90", "navbar2x").
_SIZED_WORD = re.compile(r"[a-z]+(?:\d+x\d+|2x)", re.IGNORECASE)


def _made_up(piece: str) -> bool:
    if _SIZED_WORD.fullmatch(piece):
        return False
    if _INTERLEAVED.search(piece):
        return True
    if len(piece) > 8 or sum(c.isupper() for c in piece) < 2:
        return False
    return sum(len(word) <= 2 for word in _WORD_RE.findall(piece)) >= 2


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
            if not _made_up(piece)
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


def _css(node: LexborNode | LexborHTMLParser, selector: str, key: str) -> list:
    try:
        return node.css(selector)
    except SelectolaxError as exc:
        raise ExtractionError(
            f"{key}: {selector!r} is not a valid CSS selector"
        ) from exc


def _has_text(node: LexborNode) -> bool:
    # Not text(), which joins every text node of the subtree (and the
    # clean-up joins the chosen root's once more): the first text node that
    # is not blank is enough.
    for part in node.traverse(include_text=True):
        text = part.text_content if part.tag == "-text" else None
        if text and not text.isspace():
            return True
    return False


def main_root(body: LexborNode) -> LexborNode:
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


def _removals(root: LexborNode, opts: Options, *, main_content: bool) -> list:
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


def included(tree: LexborHTMLParser, selectors: tuple[str, ...]) -> LexborHTMLParser:
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


def clean(root: LexborNode, opts: Options, *, main_content: bool) -> None:
    """Remove from ``root``, in place, what is not content: what every page
    drops, ``excludeTags``, base64 images, and chrome when ``main_content``
    and ads per ``opts``."""
    _remove_all(_removals(root, opts, main_content=main_content), root)
