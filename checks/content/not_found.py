"""A site's "not found" page answered with HTTP 200 (a "soft 404"): how it is
told from a page, as text. Plain Python: no Django, no network.

A page is only suspected here (its title, first heading or first lines say
"page not found" in one of a few major languages); the pipeline confirms it
by asking the site for a made-up address beside it (probe_url) and comparing
what that answers with the page (same_text), as crawlers do: the site's
not-found page is what any unknown address of it shows. A page confirmed
gone keeps the fingerprint of that text (fingerprint), which the times,
counters and request ids such a page shows do not change.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from difflib import SequenceMatcher
from html import unescape
from posixpath import splitext
from urllib.parse import urlsplit, urlunsplit

# "Not found" wordings of the page itself (never of what was searched for:
# "no results found" says nothing about the page), in English, German,
# French, Spanish, Italian, Portuguese and Dutch.
_WORDINGS = r"""
    \bpage\s+(?:was\s+)?not\s+found\b
    | \bnot\s+found\s*$
    | \bpage\s+(?:you\s+(?:are|were|’re|'re)\s+looking\s+for\s+)?
        (?:does\s*n[o’']?t|does\s+not|did\s*n[o’']?t|no\s+longer)\s+exists?\b
    | \bthis\s+page\s+(?:does\s*n[o’']?t|does\s+not)\s+exist\b
    | \b(?:page|that)\s+
        (?:could\s*n[o’']?t|could\s+not|can\s*n?[o’']?t|cannot|can\s+not)
        \s+be\s+found\b
    | \bcan[’']?t\s+find\s+(?:that|this|the)\s+page\b
    | \bseite\s+(?:wurde\s+)?nicht\s+gefunden\b | \bseite\s+existiert\s+nicht\b
    | \bpage\s+(?:introuvable|non\s+trouv[ée]e)\b | \bpage\s+n[’']existe\s+pas\b
    | \bp[áa]gina\s+no\s+(?:encontrada|existe)\b
    | \bpagina\s+non\s+(?:trovata|esiste)\b
    | \bp[áa]gina\s+n[ãa]o\s+(?:encontrada|existe)\b
    | \bpagina\s+(?:niet\s+gevonden|bestaat\s+niet)\b
"""
# A title or first heading of "404" alone says it; a page's first lines say
# it only with the words of an error beside it ("Error 404", "404 Not Found",
# "404 page"), as a bare 404 there is as often a phone number's area code, a
# room or a car.
_SAYS_NOT_FOUND = re.compile(r"\b404\b |" + _WORDINGS, re.I | re.X)
_LINES_SAY_NOT_FOUND = re.compile(
    r"""
    \b(?:error|http|fehler|erreur|errore|erro)\s*(?:code\s*)?[:#–—-]?\s*404\b
    | \b404\s*[:–—.!-]?\s*(?:error|page|not\s+found|fehler|erreur|errore|erro)
    |"""
    + _WORDINGS,
    re.I | re.X,
)
# How far into the page's text its wording is looked for, when its title and
# first heading do not say: a not-found page says it at the top.
_TEXT_START = 400
# Words one of the wordings above holds: a text with none of them is let go
# without running the expression.
_KEYWORDS = (
    "404", "found", "exist", "gefunden", "introuvable", "trouv", "encontrada",
    "trovata", "esiste", "gevonden", "bestaat",
)  # fmt: skip
# The cleaned HTML's tags are lower case (checks.content.clean writes them).
_HTML_HEADING = re.compile(r"<h1\b[^>]{0,500}>(.{0,500}?)</h1\s*>", re.S)
_HEADING_SCAN = 20_000
_TAGS = re.compile(r"<[^>]*>")
# How much of a page's cleaned HTML its first lines are read from without
# turning it into Markdown: enough for a not-found page's few sentences.
_LINES_SCAN = 4000
# A not-found page is short: longer texts are not compared word by word.
_MOST_WORDS = 3000
# How alike the page and the made-up address's answer must be: near-identical
# (a not-found page may name the address asked for, or the time).
SAME_RATIO = 0.9
_DIGIT = re.compile(r"\d")


def looks_not_found(
    title: str | None, heading: str | None, text: str, *, new: bool = False
) -> bool:
    """Whether a page's title, first heading or first lines say it is a
    "page not found" page. The first lines of a page never seen (`new`) need
    words of an error beside a 404: nothing it showed before tells a phone
    number from a not-found page, and a site answering unknown addresses
    with that very page would confirm it."""
    lines = _LINES_SAY_NOT_FOUND if new else _SAYS_NOT_FOUND
    for part, says in (
        (title or "", _SAYS_NOT_FOUND),
        (heading or "", _SAYS_NOT_FOUND),
        (text[:_TEXT_START], lines),
    ):
        lowered = part.lower()
        if not any(word in lowered for word in _KEYWORDS):
            continue
        if says.search(" ".join(part.split())):
            return True
    return False


def first_heading(source: str, html: bool) -> str:
    """The first top-level heading of a page's source, its cleaned HTML or
    its Markdown, within its first characters."""
    if html:
        start = source.find("<h1", 0, _HEADING_SCAN)
        found = _HTML_HEADING.match(source, start) if start >= 0 else None
        return _TAGS.sub(" ", found.group(1)).strip() if found else ""
    start = 0 if source.startswith("# ") else source.find("\n# ", 0, _HEADING_SCAN)
    if start < 0:
        return ""
    start = source.index("# ", start) + 2
    end = source.find("\n", start)
    return source[start : end if end >= 0 else len(source)].strip()


def first_lines(source: str, html: bool) -> str:
    """The first lines of a page's text, read from the start of its source
    (cleaned HTML after its settings line, or Markdown) without converting
    the whole page: a page never seen before is looked at this cheaply."""
    if not html:
        return source[:_TEXT_START]
    markup = source.partition("\n")[2][:_LINES_SCAN]
    cut = markup.rfind("<")
    if cut > markup.rfind(">"):
        markup = markup[:cut]  # no half tag read as text
    return " ".join(unescape(_TAGS.sub(" ", markup)).split())[:_TEXT_START]


def probe_url(url: str) -> str:
    """A made-up address beside `url`'s: in the same directory, a random name
    with the same extension, or ending in "/" as a folder's address does (never
    under the page: a site ignoring extra segments answers with the page
    itself); no query; same scheme and host, so the same address policy
    decides it."""
    parts = urlsplit(url)
    folder = parts.path.endswith("/")
    directory, _, last = parts.path.rstrip("/").rpartition("/")
    extension = "/" if folder else splitext(last)[1]
    if not folder and not re.fullmatch(r"\.[A-Za-z0-9]{1,5}", extension):
        extension = ""
    name = f"pagewatch-{secrets.token_hex(8)}{extension}"
    return urlunsplit((parts.scheme, parts.netloc, f"{directory}/{name}", "", ""))


def same_text(page: str, probe: str, addresses: Sequence[str]) -> bool:
    """Whether two pages' texts are near-identical, once the addresses they
    may name (the page's path, the made-up one) are set aside."""
    words = [_words(text, addresses) for text in (page, probe)]
    if not all(words) or max(len(w) for w in words) > _MOST_WORDS:
        return False
    shorter, longer = sorted(len(w) for w in words)
    if shorter < longer * SAME_RATIO:
        return False
    matcher = SequenceMatcher(None, words[0], words[1], autojunk=False)
    return matcher.ratio() >= SAME_RATIO


def _words(text: str, addresses: Sequence[str]) -> list[str]:
    for address in addresses:
        if address:
            text = text.replace(address, " ")
    return text.lower().split()


def fingerprint(text: str) -> str:
    """The hash of a not-found page's words, without those holding a digit:
    the time, a request id or a counter it shows changes it not."""
    words = [word for word in text.lower().split() if not _DIGIT.search(word)]
    return hashlib.sha256(" ".join(words).encode()).hexdigest()
