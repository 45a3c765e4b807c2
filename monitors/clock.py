"""One clock for the team-wide lists: the History feed shows every check in
one time zone, the viewer's choice (kept in their session), else the team's
own zone (Team.time_zone, set on the Team page; UTC until set). A monitor's
own pages keep the monitor's zone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from datetime import datetime
from zoneinfo import ZoneInfo

from django.http import HttpRequest

from monitors.models import Monitor, Team
from monitors.schedule import ScheduleError, normalize_timezone

SESSION_KEY = "pagewatch_time_zone"


def team_zone(team: Team) -> str:
    """The team's own zone; UTC should it have stopped being one (a zone the
    tz database dropped)."""
    try:
        return normalize_timezone(team.time_zone)
    except ScheduleError:
        return "UTC"


def zones_to_offer(team: Team, chosen: str) -> list[str]:
    """The zones a viewer may pick from: the team's, its monitors', UTC and
    theirs."""
    zones = set(
        Monitor.objects.alive()
        .filter(team=team)
        .values_list("schedule_timezone", flat=True)
    )
    return sorted(zones | {"UTC", team_zone(team), chosen})


def viewer_zone(request: HttpRequest, team: Team) -> str:
    """The zone this viewer reads team-wide lists in; `?tz=` changes it and
    is remembered. A zone that is not one (or went away) is ignored."""
    wanted = request.GET.get("tz")
    if wanted:
        with contextlib.suppress(ScheduleError):
            request.session[SESSION_KEY] = normalize_timezone(wanted)
    stored = request.session.get(SESSION_KEY)
    if isinstance(stored, str):
        try:
            return normalize_timezone(stored)
        except ScheduleError:
            del request.session[SESSION_KEY]
    return team_zone(team)


def shared_minutes(moments: Iterable[datetime], zone: str) -> list[bool]:
    """For each moment, whether a neighbour in the list reads the same to the
    minute in `zone`: those are shown to the second, so two checks a few
    seconds apart never look identical."""
    tz = ZoneInfo(zone)
    minutes = [m.astimezone(tz).replace(second=0, microsecond=0) for m in moments]
    return [
        (i > 0 and minutes[i - 1] == minute)
        or (i + 1 < len(minutes) and minutes[i + 1] == minute)
        for i, minute in enumerate(minutes)
    ]
