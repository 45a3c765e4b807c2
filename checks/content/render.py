"""HTML of a diff for the dashboard and e-mails: side by side or inline.

Every piece of page text goes through ``html.escape`` before our own tags wrap
it, so the result is safe to ``mark_safe``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from html import escape, unescape

# cydifflib is difflib's SequenceMatcher compiled (same algorithm, same
# opcodes): word-level highlighting of a changed paragraph costs a third.
import cydifflib as difflib

from checks.content.compare import Opcode, Side, compare
from checks.content.related import CJK, INTRALINE_MAX_CHARS, WORD, related

# Below this share of unchanged characters a pair is shown as a whole-line
# replacement: highlighting every other word helps nobody.
_INTRALINE_MIN_SIMILARITY = 0.4
# Rendering stops after this many rows; a browser chokes on more, and the
# unified diff is still there for the full story.
_MAX_RENDERED_ROWS = 5_000
# Each character of Chinese or Japanese is a word of its own (they write
# no spaces between words): an edited price in a sentence is marked, not the
# sentence.
_CJK_CHAR = f"[{CJK}]"
_NOT_CJK_WORD = f"[^\\W{CJK}]+"
_TOKEN = re.compile(f"{_CJK_CHAR}|{_NOT_CJK_WORD}|\\s+|[^\\w\\s]")


@dataclass(slots=True)
class _Row:
    kind: str  # "equal", "change" or "skip"
    old: int | None = None  # 0-based line index, None for an empty cell
    new: int | None = None
    block: int = 0  # change block number (1-based), 0 for non-changes
    first: bool = False  # first row of its change block
    skipped: int = 0  # for "skip" rows


def _rows(old: Side, new: Side, codes: list[Opcode], context: int) -> list[_Row]:
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
    changed words, or None when the lines are too long or not related."""
    longest = max(len(old_line), len(new_line))
    if longest > INTRALINE_MAX_CHARS:
        return None
    # At most the shorter line can be unchanged: too short a line fails the
    # similarity floor below whatever it holds.
    if min(len(old_line), len(new_line)) < longest * _INTRALINE_MIN_SIMILARITY:
        return None
    if not related(old_line, new_line):
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
    codes = matcher.get_opcodes()
    same = sum(len("".join(a[i1:i2])) for tag, i1, i2, _, _ in codes if tag == "equal")
    if same < longest * _INTRALINE_MIN_SIMILARITY:
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


# A line is called moved only when it says something of its own: this many
# words, or this many word characters (a separator, a bullet, "Yes" or a
# table rule removed here and added there is no move).
_MOVED_MIN_WORDS = 2
_MOVED_MIN_WORD_CHARS = 8


def _movable(line: str) -> bool:
    words = WORD.findall(line)
    return (
        len(words) >= _MOVED_MIN_WORDS or sum(map(len, words)) >= _MOVED_MIN_WORD_CHARS
    )


@dataclass(slots=True)
class _Moves:
    """Lines that went from one place and came back whole at another: old
    line index → (new line index, "down" or "up"), and new line index → old
    line index. Only lines removed or added outright are matched, by the key
    the line matcher compared them by, and only a line found once on each
    side (a repeated line has no one place it went to) that has words of its
    own (see _movable): a dict lookup a line, no matching."""

    went: dict[int, tuple[int, str]]
    came: dict[int, int]

    @classmethod
    def of(cls, old: Side, new: Side, rows: list[_Row]) -> _Moves:
        gone: dict[int, tuple[int, int]] = {}
        for place, row in enumerate(rows):
            if row.kind == "change" and row.new is None and row.old is not None:
                gone[old.keys[row.old]] = (row.old, place)
        went: dict[int, tuple[int, str]] = {}
        came: dict[int, int] = {}
        if not gone:
            return cls(went, came)
        old_count, new_count = Counter(old.keys), Counter(new.keys)
        for place, row in enumerate(rows):
            if row.kind != "change" or row.old is not None or row.new is None:
                continue
            key = new.keys[row.new]
            if (
                key in gone
                and old_count[key] == 1
                and new_count[key] == 1
                and _movable(new.lines[row.new])
            ):
                index, gone_at = gone[key]
                went[index] = (row.new, "down" if place > gone_at else "up")
                came[row.new] = index
        return cls(went, came)

    def old_html(self, index: int, html: str) -> str:
        if index not in self.went:
            return html
        there, way = self.went[index]
        return f'{html} <span class="diff-moved">Moved {way} to line {there + 1}</span>'

    def new_html(self, index: int, html: str) -> str:
        if index not in self.came:
            return html
        return (
            f'{html} <span class="diff-moved">Moved here from line '
            f"{self.came[index] + 1}</span>"
        )


def _change_html(
    old: Side, new: Side, row: _Row, moves: _Moves | None = None
) -> tuple[str, str]:
    old_line = old.lines[row.old] if row.old is not None else None
    new_line = new.lines[row.new] if row.new is not None else None
    if old_line is not None and new_line is not None:
        words = _words(old_line, new_line)
        if words is not None:
            return words
    old_html = _whole(old_line, "del") if old_line is not None else ""
    new_html = _whole(new_line, "ins") if new_line is not None else ""
    if moves is not None and row.old is not None and new_line is None:
        old_html = moves.old_html(row.old, old_html)
    if moves is not None and row.new is not None and old_line is None:
        new_html = moves.new_html(row.new, new_html)
    return old_html, new_html


def _line_number(index: int | None) -> str:
    return "" if index is None else str(index + 1)


# Column widths are declared up front: a fixed-layout table otherwise takes
# them from its first row, and when that row is a full-width "N unchanged
# lines" row every column gets the same share, the line numbers half the
# table. Gutters are as wide as the longest line number (the digits class).
_GUTTER = '<col class="diff-ln-col">'
_TEXT = '<col class="diff-text-col">'
_SPLIT_COLUMNS = f"<colgroup>{_GUTTER}{_TEXT}{_GUTTER}{_TEXT}</colgroup>"
_INLINE_COLUMNS = f"<colgroup>{_GUTTER}{_GUTTER}{_TEXT}</colgroup>"
_MIN_DIGITS, _MAX_DIGITS = 2, 6
_STORED_SPLIT_START = '<table class="diff diff-split"><tbody>'


def _table_start(layout: str, old: Side, new: Side) -> str:
    longest = max(len(old.lines), len(new.lines), 1)
    digits = min(max(len(str(longest)), _MIN_DIGITS), _MAX_DIGITS)
    columns = _SPLIT_COLUMNS if layout == "split" else _INLINE_COLUMNS
    return f'<table class="diff diff-{layout} diff-digits-{digits}">{columns}<tbody>'


def with_columns(html: str) -> str:
    """A side-by-side diff stored before its columns were declared, with
    them (and room for five-digit line numbers); other HTML unchanged."""
    if not html.startswith(_STORED_SPLIT_START):
        return html
    start = f'<table class="diff diff-split diff-digits-5">{_SPLIT_COLUMNS}<tbody>'
    return start + html[len(_STORED_SPLIT_START) :]


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
    return side_by_side_html(*compare(previous, current), context, id_prefix)


def side_by_side_html(
    old: Side, new: Side, codes: list[Opcode], context: int, id_prefix: str
) -> str:
    rows = _rows(old, new, codes, context)
    moves = _Moves.of(old, new, rows)
    prefix = escape(id_prefix)
    out = [_table_start("split", old, new)]
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
        old_html, new_html = _change_html(old, new, row, moves)
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


def render_inline(
    previous: str, current: str, *, context: int = 3, id_prefix: str = "change-"
) -> str:
    """``<table class="diff diff-inline">``: one text column, removed lines of a
    block before its added lines, word-level ``<del>``/``<ins>`` as above."""
    old, new, codes = compare(previous, current)
    rows = _rows(old, new, codes, context)
    moves = _Moves.of(old, new, rows)
    prefix = escape(id_prefix)
    out = [_table_start("inline", old, new)]
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
            out.append(_inline_equal_row(row, new))
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
        anchor = f' id="{prefix}{row.block}"'
        lines = _inline_block_rows(old, new, block, anchor, moves)
        out.extend(lines)
        emitted += len(lines)
    out.append("</tbody></table>")
    return "".join(out)


def _inline_equal_row(row: _Row, new: Side) -> str:
    assert row.old is not None and row.new is not None
    return (
        '<tr class="diff-equal">'
        f'<td class="diff-ln">{row.old + 1}</td>'
        f'<td class="diff-ln">{row.new + 1}</td>'
        f'<td class="diff-text">{escape(new.lines[row.new])}</td></tr>'
    )


def _inline_block_rows(
    old: Side, new: Side, block: list[_Row], anchor: str, moves: _Moves
) -> list[str]:
    """A changed block in one column: its removed lines, then its added ones;
    the first row carries the block's anchor."""
    removed, added = [], []
    for member in block:
        old_html, new_html = _change_html(old, new, member, moves)
        if member.old is not None:
            removed.append((member.old, old_html))
        if member.new is not None:
            added.append((member.new, new_html))
    cells = [
        ("diff-del", f'<td class="diff-ln">{n + 1}</td><td class="diff-ln"></td>', html)
        for n, html in removed
    ] + [
        ("diff-ins", f'<td class="diff-ln"></td><td class="diff-ln">{n + 1}</td>', html)
        for n, html in added
    ]
    return [
        f'<tr class="diff-changed {side}"{anchor if i == 0 else ""}>'
        f'{numbers}<td class="diff-text">{html}</td></tr>'
        for i, (side, numbers, html) in enumerate(cells)
    ]


_TEXT_CELL = re.compile(r'(<td class="diff-text[^"]*">)(.*?)(</td>)', re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def mark_quotes(html: str, quotes: list[str]) -> str:
    """Diff HTML from this module with each line that holds a quote (page
    text the judge cited) wrapped in <mark>.

    A line's text is read back from its cell (tags dropped, entities decoded)
    and compared with the quotes, so word-level <del>/<ins> inside it do not
    hide a match. Only our own cell markup is touched; the page text inside
    stays as escaped as it was, so the result may be marked safe exactly as
    the input was."""
    needles = [_squeezed(q) for q in quotes if q and q.strip()]
    if not needles or not html:
        return html

    def mark(match: re.Match[str]) -> str:
        opening, inner, closing = match.groups()
        text = _squeezed(unescape(_TAG.sub("", inner)))
        if not text or not any(n in text for n in needles):
            return match[0]
        return f"{opening}<mark>{inner}</mark>{closing}"

    return _TEXT_CELL.sub(mark, html)
