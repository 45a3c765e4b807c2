"""Muted notifications: a muted monitor checks and records as usual and tells
no one (its own webhook and e-mail, every team channel, digests) until the
mute ends; a test message still goes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta

import pytest
import time_machine

from checks.models import Delivery, PageResult
from checks.notify import channels as channel_events
from checks.notify import digests
from monitors.models import Channel, Monitor, MonitorChannel
from monitors.models.monitors import MUTED_FOREVER
from tests.notifying import judged, make_monitor, webhook_config

pytest_plugins = ["tests.notifying"]

MEMBER = "olive@acme.test"
START = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
CHANGE = [("https://example.com/pricing", "changed", {"judgment": judged(True)})]
FAILED = [("https://example.com/pricing", "error")]
WORKS = [("https://example.com/pricing", "same")]


def link(team, monitor, kind: str, settings: dict, **fields) -> Channel:
    fields.setdefault("events", list(Channel.DEFAULT_EVENTS))
    channel = Channel.objects.create(
        team=team, name=kind, kind=kind, settings=settings, **fields
    )
    MonitorChannel.objects.create(monitor=monitor, channel=channel)
    return channel


@pytest.fixture
def loud_monitor(team, django_user_model) -> Monitor:
    """A monitor with its own webhook and e-mail and a channel of each kind."""
    user = django_user_model.objects.create_user("olive", MEMBER, "pw-123456789")
    team.members.add(user)
    monitor = make_monitor(
        team,
        webhook=webhook_config("https://hooks.example.com/in"),
        email={"enabled": True},
    )
    link(team, monitor, "slack", {"channelId": "C111"})
    link(team, monitor, "webhook", {"url": "https://example.com/h"})
    link(team, monitor, "apprise", {"url": "json://example.com/json"})
    link(team, monitor, "email", {"recipients": ["ops@acme.test"]})
    Delivery.objects.all().delete()  # confirmation e-mails of the set-up
    return monitor


def mute(monitor: Monitor, until: datetime) -> None:
    monitor.muted_until = until
    monitor.save(update_fields=["muted_until"])


@pytest.mark.django_db
def test_a_muted_monitors_check_records_the_change_and_tells_no_channel(
    loud_monitor, scenario, queued
):
    with time_machine.travel(START, tick=False):
        mute(loud_monitor, START + timedelta(hours=1))
        check = scenario.run(loud_monitor, CHANGE)

    assert PageResult.objects.filter(check_run=check, status="changed").exists()
    assert not Delivery.objects.exists()
    assert queued == []
    assert check.notification_status["email"]["reason"] == "muted"
    assert check.notification_status["webhook"]["skipped"] is True


@pytest.mark.django_db
def test_the_same_check_unmuted_tells_every_channel(loud_monitor, scenario, queued):
    with time_machine.travel(START, tick=False):
        scenario.run(loud_monitor, CHANGE)

    kinds = set(Delivery.objects.values_list("kind", flat=True))
    assert kinds == {"firecrawl_webhook", "email", "slack", "webhook", "apprise"}


@pytest.mark.django_db
def test_sending_comes_back_when_the_mute_ends(loud_monitor, scenario, queued):
    with time_machine.travel(START, tick=False):
        mute(loud_monitor, START + timedelta(hours=1))
        scenario.run(loud_monitor, CHANGE)
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        check = scenario.run(loud_monitor, CHANGE)

    assert Delivery.objects.exists()
    assert set(Delivery.objects.values_list("check_run", flat=True)) == {check.pk}
    assert check.notification_status["email"]["reason"] is None


@pytest.mark.django_db
def test_a_mute_until_unmuted_lasts_until_someone_unmutes(
    loud_monitor, scenario, queued
):
    mute(loud_monitor, MUTED_FOREVER)
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False):
        scenario.run(loud_monitor, CHANGE)
    assert not Delivery.objects.exists()

    Monitor.objects.filter(pk=loud_monitor.pk).unmute(datetime.now(UTC))
    loud_monitor.refresh_from_db()
    scenario.run(loud_monitor, CHANGE)
    assert Delivery.objects.exists()


def failing_channel(team, monitor) -> Channel:
    return link(
        team,
        monitor,
        "webhook",
        {"url": "https://example.com/alerts"},
        events=["failing"],
        failing_after=3,
    )


@pytest.mark.django_db
def test_a_monitor_still_failing_when_the_mute_ends_is_told_of_once(
    team, scenario, queued
):
    monitor = make_monitor(team)
    channel = failing_channel(team, monitor)
    with time_machine.travel(START, tick=False):
        mute(monitor, START + timedelta(hours=1))
        for _ in range(4):
            scenario.run(monitor, FAILED)
    assert not Delivery.objects.filter(channel=channel).exists()

    with time_machine.travel(START + timedelta(hours=2), tick=False):
        scenario.run(monitor, FAILED)
        scenario.run(monitor, FAILED)

    events = list(Delivery.objects.filter(channel=channel).values_list("event"))
    assert events == [("channel.failing",)]


@pytest.mark.django_db
def test_a_failure_that_ends_during_the_mute_is_never_told(team, scenario, queued):
    monitor = make_monitor(team)
    channel = failing_channel(team, monitor)
    with time_machine.travel(START, tick=False):
        mute(monitor, START + timedelta(hours=1))
        for _ in range(3):
            scenario.run(monitor, FAILED)
        scenario.run(monitor, WORKS)
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        scenario.run(monitor, WORKS)

    assert not Delivery.objects.filter(channel=channel).exists()


@pytest.mark.django_db
def test_a_change_made_while_muted_is_left_out_of_the_next_digest(
    team, scenario, queued
):
    from checks.notify import kinds
    from tests.test_channels import Pigeon

    kinds.register(Pigeon)
    try:
        with time_machine.travel(START, tick=False):
            monitor = make_monitor(team)
            channel = link(
                team, monitor, "pigeon", {"loft": "n"},
                digest="daily", digest_at=time(9, 0),
            )  # fmt: skip
            digests.schedule(channel, START)
            channel.save()
            mute(monitor, START + timedelta(minutes=30))
            scenario.run(monitor, [("https://example.com/muted", "changed")])
        with time_machine.travel(START + timedelta(hours=1), tick=False):
            scenario.run(monitor, [("https://example.com/heard", "changed")])
        with time_machine.travel(datetime(2026, 3, 2, 9, 1, tzinfo=UTC), tick=False):
            [made] = digests.queue_due(datetime.now(UTC))
    finally:
        kinds.unregister("pigeon")

    [entry] = json.loads(made.body)["monitors"]
    assert [p["url"] for p in entry["pages"]] == ["https://example.com/heard"]


@pytest.mark.django_db
def test_a_channel_test_still_goes_while_its_monitors_are_muted(team, queued):
    from checks.notify import kinds
    from tests.test_channels import Pigeon

    kinds.register(Pigeon)
    Pigeon.flown = []
    try:
        monitor = make_monitor(team)
        channel = link(team, monitor, "pigeon", {"loft": "north"})
        mute(monitor, MUTED_FOREVER)
        delivery = channel_events.send_test(channel)
    finally:
        kinds.unregister("pigeon")

    assert delivery.status == Delivery.Status.DELIVERED
    assert [m["type"] for m in Pigeon.flown] == ["channel.test"]
