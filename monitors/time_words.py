"""Moments in plain words: counted from now ("in 12 minutes", "3 hours ago")
or on a clock ("Mon 24 Nov 2025, 10:30 CET").

The dashboard's `relative` and `local` filters say them, and so do the
messages (checks.notify: the retry sentence, digests, change e-mails).
For machines, `wire_time` writes every moment the API, webhooks and exports
give in one format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from django.utils import timezone


def in_zone(moment: datetime, zone: str | None) -> datetime:
    """`moment` in the zone named (a monitor's, a team's), else the current one."""
    try:
        tz = ZoneInfo(zone) if zone else timezone.get_current_timezone()
    except (ValueError, KeyError):
        tz = timezone.get_current_timezone()
    return moment.astimezone(tz)


def clock_text(value: datetime, seconds: bool = False) -> str:
    """ "Mon 24 Nov 2025, 10:30 CET" for a moment already in its zone."""
    clock = f"{value:%H:%M:%S}" if seconds else f"{value:%H:%M}"
    return f"{value:%a %d %b %Y}, {clock} {value.tzname()}"


def on_the_clock(moment: datetime, zone: str | None) -> str:
    """A moment on a zone's clock, as the dashboard says it."""
    return clock_text(in_zone(moment, zone))


def relative(moment: datetime | None) -> str:
    """ "in 12 minutes", "3 hours ago", "just now"."""
    if moment is None:
        return ""
    delta = moment - timezone.now()
    seconds = int(delta.total_seconds())
    future = seconds > 0
    seconds = abs(seconds)
    if seconds < 45:
        return "in a few seconds" if future else "just now"
    if seconds < 90 * 60:
        count, unit = max(1, round(seconds / 60)), "minute"
    elif seconds < 36 * 3600:
        count, unit = round(seconds / 3600), "hour"
    else:
        count, unit = round(seconds / 86400), "day"
    words = f"{count} {unit}{'s' if count != 1 else ''}"
    return f"in {words}" if future else f"{words} ago"


def wire_time(moment: datetime) -> str:
    """A moment as Firecrawl's server writes it (JavaScript's toISOString):
    UTC, milliseconds and "Z", e.g. 2026-05-17T15:30:00.000Z. One format
    whether or not the moment falls on a whole second (isoformat() drops the
    fraction then, and writes six digits otherwise), so a client that parses
    Firecrawl's format reads every moment Pagewatch gives."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


# A due run normally starts within its spread delay and a dispatch tick (well
# under a minute); later than this, the scheduler is down or behind.
OVERDUE_AFTER = timedelta(minutes=1)


def next_run(moment: datetime | None) -> str:
    """When a monitor runs next, as the dashboard says it: "in 12 minutes";
    a run overdue says it waits to start, not "1 hour ago" as if it ran."""
    if moment is None:
        return ""
    if timezone.now() - moment < OVERDUE_AFTER:
        return relative(moment)
    return f"waiting to start (due {relative(moment)})"
