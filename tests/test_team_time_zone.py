"""The team's time zone, which its digests keep their time of day in: set by
an owner on the Team page or by an administrator in the admin, and the
digests already planned move to it."""

from __future__ import annotations

import html
from datetime import UTC, datetime, time

import pytest
import time_machine
from django.urls import reverse

from checks.notify import digests
from monitors.models import Channel, Membership, Team
from monitors.schedule import Schedule, next_run_after
from teams.models import Activity
from tests.test_admin import shown_form

pytestmark = pytest.mark.django_db

# Monday 2 March 2026, 06:00 UTC: 07:00 in Berlin, 01:00 in New York.
NOW = datetime(2026, 3, 2, 6, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("ana", "ana@acme.test", "pw-x")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def daily_at_nine(team) -> Channel:
    channel = Channel(
        team=team,
        name="Morning news",
        kind="apprise",
        settings={"url": "json://ops.example"},
        digest=Channel.Digest.DAILY,
        digest_at=time(9, 0),
    )
    digests.schedule(channel, NOW)
    channel.save()
    assert channel.next_digest_at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    return channel


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def test_an_owner_sets_the_teams_time_zone_and_its_digests_move_to_it(
    client, owner, team, daily_at_nine, clock
):
    client.force_login(owner)
    page = text_of(client.get(reverse("team-members")))
    assert "Time zone" in page and "UTC" in page

    response = client.post(reverse("team-time-zone"), {"time_zone": "europe/berlin"})

    assert response.status_code == 302
    team.refresh_from_db()
    assert team.time_zone == "Europe/Berlin"
    daily_at_nine.refresh_from_db()
    # 09:00 in Berlin is 08:00 UTC in winter.
    assert daily_at_nine.next_digest_at == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    entry = Activity.objects.get(kind=Activity.Kind.TEAM_EDITED)
    assert entry.what_words == (
        "Set the team's time zone to Europe/Berlin (was UTC, not yet chosen)"
    )


def test_a_time_zone_that_is_none_is_refused_in_plain_words(
    client, owner, team, daily_at_nine, clock
):
    client.force_login(owner)

    response = client.post(reverse("team-time-zone"), {"time_zone": "Berlin"})

    assert response.status_code == 400
    assert "did you mean Europe/Berlin?" in text_of(response)
    team.refresh_from_db()
    assert team.time_zone == ""  # still not chosen
    daily_at_nine.refresh_from_db()
    assert daily_at_nine.next_digest_at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_an_editor_cannot_change_the_teams_time_zone(
    client, team, django_user_model, clock
):
    user = django_user_model.objects.create_user("bo", "bo@acme.test", "pw-x")
    Membership.objects.create(team=team, user=user, role=Membership.Role.EDITOR)
    client.force_login(user)

    response = client.post(reverse("team-time-zone"), {"time_zone": "Asia/Tokyo"})

    assert response.status_code == 403
    team.refresh_from_db()
    assert team.time_zone == ""  # still not chosen


def test_an_administrator_sets_the_teams_time_zone_in_the_admin(
    admin_client, team, daily_at_nine, clock
):
    url = reverse("admin:monitors_team_change", args=[team.pk])
    form = shown_form(admin_client, url) | {"time_zone": "America/New_York"}
    wrong = admin_client.post(url, form | {"time_zone": "Mars/Olympus"})
    assert wrong.status_code == 200
    assert "is not a time zone we know" in text_of(wrong)

    response = admin_client.post(url, form)

    assert response.status_code == 302, text_of(response)[:3000]
    team.refresh_from_db()
    assert team.time_zone == "America/New_York"
    daily_at_nine.refresh_from_db()
    # 09:00 in New York is 14:00 UTC before its summer time.
    assert daily_at_nine.next_digest_at == datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


# --- Digests across daylight-saving changes, like monitors' schedules ---------------


def berlin_digest_at(hour: int, minute: int) -> Channel:
    team = Team(time_zone="Europe/Berlin")
    return Channel(team=team, digest=Channel.Digest.DAILY, digest_at=time(hour, minute))


def test_a_digest_planned_in_the_hour_that_repeats_is_still_ahead():
    channel = berlin_digest_at(2, 30)
    # 01:10 UTC on 25 October 2026 is the second 02:10 in Berlin (CET). That
    # day's 02:30 came at its first pass (CEST, 00:30 UTC) and, as a daily
    # monitor's, comes once: the next is the next day's.
    after = datetime(2026, 10, 25, 1, 10, tzinfo=UTC)

    following = digests.next_digest_at(channel, after)

    assert following is not None and following > after
    assert following == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_a_digest_at_a_time_the_clock_skips_goes_when_a_monitor_would():
    channel = berlin_digest_at(2, 30)
    after = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    monitor_schedule = Schedule("30 2 * * *", "Europe/Berlin")

    following = digests.next_digest_at(channel, after)

    # 29 March has no 02:30 in Berlin: both go at 03:00 CEST, 01:00 UTC.
    assert following == next_run_after(monitor_schedule, after)
    assert following == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_a_team_that_chose_utc_starts_new_monitors_in_utc_not_the_browsers_zone(
    client, owner, team
):
    # Until a team picks a zone, a new monitor's form may offer the browser's
    # (static/js/app.js); a team that picked UTC keeps it.
    client.force_login(owner)
    never_set = text_of(client.get(reverse("monitor-create")))
    assert "data-browser-timezone" in never_set
    assert "UTC" in text_of(client.get(reverse("team-members")))

    client.post(reverse("team-time-zone"), {"time_zone": "UTC"})

    team.refresh_from_db()
    assert team.time_zone == "UTC"
    chosen = text_of(client.get(reverse("monitor-create")))
    assert "data-browser-timezone" not in chosen
    assert 'value="UTC"' in chosen
    entry = Activity.objects.get(kind=Activity.Kind.TEAM_EDITED)
    assert (
        entry.what_words == "Set the team's time zone to UTC (was UTC, not yet chosen)"
    )


def test_the_upgrade_takes_every_team_at_utc_as_never_having_picked_a_zone(team):
    import importlib
    from pathlib import Path

    from django.apps import apps as django_apps

    import monitors.migrations

    # Found by its name's end: its number follows whatever came before it.
    [path] = Path(monitors.migrations.__file__).parent.glob("*_team_zone_not_chosen.py")
    migration = importlib.import_module(f"monitors.migrations.{path.stem}")
    berlin = Team.objects.create(name="B", slug="b", time_zone="Europe/Berlin")
    Team.objects.filter(pk=team.pk).update(time_zone="UTC")

    migration.utc_as_not_chosen(django_apps, None)

    assert dict(Team.objects.values_list("slug", "time_zone")) == {
        team.slug: "",
        berlin.slug: "Europe/Berlin",
    }


def test_daily_and_weekly_digests_keep_nine_oclock_once_each_across_a_change():
    """New York's clocks go back on Sunday 1 November 2026: 09:00 is 13:00
    UTC before and 14:00 UTC after, one digest a day (a week) either side."""
    team = Team(time_zone="America/New_York")
    daily = Channel(team=team, digest=Channel.Digest.DAILY, digest_at=time(9, 0))
    weekly = Channel(team=team, digest=Channel.Digest.WEEKLY, digest_at=time(9, 0))

    def walk(channel: Channel, after: datetime, count: int) -> list[datetime]:
        times = []
        for _ in range(count):
            after = digests.next_digest_at(channel, after)
            times.append(after)
        return times

    assert walk(daily, datetime(2026, 10, 31, 0, 0, tzinfo=UTC), 3) == [
        datetime(2026, 10, 31, 13, 0, tzinfo=UTC),
        datetime(2026, 11, 1, 14, 0, tzinfo=UTC),
        datetime(2026, 11, 2, 14, 0, tzinfo=UTC),
    ]
    assert walk(weekly, datetime(2026, 10, 20, 0, 0, tzinfo=UTC), 3) == [
        datetime(2026, 10, 26, 13, 0, tzinfo=UTC),
        datetime(2026, 11, 2, 14, 0, tzinfo=UTC),
        datetime(2026, 11, 9, 14, 0, tzinfo=UTC),
    ]


def test_a_team_whose_zone_went_away_keeps_its_digests_and_stops_no_others(
    team, other_team
):
    """The tz database drops a zone now and then (US/Pacific-New in 2020):
    the digests of a team still set to one failed, and so did those of every
    team after it in the same run. It keeps its time of day in UTC, as the
    dashboard then reads its clock."""
    due = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    channels = [
        Channel.objects.create(
            team=owner_team,
            name="Morning news",
            kind="apprise",
            settings={"url": "json://ops.example"},
            digest=Channel.Digest.DAILY,
            digest_at=time(9, 0),
            digest_since=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
            next_digest_at=due,
        )
        for owner_team in (team, other_team)
    ]
    Team.objects.filter(pk=team.pk).update(time_zone="US/Pacific-New")

    digests.queue_due(datetime(2026, 3, 2, 9, 1, tzinfo=UTC))

    for channel in channels:
        channel.refresh_from_db()
        assert channel.digest_since == due
        assert channel.next_digest_at == datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
