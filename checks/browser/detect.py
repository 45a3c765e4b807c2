"""Whether a plain fetch returned a page whose content is built by scripts,
so that only a browser would see it. Pure and cheap: a page without a single
<script> is never parsed.

Signs, any one of which is enough:
* an app root left empty for scripts to fill (<div id="root"></div>,
  <app-root></app-root>...);
* a <noscript> message asking for JavaScript, on a page with little text;
* almost no visible text at all, beside scripts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser

from checks.content.sniff import body_kind, decode, media_type_of

# Visible text (characters) under which a page with scripts is script-built.
LITTLE_TEXT = 200
# ...and under which a <noscript> plea for JavaScript makes it so.
SOME_TEXT = 500
APP_ROOT_IDS = frozenset(
    {"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "q-app", "app-root"}
)
APP_ROOT_TAGS = ("app-root", "ng-view")
_SCRIPT = re.compile(rb"<script", re.IGNORECASE)
_ASKS_FOR_JS = re.compile(
    r"(enable|turn on|requires?|need|activate|allow)\b.{0,60}\bjavascript"
    r"|javascript\b.{0,60}\b(required|needed|disabled|enable)",
    re.IGNORECASE | re.DOTALL,
)
_HIDDEN = ("script", "style", "noscript", "template", "svg")


def has_scripts(content: bytes) -> bool:
    """The cheap first question: no <script> at all, nothing to detect."""
    return _SCRIPT.search(content) is not None


def script_built(
    content: bytes,
    content_type: str,
    *,
    url: str,
    guess: Callable[[], str] | None = None,
) -> str | None:
    """Why this HTML page (at `url`, after redirects) looks built by
    scripts, in a few words; None when its content is there without them
    (or it is not HTML at all). `guess`: the response's own encoding guess
    (see sniff.decode)."""
    if not has_scripts(content):
        return None
    if body_kind(content, media_type_of(content_type)) != "html":
        return None
    tree = LexborHTMLParser(
        decode(content, content_type, html=True, url=url, guess=guess)
    )
    body = tree.body
    if body is None:
        return None
    root = _empty_app_root(tree)
    pleas = [n.text(strip=True) for n in tree.css("noscript")]
    tree.strip_tags(list(_HIDDEN))
    text = len(" ".join((body.text(separator=" ", strip=True) or "").split()))
    if root is not None:
        return f"an empty app root ({root}) and {text} characters of text"
    if text < SOME_TEXT and any(_ASKS_FOR_JS.search(plea) for plea in pleas):
        return f"a <noscript> message asking for JavaScript and {text} characters"
    if text < LITTLE_TEXT:
        return f"only {text} characters of text beside its scripts"
    return None


def empty_app_root(content: bytes, url: str) -> str | None:
    """The first app root left empty in this HTML (`<div id="root">`) of
    the page at `url`."""
    return _empty_app_root(LexborHTMLParser(decode(content, "", html=True, url=url)))


def _empty_app_root(tree: LexborHTMLParser) -> str | None:
    for node in tree.css("[id]"):
        element_id = (node.attributes.get("id") or "").strip()
        if element_id.lower() in APP_ROOT_IDS and _is_empty(node):
            return f'<{node.tag} id="{element_id[:40]}">'
    for tag in APP_ROOT_TAGS:
        for node in tree.css(tag):
            if _is_empty(node):
                return f"<{tag}>"
    return None


def _is_empty(node: object) -> bool:
    text = getattr(node, "text", lambda **_: "")(strip=True)
    child = getattr(node, "child", None)
    while child is not None:
        if child.tag not in ("-text", "-comment"):
            return False
        child = child.next
    return not text
