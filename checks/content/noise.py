"""A monitor's noise rule: lines to ignore before comparing and judging.

Each entry is either plain text, matched case-insensitively anywhere in a
line, or a regular expression written between slashes (``/\\d+ views/``),
searched in each line. Regular expressions run on RE2, whose matching time is
linear in the input: a user's pattern can never stall a worker on a hostile
page (no catastrophic backtracking).

A matching line is dropped from the Markdown both sides are compared on, so a
timestamp or a visitor counter never makes a page ``changed``, never shows in
its diff and never reaches the AI judge.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import re2

ENTRIES_MAX = 50
ENTRY_MAX = 300


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a user's typo is reported to them, not logged
    return options


def _compile(pattern: str) -> re2._Regexp:
    return re2.compile(pattern, _options())


def _regex_body(entry: str) -> str | None:
    """The pattern of a ``/.../`` entry, None for plain text."""
    if len(entry) >= 3 and entry.startswith("/") and entry.endswith("/"):
        return entry[1:-1]
    return None


def entry_error(entry: str) -> str | None:
    """Why an entry cannot be used (a message fit to show a user), or None."""
    if not entry.strip():
        return "Empty entries are not allowed."
    if len(entry) > ENTRY_MAX:
        return f"Each entry must be at most {ENTRY_MAX} characters."
    body = _regex_body(entry.strip())
    if body is None:
        return None
    try:
        _compile(body)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"Not a valid regular expression: {reason or 'unreadable'}."
    return None


@dataclass(frozen=True)
class NoiseRule:
    texts: tuple[str, ...]  # lower-cased plain entries
    pattern: re2._Regexp | None  # every regex entry, alternated

    def matches(self, line: str) -> bool:
        lowered = line.lower()
        if any(text in lowered for text in self.texts):
            return True
        return self.pattern is not None and self.pattern.search(line) is not None

    def strip(self, text: str) -> str:
        """`text` without the lines this rule ignores."""
        lines = text.split("\n")
        kept = [line for line in lines if not self.matches(line)]
        return text if len(kept) == len(lines) else "\n".join(kept)


@functools.lru_cache(maxsize=256)
def _compiled(entries: tuple[str, ...]) -> NoiseRule | None:
    texts: list[str] = []
    patterns: list[str] = []
    for raw in entries:
        entry = raw.strip()
        if not entry or entry_error(entry) is not None:
            continue  # validated on save; a bad stored entry is skipped, not fatal
        body = _regex_body(entry)
        if body is None:
            texts.append(entry.lower())
        else:
            patterns.append(f"(?:{body})")
    if not texts and not patterns:
        return None
    pattern = _compile("|".join(patterns)) if patterns else None
    return NoiseRule(tuple(texts), pattern)


def strip_noise(text: str, entries: Sequence[str]) -> str:
    """`text` without the lines matching any of `entries` (see the module)."""
    if not entries:
        return text
    rule = _compiled(tuple(entries))
    return text if rule is None else rule.strip(text)
