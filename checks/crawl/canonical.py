"""The address a page names as its own: `<link rel="canonical">` in its head,
or the HTTP `Link: <...>; rel="canonical"` header (RFC 6596). Pure reading,
no I/O; whether the crawl takes it is checks.crawl.frontier's to say.

A page that names two different addresses names none: search engines read
conflicting canonicals the same way, and guessing one would move the page
between addresses from check to check.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit, urlunsplit

from selectolax.lexbor import LexborHTMLParser

from checks.content.metadata import base_url
from checks.content.sniff import body_kind, decode, media_type_of
from checks.fetch import FetchResult

# One link of a Link header: <target> and its parameters.
_HEADER_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^,;]*)*)")
_REL = re.compile(r"""(?i)\brel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""")
# A page whose bytes never say "canonical" is not parsed at all (most pages:
# the search is far cheaper than building the tree).
_MENTIONS = re.compile(rb"(?i)canonical")


def declared_canonical(fetched: FetchResult) -> str | None:
    """The absolute http(s) address the page names as canonical, or None
    (none named, several different ones, or one that is not an address)."""
    named = {
        url
        for value, base in _from_header(fetched) + _from_head(fetched)
        if (url := _absolute(value, base)) is not None
    }
    return named.pop() if len(named) == 1 else None


def _from_header(fetched: FetchResult) -> list[tuple[str, str]]:
    """The targets of the Link header's canonical links, each with the
    address it is relative to (the page's own)."""
    found = []
    for header in fetched.headers.get_list("link"):
        for match in _HEADER_LINK.finditer(header):
            rel = _REL.search(match.group(2))
            if rel and "canonical" in (rel.group(1) or rel.group(2)).lower().split():
                found.append((match.group(1), fetched.final_url))
    return found


def _from_head(fetched: FetchResult) -> list[tuple[str, str]]:
    """The hrefs of the head's canonical links, each with the base it is
    relative to."""
    content_type = fetched.headers.get("content-type", "")
    if not _MENTIONS.search(fetched.content):
        return []
    if body_kind(fetched.content, media_type_of(content_type)) != "html":
        return []
    tree = LexborHTMLParser(
        decode(
            fetched.content,
            content_type,
            html=True,
            url=fetched.final_url,
            guess=fetched.guessed_encoding,
        )
    )
    if tree.head is None:
        return []
    base = base_url(tree, fetched.final_url)
    return [
        (href, base)
        for node in tree.head.css("link[rel][href]")
        if "canonical" in (node.attributes.get("rel") or "").lower().split()
        and (href := node.attributes.get("href"))
        and href.strip()
    ]


def _absolute(value: str, base: str) -> str | None:
    """`value` resolved against `base`, http(s) with a host, without its
    fragment; None for anything else."""
    value = value.strip()
    if not value or "\\" in value:
        return None
    try:
        parts = urlsplit(urljoin(base, value))
        host, _ = parts.hostname, parts.port  # each raises on garbage
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    return urlunsplit(parts._replace(fragment=""))
