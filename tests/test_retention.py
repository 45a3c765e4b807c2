"""checks.retention: old checks go, baselines stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checks import retention
from checks.models import (
    AIUse,
    Check,
    Delivery,
    DeliveryAttempt,
    PageResult,
    PageState,
    Snapshot,
)
from checks.retention import purge_expired
from monitors.models import Channel, Monitor, Team

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=3)


def make_monitor(team: Team, retention_days: int = 30) -> Monitor:
    return Monitor.objects.create(
        team=team,
        name="Pricing",
        schedule_cron="0 * * * *",
        retention_days=retention_days,
    )


def make_check(
    monitor: Monitor, age: timedelta, *, status: str = Check.Status.COMPLETED
) -> Check:
    check = Check.objects.create(monitor=monitor, trigger="manual", status=status)
    Check.objects.filter(pk=check.pk).update(created_at=NOW - age)
    return check


def snapshot(text: str) -> Snapshot:
    stored = Snapshot.store(text)
    Snapshot.objects.filter(pk=stored.pk).update(created_at=LONG_AGO)
    return stored


def page(
    check: Check, *, previous: Snapshot | None, current: Snapshot | None
) -> PageResult:
    return PageResult.objects.create(
        check_run=check,
        target_id="00000000-0000-0000-0000-000000000001",
        url="https://example.com/",
        status=PageResult.Status.CHANGED,
        previous_snapshot=previous,
        current_snapshot=current,
    )


def baseline(monitor: Monitor, stored: Snapshot) -> PageState:
    return PageState.objects.create(
        monitor=monitor,
        target_id="00000000-0000-0000-0000-000000000001",
        url="https://example.com/",
        url_hash=PageState.hash_url("https://example.com/"),
        snapshot=stored,
        normalized_hash="x",
    )


def test_checks_older_than_the_retention_are_deleted_with_their_pages(team):
    monitor = make_monitor(team, retention_days=7)
    old = make_check(monitor, timedelta(days=8))
    page(old, previous=None, current=None)
    recent = make_check(monitor, timedelta(days=6))

    purged = purge_expired(NOW)

    assert purged.checks == 1
    assert list(Check.objects.all()) == [recent]
    assert not PageResult.objects.exists()


def test_each_monitor_keeps_its_own_retention(team):
    short, long = make_monitor(team, retention_days=1), make_monitor(team, 90)
    make_check(short, timedelta(days=2))
    kept = make_check(long, timedelta(days=2))
    purge_expired(NOW)
    assert list(Check.objects.all()) == [kept]


def test_checks_in_flight_are_never_purged(team):
    monitor = make_monitor(team, retention_days=1)
    running = make_check(monitor, timedelta(days=5), status=Check.Status.RUNNING)
    purge_expired(NOW)
    assert list(Check.objects.all()) == [running]


def test_a_baseline_snapshot_survives_its_checks(team):
    monitor = make_monitor(team, retention_days=1)
    old_content, current_content = snapshot("v1"), snapshot("v2")
    check = make_check(monitor, timedelta(days=2))
    page(check, previous=old_content, current=current_content)
    baseline(monitor, current_content)

    purged = purge_expired(NOW)

    assert purged.snapshots == 1
    assert list(Snapshot.objects.all()) == [current_content]
    assert PageState.objects.get().snapshot == current_content


def test_snapshots_of_remaining_page_results_are_kept(team):
    monitor = make_monitor(team, retention_days=30)
    previous, current = snapshot("v1"), snapshot("v2")
    page(make_check(monitor, timedelta(days=1)), previous=previous, current=current)

    assert purge_expired(NOW).snapshots == 0
    assert Snapshot.objects.count() == 2


def test_a_fresh_orphan_snapshot_is_left_for_a_check_still_writing(team):
    just_stored = Snapshot.store("being written")
    Snapshot.objects.filter(pk=just_stored.pk).update(
        created_at=NOW - timedelta(minutes=5)
    )
    assert purge_expired(NOW).snapshots == 0
    assert Snapshot.objects.filter(pk=just_stored.pk).exists()


def test_removed_pages_keep_their_last_content(team):
    monitor = make_monitor(team, retention_days=1)
    last_good = snapshot("last good")
    state = baseline(monitor, last_good)
    PageState.objects.filter(pk=state.pk).update(presence=PageState.Presence.REMOVED)
    page(make_check(monitor, timedelta(days=2)), previous=last_good, current=None)

    purge_expired(NOW)

    assert Snapshot.objects.filter(pk=last_good.pk).exists()


def test_sign_ins_past_their_age_are_forgotten_and_live_ones_kept(
    client, django_user_model
):
    client.force_login(django_user_model.objects.create_user("olive"))
    live = Session.objects.get()
    Session.objects.create(
        session_key="x" * 32,
        session_data="",
        expire_date=timezone.now() - timedelta(seconds=1),
    )

    purge_expired(timezone.now())

    assert list(Session.objects.all()) == [live]


def deleted_monitor(team: Team, *, deleted_ago: timedelta) -> Monitor:
    monitor = make_monitor(team, retention_days=7)
    monitor.soft_delete(NOW - deleted_ago)
    return monitor


def test_a_monitor_deleted_for_its_retention_goes_with_its_baselines(team):
    """The dashboard and the API only mark a monitor deleted; without this its
    baselines stayed for ever, out of `manage.py storage`'s sight."""
    monitor = deleted_monitor(team, deleted_ago=timedelta(days=8))
    last_content = snapshot("last content")
    baseline(monitor, last_content)
    check = make_check(monitor, timedelta(days=9))
    page(check, previous=None, current=last_content)
    alive = make_monitor(team, retention_days=7)
    kept = baseline(alive, snapshot("alive"))

    purged = purge_expired(NOW)

    assert purged.monitors == 1
    assert list(Monitor.objects.all()) == [alive]
    assert list(PageState.objects.all()) == [kept]
    assert list(Snapshot.objects.all()) == [kept.snapshot]
    assert not Check.objects.exists()


def test_a_monitor_deleted_more_recently_than_its_retention_keeps_its_history(team):
    monitor = deleted_monitor(team, deleted_ago=timedelta(days=6))
    state = baseline(monitor, snapshot("last content"))
    check = make_check(monitor, timedelta(days=6))

    assert purge_expired(NOW).monitors == 0
    assert list(Monitor.objects.all()) == [monitor]
    assert list(PageState.objects.all()) == [state]
    assert list(Check.objects.all()) == [check]


def test_a_deleted_monitor_with_a_check_in_flight_is_left_for_the_stale_sweep(team):
    monitor = deleted_monitor(team, deleted_ago=timedelta(days=30))
    make_check(monitor, timedelta(days=30), status=Check.Status.RUNNING)

    assert purge_expired(NOW).monitors == 0
    assert Monitor.objects.filter(pk=monitor.pk).exists()


def message(channel: Channel, age: timedelta, **fields) -> Delivery:
    fields.setdefault("status", Delivery.Status.DELIVERED)
    sent = Delivery.objects.create(
        kind="apprise", channel=channel, event="channel.digest", body="{}", **fields
    )
    DeliveryAttempt.objects.create(
        delivery=sent, number=1, started_at=NOW, success=True
    )
    Delivery.objects.filter(pk=sent.pk).update(created_at=NOW - age)
    return sent


def test_messages_of_no_check_are_kept_as_long_as_the_teams_activity_log(team):
    """Digests, test messages and consent e-mails belong to no check, so they
    stayed for ever while a check's messages went with it."""
    Team.objects.filter(pk=team.pk).update(activity_retention_days=30)
    channel = Channel.objects.create(
        team=team, name="Ops", kind="apprise", settings={"url": "json://x"}
    )
    monitor = make_monitor(team)
    old_digest = message(channel, timedelta(days=31))
    old_test = message(channel, timedelta(days=40), monitor=monitor)
    recent = message(channel, timedelta(days=29))
    still_trying = message(
        channel, timedelta(days=31), status=Delivery.Status.PENDING, monitor=monitor
    )

    purged = purge_expired(NOW)

    assert purged.deliveries == 2
    assert set(Delivery.objects.all()) == {recent, still_trying}
    assert not DeliveryAttempt.objects.filter(
        delivery__in=[old_digest.pk, old_test.pk]
    ).exists()


def test_ai_use_is_kept_for_this_month_and_the_twelve_before(team):
    """The team's AI use was never deleted: a row per check and kind of call,
    for ever."""
    monitor = make_monitor(team)

    def use(at: datetime) -> AIUse:
        return AIUse.objects.create(
            team=team, monitor=monitor, kind="judgment", requests=1, created_at=at
        )

    use(datetime(2025, 4, 10, tzinfo=UTC))
    use(datetime(2025, 5, 31, 23, 59, tzinfo=UTC))
    kept = use(datetime(2025, 6, 1, tzinfo=UTC))  # June a year ago: 13 months
    recent = use(NOW)

    purged = purge_expired(NOW)

    assert purged.ai_use == 2
    assert set(AIUse.objects.all()) == {kept, recent}


def crawl_check(monitor: Monitor, age: timedelta, pages: int) -> Check:
    check = make_check(monitor, age)
    PageResult.objects.bulk_create(
        PageResult(
            check_run=check,
            target_id="00000000-0000-0000-0000-000000000001",
            url=f"https://example.com/{n}",
            status=PageResult.Status.SAME,
        )
        for n in range(pages)
    )
    return check


def pages_deleted_per_transaction(queries) -> list[int]:
    """How many page results each transaction (a savepoint in a test) of a
    purge deleted, from the DELETE statements' parameters."""
    counts: list[int] = []
    for query in queries:
        sql = query["sql"]
        if sql.startswith("SAVEPOINT"):
            counts.append(0)
        elif sql.startswith('DELETE FROM "checks_pageresult"') and counts:
            counts[-1] += sql.count(",") + 1
    return [count for count in counts if count]


def test_an_old_crawls_pages_go_a_batch_a_transaction_not_all_at_once(
    team, monkeypatch
):
    """A crawl's check holds thousands of pages: deleting a batch of such
    checks in one transaction held its locks for minutes."""
    monkeypatch.setattr(retention, "BATCH_SIZE", 4)
    monitor = make_monitor(team, retention_days=7)
    old = [crawl_check(monitor, timedelta(days=9), pages=10) for _ in range(2)]
    recent = crawl_check(monitor, timedelta(days=1), pages=3)

    with CaptureQueriesContext(connection) as queries:
        purged = purge_expired(NOW)

    assert purged.checks == 2
    assert not Check.objects.filter(pk__in=[c.pk for c in old]).exists()
    assert set(PageResult.objects.values_list("check_run", flat=True)) == {recent.pk}
    per_transaction = pages_deleted_per_transaction(queries.captured_queries)
    assert sum(per_transaction) == 20
    assert max(per_transaction) <= 4


def test_a_run_stops_after_its_batches_and_the_next_one_goes_on(team, monkeypatch):
    monkeypatch.setattr(retention, "BATCH_SIZE", 4)
    monkeypatch.setattr(retention, "MAX_BATCHES_PER_RUN", 2)
    monitor = make_monitor(team, retention_days=7)
    old = crawl_check(monitor, timedelta(days=9), pages=10)

    assert purge_expired(NOW).checks == 0
    assert PageResult.objects.filter(check_run=old).count() == 2
    assert purge_expired(NOW).checks == 1
    assert not Check.objects.exists() and not PageResult.objects.exists()


def test_a_deleted_crawl_monitors_history_goes_a_batch_a_transaction(team, monkeypatch):
    monkeypatch.setattr(retention, "BATCH_SIZE", 4)
    monitor = deleted_monitor(team, deleted_ago=timedelta(days=8))
    crawl_check(monitor, timedelta(days=9), pages=10)
    crawl_check(monitor, timedelta(days=8), pages=10)

    with CaptureQueriesContext(connection) as queries:
        purged = purge_expired(NOW)

    assert purged.monitors == 1
    assert not Monitor.objects.exists() and not PageResult.objects.exists()
    per_transaction = pages_deleted_per_transaction(queries.captured_queries)
    assert sum(per_transaction) == 20
    assert max(per_transaction) <= 4
