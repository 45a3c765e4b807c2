"""The drain: a finished check's deliveries claimed and sent by one task, side
by side, each outcome recorded as it ends; two drains at once never send a row
twice (PostgreSQL)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from checks import shared_clock
from checks.models import Delivery, DeliveryAttempt
from checks.notify import channels, drain, messages, outbox, own, sweep
from checks.notify.tasks import drain_task
from monitors.models import Channel, MonitorChannel
from tests.notifying import make_monitor, webhook_config
from tests.test_worker_integration import HangingReceiver

pytest_plugins = ["tests.notifying"]


def _webhook_channels(team, receiver, count: int, prefix: str = "Hook") -> list:
    for n in range(count):
        receiver.site.handle(f"/hook/{n}", lambda request: (200, {}, b"ok"))
    return [
        Channel.objects.create(
            team=team,
            name=f"{prefix} {n}",
            kind="webhook",
            settings={"url": receiver.site.url(f"/hook/{n}")},
            events=list(Channel.DEFAULT_EVENTS),
        )
        for n in range(count)
    ]


@pytest.fixture
def broker(monkeypatch) -> list[tuple[str, list[Any]]]:
    """Task messages as the outbox sends them: (task name, args)."""
    sent: list[tuple[str, list[Any]]] = []

    def send_task(name: str, args: list[Any], **options: Any) -> None:
        sent.append((name, args))

    monkeypatch.setattr(outbox, "current_app", SimpleNamespace(send_task=send_task))
    return sent


def test_a_finished_checks_deliveries_go_out_as_one_task_that_sends_them_all(
    team, receiver, scenario, broker
):
    completed = webhook_config(receiver.url, events=["monitor.check.completed"])
    monitor = make_monitor(team, webhook=completed)
    for channel in _webhook_channels(team, receiver, 5):
        MonitorChannel.objects.create(monitor=monitor, channel=channel)

    check = scenario.run(monitor, [("https://e.com/pricing", "changed")])

    rows = Delivery.objects.filter(check_run=check)
    assert rows.count() == 6  # the monitor's own webhook and five channels
    assert broker == [(outbox.DRAIN_TASK, [sorted(rows.values_list("pk", flat=True))])]
    assert drain_task(*broker[0][1]) == 6
    assert set(rows.values_list("status", flat=True)) == {"delivered"}
    assert set(rows.values_list("attempts", flat=True)) == {1}
    assert DeliveryAttempt.objects.filter(delivery__check_run=check).count() == 6
    paths = sorted(r.path for r in receiver.site.requests if r.path.startswith("/hook"))
    assert paths == ["/hook", *(f"/hook/{n}" for n in range(5))]
    check.refresh_from_db()
    assert check.notification_status["webhook"]["delivered"] is True


def test_a_drain_run_twice_sends_nothing_the_second_time(team, receiver, broker):
    made = [
        channels.create(channel, None, None, messages.test(channel.name))
        for channel in _webhook_channels(team, receiver, 3)
    ]
    ids = [row.pk for row in made]

    assert len(drain.drain(ids)) == 3
    assert drain.drain(ids) == []
    assert len(receiver.site.requests) == 3


def test_a_hanging_receiver_does_not_hold_back_the_others_recorded_outcomes(
    team, receiver, monkeypatch
):
    hanging = HangingReceiver()
    stuck = Channel.objects.create(
        team=team, name="Stuck", kind="webhook", settings={"url": hanging.url}
    )
    fast = _webhook_channels(team, receiver, 3, "Fast")
    rows = [
        channels.create(channel, None, None, messages.test(channel.name))
        for channel in [stuck, *fast]
    ]
    stuck_row, fast_ids = rows[0], {row.pk for row in rows[1:]}
    recorded: list[int] = []
    seen_while_hanging: list[set[int]] = []
    record_many = drain.record_many

    def watch(ended, started_at):
        record_many(ended, started_at)
        recorded.extend(delivery.pk for delivery, _, _ in ended)
        if fast_ids <= set(recorded) and stuck_row.pk not in recorded:
            seen_while_hanging.append(
                set(
                    Delivery.objects.filter(status="delivered").values_list(
                        "pk", flat=True
                    )
                )
            )
            hanging.close()  # only now does the stuck receiver give up

    monkeypatch.setattr(drain, "record_many", watch)
    try:
        drain.drain([row.pk for row in rows])
    finally:
        hanging.close()

    # The three answered rows were in the database while the fourth still hung.
    assert seen_while_hanging == [fast_ids]
    assert recorded[-1] == stuck_row.pk
    stuck_row.refresh_from_db()
    assert stuck_row.status == "pending" and stuck_row.attempts == 1
    assert stuck_row.last_error


def test_a_failed_attempt_is_retried_by_the_databases_clock_not_the_machines(
    team, receiver, monkeypatch
):
    """The sweeper finds retries due by the database's clock (shared_clock),
    but a failed attempt's retry time was set by this machine's: an hour
    behind, every retry was due an hour early, at once."""
    monkeypatch.setattr(shared_clock, "_offset", timedelta(hours=1))
    receiver.site.handle("/down", lambda request: (500, {}, b"down"))
    channel = Channel.objects.create(
        team=team,
        name="Down",
        kind="webhook",
        settings={"url": receiver.site.url("/down")},
    )
    row = channels.create(channel, None, None, messages.test(channel.name))
    before = shared_clock.now()

    drain.drain([row.pk])

    row.refresh_from_db()
    assert row.status == "pending" and row.attempts == 1
    assert before <= row.updated_at <= shared_clock.now()
    assert row.next_attempt_at - row.updated_at >= drain.RETRY_DELAYS[0]
    assert not Delivery.objects.due(shared_clock.now()).filter(pk=row.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_two_drains_at_once_never_send_a_row_twice(team, receiver):
    if connection.vendor != "postgresql":
        pytest.skip("row locks with SKIP LOCKED need PostgreSQL")
    hooks = _webhook_channels(team, receiver, 4)
    ids = [
        channels.create(hooks[n % 4], None, None, messages.test(f"Test {n}")).pk
        for n in range(40)
    ]
    start = threading.Barrier(2)
    sent: list[list[Delivery]] = [[], []]

    def run(slot: int) -> None:
        try:
            start.wait()
            sent[slot] = drain.drain(ids)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(row.pk for rows in sent for row in rows) == sorted(ids)
    by_id = Counter(r.header("webhook-id") for r in receiver.site.requests)
    assert len(by_id) == 40 and set(by_id.values()) == {1}
    assert DeliveryAttempt.objects.filter(delivery_id__in=ids).count() == 40
    assert set(
        Delivery.objects.filter(pk__in=ids).values_list("status", flat=True)
    ) == {"delivered"}


def test_a_database_drop_while_recording_leaves_the_claim_to_expire_in_one_line(
    team, receiver, queued, monkeypatch, caplog
):
    rows = [
        channels.create(channel, None, None, messages.test(channel.name))
        for channel in _webhook_channels(team, receiver, 3)
    ]
    ids = [row.pk for row in rows]

    def database_gone(ended, started_at):
        raise OperationalError("server closed the connection unexpectedly")

    with monkeypatch.context() as patched:
        patched.setattr(drain, "record_many", database_gone)
        assert len(drain.drain(ids)) == 3

    # A routine reconnect: one plain line for the operator, no traceback.
    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.name == drain.__name__
    assert line.exc_info is None
    assert "lost its database connection" in line.getMessage()
    rows = Delivery.objects.filter(pk__in=ids)
    assert set(rows.values_list("status", flat=True)) == {"sending"}
    assert not DeliveryAttempt.objects.filter(delivery__in=ids).exists()

    # Once the claim's lease is past the sweeper queues them again, and they
    # are delivered (at least once: the receivers saw the first send too).
    rows.update(claimed_at=timezone.now() - drain.CLAIM_LEASE - timedelta(seconds=1))
    assert sweep.sweep() == 3
    assert queued.run() == 3
    assert set(rows.values_list("status", flat=True)) == {"delivered"}
    hooks = Counter(r.path for r in receiver.site.requests)
    assert hooks == {f"/hook/{n}": 2 for n in range(3)}


def test_a_database_drop_at_the_claim_logs_one_line_and_the_rows_go_later(
    team, receiver, queued, monkeypatch, caplog
):
    rows = [
        channels.create(channel, None, None, messages.test(channel.name))
        for channel in _webhook_channels(team, receiver, 3)
    ]
    ids = [row.pk for row in rows]

    def database_gone(delivery_ids, now):
        raise OperationalError("server closed the connection unexpectedly")

    with monkeypatch.context() as patched:
        patched.setattr(drain, "claim", database_gone)
        assert drain.drain(ids) == []

    # A routine reconnect: one plain line for the operator, no traceback.
    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.name == drain.__name__
    assert line.exc_info is None
    assert "lost its database connection" in line.getMessage()
    rows = Delivery.objects.filter(pk__in=ids)
    assert set(rows.values_list("status", flat=True)) == {"pending"}
    assert not receiver.site.requests

    # Once their message counts as lost the sweeper queues them again, and
    # each is delivered once.
    rows.update(queued_at=timezone.now() - outbox.REQUEUE_AFTER - timedelta(seconds=1))
    assert sweep.sweep() == 3
    assert queued.run() == 3
    assert set(rows.values_list("status", flat=True)) == {"delivered"}
    hooks = Counter(r.path for r in receiver.site.requests)
    assert hooks == {f"/hook/{n}": 1 for n in range(3)}


def test_a_database_drop_while_preparing_logs_one_line_and_the_rows_go_later(
    team, receiver, queued, monkeypatch, caplog
):
    rows = [
        channels.create(channel, None, None, messages.test(channel.name))
        for channel in _webhook_channels(team, receiver, 3)
    ]
    ids = [row.pk for row in rows]

    def database_gone(channel, monitor):
        raise OperationalError("server closed the connection unexpectedly")

    with monkeypatch.context() as patched:
        patched.setattr(own, "refresh", database_gone)
        assert len(drain.drain(ids)) == 3

    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.name == drain.__name__
    assert line.exc_info is None
    assert "lost its database connection" in line.getMessage()
    # Nothing was sent nor recorded as an attempt that failed: the rows keep
    # the drain's claim until its lease is past.
    rows = Delivery.objects.filter(pk__in=ids)
    assert set(rows.values_list("status", flat=True)) == {"sending"}
    assert not DeliveryAttempt.objects.filter(delivery__in=ids).exists()
    assert not receiver.site.requests

    rows.update(claimed_at=timezone.now() - drain.CLAIM_LEASE - timedelta(seconds=1))
    assert sweep.sweep() == 3
    assert queued.run() == 3
    assert set(rows.values_list("status", flat=True)) == {"delivered"}
    hooks = Counter(r.path for r in receiver.site.requests)
    assert hooks == {f"/hook/{n}": 1 for n in range(3)}
