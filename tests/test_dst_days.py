"""A monitor's schedule across daylight-saving changes, as the scheduler runs
it (checks.dispatch) and the dashboard says it: a daily time the clock skips
runs once, at the first minute after the gap; a daily time the clock repeats
runs once, the first time; "every 30 minutes" stays 30 real minutes apart
through both. Europe/Berlin changes on 29 March and 25 October 2026,
America/New_York on 8 March and 1 November."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine

from checks import dispatch
from checks.dispatch import dispatch_due_monitors
from checks.models import Check
from monitors.models import Monitor
from tests.test_history import web  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_sent(monkeypatch):
    monkeypatch.setattr(dispatch, "enqueue_many", lambda ids: None)


def create(api, text: str, zone: str, at: datetime) -> Monitor:
    with time_machine.travel(at, tick=False):
        response = api.post(
            "/v2/monitor",
            {
                "name": "Opening hours",
                "schedule": {"text": text, "timezone": zone},
                "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
            },
            format="json",
        )
    assert response.status_code == 200, response.content
    return Monitor.objects.get(pk=response.json()["data"]["id"])


def run_scheduler(monitor: Monitor, until: datetime) -> list[datetime]:
    """Tick as the scheduler would, each time a run comes due (past any
    spread delay) and a minute later, each check done before the next;
    the slots its checks were made for."""
    while (slot := Monitor.objects.get(pk=monitor.pk).next_run_at) < until:
        for tick in (slot + timedelta(seconds=31), slot + timedelta(seconds=91)):
            dispatch_due_monitors(tick)
            Check.objects.filter(status=Check.Status.QUEUED).update(
                status=Check.Status.COMPLETED, finished_at=tick
            )
    return list(
        Check.objects.filter(monitor=monitor)
        .order_by("scheduled_for")
        .values_list("scheduled_for", flat=True)
    )


def on_the_clock(slots: list[datetime], zone: str) -> list[str]:
    return [slot.astimezone(ZoneInfo(zone)).strftime("%d %H:%M %Z") for slot in slots]


@pytest.mark.parametrize(
    ("zone", "day_before", "runs"),
    [
        (
            "Europe/Berlin",
            datetime(2026, 3, 28, 12, tzinfo=UTC),
            ["29 03:00 CEST", "30 02:30 CEST"],
        ),
        (
            "America/New_York",
            datetime(2026, 3, 7, 12, tzinfo=UTC),
            ["08 03:00 EDT", "09 02:30 EDT"],
        ),
    ],
)
def test_a_daily_time_the_clock_skips_runs_once_at_the_end_of_the_gap(
    api, zone, day_before, runs
):
    monitor = create(api, "every day at 2:30", zone, day_before)

    slots = run_scheduler(monitor, day_before + timedelta(days=2))

    assert on_the_clock(slots, zone) == runs


def test_a_daily_time_the_clock_repeats_runs_once_the_first_time(api):
    day_before = datetime(2026, 10, 31, 12, tzinfo=UTC)
    monitor = create(api, "every day at 1:30", "America/New_York", day_before)

    slots = run_scheduler(monitor, day_before + timedelta(days=2))

    assert on_the_clock(slots, "America/New_York") == ["01 01:30 EDT", "02 01:30 EST"]


@pytest.mark.parametrize(
    "night",
    [
        datetime(2026, 3, 8, 5, tzinfo=UTC),  # 00:00 EST, before the gap
        datetime(2026, 11, 1, 4, tzinfo=UTC),  # 00:00 EDT, before the repeat
    ],
)
def test_every_30_minutes_stays_30_real_minutes_apart_through_a_change(api, night):
    monitor = create(api, "every 30 minutes", "America/New_York", night)

    slots = run_scheduler(monitor, night + timedelta(hours=4))

    assert len(slots) == 7  # from 00:30, strictly after it was made
    assert {
        later - earlier for earlier, later in zip(slots, slots[1:], strict=False)
    } == {timedelta(minutes=30)}


def test_the_monitors_page_says_the_next_run_at_its_true_time_and_zone(
    api,
    web,  # noqa: F811
):
    monitor = create(
        api, "every day at 2:30", "Europe/Berlin", datetime(2026, 3, 28, 12, tzinfo=UTC)
    )

    with time_machine.travel(datetime(2026, 3, 28, 23, tzinfo=UTC), tick=False):
        page = web.get(monitor.get_absolute_url()).content.decode()

    assert "in 2 hours" in page
    assert "Sun 29 Mar 2026, 03:00 CEST" in page
    assert "02:30 CEST" not in page
