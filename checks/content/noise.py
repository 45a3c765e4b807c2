"""A monitor's noise rule applied: lines to ignore before comparing and judging.

Each entry is plain text, matched case-insensitively anywhere in a line, or an
RE2 regular expression between slashes, searched in each line (the syntax and
its checks: monitors.rules, "The noise rule").

A matching line is dropped from the Markdown both sides are compared on, so a
timestamp or a visitor counter never makes a page ``changed``, never shows in
its diff and never reaches the AI judge.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import re2

from monitors.rules import ignore_line_error, ignore_line_regex, path_pattern

_PER_LINE = re2.Options()
_PER_LINE.log_errors = False
_PER_LINE.never_nl = True


@dataclass(frozen=True)
class NoiseRule:
    texts: tuple[str, ...]  # lower-cased plain entries
    # The regex entries as RE2 patterns: all of them alternated in one, or,
    # when RE2 refuses that as too large, one each.
    patterns: tuple[Any, ...]

    def matches(self, line: str) -> bool:
        lowered = line.lower()
        if any(text in lowered for text in self.texts):
            return True
        return any(pattern.search(line) is not None for pattern in self.patterns)

    def found_in(self, text: str) -> bool:
        """Whether a line of `text` matches: the same answer as matches() on
        each line, in one pass (one lower-casing, one search a pattern)."""
        lowered = text.lower()
        if any(plain in lowered for plain in self.texts):
            return True
        if self.by_text is None:
            return any(self.matches(line) for line in text.split("\n"))
        return any(pattern.search(text) is not None for pattern in self.by_text)

    @functools.cached_property
    def by_text(self) -> tuple[Any, ...] | None:
        """The patterns to search a whole text with: ^ and $ at each line's
        ends, no match across a line's end; None when one says \\A or \\z
        (a line's start or end when read per line, the text's here)."""
        if any("\\A" in p.pattern or "\\z" in p.pattern for p in self.patterns):
            return None
        try:
            return tuple(
                re2.compile(f"(?m:{pattern.pattern})", _PER_LINE)
                for pattern in self.patterns
            )
        except re2.error:
            return None

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
        if not entry or ignore_line_error(entry) is not None:
            continue  # validated on save; a bad stored entry is skipped, not fatal
        body = ignore_line_regex(entry)
        if body is None:
            texts.append(entry.lower())
        else:
            patterns.append(f"(?:{body})")
    if not texts and not patterns:
        return None
    return NoiseRule(tuple(texts), _alternated(patterns))


def _alternated(patterns: list[str]) -> tuple[Any, ...]:
    """The patterns as one RE2 pattern, or one each when RE2 refuses the
    joined one (too large: entries saved before their sum was checked)."""
    if not patterns:
        return ()
    try:
        return (path_pattern("|".join(patterns)),)
    except ValueError:
        return tuple(path_pattern(pattern) for pattern in patterns)


def line_rule(entries: Sequence[str]) -> NoiseRule | None:
    """A matcher of lines for `entries` in this syntax (None when none is
    usable): the change rules' words and texts are matched the same way."""
    return _compiled(tuple(entries)) if entries else None


def strip_noise(text: str, entries: Sequence[str]) -> str:
    """`text` without the lines matching any of `entries` (see the module)."""
    if not entries:
        return text
    rule = _compiled(tuple(entries))
    return text if rule is None else rule.strip(text)


def is_ignored(line: str, entries: Sequence[str]) -> bool:
    """Whether one of `entries` leaves `line` out."""
    rule = _compiled(tuple(entries)) if entries else None
    return rule is not None and rule.matches(line)
