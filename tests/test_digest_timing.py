"""When a channel's digest goes, across edits of the channel: an edit that
leaves the digest's settings alone leaves its due time and its period alone,
whenever it lands (checks.notify.digests, monitors.channel_editing.save_channel)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from checks.notify import digests
from monitors.channel_editing import save_channel
from monitors.models import Channel

pytestmark = pytest.mark.django_db

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
    # The next digest lists what happened after this one, not it again.
    assert daily.digest_since == made_at
    assert daily.next_digest_at == DUE + timedelta(days=1)


def test_moving_the_digests_time_moves_its_due_time(api, daily):
    with time_machine.travel(MADE + timedelta(hours=1), tick=False):
        api.patch(f"/v2/channels/{daily.pk}", {"digestAt": "08:00"}, format="json")

    daily.refresh_from_db()
    assert daily.next_digest_at == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    assert daily.digest_since == MADE
