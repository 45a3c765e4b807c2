"""monitors.editing.update_monitor: an edit read before the scheduler or a
check wrote the row (the API and the dashboard read the monitor, validate,
then save) must not write the old bookkeeping back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from checks.dispatch import dispatch_due_monitors
from checks.models import Check
from monitors.editing import update_monitor
from monitors.models import Monitor, Target

pytestmark = pytest.mark.django_db

SLOT = datetime(2026, 5, 6, 12, 0, tzinfo=UTC)
AFTER_SPREAD = SLOT + timedelta(seconds=31)


@pytest.fixture
def monitor(team) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="*/30 * * * *", next_run_at=SLOT
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/"])
    return monitor


def test_an_edit_read_before_its_slot_was_dispatched_keeps_the_dispatch(monitor):
    read_by_the_edit = Monitor.objects.get(pk=monitor.pk)
    assert dispatch_due_monitors(AFTER_SPREAD) == 1
    check = Check.objects.get(monitor=monitor)

    update_monitor(read_by_the_edit, {"name": "Renamed"}, AFTER_SPREAD)

    monitor.refresh_from_db()
    assert monitor.name == "Renamed"
    assert monitor.next_run_at == SLOT + timedelta(minutes=30)
    assert monitor.current_check_id == check.pk
    # The slot is not due again, so no second look at it.
    assert dispatch_due_monitors(AFTER_SPREAD + timedelta(seconds=10)) == 0


def test_an_edit_read_while_its_check_ran_keeps_what_the_check_found(monitor):
    assert dispatch_due_monitors(AFTER_SPREAD) == 1
    check = Check.objects.get(monitor=monitor)
    read_by_the_edit = Monitor.objects.get(pk=monitor.pk)
    finished = AFTER_SPREAD + timedelta(seconds=20)
    summary = {"totalPages": 1, "same": 0, "changed": 1, "new": 0, "removed": 0}
    Monitor.objects.filter(pk=monitor.pk).check_ended(check.pk, finished, summary)

    update_monitor(read_by_the_edit, {"goal": "Price changes"}, finished)

    monitor.refresh_from_db()
    assert monitor.goal == "Price changes"
    assert monitor.last_run_at == finished
    assert monitor.last_check_summary == summary
    assert monitor.current_check_id is None


def test_an_edit_read_before_the_monitor_was_paused_leaves_it_paused(monitor):
    read_by_the_edit = Monitor.objects.get(pk=monitor.pk)
    update_monitor(
        Monitor.objects.get(pk=monitor.pk), {"status": "paused"}, AFTER_SPREAD
    )

    update_monitor(read_by_the_edit, {"name": "Renamed"}, AFTER_SPREAD)

    monitor.refresh_from_db()
    assert (monitor.name, monitor.status, monitor.next_run_at) == (
        "Renamed",
        Monitor.Status.PAUSED,
        None,
    )
    assert dispatch_due_monitors(SLOT + timedelta(days=1)) == 0
