"""A page that is only a `<meta http-equiv="refresh">` to another address,
which a page fetch follows as a redirect (checks.fetch.client, through the
same hops: the same limit of five, the same address policy on the target).

Followed when the delay is at most MAX_DELAY_SECONDS (a browser would have
moved on before anyone read the page) and the page has next to no text of its
own (at most OWN_TEXT_CHARS characters outside scripts and styles: "Redirecting…",
"Click here if nothing happens"). A page with content and a refresh (a news
page reloading itself, a slow countdown) is that content, and is kept.
The HTTP `Refresh` header, which some servers send instead of the tag, is
followed under the same rule. Pure: parses bytes it is given.
"""

from __future__ import annotations

import re

import httpx
from selectolax.lexbor import LexborHTMLParser

from checks.content.sniff import body_kind, decode, media_type_of

MAX_DELAY_SECONDS = 10
OWN_TEXT_CHARS = 200
# Whether a page may hold the tag, before it is parsed for it: every page a
# check fetches is scanned. The pattern starts at the hyphen: Python's re
# jumps to a first character that has no case, and tries a case-insensitive
# letter at every position of the page, many times slower. A `data-equiv` it
# lets through costs a parse, not a wrong answer: the parse looks for
# `http-equiv` itself.
_HAS_REFRESH = re.compile(rb"-equiv\s*=\s*[\"']?\s*refresh", re.IGNORECASE)
# The HTML standard's "shared declarative refresh steps": a number (its
# fraction ignored), then `;` or `,`, then an optional `url=`, then the URL,
# possibly quoted.
_CONTENT = re.compile(
    r"^\s*(\d+)[\d.]*\s*(?:[;,]\s*(?:url\s*=\s*)?(.*))?$", re.IGNORECASE | re.DOTALL
)
_HIDDEN = ("script", "style", "noscript", "template", "svg")


def refresh_location(
    url: httpx.URL, status: int, headers: httpx.Headers, body: bytes
) -> str | None:
    """Where the refresh-only page at `url` sends its reader (as written,
    maybe relative), or None when this answer is a page of its own: no
    refresh, a slow one, one that reloads the page itself or leaves the web
    (javascript:, data:), or a page with text of its own. A `Refresh` header
    (which some servers send in place of the tag) is read first."""
    if not 200 <= status < 300:
        return None
    header = headers.get("refresh")
    if header is None and not _HAS_REFRESH.search(body):
        return None
    content_type = headers.get("content-type", "")
    is_html = body_kind(body, media_type_of(content_type)) == "html"
    tree = (
        LexborHTMLParser(decode(body, content_type, html=True, url=str(url)))
        if is_html
        else None
    )
    location = _target(header) if header is not None else None
    if location is None and tree is not None:
        for meta in tree.css("meta[http-equiv]"):
            if (meta.attributes.get("http-equiv") or "").strip().lower() == "refresh":
                location = _target(meta.attributes.get("content") or "")
                break  # browsers obey the first one only
    if location is None or not _elsewhere_on_the_web(url, location):
        return None
    own_text = _own_text(tree, body, content_type, str(url))
    return location if own_text <= OWN_TEXT_CHARS else None


def _own_text(
    tree: LexborHTMLParser | None, body: bytes, content_type: str, url: str
) -> int:
    """How many characters of its own the page has (scripts and styles not
    counted; whitespace runs as one)."""
    if tree is None:
        text = decode(body, content_type, html=False, url=url)
    else:
        tree.strip_tags(list(_HIDDEN))
        body_node = tree.body
        text = body_node.text(separator=" ", strip=True) if body_node else ""
    return len(" ".join(text.split()))


def _target(content: str) -> str | None:
    match = _CONTENT.match(content)
    if match is None or int(match.group(1)) > MAX_DELAY_SECONDS:
        return None
    url = (match.group(2) or "").strip()
    if url[:1] in ("'", '"'):
        quote, url = url[0], url[1:]
        url = url.split(quote, 1)[0]
    url = url.strip()
    return url or None  # no URL: the page reloads itself


def _elsewhere_on_the_web(url: httpx.URL, location: str) -> bool:
    try:
        target = url.join(location)
    except httpx.InvalidURL:
        return False  # as a browser, which stays on the page
    if target.scheme not in ("http", "https"):
        return False
    return target.copy_with(fragment=None) != url.copy_with(fragment=None)
