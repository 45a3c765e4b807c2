"""Muting a monitor's notifications, in people's terms: the dashboard's
choices of how long ("for 1 hour", "until tomorrow morning", "for a week",
"until I unmute"), the moment each ends, and how that moment is said.

The mute itself is Monitor.muted_until (MonitorQuerySet.mute/unmute for
many); checks.notify decides from it; monitors.rules holds its one rule."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from monitors import rules
from monitors.time_words import in_zone, wire_time

# "Tomorrow morning" is this time of day on the team's clock.
MORNING = time(9, 0)

# (value, the words the dashboard offers), in the order offered.
CHOICES = [
    ("1h", "For 1 hour"),
    ("morning", "Until tomorrow morning (9:00)"),
    ("week", "For a week"),
    ("forever", "Until I unmute"),
]
_VALUES = {value for value, _ in CHOICES}


def mute_end(choice: str, now: datetime, zone: str) -> datetime | None:
    """When a mute chosen at `now` ends (None: not a choice). Tomorrow
    morning is 9:00 on the team's clock, whatever the offset is then (DST)."""
    if choice not in _VALUES:
        return None
    if choice == "1h":
        return now + timedelta(hours=1)
    if choice == "week":
        return now + timedelta(days=7)
    if choice == "forever":
        return rules.MUTED_FOREVER
    today = in_zone(now, zone)
    # The zone itself, not today's offset: zoneinfo gives 9:00 tomorrow the
    # offset of tomorrow, so a DST change overnight still ends it at 9:00.
    return datetime.combine(
        today.date() + timedelta(days=1), MORNING, tzinfo=today.tzinfo
    )


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
