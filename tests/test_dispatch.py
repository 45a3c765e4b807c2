"""checks.dispatch: due monitors become exactly one check per slot."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections

from checks import dispatch, notify, runner
from checks.dispatch import (
    RunRefused,
    dispatch_due_monitors,
    queue_manual_check,
    spread,
)
from checks.models import Check
from monitors.models import Monitor, Target, Team

pytestmark = pytest.mark.django_db

SLOT = datetime(2026, 5, 6, 12, 0, tzinfo=UTC)
# Past any monitor's spread delay (at most 30 s).
AFTER_SPREAD = SLOT + timedelta(seconds=31)


def make_monitor(team: Team, *, cron: str = "*/30 * * * *", **fields) -> Monitor:
    fields.setdefault("next_run_at", SLOT)
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron=cron, **fields
    )
    Target.objects.create(
        monitor=monitor,
        type="scrape",
        urls=["https://example.com/a", "https://example.com/b"],
    )
    return monitor


@pytest.fixture
def monitor(team) -> Monitor:
    return make_monitor(team)


def test_due_monitor_gets_one_queued_check_for_its_slot(
    monitor, django_capture_on_commit_callbacks, monkeypatch
):
    sent: list[uuid.UUID] = []
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: sent.append(check_id))

    assert dispatch_due_monitors(AFTER_SPREAD) == 1

    check = Check.objects.get()
    assert check.status == Check.Status.QUEUED
    assert check.trigger == Check.Trigger.SCHEDULED
    assert check.scheduled_for == SLOT
    assert check.estimated_credits == 2
    assert check.summary["totalPages"] == 0
    monitor.refresh_from_db()
    assert monitor.next_run_at == SLOT + timedelta(minutes=30)
    assert monitor.current_check_id == check.pk
    assert sent == [check.pk]


def test_the_task_is_enqueued_only_after_commit(
    monitor, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        dispatch_due_monitors(AFTER_SPREAD)
    assert len(callbacks) == 1


def test_dispatching_twice_for_the_same_now_never_doubles_a_slot(monitor):
    assert dispatch_due_monitors(AFTER_SPREAD) == 1
    assert dispatch_due_monitors(AFTER_SPREAD) == 0
    assert Check.objects.count() == 1


def test_a_monitor_waits_out_its_spread_delay(monitor):
    delay = spread(monitor.pk, timedelta(minutes=30))

    assert dispatch_due_monitors(SLOT + delay - timedelta(milliseconds=1)) == 0
    assert dispatch_due_monitors(SLOT + delay) == 1
    assert Check.objects.get().scheduled_for == SLOT  # the slot, not the delay


def test_spread_is_deterministic_and_bounded():
    for _ in range(200):
        monitor_id = uuid.uuid4()
        for interval in (timedelta(minutes=5), timedelta(seconds=20), timedelta(0)):
            delay = spread(monitor_id, interval)
            assert delay == spread(monitor_id, interval)
            assert timedelta(0) <= delay <= min(interval / 2, timedelta(seconds=30))
    delays = {spread(uuid.uuid4(), timedelta(hours=1)) for _ in range(50)}
    assert len(delays) > 40  # really spread out


def test_overlap_gives_a_finished_skipped_overlap_check(monitor, monkeypatch):
    finished: list[Check] = []
    monkeypatch.setattr(notify, "on_check_finished", finished.append)
    running = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.RUNNING
    )
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=running.pk)

    assert dispatch_due_monitors(AFTER_SPREAD) == 1

    skipped = Check.objects.get(trigger=Check.Trigger.SCHEDULED)
    assert skipped.status == Check.Status.SKIPPED_OVERLAP
    assert skipped.error == "Previous monitor check is still running."
    assert skipped.scheduled_for == SLOT
    assert skipped.finished_at == AFTER_SPREAD and skipped.actual_credits == 0
    assert finished == [skipped]
    monitor.refresh_from_db()
    assert monitor.current_check_id == running.pk
    assert monitor.last_run_at == AFTER_SPREAD
    assert monitor.next_run_at == SLOT + timedelta(minutes=30)


def test_missed_slots_are_not_replayed(monitor):
    hours_later = SLOT + timedelta(hours=3, minutes=1)
    assert dispatch_due_monitors(hours_later) == 1
    monitor.refresh_from_db()
    assert monitor.next_run_at == SLOT + timedelta(hours=3, minutes=30)
    assert dispatch_due_monitors(hours_later) == 0


def test_paused_deleted_and_future_monitors_are_not_dispatched(team):
    make_monitor(team, status=Monitor.Status.PAUSED)
    make_monitor(team, deleted_at=SLOT)
    make_monitor(team, next_run_at=SLOT + timedelta(minutes=30))
    make_monitor(team, next_run_at=None)
    assert dispatch_due_monitors(AFTER_SPREAD) == 0
    assert not Check.objects.exists()


def test_an_existing_check_for_the_slot_is_respected(monitor):
    Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=SLOT,
        status=Check.Status.COMPLETED,
    )

    assert dispatch_due_monitors(AFTER_SPREAD) == 0

    assert Check.objects.count() == 1
    monitor.refresh_from_db()
    assert monitor.next_run_at == SLOT + timedelta(minutes=30)  # not stuck


def test_many_due_monitors_are_dispatched_in_batches(team, monkeypatch):
    monkeypatch.setattr(dispatch, "BATCH_SIZE", 7)
    for _ in range(30):
        make_monitor(team)
    assert dispatch_due_monitors(AFTER_SPREAD) == 30
    assert Check.objects.filter(status=Check.Status.QUEUED).count() == 30


def test_a_tick_is_capped(team, monkeypatch):
    monkeypatch.setattr(dispatch, "BATCH_SIZE", 5)
    monkeypatch.setattr(dispatch, "MAX_PER_TICK", 10)
    for _ in range(12):
        make_monitor(team)
    assert dispatch_due_monitors(AFTER_SPREAD) == 10
    assert dispatch_due_monitors(AFTER_SPREAD) == 2


def test_after_a_lost_worker_is_swept_the_next_slot_runs(monitor):
    dispatch_due_monitors(AFTER_SPREAD)
    lost = Check.objects.get()
    runner.claim(lost, AFTER_SPREAD)
    later = AFTER_SPREAD + runner.stale_running_after() + timedelta(seconds=1)

    assert runner.fail_stale_checks(later) == 1

    monitor.refresh_from_db()
    assert monitor.current_check_id is None
    next_slot = monitor.next_run_at
    dispatch_due_monitors(max(later, next_slot + timedelta(seconds=31)))
    fresh = Check.objects.exclude(pk=lost.pk).get(scheduled_for=next_slot)
    assert fresh.status == Check.Status.QUEUED


# --- two dispatchers at once, for real (PostgreSQL row locks) -----------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_dispatchers_never_double_a_slot(team, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises every writer anyway")
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)  # no broker
    monitors = [make_monitor(team) for _ in range(40)]
    barrier = threading.Barrier(6)
    counts: list[int] = []
    errors: list[BaseException] = []

    def dispatcher() -> None:
        try:
            barrier.wait()
            counts.append(dispatch_due_monitors(AFTER_SPREAD))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=dispatcher) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert sum(counts) == len(monitors)
    for monitor in monitors:
        assert Check.objects.filter(monitor=monitor).count() == 1
        monitor.refresh_from_db()
        check = Check.objects.get(monitor=monitor)
        assert monitor.current_check_id == check.pk


# --- manual runs ----------------------------------------------------------------


def test_manual_run_queues_a_check(monitor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        check = queue_manual_check(monitor)
    assert check.trigger == Check.Trigger.MANUAL
    assert check.status == Check.Status.QUEUED
    assert check.scheduled_for is None
    assert Monitor.objects.get(pk=monitor.pk).current_check_id == check.pk
    assert len(callbacks) == 1


def test_manual_run_of_a_paused_monitor_is_refused(team):
    paused = make_monitor(team, status=Monitor.Status.PAUSED, next_run_at=None)
    with pytest.raises(RunRefused) as refused:
        queue_manual_check(paused)
    assert (
        refused.value.message == "Monitor is paused. Resume it before running a check."
    )
    assert not Check.objects.exists()


def test_manual_run_while_a_check_is_in_flight_is_refused(monitor):
    first = queue_manual_check(monitor)
    with pytest.raises(RunRefused) as refused:
        queue_manual_check(monitor)
    assert refused.value.message == "Monitor check is already running."
    assert refused.value.check_id == first.pk
    assert Check.objects.count() == 1


def test_a_scheduled_slot_during_a_manual_check_is_skipped(monitor):
    queue_manual_check(monitor)
    dispatch_due_monitors(AFTER_SPREAD)
    assert Check.objects.filter(status=Check.Status.SKIPPED_OVERLAP).count() == 1


def test_every_periodic_entry_expires_within_its_period():
    from config.celery import app

    schedule = app.conf.beat_schedule
    assert schedule["dispatch-due-monitors"]["schedule"] == 10.0
    for name, entry in schedule.items():
        assert 0 < entry["options"]["expires"] <= float(entry["schedule"]), name


def test_a_monitor_with_a_broken_schedule_does_not_stall_the_others(team):
    broken = make_monitor(team, cron="61 * * * *")
    fine = make_monitor(team)
    assert dispatch_due_monitors(AFTER_SPREAD) == 1
    assert Check.objects.get().monitor == fine
    assert Monitor.objects.get(pk=broken.pk).next_run_at == SLOT
