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
def test_a_change_of_a_muted_check_still_running_is_left_out_of_the_digest(
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
            scenario.run(monitor, [("https://example.com/heard", "changed")])
            mute(monitor, MUTED_FOREVER)
            running = scenario.start(monitor)
            scenario.page(running, "https://example.com/muted", "changed")
        with time_machine.travel(datetime(2026, 3, 2, 9, 1, tzinfo=UTC), tick=False):
            [made] = digests.queue_due(datetime.now(UTC))
    finally:
        kinds.unregister("pigeon")

    [entry] = json.loads(made.body)["monitors"]
    assert [p["url"] for p in entry["pages"]] == ["https://example.com/heard"]


@pytest.mark.django_db
def test_a_check_that_began_unmuted_tells_everything_though_muted_meanwhile(
    loud_monitor, scenario, queued, django_capture_on_commit_callbacks
):
    from checks import runner

    running = scenario.start(loud_monitor)
    scenario.page(running, *CHANGE[0][:2], **CHANGE[0][2])
    mute(loud_monitor, MUTED_FOREVER)
    with django_capture_on_commit_callbacks(execute=True):
        check = runner.finish(running.pk)

    check.refresh_from_db()
    events = set(Delivery.objects.values_list("event", flat=True))
    assert {"monitor.page", "monitor.check.completed"} <= events
    assert Delivery.objects.filter(kind="email", check_run=check).exists()
    assert check.notification_status["email"]["reason"] is None
    assert check.notification_status["webhook"]["skipped"] is False


@pytest.mark.django_db
def test_a_check_that_began_muted_tells_nothing_though_unmuted_meanwhile(
    loud_monitor, scenario, queued, django_capture_on_commit_callbacks
):
    from checks import runner

    mute(loud_monitor, MUTED_FOREVER)
    running = scenario.start(loud_monitor)
    scenario.page(running, *CHANGE[0][:2], **CHANGE[0][2])
    Monitor.objects.filter(pk=loud_monitor.pk).unmute(datetime.now(UTC))
    with django_capture_on_commit_callbacks(execute=True):
        check = runner.finish(running.pk)

    check.refresh_from_db()
    assert not Delivery.objects.exists()
    assert queued == []
    assert check.notification_status["email"]["reason"] == "muted"


@pytest.mark.django_db
def test_a_queued_check_takes_the_mute_it_finds_when_it_starts(team):
    from checks.models import Check

    monitor = make_monitor(team)
    check = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.QUEUED
    )
    assert check.notifications_muted is False
    mute(monitor, MUTED_FOREVER)

    assert check.claim(datetime.now(UTC), timedelta(minutes=5))
    check.refresh_from_db()
    assert check.notifications_muted is True


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


# --- The API ------------------------------------------------------------------------

URL = "/v2/monitor"
NOW = datetime(2026, 5, 16, 15, 7, 30, tzinfo=UTC)


def new_monitor(api) -> str:
    answer = api.post(
        URL,
        {
            "name": "Pricing page",
            "schedule": {"text": "every 30 minutes"},
            "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
        },
        format="json",
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]["id"]


@pytest.mark.django_db
def test_the_api_mutes_until_a_moment_shows_it_and_unmutes_with_null(api):
    with time_machine.travel(NOW, tick=False):
        pk = new_monitor(api)
        assert api.get(f"{URL}/{pk}").json()["data"]["mutedUntil"] is None

        answer = api.patch(
            f"{URL}/{pk}", {"mutedUntil": "2026-05-16T18:00:00+02:00"}, format="json"
        )
        assert answer.status_code == 200, answer.content
        assert answer.json()["data"]["mutedUntil"] == "2026-05-16T16:00:00.000Z"
        assert Monitor.objects.get(pk=pk).muted_until == datetime(
            2026, 5, 16, 16, 0, tzinfo=UTC
        )
        [listed] = api.get(URL).json()["data"]
        assert listed["mutedUntil"] == "2026-05-16T16:00:00.000Z"

        answer = api.patch(f"{URL}/{pk}", {"mutedUntil": None}, format="json")
        assert answer.json()["data"]["mutedUntil"] is None
    assert Monitor.objects.get(pk=pk).muted_until is None


@pytest.mark.django_db
def test_an_ended_mute_reads_as_not_muted(api):
    with time_machine.travel(NOW, tick=False):
        pk = new_monitor(api)
        api.patch(f"{URL}/{pk}", {"mutedUntil": "2026-05-16T16:00:00Z"}, format="json")
    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        assert api.get(f"{URL}/{pk}").json()["data"]["mutedUntil"] is None


@pytest.mark.django_db
def test_the_api_mutes_until_unmuted_with_the_far_future_moment(api):
    pk = new_monitor(api)
    answer = api.patch(
        f"{URL}/{pk}", {"mutedUntil": "9999-12-31T23:59:59Z"}, format="json"
    )
    assert answer.json()["data"]["mutedUntil"] == "9999-12-31T00:00:00.000Z"
    assert Monitor.objects.get(pk=pk).muted_until == MUTED_FOREVER


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("2026-05-16T15:00:00Z", "mutedUntil must be in the future"),
        ("next tuesday", "Datetime has wrong format"),
        (12, "Datetime has wrong format"),
    ],
)
def test_the_api_refuses_a_mute_that_has_ended_or_is_no_moment(api, value, words):
    with time_machine.travel(NOW, tick=False):
        pk = new_monitor(api)
        answer = api.patch(f"{URL}/{pk}", {"mutedUntil": value}, format="json")
    assert answer.status_code == 400
    assert words in str(answer.json())
    assert Monitor.objects.get(pk=pk).muted_until is None


@pytest.mark.django_db
def test_a_monitor_can_be_created_muted(api):
    with time_machine.travel(NOW, tick=False):
        answer = api.post(
            URL,
            {
                "name": "Pricing page",
                "schedule": {"text": "every 30 minutes"},
                "targets": [{"type": "scrape", "urls": ["https://e.com/pricing"]}],
                "mutedUntil": "2026-05-23T15:07:30Z",
            },
            format="json",
        )
    assert answer.json()["data"]["mutedUntil"] == "2026-05-23T15:07:30.000Z"


@pytest.mark.django_db
def test_a_read_only_key_cannot_mute(api, team):
    from rest_framework.test import APIClient

    from monitors.models import ApiKey

    pk = new_monitor(api)
    _, raw = ApiKey.issue(team, scope=ApiKey.Scope.READ)
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    answer = reader.patch(
        f"{URL}/{pk}", {"mutedUntil": "9999-12-31T00:00:00Z"}, format="json"
    )
    assert answer.status_code == 403
    assert Monitor.objects.get(pk=pk).muted_until is None


# --- The dashboard ------------------------------------------------------------------

BERLIN_TUESDAY = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)  # 13:00 in Berlin


@pytest.fixture
def web(client, team, django_user_model):
    from tests.test_tags import member

    client.force_login(member(team, django_user_model, "olive", "editor"))
    return client


@pytest.fixture
def viewer_web(client, team, django_user_model):
    from tests.test_tags import member

    client.force_login(member(team, django_user_model, "vera", "viewer"))
    return client


def page_of(client, monitor) -> str:
    answer = client.get(monitor.get_absolute_url())
    assert answer.status_code == 200
    return answer.content.decode()


@pytest.mark.django_db
def test_an_editor_mutes_until_tomorrow_morning_on_the_teams_clock(web, team):
    from django.urls import reverse

    from teams.models import Activity

    team.time_zone = "Europe/Berlin"
    team.save()
    monitor = make_monitor(team)
    with time_machine.travel(BERLIN_TUESDAY, tick=False):
        assert "Mute notifications" in page_of(web, monitor)
        answer = web.post(
            reverse("monitor-mute", args=[monitor.pk]), {"mute": "morning"}
        )
        assert answer.status_code == 302
        page = page_of(web, monitor)

    monitor.refresh_from_db()
    # 9:00 in Berlin on Wednesday is 8:00 UTC in winter.
    assert monitor.muted_until == datetime(2026, 11, 25, 8, 0, tzinfo=UTC)
    assert "Notifications muted until Wed 25 Nov 09:00 (Europe/Berlin)" in page
    assert "Unmute" in page
    [entry] = Activity.objects.filter(monitor=monitor)
    assert entry.sentence == (
        "Muted notifications until Wed 25 Nov 09:00 (Europe/Berlin) by olive"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("choice", "until"),
    [
        ("1h", BERLIN_TUESDAY + timedelta(hours=1)),
        ("week", BERLIN_TUESDAY + timedelta(days=7)),
        ("forever", MUTED_FOREVER),
    ],
)
def test_each_choice_mutes_for_its_time(web, team, choice, until):
    from django.urls import reverse

    monitor = make_monitor(team)
    with time_machine.travel(BERLIN_TUESDAY, tick=False):
        web.post(reverse("monitor-mute", args=[monitor.pk]), {"mute": choice})
    monitor.refresh_from_db()
    assert monitor.muted_until == until


@pytest.mark.django_db
def test_until_unmuted_is_said_as_until_further_notice_and_unmuting_ends_it(web, team):
    from django.urls import reverse

    from teams.models import Activity

    monitor = make_monitor(team)
    web.post(reverse("monitor-mute", args=[monitor.pk]), {"mute": "forever"})
    assert "Notifications muted until further notice" in page_of(web, monitor)

    web.post(reverse("monitor-mute", args=[monitor.pk]), {"mute": "off"})

    monitor.refresh_from_db()
    assert monitor.muted_until is None
    assert "Notifications muted until" not in page_of(web, monitor)
    words = [e.what_words for e in Activity.objects.filter(monitor=monitor)]
    assert words == [
        "Unmuted notifications",
        "Muted notifications until further notice",
    ]


@pytest.mark.django_db
def test_a_choice_that_is_none_mutes_nothing_and_says_so(web, team):
    from django.urls import reverse

    monitor = make_monitor(team)
    answer = web.post(
        reverse("monitor-mute", args=[monitor.pk]), {"mute": "2 days"}, follow=True
    )
    assert "Choose how long to mute" in answer.content.decode()
    monitor.refresh_from_db()
    assert monitor.muted_until is None


@pytest.mark.django_db
def test_a_viewer_sees_the_mute_but_cannot_change_it(viewer_web, team):
    from django.urls import reverse

    monitor = make_monitor(team)
    mute(monitor, MUTED_FOREVER)

    page = page_of(viewer_web, monitor)
    answer = viewer_web.post(
        reverse("monitor-mute", args=[monitor.pk]), {"mute": "off"}
    )

    assert "Notifications muted until further notice" in page
    assert 'name="mute"' not in page
    assert answer.status_code == 403
    monitor.refresh_from_db()
    assert monitor.muted_until == MUTED_FOREVER


@pytest.mark.django_db
def test_another_teams_monitor_cannot_be_muted(web, other_team):
    from django.urls import reverse

    theirs = make_monitor(other_team)
    answer = web.post(reverse("monitor-mute", args=[theirs.pk]), {"mute": "1h"})
    assert answer.status_code == 404
    theirs.refresh_from_db()
    assert theirs.muted_until is None


@pytest.mark.django_db
def test_muting_and_unmuting_many_from_the_list(web, team):
    from django.urls import reverse

    from teams.models import Activity
    from tests.test_tags import bulk

    ticked = [make_monitor(team, name=f"M{n}") for n in range(3)]
    untouched = make_monitor(team, name="Other")
    with time_machine.travel(BERLIN_TUESDAY, tick=False):
        answer = bulk(web, "mute", ticked, mute="week")
        listed = web.get(reverse("monitor-list")).content.decode()

    assert answer.status_code == 302
    week = BERLIN_TUESDAY + timedelta(days=7)
    assert set(Monitor.objects.muted(BERLIN_TUESDAY)) == set(ticked)
    assert {
        m.muted_until for m in Monitor.objects.filter(pk__in=[m.pk for m in ticked])
    } == {week}
    assert listed.count("data-muted") == 3
    assert untouched not in Monitor.objects.muted(BERLIN_TUESDAY)
    muted_entries = Activity.objects.filter(details__until__isnull=False)
    assert muted_entries.count() == 3

    with time_machine.travel(BERLIN_TUESDAY, tick=False):
        bulk(web, "unmute", [*ticked, untouched])
    assert not Monitor.objects.muted(BERLIN_TUESDAY).exists()
    assert Activity.objects.filter(details__unmuted=True).count() == 3


@pytest.mark.django_db
def test_the_api_logs_muting_in_the_activity_log(api, team):
    from teams.models import Activity

    with time_machine.travel(NOW, tick=False):
        pk = new_monitor(api)
        api.patch(f"{URL}/{pk}", {"mutedUntil": "2026-05-16T18:00:00Z"}, format="json")
        api.patch(f"{URL}/{pk}", {"name": "Renamed"}, format="json")
        api.patch(f"{URL}/{pk}", {"mutedUntil": None}, format="json")

    words = [e.what_words for e in Activity.objects.filter(monitor_id=pk)]
    assert words == [
        "Unmuted notifications",
        "Edited name",
        "Muted notifications until Sat 16 May 18:00 (UTC)",
        "Created",
    ]


# --- Importing from changedetection.io ---------------------------------------------


@pytest.mark.django_db
def test_a_muted_changedetection_watch_comes_muted_with_its_channel_kept(
    team, settings
):
    from django.utils import timezone

    from monitors import moving
    from monitors.moving import importing, plan
    from tests.moving import backup_files, zip_files

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    files = backup_files()
    document = json.loads(files["changedetection.json"])
    watches = document["watching"]
    for watch in watches.values():
        watch["notification_urls"] = ["json://127.0.0.1:9/hook"]
    muted_uuid = "3f1c2a4e-0b6d-4c1a-9e2f-1a2b3c4d5e6f"  # Pricing
    heard_uuid = "7d0e9b1c-5a4f-4e3b-8c2d-6f5e4d3c2b1a"  # Widget stock
    watches[muted_uuid]["notification_muted"] = True
    files["changedetection.json"] = json.dumps(document).encode()

    items = plan.prepare(team, moving.read("changedetection", data=zip_files(files)))
    by_ref = {item.ref: item for item in items}
    assert by_ref[muted_uuid].as_dict()["channels"]
    importing.run_import(team, items, timezone.now())

    muted = Monitor.objects.get(team=team, name=by_ref[muted_uuid].label)
    heard = Monitor.objects.get(team=team, name=by_ref[heard_uuid].label)
    assert muted.muted_until == MUTED_FOREVER
    assert heard.muted_until is None
    assert list(muted.channels.shared().values_list("kind", flat=True)) == ["apprise"]


# --- Export and Pagewatch-to-Pagewatch import -------------------------------------


def watching(team, name: str) -> Monitor:
    """A monitor with a page of its own, as an import needs."""
    from monitors.models import Target

    monitor = make_monitor(team, name=name)
    Target.objects.create(
        monitor=monitor, type="scrape", urls=[f"https://{name.lower()}.test/"]
    )
    return monitor


@pytest.mark.django_db
def test_an_export_carries_each_mute_still_running(api, team):
    soon, forever, ended = (make_monitor(team, name=n) for n in ("A", "B", "C"))
    make_monitor(team, name="D")
    mute(soon, NOW + timedelta(hours=1))
    mute(forever, MUTED_FOREVER)
    mute(ended, NOW - timedelta(hours=1))

    with time_machine.travel(NOW, tick=False):
        document = api.get("/v2/export").json()["data"]

    assert {m["name"]: m["mutedUntil"] for m in document["monitors"]} == {
        "A": "2026-05-16T16:07:30.000Z",
        "B": "9999-12-31T00:00:00.000Z",
        "C": None,
        "D": None,
    }


@pytest.mark.django_db
def test_another_pagewatch_imports_the_mutes_an_ended_one_as_not_muted(
    api, other_api, team, other_team
):
    from tests.test_moving_api import upload

    soon, forever, later = (watching(team, n) for n in ("A", "B", "C"))
    mute(soon, NOW + timedelta(hours=1))
    mute(forever, MUTED_FOREVER)
    mute(later, NOW + timedelta(days=3))
    with time_machine.travel(NOW, tick=False):
        document = api.get("/v2/export").json()["data"]

    # Imported two hours on: A's mute has ended by then.
    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        answer = upload(
            other_api,
            "pagewatch",
            json.dumps(document).encode(),
            "e.json",
            dryRun=False,
        )

    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["created"] == 3
    copies = {m.name: m.muted_until for m in Monitor.objects.filter(team=other_team)}
    assert copies == {
        "A": None,
        "B": MUTED_FOREVER,
        "C": NOW + timedelta(days=3),
    }


@pytest.mark.django_db
def test_a_mute_that_ends_between_preview_and_import_imports_as_not_muted(team):
    from monitors.moving import importing, plan
    from monitors.moving.base import Planned
    from monitors.moving.monitorapi import planned_from_monitor

    monitor = {
        "name": "A",
        "schedule": {"cron": "*/30 * * * *", "timezone": "UTC"},
        "targets": [{"type": "scrape", "urls": ["https://a.test/"]}],
        "mutedUntil": "2026-05-16T16:07:30.000Z",
    }
    with time_machine.travel(NOW, tick=False):
        [previewed] = plan.prepare(team, [planned_from_monitor("1", monitor)])
    assert previewed.importable
    state = previewed.to_state()

    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        items = plan.prepare(team, [Planned.from_state(state)])
        importing.run_import(team, items, NOW + timedelta(hours=2))

    assert Monitor.objects.get(team=team, name="A").muted_until is None


# --- The admin ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_admin_shows_muted_monitors_and_filters_by_it(admin_client, team):
    from django.urls import reverse

    muted = make_monitor(team, name="Quiet one")
    make_monitor(team, name="Loud one")
    ended = make_monitor(team, name="Was quiet")
    mute(muted, MUTED_FOREVER)
    mute(ended, datetime(2020, 1, 1, tzinfo=UTC))
    changelist = reverse("admin:monitors_monitor_changelist")

    everything = admin_client.get(changelist).content.decode()
    only_muted = admin_client.get(changelist, {"muted": "yes"}).content.decode()
    not_muted = admin_client.get(changelist, {"muted": "no"}).content.decode()
    page = admin_client.get(
        reverse("admin:monitors_monitor_change", args=[muted.pk])
    ).content.decode()

    assert "further notice" in everything
    assert "Quiet one" in only_muted and "Loud one" not in only_muted
    assert "Was quiet" not in only_muted
    assert "Quiet one" not in not_muted and "Was quiet" in not_muted
    assert "Notifications muted until" in page and "further notice" in page


@pytest.mark.django_db
def test_a_digest_keeps_the_changes_of_checks_with_no_notification_status_yet(
    team, scenario
):
    from checks.models import Check

    monitor = make_monitor(team)
    channel = link(team, monitor, "webhook", {"url": "https://e.com/h"}, digest="daily")
    heard = scenario.run(monitor, [("https://example.com/told", "changed")])
    running = scenario.start(monitor)
    scenario.page(running, "https://example.com/running", "changed")
    Check.objects.filter(pk=heard.pk).update(notification_status=None)

    grouped = digests._changes(channel, START - timedelta(days=3650), MUTED_FOREVER)

    urls = {page["url"] for entry in grouped for page in entry["pages"]}
    assert urls == {"https://example.com/told", "https://example.com/running"}


def test_tomorrow_morning_is_nine_on_the_teams_clock_across_a_dst_change():
    from monitors import muting

    # Berlin moves its clocks forward in the night to Sunday 29 March 2026.
    saturday_evening = datetime(2026, 3, 28, 20, 0, tzinfo=UTC)
    until = muting.mute_end("morning", saturday_evening, "Europe/Berlin")
    assert until == datetime(2026, 3, 29, 7, 0, tzinfo=UTC)
    assert muting.until_words(until, "Europe/Berlin") == (
        "Sun 29 Mar 09:00 (Europe/Berlin)"
    )
    assert muting.mute_end("fortnight", saturday_evening, "UTC") is None


@pytest.fixture
def admin_change(team, admin_user) -> tuple[Monitor, str]:
    from django.urls import reverse

    from monitors.models import Membership

    Membership.objects.create(team=team, user=admin_user, role=Membership.Role.OWNER)
    monitor = watching(team, "A")
    return monitor, reverse("admin:monitors_monitor_change", args=[monitor.pk])


@pytest.mark.django_db
def test_the_admin_mutes_a_monitor_until_a_moment_and_logs_it(
    admin_client, admin_change
):
    from teams.models import Activity
    from tests.test_admin import shown_form

    monitor, change = admin_change
    with time_machine.travel(NOW, tick=False):
        data = shown_form(admin_client, change)
        assert data["muted_until"] == ""
        answer = admin_client.post(change, data | {"muted_until": "2026-05-16 18:00"})

    assert answer.status_code == 302
    monitor.refresh_from_db()
    assert monitor.muted_until == datetime(2026, 5, 16, 18, 0, tzinfo=UTC)
    [entry] = Activity.objects.filter(details__muted_until__isnull=False)
    assert entry.via == Activity.Via.ADMIN
    assert entry.what_words == "Muted notifications until Sat 16 May 18:00 (UTC)"


@pytest.mark.django_db
def test_the_admin_shows_and_takes_the_mute_on_the_teams_clock(
    admin_client, admin_change, team
):
    from teams.models import Activity
    from tests.test_admin import shown_form

    monitor, change = admin_change
    team.time_zone = "Europe/Berlin"
    team.save(update_fields=["time_zone"])
    mute(monitor, datetime(2026, 5, 16, 18, 0, tzinfo=UTC))
    with time_machine.travel(NOW, tick=False):
        page = admin_client.get(change).content.decode()
        data = shown_form(admin_client, change)
        assert data["muted_until"] == "2026-05-16 20:00:00"  # CEST, UTC+2
        assert "On the team’s clock (Europe/Berlin)" in page
        assert admin_client.post(change, data).status_code == 302
        monitor.refresh_from_db()
        assert monitor.muted_until == datetime(2026, 5, 16, 18, 0, tzinfo=UTC)
        assert not Activity.objects.filter(details__muted_until__isnull=False)

        answer = admin_client.post(change, data | {"muted_until": "2026-05-17 09:30"})

    assert answer.status_code == 302
    monitor.refresh_from_db()
    assert monitor.muted_until == datetime(2026, 5, 17, 7, 30, tzinfo=UTC)
    [entry] = Activity.objects.filter(details__muted_until__isnull=False)
    assert entry.what_words == (
        "Muted notifications until Sun 17 May 09:30 (Europe/Berlin)"
    )


@pytest.mark.django_db
def test_the_admin_keeps_until_unmuted_on_any_teams_clock(
    admin_client, admin_change, team
):
    from tests.test_admin import shown_form

    monitor, change = admin_change
    team.time_zone = "Asia/Tokyo"
    team.save(update_fields=["time_zone"])
    data = shown_form(admin_client, change)

    typed = data | {"muted_until": "9999-12-31"}
    assert admin_client.post(change, typed).status_code == 302

    monitor.refresh_from_db()
    assert monitor.muted_until == MUTED_FOREVER
    assert shown_form(admin_client, change)["muted_until"].startswith("9999-12-31")


@pytest.mark.django_db
def test_the_admin_keeps_a_mute_saved_as_shown_and_unmutes_when_it_is_cleared(
    admin_client, admin_change
):
    from teams.models import Activity
    from tests.test_admin import shown_form

    monitor, change = admin_change
    mute(monitor, MUTED_FOREVER)

    data = shown_form(admin_client, change)
    assert data["muted_until"].startswith("9999-12-31")
    assert admin_client.post(change, data).status_code == 302
    monitor.refresh_from_db()
    assert monitor.muted_until == MUTED_FOREVER
    assert not Activity.objects.filter(details__muted_until__isnull=False).exists()

    assert admin_client.post(change, data | {"muted_until": ""}).status_code == 302
    monitor.refresh_from_db()
    assert monitor.muted_until is None
    [entry] = Activity.objects.filter(details__unmuted=True)
    assert entry.what_words == "Unmuted notifications"


@pytest.mark.django_db
def test_the_admin_refuses_a_mute_that_has_ended_in_the_rules_words(
    admin_client, admin_change
):
    from tests.test_admin import shown_form

    monitor, change = admin_change
    with time_machine.travel(NOW, tick=False):
        data = shown_form(admin_client, change)
        answer = admin_client.post(change, data | {"muted_until": "2026-05-16 15:00"})

    assert answer.status_code == 200
    assert "That moment has passed" in answer.content.decode()
    monitor.refresh_from_db()
    assert monitor.muted_until is None


@pytest.mark.parametrize(
    ("now", "ends"),
    [
        # 00:30 on Wednesday in Berlin: the coming 9:00, not Thursday's.
        (
            datetime(2026, 11, 24, 23, 30, tzinfo=UTC),
            datetime(2026, 11, 25, 8, 0, tzinfo=UTC),
        ),
        # 13:00 on Tuesday: Wednesday's 9:00.
        (BERLIN_TUESDAY, datetime(2026, 11, 25, 8, 0, tzinfo=UTC)),
        # 9:00 itself: the next day's.
        (
            datetime(2026, 11, 25, 8, 0, tzinfo=UTC),
            datetime(2026, 11, 26, 8, 0, tzinfo=UTC),
        ),
        # 00:30 the night summer time starts (+1 then, +2 at 9:00).
        (
            datetime(2026, 3, 28, 23, 30, tzinfo=UTC),
            datetime(2026, 3, 29, 7, 0, tzinfo=UTC),
        ),
        # 23:00 the evening before summer time ends (+2 then, +1 at 9:00).
        (
            datetime(2026, 10, 24, 21, 0, tzinfo=UTC),
            datetime(2026, 10, 25, 8, 0, tzinfo=UTC),
        ),
    ],
)
def test_until_morning_ends_at_the_next_nine_on_the_teams_clock(now, ends):
    from monitors.muting import mute_end

    assert mute_end("morning", now, "Europe/Berlin") == ends


@pytest.mark.django_db
def test_a_check_skipped_while_muted_tells_no_one(team):
    from checks.dispatch import dispatch_due_monitors
    from checks.models import Check
    from tests.test_dispatch import AFTER_SPREAD
    from tests.test_dispatch import make_monitor as scheduled_monitor

    monitor = scheduled_monitor(team)
    mute(monitor, MUTED_FOREVER)
    running = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.RUNNING
    )
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=running.pk)

    assert dispatch_due_monitors(AFTER_SPREAD) == 1

    skipped = Check.objects.get(trigger=Check.Trigger.SCHEDULED)
    assert skipped.status == Check.Status.SKIPPED_OVERLAP
    assert skipped.notifications_muted is True
    assert skipped.notification_status["email"]["reason"] == "muted"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        # 02:30 comes twice the night summer time ends in Berlin.
        (datetime(2026, 10, 25, 0, 30, tzinfo=UTC), "2026-10-25 02:30:00+02:00"),
        (datetime(2026, 10, 25, 1, 30, tzinfo=UTC), "2026-10-25 02:30:00+01:00"),
    ],
)
def test_the_admin_shows_a_repeated_hour_with_its_offset_and_saves_it_back(
    admin_client, admin_change, team, stored, shown
):
    from tests.test_admin import shown_form

    monitor, change = admin_change
    team.time_zone = "Europe/Berlin"
    team.save(update_fields=["time_zone"])
    mute(monitor, stored)
    with time_machine.travel(datetime(2026, 10, 20, tzinfo=UTC), tick=False):
        data = shown_form(admin_client, change)
        saved = admin_client.post(change, data | {"name": "Renamed"})

    assert data["muted_until"] == shown
    assert saved.status_code == 302
    monitor.refresh_from_db()
    assert (monitor.name, monitor.muted_until) == ("Renamed", stored)


@pytest.mark.django_db
def test_the_admin_says_plainly_that_a_time_skipped_by_the_clocks_does_not_exist(
    admin_client, admin_change, team
):
    from tests.test_admin import shown_form

    monitor, change = admin_change
    team.time_zone = "Europe/Berlin"
    team.save(update_fields=["time_zone"])
    with time_machine.travel(datetime(2026, 3, 20, tzinfo=UTC), tick=False):
        data = shown_form(admin_client, change)
        answer = admin_client.post(change, data | {"muted_until": "2026-03-29 02:30"})

    page = answer.content.decode()
    assert answer.status_code == 200
    assert "does not exist on the team’s clock" in page
    assert "ambiguous" not in page
    monitor.refresh_from_db()
    assert monitor.muted_until is None
