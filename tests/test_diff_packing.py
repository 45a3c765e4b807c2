"""A changed page's diff is stored packed against the two snapshots it
compares, and reads back as it was given."""

from __future__ import annotations

import json
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from checks.content import diff_ast, packed_against
from checks.models import PageResult, Snapshot
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
        stored_diff={"text": text, "json": diff_ast(text)}, packed_diff=None
    )
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


def test_a_diff_whose_snapshot_was_deleted_reads_as_none_not_garbage(team, site):
    url = site.html("/x", "X", prose(1, 5))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/x", "X", prose(2, 5))
    page = page_of(run_check(monitor), url)
    Snapshot.objects.filter(pk=page.previous_snapshot_id).delete()

    assert PageResult.objects.get(pk=page.pk).diff is None


def test_the_feed_reads_the_snapshots_of_its_packed_diffs_in_one_query(team, site):
    from monitors import history

    urls = [site.html(f"/f{i}", "F", prose(i, 10)) for i in range(4)]
    monitor = make_monitor(team, urls)
    run_check(monitor)
    for i in range(4):
        site.html(f"/f{i}", "F", prose(i + 20, 10))
    run_check(monitor)

    with CaptureQueriesContext(connection) as queries:
        changes = history.atom_changes(team)
        texts = [page.diff["text"] for page in changes if page.status == "changed"]

    assert len(texts) == 4 and all(text.startswith("--- previous") for text in texts)
    snapshot_reads = [q for q in queries if "checks_snapshot" in q["sql"]]
    assert len(snapshot_reads) == 1
