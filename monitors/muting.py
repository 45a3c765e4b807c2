"""Muting a monitor's notifications, in people's terms: the dashboard's
choices of how long ("for 1 hour", "until the next 9:00 in the morning",
"for a week", "until I unmute"), the moment each ends, and how that moment is said.

The mute itself is Monitor.muted_until (MonitorQuerySet.mute/unmute for
many); checks.notify decides from it; monitors.rules holds its one rule."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from monitors import rules
from monitors.time_words import in_zone, wire_time

# "The next 9:00 in the morning" is this time of day on the team's clock.
MORNING = time(9, 0)

# (value, the words the dashboard offers), in the order offered.
CHOICES = [
    ("1h", "For 1 hour"),
    ("morning", "Until the next 9:00 in the morning"),
    ("week", "For a week"),
    ("forever", "Until I unmute"),
]
_VALUES = {value for value, _ in CHOICES}


def mute_end(choice: str, now: datetime, zone: str) -> datetime | None:
    """When a mute chosen at `now` ends (None: not a choice). "Morning" is
    the next 9:00 on the team's clock, whatever the offset is then (DST):
    today's before 9:00 (chosen at 00:30, it ends that morning, not 32
    hours later), tomorrow's from 9:00 on."""
    if choice not in _VALUES:
        return None
    if choice == "1h":
        return now + timedelta(hours=1)
    if choice == "week":
        return now + timedelta(days=7)
    if choice == "forever":
        return rules.MUTED_FOREVER
    local = in_zone(now, zone)
    day = local.date()
    if local.time() >= MORNING:
        day += timedelta(days=1)
    # The zone itself, not now's offset: zoneinfo gives 9:00 on that day its
    # own offset, so a DST change overnight still ends it at 9:00.
    return datetime.combine(day, MORNING, tzinfo=local.tzinfo)


def until_words(until: datetime, zone: str) -> str:
    """A mute's end as the dashboard says it after "until": "Tue 1 Dec 14:00
    (Europe/Berlin)", or "further notice" for a mute with no end."""
    if until >= rules.MUTED_FOREVER:
        return "further notice"
    local = in_zone(until, zone)
    return f"{local:%a} {local.day} {local:%b %H:%M} ({zone})"


def log_details(until: datetime | None, zone: str) -> dict[str, object]:
    """What the activity log keeps of a mute set (its end, and in words on
    the team's clock then) or ended."""
    if until is None:
        return {"unmuted": True}
    return {"muted_until": wire_time(until), "until": until_words(until, zone)}
