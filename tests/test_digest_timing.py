"""When a channel's digest goes, across edits of the channel: an edit that
leaves the digest's settings alone leaves its due time and its period alone,
whenever it lands (checks.notify.digests, monitors.channel_editing.save_channel)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from checks.models import Check, PageResult
from checks.notify import digests
from checks.retention import purge_expired
from monitors.channel_editing import save_channel
from monitors.models import Channel, Monitor, MonitorChannel
from tests.notifying import judged, make_monitor

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.notifying"]

# Monday 2 March 2026; the team's zone is UTC, its digests go at 09:00.
MADE = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
DUE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def daily(api) -> Channel:
    with time_machine.travel(MADE, tick=False):
        response = api.post(
            "/v2/channels",
            {
                "name": "Morning news",
                "kind": "webhook",
                "settings": {"url": "https://e.com/h"},
                "digest": "daily",
                "digestAt": "09:00",
            },
            format="json",
        )
    assert response.status_code == 200, response.content
    channel = Channel.objects.get(pk=response.json()["data"]["id"])
    assert channel.next_digest_at == DUE
    return channel


def test_renaming_a_channel_as_its_digest_comes_due_keeps_that_digest(api, daily):
    # 20 s after 09:00: the digest is due, the periodic task (every 60 s) has
    # not made it yet.
    with time_machine.travel(DUE + timedelta(seconds=20), tick=False):
        response = api.patch(
            f"/v2/channels/{daily.pk}", {"name": "Renamed"}, format="json"
        )
    assert response.status_code == 200, response.content

    daily.refresh_from_db()
    assert (daily.name, daily.next_digest_at) == ("Renamed", DUE)
    assert daily.digest_since == MADE


def test_an_edit_read_before_its_digest_was_made_keeps_the_new_period(daily):
    read_by_the_edit = Channel.objects.get(pk=daily.pk)
    made_at = DUE + timedelta(seconds=30)
    digests.queue_due(made_at)  # nothing changed: claimed, no message

    save_channel(daily.team, {"name": "Renamed"}, made_at, read_by_the_edit)

    daily.refresh_from_db()
    assert daily.name == "Renamed"
    # The next digest lists what happened after this one's time, not it again.
    assert daily.digest_since == DUE
    assert daily.next_digest_at == DUE + timedelta(days=1)


def test_moving_the_digests_time_moves_its_due_time(api, daily):
    with time_machine.travel(MADE + timedelta(hours=1), tick=False):
        api.patch(f"/v2/channels/{daily.pk}", {"digestAt": "08:00"}, format="json")

    daily.refresh_from_db()
    assert daily.next_digest_at == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    assert daily.digest_since == MADE


def told_pages(made) -> list[str]:
    return [
        page["url"]
        for delivery in made
        for entry in json.loads(delivery.body)["monitors"]
        for page in entry["pages"]
    ]


def test_a_change_stamped_before_the_digest_time_but_committed_after_is_told_once(
    team, daily, scenario
):
    # A change is stamped when its row is written, and seen by others when its
    # transaction commits, a moment later: one stamped 08:59:59.5 may not be
    # there yet when the 09:00 digest reads. It must still be in a digest.
    monitor = make_monitor(team)
    MonitorChannel.objects.create(monitor=monitor, channel=daily)
    meaningful = {"judgment": judged(True)}
    with time_machine.travel(MADE + timedelta(hours=1), tick=False):
        scenario.run(monitor, [("https://example.com/early", "changed", meaningful)])
    check = scenario.start(monitor)

    made = digests.queue_due(DUE + timedelta(seconds=1))
    late = scenario.page(check, "https://example.com/late", "changed", **meaningful)
    PageResult.objects.filter(pk=late.pk).update(
        created_at=DUE - timedelta(milliseconds=500)
    )
    made += digests.queue_due(DUE + timedelta(seconds=40))
    made += digests.queue_due(DUE + timedelta(days=1, seconds=40))

    assert sorted(told_pages(made)) == [
        "https://example.com/early",
        "https://example.com/late",
    ]


def test_a_change_waits_for_the_weekly_digest_that_tells_it_however_short_the_retention(
    api, team, scenario
):
    """A monitor keeping 2 days of history, a weekly digest: retention deleted
    Wednesday's change on Friday, and Monday's digest never told it."""
    with time_machine.travel(MADE, tick=False):
        response = api.post(
            "/v2/channels",
            {
                "name": "Weekly news",
                "kind": "webhook",
                "settings": {"url": "https://e.com/h"},
                "digest": "weekly",
                "digestAt": "09:00",
            },
            format="json",
        )
    assert response.status_code == 200, response.content
    weekly = Channel.objects.get(pk=response.json()["data"]["id"])
    assert digests.queue_due(DUE + timedelta(seconds=40)) == []  # nothing yet
    monitor = make_monitor(team)
    Monitor.objects.filter(pk=monitor.pk).update(retention_days=2)
    MonitorChannel.objects.create(monitor=monitor, channel=weekly)
    with time_machine.travel(DUE + timedelta(days=2), tick=False):
        told = scenario.run(
            monitor,
            [("https://example.com/wednesday", "changed", {"judgment": judged(True)})],
        )
    next_due = DUE + timedelta(days=7)

    purge_expired(next_due - timedelta(hours=1))
    made = digests.queue_due(next_due + timedelta(seconds=40))

    assert told_pages(made) == ["https://example.com/wednesday"]
    purge_expired(next_due + timedelta(hours=1))
    assert not Check.objects.filter(pk=told.pk).exists()


def test_a_check_begun_before_the_digest_whose_changes_land_after_waits_for_the_next(
    api, team, scenario
):
    """Retention kept a change for a digest by when its check began, but a
    digest tells changes by when each page was found: a check begun a minute
    before Monday's digest, its change found a minute after, was deleted on
    Wednesday, before the next Monday's digest could tell it."""
    with time_machine.travel(MADE, tick=False):
        response = api.post(
            "/v2/channels",
            {
                "name": "Weekly news",
                "kind": "webhook",
                "settings": {"url": "https://e.com/h"},
                "digest": "weekly",
                "digestAt": "09:00",
            },
            format="json",
        )
    assert response.status_code == 200, response.content
    weekly = Channel.objects.get(pk=response.json()["data"]["id"])
    monitor = make_monitor(team)
    Monitor.objects.filter(pk=monitor.pk).update(retention_days=2)
    MonitorChannel.objects.create(monitor=monitor, channel=weekly)
    with time_machine.travel(DUE - timedelta(minutes=1), tick=False):
        straddling = scenario.start(monitor)
    with time_machine.travel(DUE + timedelta(minutes=1), tick=False):
        scenario.page(
            straddling,
            "https://example.com/straddling",
            "changed",
            judgment=judged(True),
        )
        scenario.finish(straddling)

    assert told_pages(digests.queue_due(DUE + timedelta(seconds=40))) == []
    purge_expired(DUE + timedelta(days=3))
    assert Check.objects.filter(pk=straddling.pk).exists()
    made = digests.queue_due(DUE + timedelta(days=7, seconds=40))

    assert told_pages(made) == ["https://example.com/straddling"]
    purge_expired(DUE + timedelta(days=7, hours=1))
    assert not Check.objects.filter(pk=straddling.pk).exists()
