"""Schedules in plain words: what the dashboard shows instead of cron.

`describe` says when a schedule runs, for non-technical people; the form's
schedule box shows that description when monitors.schedule reads it back as
the same schedule (`schedule_box_text`). Understanding and evaluating
schedules stays in monitors.schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from cronsim import CronSim, CronSimError

from monitors.schedule import (
    DAY_NAMES,
    EVERY_DAY,
    WEEKDAYS,
    WEEKEND,
    Schedule,
    ScheduleError,
    text_to_cron,
)

# What a schedule with no plain words is called; its cron says the rest.
CUSTOM_SCHEDULE = "Custom schedule"
# Any fixed instant works: cronsim only parses the fields here.
_PARSE_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)
_MAX_LISTED_TIMES = 4
_MAX_LISTED_DATES = 4
_EVERY_DATE = frozenset(range(1, 32))
_EVERY_MONTH = tuple(range(1, 13))
MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass(frozen=True)
class _Fields:
    """When a cron runs, as sets a description can be read from. Two crons
    with equal fields run at the same times (`MON-FRI` and `1-5`)."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    dates: frozenset[int]  # days of the month; {CronSim.LAST} for `L`
    months: tuple[int, ...]
    weekdays: frozenset[int]  # 0 is Sunday


def describe(schedule: Schedule) -> str | None:
    """Say when a schedule runs, in words for non-technical people, or None
    when there are no plain words for it (the caller then shows the cron).

    Works from the parsed fields, not the text, so `0 9 * * MON-FRI` and
    `0 9 * * 1-5` read the same. The caller appends the time zone.
    """
    if (nth := _describe_nth_weekday(schedule.cron)) is not None:
        return nth
    fields = _parse_fields(schedule.cron)
    if fields is None:
        return None
    minutes, hours = list(fields.minutes), list(fields.hours)
    repeating = _describe_repeats(minutes, hours)
    times: str | None = None
    if repeating is None:
        listed = [f"{hour:02d}:{minute:02d}" for hour in hours for minute in minutes]
        if len(listed) <= _MAX_LISTED_TIMES:
            times = _join(listed)
        else:
            repeating = _describe_window(minutes, hours)
    if repeating is None and times is None:
        return None

    if fields.dates != _EVERY_DATE:
        dates = _describe_dates(fields.dates)
        if dates is None:
            return None
        if fields.months == _EVERY_MONTH and not repeating:
            # The words text_to_cron reads, so the form's box can show them.
            return f"Monthly on {dates} at {times}"
        step = _month_step(fields.months)
        if step and not repeating:
            # "quarterly": the words text_to_cron reads, as above.
            return f"Every {step} months on {dates} at {times}"
        of = "every month" if fields.months == _EVERY_MONTH else _months(fields)
        when = f"on {dates} of {of}"
        return f"{repeating} {when}" if repeating else f"At {times} {when}"

    in_months = "" if fields.months == _EVERY_MONTH else f" in {_months(fields)}"
    if fields.weekdays == EVERY_DAY:
        phrase = repeating or f"Daily at {times}"
    elif repeating:
        phrase = f"{repeating} on {_plural_days(fields.weekdays)}"
    else:
        phrase = f"{_describe_days(fields.weekdays)} at {times}"
    return phrase + in_months


def schedule_box_text(schedule: Schedule) -> str:
    """What the form's schedule box shows for a stored schedule: its
    description when text_to_cron reads that back as the same schedule, else
    the cron, the only way left to write it. People who never typed cron then
    never meet it, and saving the form unchanged keeps the schedule."""
    words = describe(schedule)
    if words is None:
        return schedule.cron
    try:
        same = _parse_fields(text_to_cron(words)) == _parse_fields(schedule.cron)
    except ScheduleError:
        same = False  # "Monthly on days 1 to 7 at 09:00": words only people read
    return words if same else schedule.cron


_ORDINAL_WORDS = {1: "First", 2: "Second", 3: "Third", 4: "Fourth", 5: "Fifth"}


def _describe_nth_weekday(cron: str) -> str | None:
    """ "First Monday of the month at 09:00" for `0 9 * * 1#1`, "Last Friday
    of the month at 17:00" for `0 17 * * 5L` (words text_to_cron reads, so
    the form's box can show them)."""
    fields = cron.split()
    if len(fields) != 5 or fields[2:4] != ["*", "*"]:
        return None
    try:
        parsed = CronSim(cron, _PARSE_REFERENCE)
    except (CronSimError, ValueError):
        return None
    if len(parsed.weekdays) != 1:
        return None
    (weekday,) = parsed.weekdays
    if not isinstance(weekday, tuple):
        return None
    day, nth = weekday
    which = "Last" if nth == CronSim.LAST else _ORDINAL_WORDS.get(nth)
    listed = [
        f"{hour:02d}:{minute:02d}"
        for hour in sorted(parsed.hours)
        for minute in sorted(parsed.minutes)
    ]
    if which is None or len(listed) > _MAX_LISTED_TIMES:
        return None
    return f"{which} {DAY_NAMES[day % 7]} of the month at {_join(listed)}"


def _month_step(months: tuple[int, ...]) -> int | None:
    """2, 3, 4 or 6 for months every so many from January (`*/3`)."""
    step = 12 // len(months)
    if len(months) > 1 and months == tuple(range(1, 13, step)):
        return step
    return None


def _parse_fields(cron: str) -> _Fields | None:
    """The cron's fields, or None when they hold something with no plain words
    yet (`5L`, `1#2`, `LW`, or a day of the month *and* a weekday)."""
    if len(cron.split()) != 5:
        return None
    try:
        parsed = CronSim(cron, _PARSE_REFERENCE)
    except (CronSimError, ValueError):
        return None
    if any(not isinstance(day, int) for day in parsed.weekdays):
        return None
    dates = frozenset(parsed.days)
    weekdays = frozenset(day % 7 for day in parsed.weekdays if isinstance(day, int))
    every_date, every_weekday = dates == _EVERY_DATE, weekdays == EVERY_DAY
    if not parsed.day_and and (every_date or every_weekday):
        # crontab(5): with both fields written out a day matches either one,
        # so `0 9 1-31 * 1` runs every day, not on Mondays.
        dates, weekdays = _EVERY_DATE, EVERY_DAY
    elif not every_date and not every_weekday:
        return None
    if min(dates) < 1 and dates != {CronSim.LAST}:
        return None
    return _Fields(
        minutes=tuple(sorted(parsed.minutes)),
        hours=tuple(sorted(parsed.hours)),
        dates=dates,
        months=tuple(sorted(parsed.months)),
        weekdays=weekdays,
    )


def _describe_repeats(minutes: list[int], hours: list[int]) -> str | None:
    """A schedule that repeats all day long: "Every 30 minutes"."""
    if len(hours) == 24:
        if phrase := _describe_minutes(minutes):
            return phrase
        if len(minutes) <= _MAX_LISTED_TIMES:
            return "Hourly at " + _join([f":{minute:02d}" for minute in minutes])
    if len(minutes) == 1:
        return _describe_hours(minutes[0], hours)
    return None


def _describe_minutes(minutes: list[int]) -> str | None:
    step = _even_step(minutes, 60)
    if step is None:
        return None
    if step == 1:
        return "Every minute"
    if step == 60:
        return f"Hourly at :{minutes[0]:02d}"
    if minutes[0] == 0:
        return f"Every {step} minutes"
    # The words text_to_cron reads, so the form's box can show them.
    return f"Every {step} minutes starting at :{minutes[0]:02d}"


def _describe_hours(minute: int, hours: list[int]) -> str | None:
    step = _even_step(hours, 24)
    if step is None:
        return _describe_hours_within(minute, hours)
    if step in (1, 24):
        return None  # hourly is handled by minutes; daily lists its time
    if hours[0] == 0 and minute == 0:
        return f"Every {step} hours"
    return f"Every {step} hours from {hours[0]:02d}:{minute:02d}"


def _describe_hours_within(minute: int, hours: list[int]) -> str | None:
    """Every few hours within set hours: "Every 2 hours from 09:00 to 17:00"
    (the words text_to_cron reads, so the form's box can show them)."""
    if len(hours) < 3:
        return None  # two times read better listed ("at 09:00 and 13:00")
    step = hours[1] - hours[0]
    if step < 2 or hours != list(range(hours[0], hours[-1] + 1, step)):
        return None
    return (
        f"Every {step} hours from {hours[0]:02d}:{minute:02d} "
        f"to {hours[-1]:02d}:{minute:02d}"
    )


def _describe_window(minutes: list[int], hours: list[int]) -> str | None:
    """Evenly through a block of hours (office hours): "Every 15 minutes
    from 09:00 to 17:45"."""
    if hours != list(range(hours[0], hours[-1] + 1)):
        return None
    step = _even_step(minutes, 60)
    if step is None:
        return None
    every = {1: "Every minute", 60: "Hourly"}.get(step, f"Every {step} minutes")
    first, last = (
        f"{hours[0]:02d}:{minutes[0]:02d}",
        f"{hours[-1]:02d}:{minutes[-1]:02d}",
    )
    return f"{every} from {first} to {last}"


def _even_step(values: list[int], cycle: int) -> int | None:
    """Return the step if `values` are evenly spaced all round the cycle."""
    step = cycle // len(values)
    if step * len(values) != cycle:
        return None
    if any(b - a != step for a, b in zip(values, values[1:], strict=False)):
        return None
    return step


def _describe_days(days: frozenset[int]) -> str:
    if days == EVERY_DAY:
        return "Daily"
    if days == WEEKDAYS:
        return "Every weekday"
    if days == WEEKEND:
        return "Weekends"
    if len(days) == 1:
        return f"Weekly on {DAY_NAMES[next(iter(days))]}"
    return _join([f"{DAY_NAMES[day]}s" for day in _monday_first(days)])


def _plural_days(days: frozenset[int]) -> str:
    if days == WEEKDAYS:
        return "weekdays"
    if days == WEEKEND:
        return "weekends"
    return _join([f"{DAY_NAMES[day]}s" for day in _monday_first(days)])


def _monday_first(days: frozenset[int]) -> list[int]:
    # The way people list a working week.
    return sorted(days, key=lambda day: (day - 1) % 7)


def _describe_dates(dates: frozenset[int]) -> str | None:
    if dates == {CronSim.LAST}:
        return "the last day"
    ordered = sorted(dates)
    if len(ordered) == 1:
        return f"day {ordered[0]}"
    if len(ordered) <= _MAX_LISTED_DATES:
        return "days " + _join([str(date) for date in ordered])
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"days {ordered[0]} to {ordered[-1]}"
    return None


def _months(fields: _Fields) -> str:
    return _join([MONTH_NAMES[month - 1] for month in fields.months])


def _join(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} and {items[-1]}"
