"""Suggested lines to ignore: lines of a page that changed in every one of a
monitor's last few checks, only by their numbers (a "Last updated" clock, a
view counter, a cache-busting ?v= on an image), offered as entries for the
monitor's noise rule (monitors.rules, "The noise rule").

Worked out from the diffs the checks stored, when the monitor's page is shown:
only the last CHECKS_LOOKED_AT checks, only pages that changed in each of
them, at most PAGES_LOOKED_AT of those; nothing is added to a check. Kept
in the cache until a newer check finishes or the lines to ignore change.

An entry is the line itself with each run of digits standing for any number,
anchored at both ends (past the indentation a nested list item or a code
block keeps), so it leaves out that line whatever its numbers say and no
other: "1,234 views" gives /^\\s*\\d+,\\d+ views\\s*$/. A line whose words
change (a rotating quote) is never suggested: guessing a pattern for it would
hide too much.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from checks.content.noise import is_ignored
from checks.models import Check, PageResult
from monitors import rules
from monitors.models import Monitor

# Three checks in a row: one change is news, two may be a price moving twice,
# a line whose numbers moved in each of three checks is a clock or a counter
# far more often than not (and the person decides, seeing the entry).
CHECKS_LOOKED_AT = 3
PAGES_LOOKED_AT = 20
SUGGESTIONS_SHOWN = 5
CACHED_FOR = 10 * 60  # seconds

# ASCII digits only: RE2's \d matches 0-9 and no other script's digits, so an
# entry is only built where it will match.
_NUMBER = re.compile(r"[0-9]+")
# What RE2 reads as syntax outside a character class.
_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}])")
_HEADERS = ("--- previous", "+++ current")


@dataclass(frozen=True)
class Suggestion:
    line: str  # as the newest check saw it
    entry: str  # what "Ignore these lines" adds to the monitor's lines to ignore


def entry_for(line: str) -> str | None:
    """The /regex/ entry that leaves out `line` whatever its numbers, or None
    for a line without a number (nothing to generalise) or one the entry
    would not leave out after all (offering it would change nothing)."""
    if not _NUMBER.search(line):
        return None
    words = [_SPECIAL.sub(r"\\\1", part) for part in _NUMBER.split(line.strip())]
    entry = r"/^\s*" + r"\d+".join(words) + r"\s*$/"
    return entry if is_ignored(line, [entry]) else None


def numbers_changed(diff_text: str) -> dict[str, str]:
    """The entries of lines whose numbers, and only those, changed in one
    diff (a line taken out and a line put in with the same entry), each with
    the line as it reads now."""
    taken_out: set[str] = set()
    put_in: list[str] = []
    for line in diff_text.split("\n"):
        if line in _HEADERS:
            continue
        if line.startswith("-"):
            taken_out.add(line[1:])
        elif line.startswith("+"):
            put_in.append(line[1:])
    shapes = {entry_for(line) for line in taken_out} - {None}
    return {
        entry: line
        for line in put_in
        if line not in taken_out and (entry := entry_for(line)) in shapes
    }


def suggestions_for(monitor: Monitor) -> list[Suggestion]:
    """Entries worth offering: lines of one page whose numbers changed in
    each of the monitor's last CHECKS_LOOKED_AT checks, not ignored already."""
    check_ids = Check.objects.for_monitor(monitor).last_looked_at_pages(
        CHECKS_LOOKED_AT
    )
    if len(check_ids) < CHECKS_LOOKED_AT:
        return []
    # A finished check's diffs never change, so the suggestions stand until a
    # newer check finishes or the lines to ignore are edited; cached so each
    # view of the page does not unpack the diffs again.
    ignored = hashlib.sha256(json.dumps(monitor.ignore_lines).encode()).hexdigest()
    key = f"ignore-suggestions:{monitor.pk}:{check_ids[0]}:{ignored[:32]}"
    found = cache.get(key)
    if found is None:
        found = _worked_out(monitor, check_ids)
        cache.set(key, found, CACHED_FOR)
    return found


def _worked_out(monitor: Monitor, check_ids: list[Any]) -> list[Suggestion]:
    pages = list(PageResult.objects.changed_in_each(check_ids, PAGES_LOOKED_AT))
    PageResult.with_diffs(pages)
    per_url: dict[str, dict[object, dict[str, str]]] = {}
    for page in pages:
        text = (page.diff or {}).get("text")
        found = numbers_changed(text if isinstance(text, str) else "")
        per_url.setdefault(page.url, {})[page.check_run_id] = found
    suggestions: dict[str, Suggestion] = {}
    for by_check in per_url.values():
        if len(by_check) < CHECKS_LOOKED_AT:
            continue
        newest = by_check[check_ids[0]]  # its lines are the ones shown
        common = set(newest).intersection(*by_check.values())
        for entry, line in newest.items():
            if entry not in common or entry in suggestions:
                continue
            if is_ignored(line, monitor.ignore_lines):
                continue
            if rules.ignore_line_error(entry) is None:
                suggestions[entry] = Suggestion(line.strip(), entry)
    return list(suggestions.values())[:SUGGESTIONS_SHOWN]
