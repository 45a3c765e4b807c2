"""Compare two snapshots of a page's Markdown.

- ``normalize``/``content_hash`` decide *same* vs *changed*: whitespace runs,
  blank lines, Unicode composition and zero-width characters never count.
- ``unified_diff``/``diff_ast`` build the Firecrawl diff shapes (reference
  §10.3): git-style text plus the parse-diff AST the SDKs expect.
- ``render_side_by_side``/``render_inline`` build HTML for the dashboard and
  e-mails. Every piece of page text goes through ``html.escape`` before our own
  tags wrap it, so the result is safe to ``mark_safe``.

The line matcher is a patience-style diff over hashed, normalised lines:
common prefix/suffix trimmed, lines unique on both sides used as anchors (their
longest increasing run found in O(n log n)), recursing between anchors, and
``difflib`` only for small leftover regions. That keeps a 1 MB page pair with
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
from html import escape
from typing import Any

# cydifflib is difflib's SequenceMatcher compiled (same algorithm, same
# opcodes): word-level highlighting of a changed paragraph costs a third.
import cydifflib as difflib

__all__ = [
    "build_diff",
    "content_hash",
    "diff_ast",
    "diff_stats",
    "normalize",
    "render_inline",
    "render_side_by_side",
    "unified_diff",
]

# Zero-width and invisible formatting characters that pages sprinkle around
# (ZWSP, ZWNJ, ZWJ, word joiner, BOM, soft hyphen).
_INVISIBLE_CHARACTERS = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARACTERS}]")

# Regions without a single line unique to both sides fall back to difflib only
# below this many line pairs; above it they are shown as one replaced block.
# The budget caps the total over one diff, so many such regions stay linear.
_FALLBACK_MAX_PAIRS = 250_000
_FALLBACK_BUDGET = 2_000_000
# Word-level highlighting is skipped for very long lines (minified blobs).
_INTRALINE_MAX_CHARS = 2_000
# Below this share of unchanged characters a pair is shown as a whole-line
# replacement: highlighting every other word helps nobody.
_INTRALINE_MIN_SIMILARITY = 0.4
# Rendering stops after this many rows; a browser chokes on more, and the
# unified diff is still there for the full story.
_MAX_RENDERED_ROWS = 5_000
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


# --------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Line matching
# --------------------------------------------------------------------------

Opcode = tuple[str, int, int, int, int]


@dataclass(slots=True)
class _Side:
    lines: list[str]  # original lines, as printed
    keys: list[int]  # id of the normalised line; 0 means blank


def _sides(previous: str, current: str) -> tuple[_Side, _Side]:
    old, new, _ = _sides_and_hashes(previous, current, hashed=False)
    return old, new


def _sides_and_hashes(
    previous: str, current: str, *, hashed: bool = True
) -> tuple[_Side, _Side, tuple[str, str]]:
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
        sides.append(_Side(lines, [ids.setdefault(key, len(ids)) for key in keys]))
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


def _opcodes(a: list[int], b: list[int]) -> list[Opcode]:
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


def _blank_only(code: Opcode, a: list[int], b: list[int]) -> bool:
    _, i1, i2, j1, j2 = code
    return not any(a[i1:i2]) and not any(b[j1:j2])


def _grouped(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """Hunks as in ``difflib.SequenceMatcher.get_grouped_opcodes``."""
    if not codes or (len(codes) == 1 and codes[0][0] == "equal"):
        return []
    codes = list(codes)
    tag, i1, i2, j1, j2 = codes[0]
    if tag == "equal":
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    tag, i1, i2, j1, j2 = codes[-1]
    if tag == "equal":
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _compare(previous: str, current: str) -> tuple[_Side, _Side, list[Opcode]]:
    old, new = _sides(previous, current)
    return old, new, _opcodes(old.keys, new.keys)


# --------------------------------------------------------------------------
# Unified diff, AST, stats
# --------------------------------------------------------------------------


def _hunk_header(group: list[Opcode]) -> str:
    i1, i2 = group[0][1], group[-1][2]
    j1, j2 = group[0][3], group[-1][4]
    # Counts always printed, as jsdiff does. Unified-diff quirk (GNU, jsdiff):
    # an empty range starts at the line before it.
    old_start = i1 + 1 if i2 > i1 else i1
    new_start = j1 + 1 if j2 > j1 else j1
    return f"@@ -{old_start},{i2 - i1} +{new_start},{j2 - j1} @@"


def unified_diff(previous: str, current: str, context: int = 3) -> str:
    """Git-style unified diff, ``""`` when nothing but whitespace changed.

    Lines are compared in normalised form; context lines are printed from the
    current text. Hunks whose only changes are blank lines are left out (like
    ``git diff --ignore-blank-lines``).
    """
    return _unified_text(*_compare(previous, current), context)


def _unified_text(old: _Side, new: _Side, codes: list[Opcode], context: int) -> str:
    out = ["--- previous", "+++ current"]
    for group in _grouped(codes, max(0, context)):
        if all(
            tag == "equal" or _blank_only((tag, i1, i2, j1, j2), old.keys, new.keys)
            for tag, i1, i2, j1, j2 in group
        ):
            continue
        out.append(_hunk_header(group))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + line for line in new.lines[j1:j2])
                continue
            out.extend("-" + line for line in old.lines[i1:i2])
            out.extend("+" + line for line in new.lines[j1:j2])
    if len(out) == 2:
        return ""
    return "\n".join(out) + "\n"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_ast(diff_text: str) -> dict[str, Any]:
    """The parse-diff AST (reference §10.3) of a unified diff.

    Hunk bodies are read by the counts in their headers, so a page line that
    starts with ``---`` or ``+++`` is never mistaken for a file header.
    """
    files: list[dict[str, Any]] = []
    file: dict[str, Any] | None = None
    chunk: dict[str, Any] | None = None
    old_left = new_left = ln_del = ln_add = 0
    for line in diff_text.split("\n"):
        if chunk is not None and (old_left > 0 or new_left > 0):
            assert file is not None
            marker, rest = line[:1], line
            if marker == "+":
                chunk["changes"].append(
                    {"type": "add", "add": True, "ln": ln_add, "content": rest}
                )
                ln_add += 1
                new_left -= 1
                file["additions"] += 1
                continue
            if marker == "-":
                chunk["changes"].append(
                    {"type": "del", "del": True, "ln": ln_del, "content": rest}
                )
                ln_del += 1
                old_left -= 1
                file["deletions"] += 1
                continue
            if marker == " " or line == "":
                chunk["changes"].append(
                    {
                        "type": "normal",
                        "normal": True,
                        "ln1": ln_del,
                        "ln2": ln_add,
                        "content": rest or " ",
                    }
                )
                ln_del += 1
                ln_add += 1
                old_left -= 1
                new_left -= 1
                continue
        if line.startswith("--- "):
            file = {
                "from": _file_name(line[4:]),
                "to": None,
                "chunks": [],
                "deletions": 0,
                "additions": 0,
            }
            files.append(file)
            chunk = None
        elif line.startswith("+++ ") and file is not None:
            file["to"] = _file_name(line[4:])
        elif (match := _HUNK.match(line)) and file is not None:
            old_start, old_lines, new_start, new_lines = match.groups()
            chunk = {
                "content": line,
                "oldStart": int(old_start),
                # parse-diff reads a missing count as 1 ("@@ -3 +3 @@").
                "oldLines": int(old_lines) if old_lines is not None else 1,
                "newStart": int(new_start),
                "newLines": int(new_lines) if new_lines is not None else 1,
                "changes": [],
            }
            file["chunks"].append(chunk)
            old_left, new_left = chunk["oldLines"], chunk["newLines"]
            ln_del, ln_add = chunk["oldStart"], chunk["newStart"]
    return {"files": files}


def _file_name(value: str) -> str:
    name = value.split("\t", 1)[0].strip()
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


def diff_stats(previous: str, current: str) -> tuple[int, int]:
    """(lines added, lines removed), counting non-blank lines only."""
    old, new, codes = _compare(previous, current)
    added = removed = 0
    for tag, i1, i2, j1, j2 in codes:
        if tag != "equal":
            removed += sum(1 for key in old.keys[i1:i2] if key)
            added += sum(1 for key in new.keys[j1:j2] if key)
    return added, removed


def build_diff(previous: str, current: str) -> dict[str, Any] | None:
    """The markdown-mode ``diff`` of a page result, or None when unchanged."""
    text = unified_diff(previous, current)
    if not text:
        return None
    return {"text": text, "json": diff_ast(text)}


# --------------------------------------------------------------------------
# HTML rendering
# --------------------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    kind: str  # "equal", "change" or "skip"
    old: int | None = None  # 0-based line index, None for an empty cell
    new: int | None = None
    block: int = 0  # change block number (1-based), 0 for non-changes
    first: bool = False  # first row of its change block
    skipped: int = 0  # for "skip" rows


def _rows(old: _Side, new: _Side, codes: list[Opcode], context: int) -> list[_Row]:
    """Display rows: blank lines hidden, blank-only edits shown as unchanged,
    unchanged runs beyond ``context`` collapsed."""
    rows: list[_Row] = []
    block = 0
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            rows.extend(
                _Row("equal", i, j)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                if new.keys[j]
            )
            continue
        olds = [i for i in range(i1, i2) if old.keys[i]]
        news = [j for j in range(j1, j2) if new.keys[j]]
        if not olds and not news:
            continue
        block += 1
        for k in range(max(len(olds), len(news))):
            rows.append(
                _Row(
                    "change",
                    olds[k] if k < len(olds) else None,
                    news[k] if k < len(news) else None,
                    block,
                    k == 0,
                )
            )
    # Collapse unchanged runs far from any change.
    near = [False] * len(rows)
    for index, row in enumerate(rows):
        if row.kind == "change":
            for k in range(
                max(0, index - context), min(len(rows), index + context + 1)
            ):
                near[k] = True
    collapsed: list[_Row] = []
    run = 0
    for index, row in enumerate(rows):
        if row.kind == "equal" and not near[index]:
            run += 1
            continue
        if run:
            collapsed.append(_Row("skip", skipped=run))
            run = 0
        collapsed.append(row)
    if run:
        collapsed.append(_Row("skip", skipped=run))
    return collapsed


def _words(old_line: str, new_line: str) -> tuple[str, str] | None:
    """Old and new line as escaped HTML with ``<del>``/``<ins>`` around the
    changed words, or None when the lines are too long or too different."""
    if len(old_line) > _INTRALINE_MAX_CHARS or len(new_line) > _INTRALINE_MAX_CHARS:
        return None
    a = _TOKEN.findall(old_line)
    b = _TOKEN.findall(new_line)
    # Compare whitespace runs as one space: spacing alone is not a change.
    matcher = difflib.SequenceMatcher(
        None,
        [" " if t.isspace() else t for t in a],
        [" " if t.isspace() else t for t in b],
        autojunk=False,
    )
    if matcher.quick_ratio() < _INTRALINE_MIN_SIMILARITY:  # cheap upper bound
        return None
    codes = matcher.get_opcodes()
    same = sum(len("".join(a[i1:i2])) for tag, i1, i2, _, _ in codes if tag == "equal")
    total = max(len(old_line), len(new_line), 1)
    if same / total < _INTRALINE_MIN_SIMILARITY:
        return None
    old_html: list[str] = []
    new_html: list[str] = []
    for tag, i1, i2, j1, j2 in codes:
        old_part = escape("".join(a[i1:i2]))
        new_part = escape("".join(b[j1:j2]))
        if tag == "equal":
            old_html.append(old_part)
            new_html.append(new_part)
            continue
        if old_part:
            old_html.append(f"<del>{old_part}</del>")
        if new_part:
            new_html.append(f"<ins>{new_part}</ins>")
    return "".join(old_html), "".join(new_html)


def _whole(line: str, tag: str) -> str:
    return f"<{tag}>{escape(line)}</{tag}>" if line else ""


def _change_html(old: _Side, new: _Side, row: _Row) -> tuple[str, str]:
    old_line = old.lines[row.old] if row.old is not None else None
    new_line = new.lines[row.new] if row.new is not None else None
    if old_line is not None and new_line is not None:
        words = _words(old_line, new_line)
        if words is not None:
            return words
    return (
        _whole(old_line, "del") if old_line is not None else "",
        _whole(new_line, "ins") if new_line is not None else "",
    )


def _line_number(index: int | None) -> str:
    return "" if index is None else str(index + 1)


def _skip_row(count: int, columns: int) -> str:
    text = f"{count} unchanged line{'s' if count != 1 else ''}"
    return f'<tr class="diff-skip"><td colspan="{columns}">{text}</td></tr>'


def _truncated_row(rows: list[_Row], shown: int, columns: int) -> str:
    hidden = sum(1 for row in rows[shown:] if row.kind == "change")
    return (
        f'<tr class="diff-truncated"><td colspan="{columns}">'
        f"Diff truncated: {hidden} more changed lines not shown</td></tr>"
    )


def render_side_by_side(
    previous: str, current: str, *, context: int = 3, id_prefix: str = "change-"
) -> str:
    """``<table class="diff diff-split">`` with old and new columns.

    Changed rows carry ``diff-changed``; the first row of each change block has
    ``id="{id_prefix}{n}"`` (1-based) for previous/next navigation. Safe to
    ``mark_safe``: page text is escaped token by token, ``id_prefix`` too.
    """
    return _side_by_side_html(*_compare(previous, current), context, id_prefix)


def _side_by_side_html(
    old: _Side, new: _Side, codes: list[Opcode], context: int, id_prefix: str
) -> str:
    rows = _rows(old, new, codes, context)
    prefix = escape(id_prefix)
    out = ['<table class="diff diff-split"><tbody>']
    for shown, row in enumerate(rows):
        if shown >= _MAX_RENDERED_ROWS:
            out.append(_truncated_row(rows, shown, 4))
            break
        if row.kind == "skip":
            out.append(_skip_row(row.skipped, 4))
            continue
        if row.kind == "equal":
            assert row.old is not None and row.new is not None
            out.append(
                '<tr class="diff-equal">'
                f'<td class="diff-ln">{row.old + 1}</td>'
                f'<td class="diff-text">{escape(old.lines[row.old])}</td>'
                f'<td class="diff-ln">{row.new + 1}</td>'
                f'<td class="diff-text">{escape(new.lines[row.new])}</td></tr>'
            )
            continue
        old_html, new_html = _change_html(old, new, row)
        row_id = f' id="{prefix}{row.block}"' if row.first else ""
        old_class = "diff-del" if row.old is not None else "diff-empty"
        new_class = "diff-ins" if row.new is not None else "diff-empty"
        out.append(
            f'<tr class="diff-changed"{row_id}>'
            f'<td class="diff-ln">{_line_number(row.old)}</td>'
            f'<td class="diff-text {old_class}">{old_html}</td>'
            f'<td class="diff-ln">{_line_number(row.new)}</td>'
            f'<td class="diff-text {new_class}">{new_html}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def diff_with_side_by_side(
    previous: str, current: str
) -> tuple[dict[str, Any] | None, str]:
    """``(build_diff(previous, current), render_side_by_side(previous, current))``
    in one pass: the lines are normalised and matched once for both, which is
    what the check runner needs for every changed page."""
    old, new, codes = _compare(previous, current)
    text = _unified_text(old, new, codes, 3)
    diff = {"text": text, "json": diff_ast(text)} if text else None
    return diff, _side_by_side_html(old, new, codes, 3, "change-")


def compare_texts(
    previous: str, current: str
) -> tuple[str, str, dict[str, Any] | None, str]:
    """``(content_hash(previous), content_hash(current), diff, side-by-side
    HTML)``, the diff and HTML only when the hashes differ (None and "" when
    they are equal): what the check runner needs for a page whose source
    changed, normalising each text once."""
    old, new, (before, after) = _sides_and_hashes(previous, current)
    if before == after:
        return before, after, None, ""
    codes = _opcodes(old.keys, new.keys)
    text = _unified_text(old, new, codes, 3)
    diff = {"text": text, "json": diff_ast(text)} if text else None
    return before, after, diff, _side_by_side_html(old, new, codes, 3, "change-")


def render_inline(
    previous: str, current: str, *, context: int = 3, id_prefix: str = "change-"
) -> str:
    """``<table class="diff diff-inline">``: one text column, removed lines of a
    block before its added lines, word-level ``<del>``/``<ins>`` as above."""
    old, new, codes = _compare(previous, current)
    rows = _rows(old, new, codes, context)
    prefix = escape(id_prefix)
    out = ['<table class="diff diff-inline"><tbody>']
    emitted = 0
    index = 0
    while index < len(rows):
        if emitted >= _MAX_RENDERED_ROWS:
            out.append(_truncated_row(rows, index, 3))
            break
        row = rows[index]
        if row.kind == "skip":
            out.append(_skip_row(row.skipped, 3))
            index += 1
            emitted += 1
            continue
        if row.kind == "equal":
            assert row.old is not None and row.new is not None
            out.append(
                '<tr class="diff-equal">'
                f'<td class="diff-ln">{row.old + 1}</td>'
                f'<td class="diff-ln">{row.new + 1}</td>'
                f'<td class="diff-text">{escape(new.lines[row.new])}</td></tr>'
            )
            index += 1
            emitted += 1
            continue
        block = [row]
        index += 1
        while (
            index < len(rows) and rows[index].kind == "change" and not rows[index].first
        ):
            block.append(rows[index])
            index += 1
        removed, added = [], []
        for member in block:
            old_html, new_html = _change_html(old, new, member)
            if member.old is not None:
                removed.append((member.old, old_html))
            if member.new is not None:
                added.append((member.new, new_html))
        row_id = f' id="{prefix}{row.block}"'
        for line_index, html in removed:
            out.append(
                f'<tr class="diff-changed diff-del"{row_id}>'
                f'<td class="diff-ln">{line_index + 1}</td><td class="diff-ln"></td>'
                f'<td class="diff-text">{html}</td></tr>'
            )
            row_id = ""
        for line_index, html in added:
            out.append(
                f'<tr class="diff-changed diff-ins"{row_id}>'
                f'<td class="diff-ln"></td><td class="diff-ln">{line_index + 1}</td>'
                f'<td class="diff-text">{html}</td></tr>'
            )
            row_id = ""
        emitted += len(removed) + len(added)
    out.append("</tbody></table>")
    return "".join(out)
