"""Decide *same* vs *changed* and match the lines of two Markdown texts.

- ``normalize``/``content_hash`` decide *same* vs *changed*: whitespace runs,
  blank lines, Unicode composition and zero-width characters never count.
- ``compare`` pairs the lines of two texts into difflib-style opcodes.

The line matcher is a patience-style diff over hashed, normalised lines:
common prefix/suffix trimmed, lines unique on both sides used as anchors (their
longest increasing run found in O(n log n)), recursing between anchors, and
``difflib`` only for small leftover regions. That keeps a large page pair with
scattered edits far from difflib's quadratic corners.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

# cydifflib is difflib's SequenceMatcher compiled (same algorithm, same opcodes).
import cydifflib as difflib

# Zero-width and invisible formatting characters that pages sprinkle around
# (ZWSP, ZWNJ, ZWJ, word joiner, BOM, soft hyphen).
_INVISIBLE_CHARACTERS = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARACTERS}]")

# Regions without a single line unique to both sides fall back to difflib only
# below this many line pairs; above it they are shown as one replaced block.
# The budget caps the total over one diff, so many such regions stay linear.
_FALLBACK_MAX_PAIRS = 250_000
_FALLBACK_BUDGET = 2_000_000


# Line boundaries of str.splitlines() other than "\n" (tests/test_diff.py
# checks this list against str.splitlines()).
_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _clean(text: str) -> str:
    if text.isascii():  # NFC already, and no invisible character
        return text
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    # A few scans in C, usually finding nothing, are cheaper than a regex pass.
    if any(char in text for char in _INVISIBLE_CHARACTERS):
        text = _INVISIBLE.sub("", text)
    return text


def _normalized_line(line: str) -> str:
    # A printable line has no whitespace but " " (every other whitespace
    # character is a control or separator character), so without a double,
    # leading or trailing space it is already normal: most lines of a page,
    # and far cheaper to check than to split into words and join again.
    if (
        line.isprintable()
        and "  " not in line
        and not line.startswith(" ")
        and not line.endswith(" ")
    ):
        return line
    # str.split() collapses Unicode whitespace runs and strips, in C.
    return " ".join(line.split())


def _normalized_lines(text: str) -> list[str]:
    """Per line of ``_clean(text)``: whitespace runs collapsed, stripped."""
    return [_normalized_line(line) for line in _clean(text).split("\n")]


def _keys(lines: list[str]) -> list[str]:
    """Normalised form of each line (``""`` for a blank one), same length.

    Cleaning runs once over the lines joined by ``\n``: neither NFC nor
    dropping invisible characters touches ``\n``, so the count is kept, while
    cleaning the raw text could merge a ``\r`` and ``\n`` split by a ZWSP.
    """
    if not lines:
        return []
    return _normalized_lines("\n".join(lines))


def normalize(text: str) -> str:
    """The form used to decide same vs changed.

    NFC, zero-width characters dropped, whitespace runs collapsed to one space,
    lines stripped, blank lines dropped. Line order and line breaks still count.
    """
    # Same as joining _keys(text.splitlines()), without splitting and joining
    # the text once more when "\n" is its only kind of line break (a trailing
    # "\n" only adds a blank line, dropped anyway).
    if any(char in text for char in _OTHER_LINE_BREAKS):
        text = "\n".join(text.splitlines())
    return "\n".join(key for key in _normalized_lines(text) if key)


def content_hash(text: str) -> str:
    """SHA-256 hex digest of ``normalize(text)``."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


Opcode = tuple[str, int, int, int, int]


@dataclass(slots=True)
class Side:
    lines: list[str]  # original lines, as printed
    keys: list[int]  # id of the normalised line; 0 means blank


def _sides(previous: str, current: str) -> tuple[Side, Side]:
    old, new, _ = sides_and_hashes(previous, current, hashed=False)
    return old, new


def sides_and_hashes(
    previous: str, current: str, *, hashed: bool = True
) -> tuple[Side, Side, tuple[str, str]]:
    """Both sides and, when `hashed`, each text's content_hash() from the same
    normalised lines (normalize() is the non-blank keys joined by "\n")."""
    ids: dict[str, int] = {"": 0}
    sides = []
    hashes = []
    for text in (previous, current):
        lines = text.splitlines()
        keys = _keys(lines)
        if hashed:
            normal = "\n".join(key for key in keys if key)
            hashes.append(hashlib.sha256(normal.encode("utf-8")).hexdigest())
        sides.append(Side(lines, [ids.setdefault(key, len(ids)) for key in keys]))
    return sides[0], sides[1], (hashes[0], hashes[1]) if hashed else ("", "")


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest run of ``pairs`` (sorted by i) whose j also increases."""
    tails: list[int] = []  # smallest j ending an increasing run of each length
    tail_index: list[int] = []
    back: list[int] = []
    for index, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        back.append(tail_index[pos - 1] if pos else -1)
        if pos == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[pos] = j
            tail_index[pos] = index
    run = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        run.append(pairs[index])
        index = back[index]
    run.reverse()
    return run


def _anchors(
    a: list[int], alo: int, ahi: int, b: list[int], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Lines that occur exactly once on each side, in a consistent order."""
    a_counts = Counter(a[alo:ahi])
    b_counts = Counter(b[blo:bhi])
    b_unique = {key: j for j, key in enumerate(b[blo:bhi], blo) if b_counts[key] == 1}
    pairs = [
        (i, b_unique[key])
        for i, key in enumerate(a[alo:ahi], alo)
        if a_counts[key] == 1 and key in b_unique
    ]
    return _longest_increasing(pairs)


def _fallback(
    a: list[int],
    alo: int,
    ahi: int,
    b: list[int],
    blo: int,
    bhi: int,
    budget: list[int],
) -> Iterator[tuple[int, int]]:
    pairs = (ahi - alo) * (bhi - blo)
    if pairs > _FALLBACK_MAX_PAIRS or pairs > budget[0]:
        return  # shown as one replaced block; no quadratic work on huge regions
    budget[0] -= pairs
    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
    for i, j, size in matcher.get_matching_blocks():
        for k in range(size):
            yield alo + i + k, blo + j + k


def _matches(a: list[int], b: list[int]) -> list[tuple[int, int]]:
    """Matched line pairs (i, j), increasing in both."""
    out: list[tuple[int, int]] = []
    budget = [_FALLBACK_BUDGET]
    # Explicit stack instead of recursion: huge pages must not hit the
    # recursion limit. Items are regions to solve or pairs to emit, popped in
    # document order.
    stack: list[tuple[int, int, int, int] | tuple[int, int]] = [(0, len(a), 0, len(b))]
    while stack:
        item = stack.pop()
        if len(item) == 2:
            out.append(item)  # type: ignore[arg-type]
            continue
        alo, ahi, blo, bhi = item  # type: ignore[misc]
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            out.append((alo, blo))
            alo += 1
            blo += 1
        suffix = []
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
            suffix.append((ahi, bhi))
        todo: list[tuple[int, int, int, int] | tuple[int, int]] = []
        if alo < ahi and blo < bhi:
            anchors = _anchors(a, alo, ahi, b, blo, bhi)
            if anchors:
                i0, j0 = alo, blo
                for i, j in anchors:
                    todo.append((i0, i, j0, j))
                    todo.append((i, j))
                    i0, j0 = i + 1, j + 1
                todo.append((i0, ahi, j0, bhi))
            else:
                todo.extend(_fallback(a, alo, ahi, b, blo, bhi, budget))
        todo.extend(reversed(suffix))
        stack.extend(reversed(todo))
    return out


def opcodes(a: list[int], b: list[int]) -> list[Opcode]:
    """difflib-style opcodes from the matched pairs."""
    codes: list[Opcode] = []
    i = j = 0
    run_i = run_j = -1
    for mi, mj in [*_matches(a, b), (len(a), len(b))]:
        if mi > i or mj > j:  # a gap before this match
            if run_i >= 0:
                codes.append(("equal", run_i, i, run_j, j))
                run_i = -1
            tag = "replace" if mi > i and mj > j else "delete" if mi > i else "insert"
            codes.append((tag, i, mi, j, mj))
        if mi == len(a) and mj == len(b):
            break
        if run_i < 0:
            run_i, run_j = mi, mj
        i, j = mi + 1, mj + 1
    if run_i >= 0:
        codes.append(("equal", run_i, i, run_j, j))
    return codes


def compare(previous: str, current: str) -> tuple[Side, Side, list[Opcode]]:
    """Both texts' lines and the difflib-style opcodes that match them."""
    old, new = _sides(previous, current)
    return old, new, opcodes(old.keys, new.keys)
