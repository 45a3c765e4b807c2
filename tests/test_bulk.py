"""checks.bulk.insert_rows: the rows a check writes per batch, without the ORM's
UNNEST arrays, stored exactly as bulk_create() would store them."""

from __future__ import annotations

import uuid

import pytest

from checks.bulk import insert_rows
from checks.content import pack_snapshot
from checks.models import Check, PageResult, PageState, Snapshot
from monitors.models import Monitor

pytestmark = pytest.mark.django_db


@pytest.fixture
def check(team) -> Check:
    monitor = Monitor.objects.create(team=team, name="Bulk", schedule_cron="0 * * * *")
    return Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)


def page(check: Check, n: int, **fields) -> PageResult:
    values = {
        "check_run": check,
        "target_id": uuid.UUID(int=1),
        "url": f"https://shop.example/{n}",
        "status": PageResult.Status.NEW,
        "current_scrape_id": uuid.UUID(int=1000 + n),
        "status_code": 200,
        "metadata": {"title": f"Page {n}", "creditsUsed": 1},
    }
    return PageResult(**values | fields)


def test_inserted_page_results_read_back_as_bulk_create_stores_them(check):
    mine = page(check, 1, diff={"text": "--- previous\n"}, diff_html="<table>")
    theirs = page(check, 2, diff={"text": "--- previous\n"}, diff_html="<table>")

    insert_rows([mine])
    PageResult.objects.bulk_create([theirs])

    ours, reference = (PageResult.objects.get(pk=p.pk) for p in (mine, theirs))
    for field in PageResult._meta.concrete_fields:
        if field.name in ("id", "url", "current_scrape_id", "metadata", "created_at"):
            continue
        assert getattr(ours, field.attname) == getattr(reference, field.attname)
    assert ours.metadata == {"title": "Page 1", "creditsUsed": 1}
    assert ours.created_at is not None  # auto_now_add, as bulk_create sets it


def test_a_missing_diff_is_sql_null_not_json_null(check):
    result = page(check, 1)

    insert_rows([result])

    assert PageResult.objects.filter(pk=result.pk, diff__isnull=True).exists()
    assert PageResult.objects.filter(pk=result.pk, judgment__isnull=True).exists()


def test_many_rows_without_returning_go_in_one_pipelined_call(
    check, django_assert_num_queries
):
    pages = [page(check, n) for n in range(150)]  # 150 x 16 parameters

    with django_assert_num_queries(1):
        insert_rows(pages)

    assert PageResult.objects.filter(check_run=check).count() == 150


def test_a_conflicting_row_is_updated_and_its_id_returned(check):
    digest, data, size, fmt = pack_snapshot("Plans: $19")
    existing = Snapshot.objects.create(
        content_hash=digest, data=data, size=size, format=fmt
    )
    other = pack_snapshot("Plans: $24")

    ids = Snapshot.store_many([(digest, data, size, fmt), other])

    assert ids[digest] == existing.pk
    assert Snapshot.objects.get(pk=ids[other[0]]).source == "Plans: $24"
    assert Snapshot.objects.count() == 2


def test_a_baseline_upsert_moves_the_existing_row_instead_of_adding_one(check):
    first = Snapshot.store("Plans: $19")
    second = Snapshot.store("Plans: $24")

    def state(snapshot: Snapshot) -> PageState:
        url = "https://shop.example/plans"
        return PageState(
            monitor=check.monitor,
            target_id=uuid.UUID(int=1),
            url=url,
            url_hash=PageState.hash_url(url),
            snapshot=snapshot,
            metadata={"title": "Plans"},
        )

    PageState.upsert([state(first)])
    PageState.upsert([state(second)])

    stored = PageState.objects.get(monitor=check.monitor)
    assert stored.snapshot_id == second.pk
    assert stored.metadata == {"title": "Plans"}


def test_nothing_to_insert_sends_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert insert_rows([]) == []
