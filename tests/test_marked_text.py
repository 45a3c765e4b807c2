"""A changed page opens on its text as it reads, tables as tables and
headings as headings, with the words that changed marked; the Markdown diff
is one click away."""

from __future__ import annotations

import pytest

from checks.content.marked import marked_html, number_changes
from tests.test_dashboard_views import (  # noqa: F401
    make_check,
    make_page,
    monitor,
    owner,
    web,
)

pytestmark = pytest.mark.django_db

BEFORE = """# Acme pricing

| Plan | Price |
| --- | --- |
| Starter | $19 |
| Pro | $49 |
| Team | $99 |

Prices include VAT. Updated Monday.
"""
AFTER = (
    BEFORE.replace("$49", "$59")
    .replace("Monday", "Tuesday")
    .replace("| Team | $99 |\n", "")
)


def test_the_text_marks_changed_words_inside_the_pages_own_structure():
    html, changed, cut = marked_html(BEFORE, AFTER)
    assert "<h3>Acme pricing</h3>" in html
    assert "<td>Pro</td>" in html
    assert (
        '<td><del class="word-change">$49</del> <ins class="word-change">$59</ins></td>'
        in html
    )
    assert '<td><del class="word-change">Team</del></td>' in html  # a row that went
    assert '<del class="word-change">Monday.</del>' in html
    assert "| --- |" not in html and "# Acme" not in html
    assert (changed, cut) == (3, False)


def test_page_text_cannot_forge_the_marks_or_markup():
    evil = "<script>alert(1)</script> \ue000fake\ue001"
    html, _, _ = marked_html("<script>alert(1)</script> fake old", f"{evil} new")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "fake" in html and '<ins class="word-change">fake</ins>' not in html


def test_a_changed_page_opens_on_its_marked_text(web, monitor):  # noqa: F811
    result = make_page(make_check(monitor), BEFORE, AFTER)
    body = web.get(result.get_absolute_url()).content.decode()
    region = body.split('id="diff-region"', 1)[1]
    assert '<ins class="word-change">$59</ins></td>' in region
    assert 'aria-current="true">Page text</a>' in body
    assert 'href="?view=split"' in body and "Side by side" in body
    assert "Markdown" not in body  # a format's name, not words for staff
    assert "| Pro |" not in region.split("</div>\n  \n", 1)[0]

    markdown = web.get(result.get_absolute_url(), {"view": "split"})
    assert 'class="diff diff-split' in markdown.content.decode()


LONG = "\n\n".join(f"Paragraph {i} says something ordinary." for i in range(1, 401))
LONG_EDITED = LONG.replace("Paragraph 50 says", "Paragraph 50 now says").replace(
    "Paragraph 350 says something ordinary.", "Paragraph 350 says something new."
)


def test_the_text_view_of_a_long_page_numbers_its_changes_and_offers_to_step_through_them(  # noqa: E501
    web,  # noqa: F811
    monitor,  # noqa: F811
):
    result = make_page(make_check(monitor), LONG, LONG_EDITED)
    body = web.get(result.get_absolute_url()).content.decode()
    region = body.split('id="diff-region"', 1)[1]
    assert '<p id="change-1">Paragraph 50 <ins class="word-change">now</ins>' in region
    assert '<p id="change-2">Paragraph 350' in region
    assert 'id="change-3"' not in region
    assert "2 changes" in body and "Next change →" in body


def test_changes_next_to_each_other_in_the_text_are_one_change_to_step_to():
    before = "| Plan | Price |\n| --- | --- |\n| Pro | $49 |\n| Team | $99 |\n\nEnd."
    after = before.replace("$49", "$59").replace("$99", "$109")
    html, _, _ = marked_html(before, after)
    numbered, count = number_changes(html)
    assert count == 1
    assert numbered.count('id="change-1"') == 1 and 'id="change-2"' not in numbered


def test_chinese_text_marks_the_characters_that_changed_not_the_whole_sentence():
    html, _, _ = marked_html(
        "价格是每月十九美元，包括税。", "价格是每月三十美元，包括税。"
    )
    assert html == (
        '<p>价格是每月<ins class="word-change">三</ins>十'
        '<del class="word-change">九</del>美元，包括税。</p>\n'
    )
    html, _, _ = marked_html("包括税。", "包括税")
    assert html == '<p>包括税<del class="word-change">。</del></p>\n'


@pytest.fixture
def words_compared(monkeypatch) -> list[int]:
    """How many words (tokens) the page text view's word matcher is given,
    one entry per matcher started (the line matcher is not counted)."""
    from checks.content import marked

    compared: list[int] = []

    def words(before: str, after: str) -> str:
        compared.append(
            len(marked._TOKEN.findall(before)) + len(marked._TOKEN.findall(after))
        )
        return real_words(before, after)

    real_words = marked._words
    monkeypatch.setattr(marked, "_words", words)
    return compared


def _chinese(count: int, seed: int) -> str:
    import random

    chosen = random.Random(seed)
    return "".join(chr(0x4E00 + chosen.randrange(800)) for _ in range(count))


def _lightly_edited(line: str) -> str:
    return "".join("改" if i % 200 == 0 else c for i, c in enumerate(line))


def test_long_chinese_paragraphs_are_not_matched_character_by_character(
    words_compared,
):
    before = [_chinese(10_000, seed) for seed in range(5)]
    after = [_lightly_edited(line) for line in before]
    html, changed, _ = marked_html("\n\n".join(before), "\n\n".join(after))
    assert words_compared == []
    assert changed == 5
    # Each paragraph is shown gone and new, one mark each, not one a character.
    assert html.startswith(f'<p><del class="word-change">{before[0]}</del>')


def test_unrelated_lines_in_the_page_text_are_not_matched_word_by_word(
    words_compared,
):
    html, _, _ = marked_html(
        "Intro.\n\nThe cat sat on the mat.\n\nEnd.",
        "Intro.\n\nQuarterly revenue rose sharply.\n\nEnd.",
    )
    assert words_compared == []
    assert '<ins class="word-change">Quarterly</ins>' in html
    assert '<del class="word-change">cat</del>' in html


def test_a_big_chinese_page_matches_words_within_a_budget(words_compared):
    from checks.content import marked

    before = [_chinese(1_900, seed) for seed in range(200)]
    after = [_lightly_edited(line) for line in before]
    html, changed, _ = marked_html("\n\n".join(before), "\n\n".join(after))
    assert changed == 200
    assert 0 < sum(words_compared) <= marked.WORD_MARKING_BUDGET
    assert len(words_compared) < 200


def test_a_change_in_a_nested_list_item_is_anchored_on_that_item():
    before = "Intro.\n\n- Outer one\n  - Inner a\n  - Inner b\n- Outer two\n\nEnd."
    html, _, _ = marked_html(before, before.replace("Inner a", "Inner a changed"))
    numbered, count = number_changes(html)
    assert count == 1
    assert "<li>Outer one\n" in numbered
    assert '<li id="change-1">Inner a <ins class="word-change">changed</ins>' in (
        numbered
    )
