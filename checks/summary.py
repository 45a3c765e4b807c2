"""A check's summary as people read it. On the wire a web search's new match
is a `new` page, a result seen before or not relevant is `same`, one that
could not be judged is `error`; to a reader they are search results, and the
dashboard and e-mails count them in the words of their rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checks.models import SEARCH_KEY

# metadata.searchStatus (checks.search.stage.SearchStatus): (label of a row
# or filter, count words for one, for several). One vocabulary for rows,
# filters, counts, the chart and e-mails.
SEARCH_WORDS = {
    "alert": ("New match", "new match", "new matches"),
    "watching": ("Watching: not sure yet", "watching", "watching"),
    "ignored": ("Not relevant", "not relevant", "not relevant"),
    "already_seen": ("Seen before", "seen before", "seen before"),
    "skipped": ("Could not be judged", "could not be judged", "could not be judged"),
}
# The wire counter each search outcome is counted under.
_WIRE = {
    "alert": "new",
    "watching": "same",
    "ignored": "same",
    "already_seen": "same",
    "skipped": "error",
}


def _count(value: Any) -> int:
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        return 0


def search_counts(summary: Mapping[str, Any] | None) -> dict[str, int]:
    """A check's search results by what became of them, in SEARCH_WORDS
    order, non-zero only."""
    raw = summary.get(SEARCH_KEY) if isinstance(summary, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    counts = {status: _count(raw.get(status)) for status in SEARCH_WORDS}
    return {status: n for status, n in counts.items() if n}


def page_counts(summary: Mapping[str, Any] | None) -> dict[str, int]:
    """The wire counters (changed, new, removed, error, same) of the pages
    that are not search results."""
    summary = summary if isinstance(summary, Mapping) else {}
    counts = {
        key: _count(summary.get(key))
        for key in ("changed", "new", "removed", "error", "same")
    }
    for status, n in search_counts(summary).items():
        counts[_WIRE[status]] = max(counts[_WIRE[status]] - n, 0)
    return counts


def found_nothing(summary: Mapping[str, Any] | None) -> bool:
    """Whether a check's summary counts no page at all, search results
    included (they are counted under the wire counters too)."""
    summary = summary if isinstance(summary, Mapping) else {}
    wire = ("changed", "new", "removed", "error", "same")
    return not any(_count(summary.get(key)) for key in wire)


def search_words(status: str, count: int) -> str:
    """ "1 new match", "3 not relevant"."""
    _, one, several = SEARCH_WORDS[status]
    return f"{count} {one if count == 1 else several}"


def looked_at_words(count: int, results: int, total: int) -> str:
    """What `count` of a check's `total` pages to look at are called, when
    `results` of them are a web search's results: "page", "search results",
    or "pages and search results" for both (a running check does not count
    the two apart as it goes)."""
    if not results:
        noun = "page"
    elif results >= total:
        noun = "search result"
    else:
        return "pages and search results"
    return noun if count == 1 else f"{noun}s"
