"""Every timestamp the API answers with is written as Firecrawl writes its
own (JavaScript's toISOString): UTC, milliseconds, "Z" —
"2026-05-17T15:30:00.000Z" — whether the moment falls on a whole second or
not, so a client parsing Firecrawl's one format reads every field."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from checks.models import Check, PageResult
from monitors.models import Monitor, Target
from teams.activity import SYSTEM, Kind, record

pytestmark = pytest.mark.django_db

FIRECRAWL_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# On a whole second, where Python's isoformat() leaves the fraction out.
WHOLE_SECOND = datetime(2026, 5, 16, 15, 7, 30, tzinfo=UTC)
# With microseconds, where it writes six digits.
MID_SECOND = datetime(2026, 5, 16, 15, 8, 1, 123456, tzinfo=UTC)


@pytest.fixture
def checked_monitor(team) -> Monitor:
    with time_machine.travel(MID_SECOND, tick=False):
        monitor = Monitor.objects.create(
            team=team,
            name="Pricing",
            schedule_cron="*/30 * * * *",
            next_run_at=WHOLE_SECOND + timedelta(minutes=30),
            last_run_at=MID_SECOND,
        )
        target = Target.objects.create(
            monitor=monitor, type="scrape", urls=["https://example.com/"]
        )
        check = Check.objects.create(
            monitor=monitor,
            trigger=Check.Trigger.SCHEDULED,
            status=Check.Status.COMPLETED,
            scheduled_for=WHOLE_SECOND,
            started_at=WHOLE_SECOND,
            finished_at=MID_SECOND,
        )
        PageResult.objects.create(
            check_run=check,
            target_id=target.pk,
            url="https://example.com/",
            status="same",
        )
        record(SYSTEM, team, Kind.MONITOR_PAUSED, monitor=monitor)
    return monitor


def times_in(value, key: str = "") -> list[tuple[str, str]]:
    """Every (key, value) whose key names a moment, anywhere in an answer."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += times_in(v, k)
    elif isinstance(value, list):
        for item in value:
            found += times_in(item, key)
    elif isinstance(value, str) and (
        key.endswith("At") or key in {"scheduledFor", "at"} or "Period" in key
    ):
        found.append((key, value))
    return found


def test_every_timestamp_in_answers_has_milliseconds_and_z(api, checked_monitor):
    monitor_url = f"/v2/monitor/{checked_monitor.pk}"
    check = checked_monitor.checks.get()
    answers = [
        api.get("/v2/monitor").json(),
        api.get(monitor_url).json(),
        api.get(f"{monitor_url}/checks").json(),
        api.get(f"{monitor_url}/checks/{check.pk}").json(),
        api.get("/v2/activity").json(),
        api.get("/v2/team/credit-usage").json(),
    ]

    times = [pair for answer in answers for pair in times_in(answer)]
    keys = {key for key, _ in times}
    assert {"nextRunAt", "lastRunAt", "scheduledFor", "startedAt", "finishedAt"} <= keys
    assert {"createdAt", "updatedAt", "at", "billingPeriodStart"} <= keys
    assert [pair for pair in times if not FIRECRAWL_TIME.match(pair[1])] == []
    data = answers[1]["data"]
    assert data["nextRunAt"] == "2026-05-16T15:37:30.000Z"
    assert data["lastRunAt"] == "2026-05-16T15:08:01.123Z"
    assert data["createdAt"] == "2026-05-16T15:08:01.123Z"


def test_an_export_says_when_it_was_made_in_the_same_format(api, checked_monitor):
    with time_machine.travel(WHOLE_SECOND, tick=False):
        document = api.get("/v2/export").json()["data"]

    assert document["exportedAt"] == "2026-05-16T15:07:30.000Z"
