"""What the monitor already knows of a crawl's pages: the pages it had
before this check (active, with content to compare), and the address each
was recorded under.

A crawl of a site larger than its limit takes these first, so every check
reaches the same pages whatever order the site answers in; and a page the
crawl's rules count as one (deduplicateSimilarURLs: a trailing slash,
`index.html`, `www.`, http or https) is fetched under the address it was
recorded under, whichever spelling a link met first this time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from django.db.models import QuerySet

from checks.crawl.scope import INDEX_PAGES, Link, Scope, without_index_page
from checks.models import PageState

# Links looked up in one query (each with up to 20 spellings).
CHUNK = 400


def had(monitor_id: int, target_id: uuid.UUID) -> int:
    """How many pages the target had before this check."""
    return _active(monitor_id, target_id).count()


def respelled(
    monitor_id: int, target_id: uuid.UUID, scope: Scope, links: Sequence[Link]
) -> tuple[list[Link], list[Link]]:
    """These links split into those the target had (under the address it
    had them) and those it did not, each in the order given."""
    recorded: dict[str, str] = {}
    for start in range(0, len(links), CHUNK):
        chunk = links[start : start + CHUNK]
        spellings = {
            PageState.hash_url(url): link.key
            for link in chunk
            for url in spellings_of(scope, link)
        }
        rows = _active(monitor_id, target_id).filter(url_hash__in=list(spellings))
        for url, url_hash in rows.values_list("url", "url_hash"):
            recorded[spellings[url_hash]] = url
    known, unknown = [], []
    for link in links:
        url = recorded.get(link.key)
        if url is None:
            unknown.append(link)
        else:
            known.append(Link(url, link.key, link.depth, link.follow))
    return known, unknown


def spellings_of(scope: Scope, link: Link) -> list[str]:
    """The addresses the crawl counts as this link's page: itself, and with
    deduplicateSimilarURLs its other spellings."""
    if not scope.similar:
        return [link.url]
    parts = urlsplit(link.url)
    base = without_index_page(parts.path).rstrip("/")
    paths = {base or "/", base + "/"} | {f"{base}/{page}" for page in INDEX_PAGES}
    bare = parts.netloc.removeprefix("www.")
    found = {
        urlunsplit((scheme, netloc, one, parts.query, ""))
        for scheme in ("http", "https")
        for netloc in (bare, "www." + bare)
        for one in paths
    }
    return [link.url] + sorted(
        u for u in found - {link.url} if scope.key(u) == link.key
    )


def _active(monitor_id: int, target_id: uuid.UUID) -> QuerySet[PageState]:
    return PageState.objects.filter(
        monitor_id=monitor_id,
        target_id=target_id,
        presence=PageState.Presence.ACTIVE,
        snapshot__isnull=False,
    )
