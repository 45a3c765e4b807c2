from __future__ import annotations

import hashlib
import random
import re
from html.parser import HTMLParser

from checks.content import (
    compare_texts,
    content_hash,
    diff_ast,
    normalize,
    render_inline,
    render_side_by_side,
)

PREVIOUS = "# Pricing\n\nBasic: $10\nPro: $20\nTeam: $30\nEnterprise: call us\n"
CURRENT = "# Pricing\n\nBasic: $10\nPro: $25\nTeam: $30\nEnterprise: call us\n"

HOSTILE_OLD = 'Safe line\n<script>alert(1)</script> price 10\nx" onerror="alert(1)\n'
HOSTILE_NEW = 'Safe line\n<script>alert(2)</script> price 12\ny" onerror="alert(2)\n'


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def markup_of(fragment: str) -> TagCollector:
    collector = TagCollector()
    collector.feed(fragment)
    return collector


def unified_diff(previous: str, current: str) -> str:
    """The unified text of the diff a check stores, "" when there is none."""
    diff = compare_texts(previous, current)[2]
    return diff["text"] if diff else ""


def changed_lines(previous: str, current: str) -> tuple[int, int]:
    """(additions, deletions) as the stored diff's AST counts them."""
    diff = compare_texts(previous, current)[2]
    file = diff["json"]["files"][0] if diff else {"additions": 0, "deletions": 0}
    return file["additions"], file["deletions"]


# -- same vs changed ----------------------------------------------------------


def test_whitespace_only_changes_hash_the_same():
    original = "# Title\n\nCafé prices\n- Basic $10\n"
    reflowed = (
        "  # Title  \r\n\r\n\r\n"
        "Cafe\u0301   prices\u200b\t\n"  # NFD é, zero-width space, tab
        "-\u00a0Basic   $10\n\n"  # no-break space
    )

    assert content_hash(reflowed) == content_hash(original)


def test_a_real_change_changes_the_hash():
    assert content_hash(PREVIOUS) != content_hash(CURRENT)


def test_a_line_break_still_counts():
    assert content_hash("one two") != content_hash("one\ntwo")


def test_normalize_collapses_whitespace_and_drops_blank_lines():
    assert normalize(" a  b \n\n\t\nc\u200d\n") == "a b\nc"


# -- unified diff ---------------------------------------------------------------


def test_unified_diff_of_a_known_change():
    assert unified_diff(PREVIOUS, CURRENT) == (
        "--- previous\n"
        "+++ current\n"
        "@@ -1,6 +1,6 @@\n"
        " # Pricing\n"
        " \n"
        " Basic: $10\n"
        "-Pro: $20\n"
        "+Pro: $25\n"
        " Team: $30\n"
        " Enterprise: call us\n"
    )


def test_unified_diff_splits_distant_changes_into_hunks():
    old = "\n".join(f"line {n}" for n in range(1, 21))
    new = old.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\n")

    text = unified_diff(old, new)

    assert re.findall(r"^@@.*@@$", text, re.MULTILINE) == [
        "@@ -1,5 +1,5 @@",
        "@@ -15,6 +15,6 @@",
    ]


def test_unified_diff_is_empty_when_only_whitespace_changed():
    assert unified_diff("a  b\n\nc\n", "a b\nc  \n\n\n") == ""


def test_context_lines_are_printed_from_the_current_text():
    text = unified_diff("keep  this\nold\n", "keep this\nnew\n")

    assert text.splitlines()[2:] == ["@@ -1,2 +1,2 @@", " keep this", "-old", "+new"]


def test_an_insertion_into_an_empty_page_uses_the_empty_range_convention():
    text = unified_diff("", "a\n")

    assert text.splitlines()[2:] == ["@@ -0,0 +1,1 @@", "+a"]


def test_hunks_that_only_add_blank_lines_are_left_out():
    old = "\n".join(f"line {n}" for n in range(1, 21))
    new = old.replace("line 2\n", "line 2\n\n\n").replace("line 18", "line eighteen")

    text = unified_diff(old, new)

    assert re.findall(r"^@@.*@@$", text, re.MULTILINE) == ["@@ -15,6 +17,6 @@"]


# -- AST -------------------------------------------------------------------


def test_diff_ast_has_the_parse_diff_shape():
    ast = diff_ast(unified_diff("a\nb\nc\n", "a\nB\nc\nd\n"))

    assert ast == {
        "files": [
            {
                "from": "previous",
                "to": "current",
                "chunks": [
                    {
                        "content": "@@ -1,3 +1,4 @@",
                        "oldStart": 1,
                        "oldLines": 3,
                        "newStart": 1,
                        "newLines": 4,
                        "changes": [
                            {
                                "type": "normal",
                                "normal": True,
                                "ln1": 1,
                                "ln2": 1,
                                "content": " a",
                            },
                            {"type": "del", "del": True, "ln": 2, "content": "-b"},
                            {"type": "add", "add": True, "ln": 2, "content": "+B"},
                            {
                                "type": "normal",
                                "normal": True,
                                "ln1": 3,
                                "ln2": 3,
                                "content": " c",
                            },
                            {"type": "add", "add": True, "ln": 4, "content": "+d"},
                        ],
                    }
                ],
                "deletions": 1,
                "additions": 2,
            }
        ]
    }


def test_diff_ast_keeps_page_lines_that_look_like_file_headers():
    ast = diff_ast(unified_diff("intro\n--- rule\n+++ plus\n", "intro\n"))

    changes = ast["files"][0]["chunks"][0]["changes"]
    assert [c["content"] for c in changes] == [" intro", "---- rule", "-+++ plus"]
    assert ast["files"][0]["deletions"] == 2


def test_diff_ast_of_no_diff_has_no_files():
    assert diff_ast("") == {"files": []}


def test_diff_ast_reads_headers_without_counts():
    ast = diff_ast("--- a/previous.md\n+++ b/current.md\n@@ -3 +3 @@\n-x\n+y\n")

    file = ast["files"][0]
    assert (file["from"], file["to"]) == ("previous.md", "current.md")
    assert file["chunks"][0]["oldLines"] == 1
    assert [c["ln"] for c in file["chunks"][0]["changes"]] == [3, 3]


def test_the_stored_diff_is_the_markdown_mode_payload():
    assert compare_texts(PREVIOUS, PREVIOUS + "\n")[2] is None
    payload = compare_texts(PREVIOUS, CURRENT)[2]
    assert payload == {
        "text": unified_diff(PREVIOUS, CURRENT),
        "json": diff_ast(payload["text"]),
    }


# -- HTML rendering ---------------------------------------------------------


def test_side_by_side_escapes_script_and_attribute_breakouts_in_both_columns():
    html = render_side_by_side(HOSTILE_OLD, HOSTILE_NEW)

    assert "<script" not in html
    assert '" onerror' not in html
    assert "&lt;script&gt;alert(<del>1</del>)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(<ins>2</ins>)&lt;/script&gt;" in html
    assert "&quot; onerror=&quot;alert(" in html
    markup = markup_of(html)
    assert markup.tags <= {
        "table",
        "colgroup",
        "col",
        "tbody",
        "tr",
        "td",
        "del",
        "ins",
    }
    assert markup.attributes <= {"class", "id", "colspan"}


def test_inline_escapes_script_and_attribute_breakouts():
    html = render_inline(HOSTILE_OLD, HOSTILE_NEW)

    assert "<script" not in html
    assert '" onerror' not in html
    markup = markup_of(html)
    assert markup.tags <= {
        "table",
        "colgroup",
        "col",
        "tbody",
        "tr",
        "td",
        "del",
        "ins",
    }
    assert markup.attributes <= {"class", "id", "colspan"}


def test_side_by_side_highlights_only_the_changed_words():
    html = render_side_by_side(PREVIOUS, CURRENT)

    assert (
        '<tr class="diff-changed" id="change-1"><td class="diff-ln">4</td>'
        '<td class="diff-text diff-del">Pro: $<del>20</del></td>'
        '<td class="diff-ln">4</td>'
        '<td class="diff-text diff-ins">Pro: $<ins>25</ins></td></tr>'
    ) in html


def test_a_one_word_edit_highlights_only_that_word():
    html = render_side_by_side(
        "# Fox\n\nThe quick brown fox jumps over the lazy dog.\n",
        "# Fox\n\nThe quick brown cat jumps over the lazy dog.\n",
    )

    assert (
        '<td class="diff-text diff-del">'
        "The quick brown <del>fox</del> jumps over the lazy dog.</td>"
    ) in html
    assert (
        '<td class="diff-text diff-ins">'
        "The quick brown <ins>cat</ins> jumps over the lazy dog.</td>"
    ) in html
    assert (html.count("<del>"), html.count("<ins>")) == (1, 1)


def test_two_unrelated_lines_are_shown_whole_without_word_marks():
    # They share "The", "of", "the", "is", "a", spaces and the full stop:
    # enough characters to pass for similar, not enough words to be related.
    old = "# Notes\n\nThe price of the basic plan is 10 euros a month.\n"
    new = "# Notes\n\nThe team of the year is announced in a week.\n"

    split = render_side_by_side(old, new)
    inline = render_inline(old, new)

    assert (
        '<td class="diff-text diff-del">'
        "<del>The price of the basic plan is 10 euros a month.</del></td>"
    ) in split
    assert (
        '<td class="diff-text diff-ins">'
        "<ins>The team of the year is announced in a week.</ins></td>"
    ) in split
    for html in (split, inline):
        assert (html.count("<del>"), html.count("<ins>")) == (1, 1)


def test_unchanged_runs_are_collapsed_with_a_count():
    old = "\n".join(f"line {n}" for n in range(1, 31))
    new = old.replace("line 15", "line fifteen")

    html = render_side_by_side(old, new)

    skips = re.findall(r'<tr class="diff-skip"><td colspan="4">([^<]*)</td></tr>', html)
    assert skips == ["11 unchanged lines", "12 unchanged lines"]
    assert html.count('class="diff-equal"') == 6


def test_each_change_block_gets_the_next_navigation_id():
    old = "\n".join(f"line {n}" for n in range(1, 41))
    new = old.replace("line 5", "line five").replace("line 30", "line thirty")
    new += "\nnew one\nnew two"

    for html in (render_side_by_side(old, new), render_inline(old, new)):
        assert re.findall(r'id="(change-\d+)"', html) == [
            "change-1",
            "change-2",
            "change-3",
        ]


def test_the_id_prefix_is_configurable_and_escaped():
    html = render_inline("a\n", "b\n", id_prefix='x"><script>')

    assert 'id="x&quot;&gt;&lt;script&gt;1"' in html


def test_added_and_removed_lines_are_wrapped_whole():
    html = render_side_by_side("keep\nold only\n", "keep\n")

    assert '<td class="diff-text diff-del"><del>old only</del></td>' in html
    assert '<td class="diff-text diff-empty"></td>' in html


# -- size ---------------------------------------------------------------------


def test_a_one_megabyte_pair_with_scattered_changes_gives_one_hunk_per_change():
    rng = random.Random(42)
    words = ["price", "plan", "widget", "stock", "shipping", "review", "color", "size"]
    lines = [
        f"{n:05d} " + " ".join(rng.choice(words) for _ in range(8))
        for n in range(20_000)
    ]
    changed = list(lines)
    edits = range(250, 20_000, 500)  # 40 edits, far apart
    for n in edits:
        changed[n] = changed[n] + " (updated)"
    previous, current = "\n".join(lines), "\n".join(changed)
    assert len(previous) > 1_000_000

    text = unified_diff(previous, current)

    assert text.count("\n@@ ") == 40
    assert changed_lines(previous, current) == (40, 40)
    html = render_side_by_side(previous, current)
    assert html.count('id="change-') == 40
    assert html.count("<ins> (updated)</ins>") == 40


def test_a_completely_rewritten_large_page_still_diffs():
    previous = "\n".join(f"old line {n}" for n in range(15_000))
    current = "\n".join(f"new text {n}" for n in range(15_000))

    assert changed_lines(previous, current) == (15_000, 15_000)
    assert "Diff truncated" in render_side_by_side(previous, current)


# -- normalisation fast path matches the reference definition ------------------


def _reference_keys(lines: list[str]) -> list[str]:
    """The per-line definition normalize()/_keys() must keep producing."""
    import unicodedata

    if not lines:
        return []
    text = unicodedata.normalize("NFC", "\n".join(lines))
    text = re.sub("[\u200b\u200c\u200d\u2060\ufeff\u00ad]", "", text)
    return [" ".join(line.split()) for line in text.split("\n")]


def _reference_normalize(text: str) -> str:
    return "\n".join(key for key in _reference_keys(text.splitlines()) if key)


def test_other_line_breaks_are_every_splitlines_boundary_but_newline():
    from checks.content.compare import _OTHER_LINE_BREAKS

    boundaries = {
        chr(i) for i in range(0x110000) if len(f"a{chr(i)}b".splitlines()) == 2
    }
    assert set(_OTHER_LINE_BREAKS) == boundaries - {"\n"}


def test_normalize_and_keys_match_the_reference_on_varied_text():
    from checks.content.compare import _keys

    rng = random.Random(20261122)
    odd_spaces = "\t\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2003\u2028\u2029"
    invisible = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
    composed = ["\r\n", "é", "e\u0301", "\u0301", "Å", "A\u030a", "·", "—", "日本"]
    alphabet = (
        list("abcxyz019#*-[]()|>.")
        + [" "] * 8
        + ["\n"] * 4
        + list(odd_spaces + "\u202f\u3000" + invisible)
        + composed
        + ["\U0001f600"]
    )
    samples = ["", " ", "\n", "\n\n", " a ", "a\n\n\nb", "a  b", "a\u200b"]
    samples.append("Ca\u0301fe")
    for _ in range(3000):
        size = rng.choice((1, 3, 10, 40))
        pool = alphabet if rng.random() < 0.5 else list("ab \n") + ["word", "é"]
        samples.append("".join(rng.choice(pool) for _ in range(size)))
    for text in samples:
        assert normalize(text) == _reference_normalize(text), repr(text)
        expected = hashlib.sha256(_reference_normalize(text).encode()).hexdigest()
        assert content_hash(text) == expected
        lines = text.splitlines()
        assert _keys(lines) == _reference_keys(lines), repr(text)


def test_normalize_matches_the_reference_on_article_markdown():
    from bench.pages import markdown_document, scattered_edits

    text = markdown_document(200_000)
    for sample in (text, scattered_edits(text, 50), text.replace(" ", "  ", 20)):
        assert normalize(sample) == _reference_normalize(sample)


def test_compare_texts_gives_both_hashes_and_the_diff_in_one_pass():
    from bench.pages import markdown_document, scattered_edits

    before = markdown_document(50_000)
    after = scattered_edits(before, 12)

    before_hash, after_hash, diff = compare_texts(before, after)

    assert (before_hash, after_hash) == (content_hash(before), content_hash(after))
    assert diff is not None
    assert diff["text"].startswith("--- previous\n+++ current\n@@ -")
    assert diff["json"] == diff_ast(diff["text"])


def test_compare_texts_skips_the_diff_when_only_whitespace_changed():
    spaced = PREVIOUS.replace("Pro: ", "Pro:\t  ").replace("\n\n", "\n \n\n")

    assert compare_texts(PREVIOUS, spaced) == (
        content_hash(PREVIOUS), content_hash(PREVIOUS), None,
    )  # fmt: skip


MOVED_BEFORE = "\n\n".join(f"Section {i} talks about topic {i}." for i in range(1, 13))
MOVED_AFTER = MOVED_BEFORE.replace("Section 2 talks about topic 2.\n\n", "") + (
    "\n\nSection 2 talks about topic 2."
)


def test_a_paragraph_moved_down_the_page_says_where_it_went_in_both_views():
    split = render_side_by_side(MOVED_BEFORE, MOVED_AFTER)
    inline = render_inline(MOVED_BEFORE, MOVED_AFTER)
    for html in (split, inline):
        assert '<span class="diff-moved">Moved down to line 23</span>' in html
        assert '<span class="diff-moved">Moved here from line 3</span>' in html
        assert html.count("diff-moved") == 2


def test_a_line_removed_and_another_added_is_not_called_moved():
    html = render_inline("Starter $19\n\nPro $49", "Starter $19\n\nTeam $99")
    assert "Moved" not in html


def test_a_separator_removed_in_one_place_and_added_in_another_is_not_called_moved():
    paragraphs = [f"Section {i} talks about topic {i}." for i in range(1, 13)]
    before = "\n\n".join(paragraphs[:3] + ["—"] + paragraphs[3:])
    after = "\n\n".join(paragraphs[:8] + ["—"] + paragraphs[8:])
    for html in (render_side_by_side(before, after), render_inline(before, after)):
        assert "diff-moved" not in html


def test_a_line_that_appears_twice_is_not_called_moved():
    paragraphs = [f"Section {i} talks about topic {i}." for i in range(1, 13)]
    repeated = "Read the full terms and conditions"
    before = "\n\n".join(paragraphs[:2] + [repeated] + paragraphs[2:] + [repeated])
    after = "\n\n".join(paragraphs[:9] + [repeated] + paragraphs[9:] + [repeated])
    for html in (render_side_by_side(before, after), render_inline(before, after)):
        assert "diff-moved" not in html
