"""One clock in the team's History: every check in one time zone (the
viewer's choice, remembered; by default the team's own zone), to the second
where two checks share a minute; a monitor's own history keeps its zone, and
says so. The other team-wide pages read on the team's clock."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.test_history import make_check, make_monitor, make_page, web  # noqa: F401

pytestmark = pytest.mark.django_db

# Four checks in three monitors' zones, newest first: 04:50:40 UTC (Berlin),
# 04:49:10 UTC (London), 04:49:05 UTC (UTC), 04:48 UTC (Berlin).
MOMENTS = [
    ("Berlin", "Europe/Berlin", datetime(2026, 1, 12, 4, 50, 40, tzinfo=UTC)),
    ("London", "Europe/London", datetime(2026, 1, 12, 4, 49, 10, tzinfo=UTC)),
    ("Plain", "UTC", datetime(2026, 1, 12, 4, 49, 5, tzinfo=UTC)),
    ("Berlin 2", "Europe/Berlin", datetime(2026, 1, 12, 4, 48, 0, tzinfo=UTC)),
]


@pytest.fixture
def feed(team):
    team.time_zone = "Europe/Berlin"
    team.save(update_fields=["time_zone"])
    for name, zone, when in MOMENTS:
        monitor = make_monitor(team, name)
        monitor.schedule_timezone = zone
        monitor.save(update_fields=["schedule_timezone"])
        make_page(make_check(monitor, when, changed=1), f"https://e.com/{name}")


def feed_times(response) -> list[str]:
    body = response.content.decode()
    return re.findall(r'<time datetime="[^"]+" title="[^"]+">([^<]+)</time>', body)


def test_the_team_history_reads_in_the_teams_zone_in_order(web, feed):  # noqa: F811
    times = feed_times(web.get(reverse("team-history")))
    assert times == [
        "Mon 12 Jan 2026, 05:50 CET",
        "Mon 12 Jan 2026, 05:49:10 CET",
        "Mon 12 Jan 2026, 05:49:05 CET",
        "Mon 12 Jan 2026, 05:48 CET",
    ]


def test_a_viewers_zone_is_remembered(web, feed):  # noqa: F811
    web.get(reverse("team-history"), {"tz": "utc"})
    times = feed_times(web.get(reverse("team-history")))
    assert times[0] == "Mon 12 Jan 2026, 04:50 UTC"
    assert (
        'option value="UTC" selected'
        in web.get(reverse("team-history")).content.decode()
    )


def test_a_zone_that_is_not_one_is_ignored(web, feed):  # noqa: F811
    response = web.get(reverse("team-history"), {"tz": "Mars/Olympus"})
    assert response.status_code == 200
    assert feed_times(response)[0] == "Mon 12 Jan 2026, 05:50 CET"


def test_a_monitors_own_history_keeps_its_zone_and_says_so(web, team, feed):  # noqa: F811
    london = team.monitors.get(name="London")
    response = web.get(reverse("team-history"), {"monitor": london.pk})
    words = " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())
    assert "Times shown in this monitor’s time zone, Europe/London." in words
    assert feed_times(response)[0] == "Mon 12 Jan 2026, 04:49 GMT"


def test_checks_in_different_minutes_show_no_seconds(web, team):  # noqa: F811
    monitor = make_monitor(team, "Only")
    start = datetime(2026, 1, 12, 4, 0, tzinfo=UTC)
    for minutes in (0, 5):
        make_check(monitor, start + timedelta(minutes=minutes), changed=1)
    times = feed_times(web.get(reverse("team-history")))
    assert times == ["Mon 12 Jan 2026, 04:05 UTC", "Mon 12 Jan 2026, 04:00 UTC"]


def test_the_teams_own_zone_wins_over_the_zone_its_monitors_run_in(web, team, feed):  # noqa: F811
    team.time_zone = "America/New_York"
    team.save(update_fields=["time_zone"])
    response = web.get(reverse("team-history"))
    # Three of the four checks are Berlin's or London's: the team's clock
    # is still New York's.
    assert feed_times(response)[0] == "Sun 11 Jan 2026, 23:50 EST"
    assert 'option value="America/New_York" selected' in response.content.decode()


def test_a_team_that_never_set_its_zone_reads_utc_though_its_monitors_run_in_berlin(
    web,  # noqa: F811
    team,
):
    monitor = make_monitor(team, "Only")
    make_check(monitor, datetime(2026, 1, 12, 4, 0, tzinfo=UTC), changed=1)
    assert team.time_zone == ""
    assert feed_times(web.get(reverse("team-history"))) == [
        "Mon 12 Jan 2026, 04:00 UTC"
    ]


def test_a_viewers_choice_still_wins_over_the_teams_zone(web, team, feed):  # noqa: F811
    web.get(reverse("team-history"), {"tz": "Europe/London"})
    assert feed_times(web.get(reverse("team-history")))[0] == (
        "Mon 12 Jan 2026, 04:50 GMT"
    )


def test_team_wide_pages_say_their_times_on_the_teams_clock(web, team):  # noqa: F811
    from monitors.models import ApiKey
    from teams.activity import SYSTEM, record
    from teams.models import Activity

    team.time_zone = "America/New_York"
    team.save(update_fields=["time_zone"])
    moment = datetime(2026, 1, 12, 4, 50, tzinfo=UTC)
    entry = record(SYSTEM, team, Activity.Kind.MONITOR_RUN)
    Activity.objects.filter(pk=entry.pk).update(at=moment)
    key, _ = ApiKey.issue(team, name="reports")
    ApiKey.objects.filter(pk=key.pk).update(created_at=moment)
    for page in ("team-activity", "api-keys"):
        body = web.get(reverse(page)).content.decode()
        assert 'title="Sun 11 Jan 2026, 23:50 EST"' in body, page


def test_the_team_page_says_what_the_teams_zone_is_used_for(web, team):  # noqa: F811
    body = web.get(reverse("team-members")).content.decode()
    assert "The dashboard shows the team's times in it" in body.replace("&#x27;", "'")


def test_the_upgrade_starts_each_team_at_the_zone_most_of_its_monitors_run_in(
    team, other_team
):
    """Until teams could set their zone, every team's was UTC and History read
    its monitors' zone: the upgrade keeps that clock instead of turning it to
    UTC, and leaves a team with mostly UTC monitors, or none, at UTC."""
    import importlib

    from django.apps import apps as django_apps

    from monitors.models import Team

    migration = importlib.import_module(
        "monitors.migrations.0017_team_zone_from_its_monitors"
    )
    for name, zone in [("A", "Europe/Berlin"), ("B", "Europe/Berlin"), ("C", "UTC")]:
        monitor = make_monitor(team, name)
        monitor.schedule_timezone = zone
        monitor.save(update_fields=["schedule_timezone"])
    gone = make_monitor(other_team, "Gone")
    gone.schedule_timezone = "Asia/Tokyo"
    gone.deleted_at = datetime(2026, 1, 1, tzinfo=UTC)
    gone.save(update_fields=["schedule_timezone", "deleted_at"])
    empty = Team.objects.create(name="Empty", slug="empty")
    Team.objects.update(time_zone="UTC")  # every team's, before this upgrade

    migration.from_its_monitors(django_apps, None)

    zones = dict(Team.objects.values_list("slug", "time_zone"))
    assert zones[team.slug] == "Europe/Berlin"
    assert zones[other_team.slug] == "UTC"
    assert zones[empty.slug] == "UTC"
