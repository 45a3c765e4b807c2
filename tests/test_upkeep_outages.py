"""The periodic upkeep (dispatch tick, heartbeats, sweepers, digests,
retention) and the operator's probes while the database or the broker is
away for a moment: one plain line per run, nothing harmful done, and the
next run after the outage does the work.

The database is taken away with Django's execute_wrapper (every query is
refused as a lost server is), the broker by making its sends fail as kombu
does once its retries are spent; tests/test_database_loss.py and
tests/test_broker_loss.py show the real processes riding out real outages."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import time, timedelta
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerOperationalError

from checks import dispatch, outages, runner
from checks.models import Check, CheckBatch, Delivery, Heartbeat
from checks.notify import drain, outbox
from checks.notify.tasks import queue_digests_task, sweep_deliveries_task
from checks.tasks import (
    dispatch_due_monitors_task,
    fail_stale_checks_task,
    measure_team_storage_task,
    purge_expired_task,
    worker_heartbeat_task,
)
from monitors.models import Channel, Monitor, Target

pytestmark = pytest.mark.django_db

LOST = "server closed the connection unexpectedly\n\tThis probably means the server"


def _refuse(*_: object) -> None:
    raise OperationalError(LOST)


@contextmanager
def database_away() -> Iterator[None]:
    """Every query fails as it does once PostgreSQL has gone."""
    with connection.execute_wrapper(_refuse):
        yield


def broker_away(*_: object, **__: object) -> None:
    raise BrokerOperationalError("Error 111 connecting to 127.0.0.1:6379. Refused.")


def one_plain_line(caplog: pytest.LogCaptureFixture, words: str) -> None:
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, [r.getMessage() for r in said]
    [line] = said
    assert line.exc_info is None
    assert "\n" not in line.getMessage()
    assert words in line.getMessage()


def due_monitor(team) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Due", schedule_cron="* * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/"])
    Monitor.objects.filter(pk=monitor.pk).update(
        next_run_at=timezone.now() - timedelta(minutes=5)
    )
    return monitor


def test_a_dispatch_tick_without_its_database_logs_one_line_and_the_next_dispatches(
    team, caplog
):
    monitor = due_monitor(team)

    with database_away():
        assert not dispatch_due_monitors_task()

    one_plain_line(caplog, "the database is not reachable")
    assert dispatch_due_monitors_task() == 1
    assert Check.objects.filter(monitor=monitor).count() == 1
    assert Heartbeat.SCHEDULER in Heartbeat.last_seen()


def test_a_worker_heartbeat_without_its_database_logs_one_line_and_the_next_beats(
    caplog,
):
    with database_away():
        worker_heartbeat_task()

    one_plain_line(caplog, "the database is not reachable")
    worker_heartbeat_task()
    assert Heartbeat.WORKER in Heartbeat.last_seen()


def stale_queued_check(team) -> Check:
    monitor = due_monitor(team)
    check = Check.objects.create(
        monitor=monitor, trigger="manual", status=Check.Status.QUEUED
    )
    Check.objects.filter(pk=check.pk).update(
        created_at=timezone.now() - runner.STALE_QUEUED_AFTER - timedelta(minutes=1)
    )
    return check


def test_a_stale_sweep_without_its_database_logs_one_line_and_the_next_ends_the_check(
    team, caplog
):
    check = stale_queued_check(team)

    with database_away():
        assert not fail_stale_checks_task()

    one_plain_line(caplog, "the database is not reachable")
    check.refresh_from_db()
    assert check.status == Check.Status.QUEUED
    assert fail_stale_checks_task() == 1
    check.refresh_from_db()
    assert check.status == Check.Status.FAILED


def test_a_stale_sweep_without_its_broker_logs_one_line_and_the_next_sends_again(
    team, caplog, monkeypatch
):
    check = Check.objects.create(
        monitor=due_monitor(team), trigger="manual", status=Check.Status.RUNNING
    )
    stale = timezone.now() - runner.stale_running_after() - timedelta(minutes=1)
    batch = CheckBatch.objects.create(
        check_run=check, number=1, status=CheckBatch.Status.RUNNING, heartbeat_at=stale
    )
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(runner, "waiting_messages", lambda queue: 0)
    monkeypatch.setattr(runner, "current_app", _app(broker_away))

    fail_stale_checks_task()

    one_plain_line(caplog, "the broker is not reachable")
    batch.refresh_from_db()
    assert batch.status == CheckBatch.Status.PENDING  # looked at again later
    # The next sweep once the batch is stale again, with the broker back.
    CheckBatch.objects.filter(pk=batch.pk).update(heartbeat_at=stale)
    monkeypatch.setattr(runner, "current_app", _app(lambda *a, **k: sent.append(a)))
    fail_stale_checks_task()
    assert sent == [(runner.RUN_BATCH_TASK,)]


def _app(send_task: Any) -> SimpleNamespace:
    @contextmanager
    def producer_or_acquire() -> Iterator[None]:
        yield None

    return SimpleNamespace(send_task=send_task, producer_or_acquire=producer_or_acquire)


def test_waiting_messages_without_the_broker_is_one_line_without_a_traceback(
    caplog, monkeypatch
):
    monkeypatch.setattr(
        runner, "current_app", SimpleNamespace(connection_for_write=broker_away)
    )

    assert runner.waiting_messages("celery") is None

    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.exc_info is None
    assert "Error 111" in line.getMessage()


def due_delivery(team) -> Delivery:
    return Delivery.objects.create(
        kind="webhook",
        monitor=due_monitor(team),
        event="monitor.check.completed",
        url="https://e.com/hook",
        body="{}",
        next_attempt_at=timezone.now() - timedelta(seconds=1),
    )


def test_a_delivery_sweep_without_its_database_logs_one_line_and_the_next_queues(
    team, caplog, monkeypatch
):
    delivery = due_delivery(team)
    sent: list[Any] = []
    monkeypatch.setattr(
        outbox, "current_app", SimpleNamespace(send_task=lambda *a, **k: sent.append(a))
    )

    with database_away():
        assert not sweep_deliveries_task()

    one_plain_line(caplog, "the database is not reachable")
    assert not sent
    assert sweep_deliveries_task() == 1
    assert sent == [(outbox.DELIVER_TASK,)]
    delivery.refresh_from_db()
    assert delivery.queued_at is not None


def test_a_delivery_sweep_without_its_broker_logs_one_line_and_a_later_one_sends(
    team, caplog, monkeypatch
):
    delivery = due_delivery(team)
    monkeypatch.setattr(outbox, "current_app", SimpleNamespace(send_task=broker_away))

    assert sweep_deliveries_task() == 1

    one_plain_line(caplog, "Could not queue deliveries")
    sent: list[Any] = []
    monkeypatch.setattr(
        outbox, "current_app", SimpleNamespace(send_task=lambda *a, **k: sent.append(a))
    )
    Delivery.objects.filter(pk=delivery.pk).update(
        queued_at=timezone.now() - outbox.REQUEUE_AFTER - timedelta(seconds=1)
    )
    assert sweep_deliveries_task() == 1
    assert sent == [(outbox.DELIVER_TASK,)]


def test_digests_without_their_database_log_one_line_and_the_next_run_makes_them(
    team, caplog
):
    due = timezone.now() - timedelta(minutes=1)
    channel = Channel.objects.create(
        team=team,
        name="Morning news",
        kind="webhook",
        settings={"url": "https://e.com/h"},
        events=list(Channel.DEFAULT_EVENTS),
        digest="daily",
        digest_at=time(9, 0),
        next_digest_at=due,
    )

    with database_away():
        assert not queue_digests_task()

    one_plain_line(caplog, "the database is not reachable")
    queue_digests_task()
    channel.refresh_from_db()
    assert channel.next_digest_at > due


def test_retention_without_its_database_logs_one_line_and_the_next_run_purges(
    team, caplog
):
    monitor = Monitor.objects.create(
        team=team, name="Old", schedule_cron="0 3 * * *", retention_days=1
    )
    old = Check.objects.create(
        monitor=monitor, trigger="manual", status=Check.Status.COMPLETED
    )
    Check.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=2)
    )

    with database_away():
        assert not purge_expired_task()

    one_plain_line(caplog, "the database is not reachable")
    assert purge_expired_task() == 1
    assert not Check.objects.filter(pk=old.pk).exists()


def test_measuring_storage_without_its_database_logs_one_line_and_the_next_measures(
    team, caplog
):
    with database_away():
        assert not measure_team_storage_task()

    one_plain_line(caplog, "the database is not reachable")
    assert measure_team_storage_task() == 1


# --- The operator's probes -----------------------------------------------------


def test_healthz_names_the_database_with_a_503_and_one_line_while_it_is_away(
    client, settings, redis_server, caplog
):
    settings.REDIS_LOCATION = redis_server
    with database_away():
        response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["parts"]["database"] == "unreachable"
    [line] = [r for r in caplog.records if r.name == "checks.health"]
    assert all(r.exc_info is None for r in caplog.records)
    assert client.get("/healthz").json()["parts"]["database"] == "ok"


def test_metrics_say_503_in_one_line_while_the_database_is_away(
    client, settings, redis_server, caplog
):
    settings.REDIS_LOCATION = redis_server
    settings.METRICS_TOKEN = "t" * 40
    auth = {"Authorization": "Bearer " + "t" * 40}

    with database_away():
        response = client.get("/metrics", headers=auth)

    assert response.status_code == 503
    assert response["Retry-After"]
    assert "database" in response.content.decode()
    assert all(r.exc_info is None for r in caplog.records)
    # Not Django's own "Service Unavailable: /metrics" beside it.
    assert not [r for r in caplog.records if r.name == "django.request"]
    [line] = [r for r in caplog.records if r.name == "config.views"]
    assert "\n" not in line.getMessage()
    assert client.get("/metrics", headers=auth).status_code == 200


def test_a_follow_up_tick_the_broker_cannot_take_is_one_line(caplog, monkeypatch):
    monkeypatch.setattr(dispatch, "_dispatch", lambda now: (1, True))
    monkeypatch.setattr(dispatch, "current_app", SimpleNamespace(send_task=broker_away))

    assert dispatch.dispatch_tick(timezone.now(), may_follow_up=True) == 1

    one_plain_line(caplog, "Could not queue a follow-up dispatch tick: Error 111")


# --- A fault on a live database is not an outage -------------------------------


def wrapped(sqlstate: str | None, message: str = "it failed") -> OperationalError:
    """A PostgreSQL error as Django raises it: its own OperationalError from
    psycopg's, whose SQLSTATE says what happened."""
    cause = (
        psycopg.errors.lookup(sqlstate)(message)
        if sqlstate
        else psycopg.OperationalError(message)
    )
    try:
        raise OperationalError(message) from cause
    except OperationalError as exc:
        return exc


def sqlite_wrapped(code: int, message: str) -> OperationalError:
    cause = sqlite3.OperationalError(message)
    cause.sqlite_errorcode = code
    try:
        raise OperationalError(message) from cause
    except OperationalError as exc:
        return exc


@contextmanager
def every_query_fails_with(error: OperationalError) -> Iterator[None]:
    def fail(*_: object) -> None:
        raise error

    with connection.execute_wrapper(fail):
        yield


@pytest.mark.parametrize(
    ("error", "away"),
    [
        (wrapped(None, "connection failed: connection refused"), True),
        (wrapped("08006", "server closed the connection"), True),
        (wrapped("08001"), True),
        (wrapped("57P01", "terminating connection due to administrator"), True),
        (wrapped("57P02"), True),
        (wrapped("57P03", "the database system is starting up"), True),
        (InterfaceError("connection already closed"), True),
        (OperationalError("server closed the connection unexpectedly"), True),
        (sqlite_wrapped(sqlite3.SQLITE_CANTOPEN, "unable to open database file"), True),
        (wrapped("57014", "canceling statement due to statement timeout"), False),
        (wrapped("40P01", "deadlock detected"), False),
        (wrapped("55P03", "could not obtain lock"), False),
        (wrapped("53100", "could not extend file: No space left on device"), False),
        (wrapped("53300", "too many connections"), False),
        (sqlite_wrapped(sqlite3.SQLITE_BUSY, "database is locked"), False),
        (ValueError("not a database error"), False),
    ],
)
def test_only_a_connection_that_is_gone_counts_as_the_database_away(error, away):
    assert outages.database_away(error) is away


@pytest.mark.parametrize("sqlstate", ["57014", "40P01"])
def test_a_dispatch_tick_that_meets_a_fault_on_a_live_database_raises_it(
    team, caplog, sqlstate
):
    due_monitor(team)

    with every_query_fails_with(wrapped(sqlstate)), pytest.raises(OperationalError):
        dispatch_due_monitors_task()

    assert "not reachable" not in caplog.text


def test_a_retention_purge_that_meets_a_statement_timeout_raises_it(caplog):
    with (
        every_query_fails_with(wrapped("57014", "canceling statement")),
        pytest.raises(OperationalError),
    ):
        purge_expired_task()

    assert "not reachable" not in caplog.text


def test_a_dispatch_tick_whose_connection_failed_logs_one_plain_line(team, caplog):
    due_monitor(team)

    with every_query_fails_with(wrapped("08006", "server closed the connection")):
        assert not dispatch_due_monitors_task()

    one_plain_line(caplog, "the database is not reachable")


def test_metrics_that_meet_a_deadlock_raise_it_rather_than_say_the_database_is_away(
    client, settings, caplog
):
    settings.METRICS_TOKEN = "t" * 40
    auth = {"Authorization": "Bearer " + "t" * 40}

    with (
        every_query_fails_with(wrapped("40P01", "deadlock detected")),
        pytest.raises(OperationalError),
    ):
        client.get("/metrics", headers=auth)

    assert "unreachable" not in caplog.text


def test_a_check_that_meets_a_deadlock_is_failed_as_a_crash_with_its_traceback(
    team, caplog
):
    monitor = due_monitor(team)
    check = Check.objects.create(monitor=monitor, trigger="manual")

    with runner._guarded(check.pk):
        raise wrapped("40P01", "deadlock detected")

    check.refresh_from_db()
    assert check.status == Check.Status.FAILED
    assert check.error == runner.CRASH_MESSAGE
    [crash] = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert crash.exc_info is not None


def test_a_check_whose_connection_was_ended_logs_one_line_and_writes_nothing(
    team, caplog
):
    monitor = due_monitor(team)
    check = Check.objects.create(monitor=monitor, trigger="manual")

    with runner._guarded(check.pk):
        raise wrapped("57P01", "terminating connection due to administrator command")

    check.refresh_from_db()
    assert check.status != Check.Status.FAILED
    one_plain_line(caplog, "lost its database connection")


def test_a_drain_that_meets_a_deadlock_raises_it(monkeypatch, caplog):
    def deadlock(*_: object) -> None:
        raise wrapped("40P01", "deadlock detected")

    monkeypatch.setattr(drain, "claim", deadlock)

    with pytest.raises(OperationalError):
        drain.drain([1])

    assert "lost its database connection" not in caplog.text


def test_a_drain_whose_connection_was_lost_logs_one_line(monkeypatch, caplog):
    def lost(*_: object) -> None:
        raise wrapped("08006", "server closed the connection")

    monkeypatch.setattr(drain, "claim", lost)

    assert drain.drain([1]) == []
    one_plain_line(caplog, "lost its database connection")
