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


def race_dispatchers(count: int) -> tuple[list[int], list[BaseException]]:
    """Start `count` dispatchers at the same instant, each on its own connection;
    return how many checks each created and what any of them raised."""
    barrier = threading.Barrier(count)
    counts: list[int] = []
    errors: list[BaseException] = []

    def dispatcher() -> None:
        try:
            barrier.wait()
            counts.append(dispatch_due_monitors(AFTER_SPREAD))
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=dispatcher) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return counts, errors


def test_due_monitor_gets_one_queued_check_for_its_slot(
    monitor, django_capture_on_commit_callbacks, monkeypatch
):
    sent: list[uuid.UUID] = []
    monkeypatch.setattr(dispatch, "enqueue_many", sent.extend)

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


def test_a_tick_stops_after_its_time_budget(team, monkeypatch):
    monkeypatch.setattr(dispatch, "BATCH_SIZE", 5)
    monkeypatch.setattr(dispatch, "TICK_TIME_BUDGET", 0.0)
    for _ in range(12):
        make_monitor(team)
    assert dispatch_due_monitors(AFTER_SPREAD) == 5  # one batch, always
    assert dispatch_due_monitors(AFTER_SPREAD) == 5
    assert dispatch_due_monitors(AFTER_SPREAD) == 2


def test_a_slot_taken_meanwhile_does_not_stall_the_rest_of_its_batch(team, monkeypatch):
    monitors = [make_monitor(team) for _ in range(5)]
    taken, conflicted = monitors[1], monitors[3]
    # conflicted's slot already has its check (one_check_per_slot backstop)...
    existing = Check.objects.create(
        monitor=conflicted,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=SLOT,
        status=Check.Status.COMPLETED,
    )
    # ...and another dispatcher moves taken past its slot after it was read.
    ready_slot = dispatch._safe_ready_slot

    def read_then_taken(monitor, now):
        slot = ready_slot(monitor, now)
        if monitor.pk == taken.pk:
            Monitor.objects.filter(pk=taken.pk).update(
                next_run_at=SLOT + timedelta(minutes=30)
            )
        return slot

    monkeypatch.setattr(dispatch, "_safe_ready_slot", read_then_taken)
    sent: list[uuid.UUID] = []
    monkeypatch.setattr(dispatch, "enqueue_many", sent.extend)

    assert dispatch_due_monitors(AFTER_SPREAD) == 3

    others = [m for m in monitors if m not in (taken, conflicted)]
    queued = Check.objects.filter(status=Check.Status.QUEUED)
    assert {c.monitor_id for c in queued} == {m.pk for m in others}
    assert sorted(sent) == sorted(c.pk for c in queued)
    for monitor in others:
        monitor.refresh_from_db()
        assert monitor.next_run_at == SLOT + timedelta(minutes=30)
        assert monitor.current_check_id == queued.get(monitor=monitor).pk
    assert not Check.objects.filter(monitor=taken).exists()
    assert list(Check.objects.filter(monitor=conflicted)) == [existing]
    conflicted.refresh_from_db()
    assert conflicted.next_run_at == SLOT + timedelta(minutes=30)  # not stuck
    assert conflicted.current_check_id is None  # never pointed at a lost check
    assert conflicted.last_run_at is None
    assert dispatch_due_monitors(AFTER_SPREAD) == 0


def test_a_skipped_slot_that_conflicts_gives_back_its_claim(monitor, monkeypatch):
    finished: list[Check] = []
    monkeypatch.setattr(notify, "on_check_finished", finished.append)
    running = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.RUNNING
    )
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=running.pk)
    Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=SLOT,
        status=Check.Status.SKIPPED_OVERLAP,
    )

    assert dispatch_due_monitors(AFTER_SPREAD) == 0

    assert finished == []
    monitor.refresh_from_db()
    assert monitor.current_check_id == running.pk
    assert monitor.last_run_at is None
    assert monitor.next_run_at == SLOT + timedelta(minutes=30)


def test_a_batch_is_sent_after_commit_through_one_producer(
    team, monkeypatch, django_capture_on_commit_callbacks
):
    from config.celery import app

    published: list[tuple[list, object]] = []

    def send_task(name, args=None, producer=None, **options):
        assert name == "checks.tasks.run_check_task"
        published.append((args, producer))

    monkeypatch.setattr(app, "send_task", send_task)
    monkeypatch.setattr(dispatch, "BATCH_SIZE", 4)
    for _ in range(6):
        make_monitor(team)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert dispatch_due_monitors(AFTER_SPREAD) == 6
        assert published == []  # nothing before COMMIT
    assert len(callbacks) == 2  # one per batch

    checks = {str(pk) for pk in Check.objects.values_list("pk", flat=True)}
    assert sorted(args[0] for args, _ in published) == sorted(checks)
    batches = [p for _, p in published]
    assert all(p is not None for p in batches)
    assert batches[:4] == [batches[0]] * 4 and batches[4:] == [batches[4]] * 2


def test_a_broker_failure_is_logged_in_one_line_and_the_checks_stay_queued(
    team, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    from config.celery import app

    def send_task(name, args=None, producer=None, **options):
        raise ConnectionError("broker down")

    monkeypatch.setattr(app, "send_task", send_task)
    for _ in range(3):
        make_monitor(team)

    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch_due_monitors(AFTER_SPREAD) == 3

    assert "Could not enqueue 3 of 3 checks" in caplog.text
    assert "broker down" in caplog.text
    # An outage is not a bug: no traceback for every tick and Run now of it.
    assert all(record.exc_info is None for record in caplog.records)
    assert Check.objects.filter(status=Check.Status.QUEUED).count() == 3


def test_a_capped_tick_asks_for_one_follow_up(team, monkeypatch):
    from config.celery import app

    follow_ups: list[dict] = []

    def send_task(name, **options):
        assert name == "checks.tasks.dispatch_due_monitors_task"
        follow_ups.append(options)

    monkeypatch.setattr(app, "send_task", send_task)
    monkeypatch.setattr(dispatch, "BATCH_SIZE", 5)
    monkeypatch.setattr(dispatch, "MAX_PER_TICK", 5)
    for _ in range(7):
        make_monitor(team)

    assert dispatch.dispatch_tick(AFTER_SPREAD, may_follow_up=True) == 5
    assert follow_ups == [{"kwargs": {"follow_up": True}, "expires": 10.0}]
    # A follow-up does not follow up itself, however much is left.
    assert dispatch.dispatch_tick(AFTER_SPREAD, may_follow_up=False) == 2
    assert len(follow_ups) == 1
    # A tick that ran out of due monitors asks for nothing.
    make_monitor(team)
    assert dispatch.dispatch_tick(AFTER_SPREAD, may_follow_up=True) == 1
    assert len(follow_ups) == 1


def test_after_a_lost_worker_is_swept_the_next_slot_runs(monitor):
    dispatch_due_monitors(AFTER_SPREAD)
    lost = Check.objects.get()
    runner.claim(lost, AFTER_SPREAD)
    # Lost while planning and never taken up again since.
    silent = runner.stale_running_after() + runner.STALE_QUEUED_AFTER
    later = AFTER_SPREAD + silent + timedelta(seconds=1)

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
    monkeypatch.setattr(dispatch, "enqueue_many", lambda check_ids: None)  # no broker
    monitors = [make_monitor(team) for _ in range(40)]
    counts, errors = race_dispatchers(6)

    assert errors == []
    assert sum(counts) == len(monitors)
    for monitor in monitors:
        assert Check.objects.filter(monitor=monitor).count() == 1
        monitor.refresh_from_db()
        check = Check.objects.get(monitor=monitor)
        assert monitor.current_check_id == check.pk


@pytest.mark.django_db(transaction=True)
def test_two_dispatchers_racing_over_small_batches_never_double_a_slot(
    team, monkeypatch
):
    """Small batches, so both threads work through the same due set at once;
    with overlaps (skipped checks) and a slot that already has its check."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises every writer anyway")
    monkeypatch.setattr(dispatch, "BATCH_SIZE", 3)
    monkeypatch.setattr(notify, "on_check_finished", lambda check: None)
    sent: list[uuid.UUID] = []
    monkeypatch.setattr(dispatch, "enqueue_many", sent.extend)
    monitors = [make_monitor(team) for _ in range(60)]
    busy = monitors[::7]
    for monitor in busy:
        running = Check.objects.create(
            monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.RUNNING
        )
        Monitor.objects.filter(pk=monitor.pk).update(current_check_id=running.pk)
    conflicted = monitors[5]
    Check.objects.create(
        monitor=conflicted,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=SLOT,
        status=Check.Status.COMPLETED,
    )
    counts, errors = race_dispatchers(2)

    assert errors == []
    assert sum(counts) == len(monitors) - 1
    scheduled = Check.objects.filter(trigger=Check.Trigger.SCHEDULED)
    assert scheduled.count() == len(monitors)  # the conflicted slot's one included
    assert sorted(sent) == sorted(
        scheduled.filter(status=Check.Status.QUEUED).values_list("pk", flat=True)
    )
    for monitor in monitors:
        check = scheduled.get(monitor=monitor, scheduled_for=SLOT)
        monitor.refresh_from_db()
        assert monitor.next_run_at == SLOT + timedelta(minutes=30)
        if monitor in busy:
            assert check.status == Check.Status.SKIPPED_OVERLAP
            assert monitor.current_check_id != check.pk
        elif monitor == conflicted:
            assert monitor.current_check_id is None
        else:
            assert check.status == Check.Status.QUEUED
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
