"""A changed page's diff is stored packed against the two snapshots it
compares, and reads back as it was given."""

from __future__ import annotations

import json
import random

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from checks.content import diff_ast, packed_against
from checks.models import PageDiff, PageResult, Snapshot
from tests.test_runner import make_monitor, page_of, run_check

pytestmark = pytest.mark.django_db

_VOCABULARY = [
    "price", "plan", "team", "monthly", "seats", "storage", "support", "the",
    "and", "with", "every", "includes", "unlimited", "projects", "review",
    "export", "limits", "priority", "annual", "discount", "archive", "users",
]  # fmt: skip


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def prose(seed: int, paragraphs: int, words: int = 40) -> str:
    """Paragraphs of random words from one small vocabulary: two seeds give
    pages that share every word and hardly a line."""
    rng = random.Random(seed)
    return "".join(
        f"<p>{' '.join(rng.choice(_VOCABULARY) for _ in range(words))}.</p>"
        for _ in range(paragraphs)
    )


def api_diff_bytes(api, monitor, check) -> bytes:
    response = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}")
    assert response.status_code == 200
    (page,) = response.json()["data"]["pages"]
    return json.dumps(page["diff"]).encode()


def test_the_api_answers_the_same_diff_for_a_row_stored_before_and_after(
    api, team, site
):
    url = site.html("/pricing", "Pricing", prose(1, 20))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/pricing", "Pricing", prose(1, 20).replace("price", "cost", 3))
    check = run_check(monitor)
    page = page_of(check, url)
    assert page.stored_diff is None and packed_against(bytes(page.packed_diff))
    now = api_diff_bytes(api, monitor, check)

    # The row as it was written before diffs were packed: the whole diff as JSON.
    text = page.diff["text"]
    PageResult.objects.filter(pk=page.pk).update(
        stored_diff={"text": text, "json": diff_ast(text)}
    )
    PageDiff.objects.filter(page=page).delete()
    before = api_diff_bytes(api, monitor, check)

    assert now == before
    assert json.loads(now)["text"].startswith("--- previous\n+++ current\n@@ ")


def test_a_rewritten_page_stores_its_diff_in_a_fraction_of_its_snapshot(team, site):
    url = site.html("/news", "News", prose(1, 120))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/news", "News", prose(2, 120))

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.CHANGED
    snapshot = bytes(page.current_snapshot.data)
    assert len(bytes(page.packed_diff)) < len(snapshot) / 2
    assert len(page.diff["text"]) > 2 * len(page.current_snapshot.text)


def test_the_api_reads_a_page_of_packed_diffs_in_one_query_for_snapshots(
    api, team, site
):
    urls = [site.html(f"/p{i}", "P", prose(i, 10)) for i in range(5)]
    monitor = make_monitor(team, urls)
    run_check(monitor)
    for i in range(5):
        site.html(f"/p{i}", "P", prose(i + 10, 10))
    check = run_check(monitor)

    with CaptureQueriesContext(connection) as queries:
        response = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}")

    pages = response.json()["data"]["pages"]
    assert [p["status"] for p in pages] == ["changed"] * 5
    assert all(p["diff"]["json"]["files"] for p in pages)
    snapshot_reads = [q for q in queries if "checks_snapshot" in q["sql"]]
    assert len(snapshot_reads) == 1
    diff_reads = [q for q in queries if "checks_pagediff" in q["sql"]]
    assert len(diff_reads) == 1


def test_a_diff_whose_snapshot_was_deleted_reads_as_none_not_garbage(team, site):
    url = site.html("/x", "X", prose(1, 5))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/x", "X", prose(2, 5))
    page = page_of(run_check(monitor), url)
    Snapshot.objects.filter(pk=page.previous_snapshot_id).delete()

    assert PageResult.objects.get(pk=page.pk).diff is None


def test_only_a_changed_page_writes_a_diff_row_and_it_writes_exactly_one(team, site):
    kept = site.html("/kept", "Kept", prose(1, 5))
    edited = site.html("/edited", "Edited", prose(2, 5))
    monitor = make_monitor(team, [kept, edited])
    first = run_check(monitor)
    assert not PageDiff.objects.filter(page__check_run=first).exists()
    site.html("/edited", "Edited", prose(3, 5))

    check = run_check(monitor)

    rows = PageDiff.objects.filter(page__check_run=check)
    assert [row.page.url for row in rows] == [edited]
    assert page_of(check, kept).status == PageResult.Status.SAME
    assert PageResult.objects.get(pk=page_of(check, kept).pk).diff is None
    assert PageResult.objects.get(pk=rows.get().page_id).diff["text"]


def test_an_unchanged_page_reads_its_missing_diff_without_a_query(team, site):
    url = site.html("/same", "Same", prose(1, 5))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    page = PageResult.objects.get(pk=page_of(run_check(monitor), url).pk)

    with CaptureQueriesContext(connection) as queries:
        assert page.diff is None

    assert len(queries) == 0


BEFORE = [("checks", "0022_page_visual_change")]
AFTER = [("checks", "0023_page_diff_own_table")]


def _apps_at(targets: list[tuple[str, str]]):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_packed_diffs_to_their_own_table_and_back(team, site):
    url = site.html("/moved", "Moved", prose(1, 10))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/moved", "Moved", prose(2, 10))
    page = page_of(run_check(monitor), url)
    packed, diff = bytes(page.packed_diff), page.diff
    try:
        old = _apps_at(BEFORE)
        row = old.get_model("checks", "PageResult").objects.get(pk=page.pk)
        assert bytes(row.packed_diff) == packed

        _apps_at(AFTER)
        assert bytes(PageDiff.objects.get(page_id=page.pk).data) == packed
        assert PageResult.objects.get(pk=page.pk).diff == diff
    finally:
        _apps_at(MigrationExecutor(connection).loader.graph.leaf_nodes())
