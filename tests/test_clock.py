"""One clock in the team's History: every check in one time zone (the
viewer's choice, remembered; by default the zone most of the team's monitors
use), to the second where two checks share a minute; a monitor's own history
keeps its zone, and says so."""

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
    # Berlin is the zone of two of the three kinds of monitors: CET for all.
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
    assert times == ["Mon 12 Jan 2026, 05:05 CET", "Mon 12 Jan 2026, 05:00 CET"]
