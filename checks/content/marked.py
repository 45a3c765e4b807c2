"""The page's text as it reads, with what changed marked: the after copy
rendered like the "Text" view (tables as tables, headings as headings), the
words that are new wrapped in <ins> and the words that went in <del>, in
place. The Markdown diff stays one click away.

Changed words are marked in the Markdown with private-use characters that no
page text contains (they are dropped from it first) and that Markdown passes
through as text; after rendering they become the tags. Only words are
marked, never the table pipes, heading hashes or list bullets around them,
so the page's structure renders as it would unmarked.
"""

from __future__ import annotations

import re
from html import unescape

# cydifflib is difflib's SequenceMatcher compiled (same algorithm, same opcodes).
from cydifflib import SequenceMatcher

from checks.content.readable import readable_html
from checks.content.related import CJK, INTRALINE_MAX_CHARS, related

INS_OPEN, INS_CLOSE, DEL_OPEN, DEL_CLOSE = "\ue000", "\ue001", "\ue002", "\ue003"
_MARKERS = re.compile("[\ue000-\ue003]")
# Chinese and Japanese write no spaces between words: each of their
# characters is a word of its own (CJK), so an edited price is marked, not
# the whole sentence around it.
_CJK_CHAR = re.compile(f"[{CJK}]")
_TOKEN = re.compile(f"[{CJK}]|[^\\s{CJK}]+|\\s+")
# A token that is Markdown structure only: table pipes and rules, heading
# hashes, bullets, list numbers, quote marks, emphasis runs.
_MARKUP = re.compile(r"^(?:[|#>*+\-=:_`~]+|\d+[.)])$")
# Past this many lines on either side the marking is left out: the Markdown
# diff is there, and SequenceMatcher's cost grows with the lines squared.
MAX_LINES = 4000
# Changed lines are matched word by word as the diff views do it: not a line
# over INTRALINE_MAX_CHARS, not a pair that is not related(), and for the
# whole page at most this many words (both lines' tokens) given to the word
# matcher; the pairs past it are shown whole, gone and new. A page of
# Chinese, where each character is a word, reaches it after a few dozen long
# paragraphs instead of taking seconds for each.
WORD_MARKING_BUDGET = 100_000


def _is_word(token: str) -> bool:
    return not token.isspace() and not _MARKUP.match(token)


def _wrap(token: str, opening: str, closing: str) -> str:
    return f"{opening}{token}{closing}" if _is_word(token) else token


def _whole(line: str, opening: str, closing: str) -> str:
    marked = "".join(_wrap(t, opening, closing) for t in _TOKEN.findall(line))
    # Characters written together (Chinese, Japanese) are marked together.
    return marked.replace(closing + opening, "")


def _pair(before: str, after: str, budget: list[int]) -> list[str]:
    """The lines a changed line and the one it replaced read as: after with
    its changed words marked, or, for lines too long or unrelated or past
    the page's budget (budget[0], words left), before gone and after new."""
    if max(len(before), len(after)) <= INTRALINE_MAX_CHARS and related(before, after):
        cost = len(_TOKEN.findall(before)) + len(_TOKEN.findall(after))
        if cost <= budget[0]:
            budget[0] -= cost
            return [_words(before, after)]
    return [_whole(before, DEL_OPEN, DEL_CLOSE), _whole(after, INS_OPEN, INS_CLOSE)]


def _words(before: str, after: str) -> str:
    """`after` with its new words marked, and the words `before` had there
    and it has not, marked as gone just before them (past any leading
    structure of the line, so a heading or a table row stays one)."""
    old = _TOKEN.findall(before)
    new = _TOKEN.findall(after)
    out: list[str] = []
    pending: list[str] = []  # words gone, waiting for a place in the line

    def gone() -> str:
        # Characters of a script without spaces stay together, as written.
        space = "" if _CJK_CHAR.fullmatch(pending[-1]) else " "
        words = space.join(pending)
        pending.clear()
        return DEL_OPEN + words + DEL_CLOSE, space

    def flush() -> None:
        if pending:
            words, space = gone()
            out.append(words + space)

    started = False  # past the line's leading structure
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        pending += [t for t in old[i1:i2] if op != "equal" and _is_word(t)]
        for token in new[j1:j2]:
            if not started and _is_word(token):
                started = True
            if started and _is_word(token):
                flush()
            out.append(token if op == "equal" else _wrap(token, INS_OPEN, INS_CLOSE))
    if pending:
        words, space = gone()
        out.append(space + words)
    return "".join(out)


def marked_markdown(before: str, after: str) -> tuple[str, int]:
    """(after's Markdown with changes marked, how many lines changed)."""
    before, after = _MARKERS.sub("", before), _MARKERS.sub("", after)
    old, new = before.splitlines(), after.splitlines()
    if max(len(old), len(new)) > MAX_LINES:
        return after, 0
    lines: list[str] = []
    changed = 0
    budget = [WORD_MARKING_BUDGET]
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            lines += new[j1:j2]
            continue
        changed += max(i2 - i1, j2 - j1)
        pairs = min(i2 - i1, j2 - j1)
        for k in range(pairs):
            lines += _pair(old[i1 + k], new[j1 + k], budget)
        lines += [_whole(line, INS_OPEN, INS_CLOSE) for line in new[j1 + pairs : j2]]
        # Lines that went keep their place and shape (a row of a table reads
        # as a row), struck through.
        lines += [_whole(line, DEL_OPEN, DEL_CLOSE) for line in old[i1 + pairs : i2]]
    return "\n".join(lines), changed


_TAGS = {
    INS_OPEN: '<ins class="word-change">',
    INS_CLOSE: "</ins>",
    DEL_OPEN: '<del class="word-change">',
    DEL_CLOSE: "</del>",
}


def marked_html(before: str, after: str) -> tuple[str, int, bool]:
    """(HTML, changed lines, cut): the after copy as readable HTML with the
    changed words marked. Page text is escaped by readable_html before the
    markers become our own tags, so the result is as safe as its output."""
    markdown, changed = marked_markdown(before, after)
    html, cut = readable_html(markdown)
    html = _MARKERS.sub(lambda m: _TAGS[m[0]], html)
    # A copy cut short may stop inside a marked word: close what is open.
    for opening, closing in (("<ins", "</ins>"), ("<del", "</del>")):
        html += closing * max(html.count(opening) - html.count(closing), 0)
    return html, changed, cut


_BLOCK = re.compile(r"(<(p|li|h[1-6]|td|th)>)(.*?)(</\2>)", re.DOTALL)
_GONE = re.compile(r'<del class="word-change">.*?</del>', re.DOTALL)
_ANY_TAG = re.compile(r"<[^>]+>")


def _plain(text: str) -> str:
    return " ".join(unescape(text).replace("|", " ").split())


def mark_quoted(html: str, quotes: list[str]) -> str:
    """marked_html's HTML with each paragraph, item, heading or cell that
    holds a quote the judge cited (as it reads now) wrapped in <mark>. Only
    our own tags are added; the page text stays as escaped as it was."""
    needles = [_plain(q) for q in quotes if q and q.strip()]
    if not needles or not html:
        return html

    def mark(match: re.Match[str]) -> str:
        opening, _, inner, closing = match.groups()
        text = _plain(_ANY_TAG.sub("", _GONE.sub("", inner)))
        # A cell holds part of a quoted table row: long enough to mean it.
        part = len(text) >= 4 and any(text in n for n in needles)
        if not text or not (part or any(n in text for n in needles)):
            return match[0]
        return f"{opening}<mark>{inner}</mark>{closing}"

    return _BLOCK.sub(mark, html)


# What the reader steps between: a paragraph, item, heading or preformatted
# block, or a whole table row (a row's cells are one line of the page). An
# item holding a list of its own ends, as a step, where that list starts, so
# a change in an inner item is anchored on it, not on the item around it.
_UNIT = re.compile(r"<(tr|p|li|h[1-6]|pre)>(.*?)(?=</\1>|<[ou]l[ >])", re.DOTALL)
_CHANGED = 'class="word-change"'


def number_changes(html: str, id_prefix: str = "change-") -> tuple[str, int]:
    """(marked_html's HTML with an id on the first paragraph, item, heading
    or table row of each run of changed ones, how many runs): the anchors
    "previous / next change" steps between, as it does in the diff tables.
    Runs side by side are one change, as a diff's block of lines is."""
    count = 0
    after_change = False

    def number(match: re.Match[str]) -> str:
        nonlocal count, after_change
        changed = _CHANGED in match[2]
        starts = changed and not after_change
        after_change = changed
        if not starts:
            return match[0]
        count += 1
        tag = match[1]
        return f'<{tag} id="{id_prefix}{count}">' + match[0][len(tag) + 2 :]

    return _UNIT.sub(number, html), count
