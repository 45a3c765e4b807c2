"""checks.retention while checks are writing: a purge never waits on a row a
check holds, so the two can never deadlock, and the check never fails."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, connections, transaction

from checks.content import pack_snapshot
from checks.models import Check, PageResult, Snapshot
from checks.retention import purge_expired
from monitors.models import Monitor

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def old_orphan(text: str) -> Snapshot:
    stored = Snapshot.store(text)
    Snapshot.objects.filter(pk=stored.pk).update(created_at=NOW - timedelta(days=40))
    return stored


def waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]
        )
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def test_a_purge_and_a_check_storing_old_content_again_never_deadlock(team):
    """A page that goes back to content whose snapshot is an orphan: the
    check's upsert locks those rows one by one, and a purge that waited for
    them while holding others would deadlock with it."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks: SQLite serialises every writer")
    old_orphan("first content"), old_orphan("second content")
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="0 * * * *"
    )
    check = Check.objects.create(
        monitor=monitor, trigger="manual", status=Check.Status.RUNNING
    )
    holds_second, go_on = threading.Event(), threading.Event()
    purge_pid: list[int] = []
    outcome: dict[str, Any] = {}

    def check_writing() -> None:
        try:
            with transaction.atomic():
                ids = Snapshot.store_many([pack_snapshot("second content")])
                holds_second.set()
                go_on.wait(30)
                ids |= Snapshot.store_many([pack_snapshot("first content")])
                PageResult.objects.create(
                    check_run=check,
                    target_id="00000000-0000-0000-0000-000000000001",
                    url="https://example.com/",
                    status=PageResult.Status.CHANGED,
                    previous_snapshot_id=ids[pack_snapshot("second content")[0]],
                    current_snapshot_id=ids[pack_snapshot("first content")[0]],
                )
            outcome["check"] = "recorded"
        except Exception as exc:  # noqa: BLE001 -- the test reports it
            outcome["check"] = exc
        finally:
            holds_second.set()
            connections.close_all()

    def purging() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                purge_pid.append(cursor.fetchone()[0])
            outcome["purge"] = purge_expired(NOW)
        except Exception as exc:  # noqa: BLE001 -- the test reports it
            outcome["purge"] = exc
        finally:
            connections.close_all()

    writer = threading.Thread(target=check_writing)
    writer.start()
    assert holds_second.wait(30)
    purge = threading.Thread(target=purging)
    purge.start()
    # On until the purge is done, or stuck behind the check's row.
    while purge.is_alive() and not (purge_pid and waiting_on_a_lock(purge_pid[0])):
        purge.join(0.01)
    go_on.set()
    writer.join(60)
    purge.join(60)

    assert outcome["check"] == "recorded"
    assert not isinstance(outcome["purge"], Exception), outcome["purge"]
    page = PageResult.objects.get(check_run=check)
    assert Snapshot.objects.get(pk=page.previous_snapshot_id).text == "second content"
    assert Snapshot.objects.get(pk=page.current_snapshot_id).text == "first content"
