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

from monitors.rules import ignore_line_error, ignore_line_regex, path_pattern


@dataclass(frozen=True)
class NoiseRule:
    texts: tuple[str, ...]  # lower-cased plain entries
    pattern: Any  # every regex entry, alternated (an RE2 pattern), or None

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
        if not entry or ignore_line_error(entry) is not None:
            continue  # validated on save; a bad stored entry is skipped, not fatal
        body = ignore_line_regex(entry)
        if body is None:
            texts.append(entry.lower())
        else:
            patterns.append(f"(?:{body})")
    if not texts and not patterns:
        return None
    pattern = path_pattern("|".join(patterns)) if patterns else None
    return NoiseRule(tuple(texts), pattern)


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
