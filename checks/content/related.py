"""When two lines are worth matching word by word: one test shared by the
diff views (checks.content.render) and the page text view
(checks.content.marked), so both mark words in the same pairs of lines and
neither pays a word matcher for a pair the other would skip."""

from __future__ import annotations

import re

# Chinese and Japanese write no spaces between words: each of their
# characters is a word of its own, so an edited price is marked, not the
# whole sentence around it.
CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
WORD = re.compile(f"[{CJK}]|[^\\W{CJK}]+")

# Word-level marking is skipped for very long lines (minified blobs, a
# Chinese paragraph of thousands of characters, each one a word).
INTRALINE_MAX_CHARS = 2_000
# A pair of lines is highlighted word by word only when they are evidently
# related: at least this share of the characters of their distinct words is
# in words both lines have. Unrelated lines in one language still share most
# spaces and punctuation; a measure counting those sent every pair of a
# rewritten page through the word matcher, nearly all of its diff's cost.
_RELATED_MIN_SHARED_WORDS = 0.4
# Two lines written from one small vocabulary share nearly all their words and
# still say different things; what an edited line keeps is its word order. A
# line of this many words or more is matched word by word only when this share
# of its pairs of neighbouring words is in the other line too (an edit of one
# word breaks two pairs; random text in a vocabulary of a few dozen words
# shares fewer than one in ten).
_RELATED_PAIRS_FROM_WORDS = 8
_RELATED_MIN_SHARED_PAIRS = 0.4


def related(old_line: str, new_line: str) -> bool:
    """Whether two lines share enough to be worth matching word by word (see
    _RELATED_MIN_SHARED_WORDS and _RELATED_MIN_SHARED_PAIRS); sets in C, no
    matcher."""
    old_list = WORD.findall(old_line)
    new_list = WORD.findall(new_line)
    old_words, new_words = set(old_list), set(new_list)
    shared = sum(map(len, old_words & new_words))
    total = max(sum(map(len, old_words)), sum(map(len, new_words)))
    if not (shared > 0 and shared >= total * _RELATED_MIN_SHARED_WORDS):
        return False
    if min(len(old_list), len(new_list)) < _RELATED_PAIRS_FROM_WORDS:
        return True  # a short line: cheap to match whatever it shares
    old_pairs = set(zip(old_list, old_list[1:], strict=False))
    new_pairs = set(zip(new_list, new_list[1:], strict=False))
    fewest = min(len(old_pairs), len(new_pairs))
    return len(old_pairs & new_pairs) >= fewest * _RELATED_MIN_SHARED_PAIRS
