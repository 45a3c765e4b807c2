"""A changed page's diff is stored in about the size of its compressed
snapshot: the text compressed, the parse-diff AST derived again when read, the
HTML rendered only when someone looks. To the API nothing changed: old rows
and new ones answer the same bytes."""

from __future__ import annotations

import json

import pytest

from bench.pages import markdown_document, scattered_edits
from checks.content import compare_texts, pack_snapshot, render_side_by_side
from checks.content import render as render_module
from checks.models import PageResult
from tests.test_checks_api import make_check, make_monitor, url

pytestmark = pytest.mark.django_db

PAGE_BYTES = 50_000


@pytest.fixture
def monitor(team):
    return make_monitor(team)


def rewritten_pair(size: int = PAGE_BYTES) -> tuple[str, str]:
    """Two pages of the same vocabulary sharing no line: a page rewritten."""
    return markdown_document(size, seed=7), markdown_document(size, seed=8)


def edited_pair() -> tuple[str, str]:
    before = markdown_document(PAGE_BYTES)
    return before, scattered_edits(before, 12)


def changed_page(check, diff: dict | None, **fields) -> PageResult:
    return PageResult.objects.create(
        check_run=check,
        target_id=check.monitor.targets.get().pk,
        url=fields.pop("url", "https://example.com/"),
        status=PageResult.Status.CHANGED,
        status_code=200,
        metadata={"title": "Example", "creditsUsed": 1},
        **({"diff": diff} if diff is not None else fields),
    )


def test_old_and_new_rows_answer_the_same_diff_bytes_through_the_api(api, monitor):
    _, _, diff = compare_texts(*edited_pair())
    check = make_check(monitor)
    packed = changed_page(check, diff, url="https://example.com/new")
    legacy = changed_page(check, None, url="https://example.com/old", stored_diff=diff)

    pages = api.get(url(monitor, f"/checks/{check.pk}")).json()["data"]["pages"]
    answered = {page["url"]: json.dumps(page["diff"]) for page in pages}

    assert packed.packed_diff is not None and legacy.packed_diff is None
    assert answered["https://example.com/new"] == answered["https://example.com/old"]
    assert answered["https://example.com/new"] == json.dumps(diff)


def test_a_json_mode_field_diff_round_trips_with_its_text(monitor):
    diff = {"text": "--- previous\n+++ current\n", "json": {"price": {"previous": 1}}}
    page = changed_page(make_check(monitor), diff)
    page.refresh_from_db()

    assert page.diff == diff
    assert list(page.diff) == ["text", "json"]


@pytest.mark.parametrize("pair", [rewritten_pair, edited_pair])
def test_a_changed_page_adds_at_most_twice_its_compressed_snapshot(monitor, pair):
    before, after = pair()
    _, _, diff = compare_texts(before, after)
    page = changed_page(make_check(monitor), diff)
    page.refresh_from_db()
    snapshot_bytes = len(pack_snapshot(after)[1])

    stored = len(bytes(page.packed_diff)) + len(json.dumps(page.stored_diff or ""))

    assert stored <= 2 * snapshot_bytes, (stored, snapshot_bytes)
    assert page.diff == diff


def test_a_rewritten_megabyte_renders_without_matching_unrelated_lines_word_by_word(
    monkeypatch,
):
    """Lines that share little are shown as removed and added: the word
    matcher is never asked about them, however long the page."""
    before, after = rewritten_pair(1_000_000)
    calls = []
    real = render_module.difflib.SequenceMatcher

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(render_module.difflib, "SequenceMatcher", counted)

    html = render_side_by_side(before, after)

    rows = html.count("<tr")
    assert rows > 1000 and "diff-changed" in html
    assert len(calls) <= rows // 100, (len(calls), rows)


def test_related_lines_are_still_highlighted_word_by_word():
    html = render_side_by_side("Pro costs $19 a month.\n", "Pro costs $24 a month.\n")

    assert "<del>19</del>" in html and "<ins>24</ins>" in html
