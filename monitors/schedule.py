"""Schedules: the one place cron expressions and schedule phrases are understood.

The REST API serializers and the dashboard forms both call `normalize_schedule`, so
the browser and the API can never disagree about what a schedule means. The
scheduler calls `next_run_after` to store the next fire time in UTC.

Evaluation is delegated to cronsim (never a home-made cron evaluator). Two of its
behaviours matter and are tested in tests/test_schedule.py:

* Day-of-month and day-of-week follow Debian/Vixie cron: when both fields are
  restricted (neither starts with `*`) a day matches if *either* matches (OR);
  otherwise both must match. Firecrawl always uses AND, so `0 9 1-7 * 1` means
  "days 1-7 and every Monday" here, as in crontab(5), not "the first Monday".
* Time zones follow Debian cron too. Expressions with a fixed minute and hour
  (`30 2 * * *`) are evaluated on the local wall clock: a time skipped by a
  spring-forward change fires at the first valid minute after the gap (02:30 ->
  03:00), and a time repeated by a fall-back change fires once, at its first
  occurrence. Expressions with `*` in the minute or hour field (`*/30 * * * *`,
  `0 */2 * * *`) step through real time, so the skipped hour simply has no runs
  and the repeated hour runs twice.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal
from functools import cache, lru_cache
from itertools import islice
from zoneinfo import ZoneInfo, available_timezones

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from monitors import rules, schedule_phrases
from monitors.rules import Rule

MAX_LENGTH = 128
DEFAULT_TIMEZONE = "UTC"
DEFAULT_MIN_INTERVAL_MINUTES = 5

# The minimum-interval check looks at every fire time in this window (starting at
# the first run, so rare schedules are measured too). Eight days covers every
# hour boundary and every pair of adjacent weekdays, so the verdict does not
# depend on when the schedule was submitted.
GAP_WINDOW = timedelta(days=8)
# Bounds the work for very frequent schedules (8 days of `*/5` is 2,304 runs).
GAP_MAX_RUNS = 3000
# The longest wait for a first run that a valid cron can need: 29 February
# skips the century years that are not leap years (2096 -> 2104), so a
# leap-day schedule waits up to eight years. Further than that, a schedule
# is a mistake.
FIRST_RUN_HORIZON_YEARS = 8
FIRST_RUN_HORIZON = timedelta(days=FIRST_RUN_HORIZON_YEARS * 366)
# Runs looked at for a schedule's interval: a schedule with more in its first
# GAP_WINDOW shows its shortest gap well within them.
INTERVAL_MAX_RUNS = 200

DAY_NAMES = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
]
WEEKDAYS = frozenset(range(1, 6))
WEEKEND = frozenset({0, 6})
EVERY_DAY = frozenset(range(7))


class ScheduleError(ValueError):
    """A schedule a user gave us is not acceptable; `.message` is shown to them
    and `.code` travels with the API's error (see monitors.rules.Rule).
    `.values` fill in the rule's words where they name what was typed."""

    def __init__(
        self, message: str, code: str = "invalid", values: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.values = values or {}

    @classmethod
    def breaking(cls, rule: Rule, **values: str) -> ScheduleError:
        return cls(rule.api_message(**values), rule.code, values)


@dataclass(frozen=True)
class Schedule:
    cron: str
    timezone: str


# --- Validation -----------------------------------------------------------------------


def normalize_schedule(
    cron: str | None,
    text: str | None,
    timezone: str | None,
    *,
    now: datetime | None = None,
) -> Schedule:
    """Validate a schedule as given by the API or a form; return its stored form.

    Blank strings count as "not given", because HTML forms submit empty fields.
    `now` only matters for the "runs within a year" and minimum-interval checks
    and exists so tests can pin the clock.
    """
    has_cron = bool(cron and cron.strip())
    has_text = bool(text and text.strip())
    if has_cron and has_text:
        raise ScheduleError("Schedule must include either cron or text, not both.")
    if not has_cron and not has_text:
        raise ScheduleError.breaking(rules.SCHEDULE_MISSING)

    zone_name = normalize_timezone(timezone)
    if has_cron:
        assert cron is not None
        _check_length(cron, "Cron expression")
        expr = " ".join(cron.split())
    else:
        assert text is not None
        _check_length(text, "Schedule text")
        expr = text_to_cron(text)

    schedule = Schedule(cron=expr, timezone=zone_name)
    _check_cron(schedule, now or datetime.now(UTC))
    return schedule


def normalize_timezone(name: str | None) -> str:
    """Return the canonical IANA name, accepting any letter case like Firecrawl.

    Firecrawl validates zones with `Intl.DateTimeFormat`, which ignores case, so
    `europe/berlin` must keep working; we store `Europe/Berlin`.
    """
    if name is None or not name.strip():
        return DEFAULT_TIMEZONE
    key = name.strip()
    canonical = _known_zones().get(key.lower())
    if canonical is None:
        raise ScheduleError.breaking(
            rules.TIMEZONE_UNKNOWN, zone=name, hint=timezone_hint(name)
        )
    return canonical


# An offset from UTC as people write it: "GMT+1", "UTC-5".
_OFFSET = re.compile(r"(?:gmt|utc)\s*([+-])\s*(\d{1,2})", re.IGNORECASE)


def timezone_hint(name: str) -> str:
    """ "Did you mean Europe/Berlin? " for a city typed without its region
    ("Berlin", "new york"), the fixed-offset zone of an offset ("GMT+1"), or
    "" when no zone fits."""
    offset = _OFFSET.fullmatch(name.strip())
    if offset:
        return _offset_hint(offset[1], int(offset[2]))
    city = "_".join(name.strip().split()).lower()
    if not city:
        return ""
    meant = sorted(
        zone
        for key, zone in _known_zones().items()
        # Etc/GMT+1 is no city, and would answer "GMT+1" an hour the wrong way.
        if "/" in key and key.rsplit("/", 1)[1] == city and not key.startswith("etc/")
    )[:3]
    return f"did you mean {' or '.join(meant)}? Otherwise " if meant else ""


def _offset_hint(sign: str, hours: int) -> str:
    """The tz database names UTC+1 "Etc/GMT-1": POSIX writes the sign the
    other way round, so "GMT+1" typed as it reads would run two hours off."""
    if not hours:
        return "did you mean UTC? Otherwise "
    zone = f"Etc/GMT{'-' if sign == '+' else '+'}{hours}"
    if zone.lower() not in _known_zones():
        return ""
    return (
        f"did you mean {zone} (UTC{sign}{hours} all year round; such names have "
        "their sign reversed), or a city's zone, which follows summer time? "
        "Otherwise "
    )


_NOT_USER_ZONES = frozenset({"localtime", "posixrules", "Factory"})


@cache
def _known_zones() -> dict[str, str]:
    # available_timezones() scans the tz database on disk, so do it once. A list
    # (rather than trying ZoneInfo(name)) also keeps out paths such as
    # "../../etc/passwd". "localtime" can appear in it on some systems but means
    # "whatever this server uses", and "Factory" is the tz database's
    # placeholder for "not set" (its clock reads "-00"): no zone a user means.
    zones = (available_timezones() - _NOT_USER_ZONES) | {DEFAULT_TIMEZONE}
    return {zone.lower(): zone for zone in zones}


@cache
def zone_names() -> list[str]:
    """The zones the dashboard's lists offer."""
    return sorted(_known_zones().values())


def _check_length(value: str, label: str) -> None:
    if len(value) > MAX_LENGTH:
        raise ScheduleError(f"{label} must be at most {MAX_LENGTH} characters.")


def _check_cron(schedule: Schedule, now: datetime) -> None:
    if len(schedule.cron.split()) != 5:
        raise ScheduleError.breaking(rules.CRON_FIELD_COUNT)
    _check_runs(schedule.cron, _to_minute(now), min_interval_minutes())


def _to_minute(moment: datetime) -> datetime:
    # Fire times fall on whole minutes and runs are taken strictly after the
    # moment, so every moment of one minute gives the same runs as its start.
    return moment.replace(second=0, microsecond=0)


# Walking a schedule's runs over GAP_WINDOW is most of what validating one
# costs; an import of a thousand watches, or a script creating monitors,
# repeats a handful of schedules within the same minute.
@lru_cache(maxsize=256)
def _check_runs(cron: str, minute: datetime, minimum: int) -> None:
    # Walked on UTC's clock, as shortest_interval_minutes is: on a zone's, a
    # daylight-saving change in the window shortens a gap (Berlin's 02:00
    # twice, an hour apart), so "every 2 hours" was refused only when
    # submitted in the 8 days before one. Whether and how soon it first runs
    # does not depend on the zone beyond a day.
    schedule = Schedule(cron, DEFAULT_TIMEZONE)
    try:
        runs = _runs(schedule, minute)
        first = next(runs, None)
    except CronSimError as exc:
        raise ScheduleError.breaking(
            rules.CRON_INVALID,
            cron=schedule.cron,
            reason=_cronsim_reason(exc, schedule.cron),
        ) from exc

    if first is None or first - minute > FIRST_RUN_HORIZON:
        raise ScheduleError.breaking(
            rules.CRON_NEVER_RUNS,
            cron=schedule.cron,
            years=str(FIRST_RUN_HORIZON_YEARS),
        )
    _check_min_interval(first, runs)


def _cronsim_reason(exc: CronSimError, cron: str) -> str:
    # cronsim says "Bad day-of-month"; name the field in a full sentence instead.
    message = str(exc)
    if message == "Bad day-of-month" and _day_fits_other_months(cron):
        # "0 0 31 2 *": each field is fine, the date never comes.
        return "none of the months it names has that day"
    if message.startswith("Bad "):
        return f"the {message.removeprefix('Bad ')} field is not valid"
    return message.lower() or "it could not be read"


def _day_fits_other_months(cron: str) -> bool:
    minute, hour, day, _month, weekday = cron.split()
    try:
        CronSim(f"{minute} {hour} {day} * {weekday}", datetime(2000, 1, 1))
    except CronSimError:
        return False
    return True


def _check_min_interval(first: datetime, later_runs: Iterator[datetime]) -> None:
    minimum = min_interval_minutes()
    previous = first
    for run in islice(later_runs, GAP_MAX_RUNS):
        if run - previous < timedelta(minutes=minimum):
            raise ScheduleError.breaking(
                rules.SCHEDULE_TOO_OFTEN, unit=min_interval_words()
            )
        if run - first > GAP_WINDOW:
            return
        previous = run


def min_interval_words() -> str:
    """The shortest gap allowed, as the rule's words say it: "5 minutes"."""
    minimum = min_interval_minutes()
    return "minute" if minimum == 1 else f"{minimum} minutes"


def min_interval_minutes() -> int:
    # Read lazily so this module works without Django settings (scripts, tests).
    try:
        value = getattr(
            settings, "MIN_SCHEDULE_INTERVAL_MINUTES", DEFAULT_MIN_INTERVAL_MINUTES
        )
    except ImproperlyConfigured:
        return DEFAULT_MIN_INTERVAL_MINUTES
    return int(value)


# --- Natural-language text -> cron ----------------------------------------------------

_DAY_WORDS: dict[str, frozenset[int]] = {
    "weekday": WEEKDAYS,
    "weekend": WEEKEND,
    **{word: frozenset({day}) for word, day in schedule_phrases.DAY_WORDS.items()},
}
# Longest first so the regex prefers "thursday" over "thu"; a trailing "s" makes
# the plural ("mondays", "weekends").
_DAY_WORD = "(?:{})s?".format("|".join(sorted(_DAY_WORDS, key=len, reverse=True)))
_DAYS = rf"(?P<days>{_DAY_WORD}(?: (?:and |& )?{_DAY_WORD})*)"
_CLOCK_TIME = r"(?:noon|midnight|\d{1,2}(?::\d{2})?(?: ?[ap]m)?)"
# One time or several ("at 9am and 5pm"; commas are gone by then).
_TIME = rf"(?: at (?P<time>{_CLOCK_TIME}(?:(?: and| &)? {_CLOCK_TIME})*))?"
_DATE = r"\d{1,2}(?:st|nd|rd|th)?"
_DATES = rf"(?P<dates>last day|{_DATE}(?:(?: and| &)? {_DATE})*)"
_MINUTE_OFFSET = r"(?P<mm>\d{1,2})"

# Office hours: "from 9am to 5pm", "between 09:00 and 17:45".
_WINDOW = (
    rf"(?: (?:from|between) (?P<start>{_CLOCK_TIME})"
    rf" (?:to|and|until|till) (?P<end>{_CLOCK_TIME}))?"
)
_ON = rf"(?: on {_DAYS})?"

_EVERY_N_MINUTES = re.compile(
    rf"every (?P<n>\d+) (?:minutes?|mins?)"
    rf"(?: start(?:ing)?(?: at| on)? :?{_MINUTE_OFFSET})?{_WINDOW}{_ON}"
)
_EVERY_MINUTE = re.compile(r"every (?:minute|min)")
_HOURLY = re.compile(
    rf"(?:hourly|every hour)(?: (?:starting )?at :?{_MINUTE_OFFSET})?{_WINDOW}{_ON}"
)
# "Every 3 hours from 02:17": how schedule_words says an imported interval
# spread over its gap, read back so the form's box can show it in words.
# With an end, the runs keep to those hours ("every 2 hours from 9am to 5pm").
_EVERY_N_HOURS = re.compile(
    rf"every (?P<n>\d+) (?:hours?|hrs?)"
    rf"(?: (?:from|between|starting(?: at)?) (?P<start>{_CLOCK_TIME})"
    rf"(?: (?:to|and|until|till) (?P<end>{_CLOCK_TIME}))?)?{_ON}"
)
_DAILY = re.compile(rf"(?:daily|every day){_TIME}")
# "first monday of the month", "last friday of every month at 5pm".
_NTH = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3}
_NTH |= {"fourth": 4, "4th": 4, "last": 0}
_NTH_WEEKDAY = re.compile(
    r"(?:every |on )?(?:the )?(?P<nth>{})".format("|".join(_NTH))
    + rf" (?P<day>{_DAY_WORD}) of (?:the |every |each )?month{_TIME}"
)
# "every 3 months" (how "quarterly" is read), on the 1st unless days are named.
_EVERY_N_MONTHS = re.compile(
    rf"every (?P<n>\d+) months?(?: on (?:the )?(?:days? )?{_DATES})?{_TIME}"
)
_WEEKLY = re.compile(rf"(?:weekly|every week)(?: on {_DAYS})?{_TIME}")
_MONTHLY = re.compile(
    rf"(?:monthly|every month)(?: on (?:the )?(?:days? )?{_DATES})?{_TIME}"
)
_ON_DAYS = re.compile(rf"(?:every |on )?{_DAYS}{_TIME}")
_ONE_TIME = re.compile(_CLOCK_TIME)
_CLOCK = re.compile(r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))? ?(?P<ampm>[ap]m)?")


_DECIMAL_GAP = re.compile(r"(?<![\d.])(\d*\.\d+) ?(minutes?|mins?|hours?|hrs?)\b")
_DOTTED_TIME = re.compile(r"\b(\d{1,2})\.(\d{2})(?!\d)")
# "every 30min", "every 2hrs": the number and its unit run together.
_NO_SPACE = re.compile(r"\b(\d+)(minutes?|mins?|hours?|hrs?)\b")


def looks_like_cron(value: str) -> bool:
    """Whether a schedule typed in one box is cron rather than words: cron
    starts with `*` or `@`, or with two fields of numbers ("0 9 * * 1-5");
    words may start with a number too ("9am daily", "3 times a day")."""
    fields = value.split()
    if not fields:
        return False
    if fields[0][0] in "*@":
        return True
    return all(re.fullmatch(r"[\d*/,\-]+", field) for field in fields[:2])


def text_to_cron(text: str) -> str:
    """Turn a phrase such as "every weekday at 9am" into a 5-field cron.

    The phrase is cleaned the way Firecrawl cleans it (trimmed, lower-cased, `.`
    and `,` removed, whitespace collapsed), so "Daily at 5:30 P.M." works.
    """
    # A gap with a decimal point ("every 1.5 hours") would lose its dot below
    # and silently become another number (15 hours); say it in whole minutes.
    cleaned = _DECIMAL_GAP.sub(_in_whole_minutes, text.strip().lower())
    # "9.30" is how many people write 9:30; dropping its dot would make 930.
    cleaned = _DOTTED_TIME.sub(r"\1:\2", cleaned)
    phrase = " ".join(cleaned.replace(".", "").replace(",", "").split())
    phrase = phrase.replace("every half hour", "every 30 minutes", 1)
    phrase = _NO_SPACE.sub(r"\1 \2", phrase).replace("everyday", "every day")
    # Everyday ways of saying a schedule, in the words read below; and the
    # phrases no schedule can keep, said why before anything else is tried.
    said, phrase = phrase, schedule_phrases.reword(phrase)
    if refused := schedule_phrases.refusal(phrase, said):
        raise ScheduleError(refused)

    if match := _EVERY_N_MINUTES.fullmatch(phrase):
        return _repeating(match, int(match["n"]))
    if _EVERY_MINUTE.fullmatch(phrase):
        return "* * * * *"
    if match := _HOURLY.fullmatch(phrase):
        return _repeating(match, 60)
    if match := _EVERY_N_HOURS.fullmatch(phrase):
        start = _parse_time(match["start"]) if match["start"] else (0, 0)
        return _every_n_hours(match, int(match["n"]), start)
    if match := _DAILY.fullmatch(phrase):
        return _at_time_on_days(match["time"], EVERY_DAY)
    if match := _WEEKLY.fullmatch(phrase):
        days = _parse_days(match["days"]) if match["days"] else frozenset({0})
        return _at_time_on_days(match["time"], days)
    if match := _ON_DAYS.fullmatch(phrase):
        return _at_time_on_days(match["time"], _parse_days(match["days"]))
    if match := _MONTHLY.fullmatch(phrase):
        return f"{_times_fields(match['time'])} {_dates_field(match['dates'])} * *"
    if match := _NTH_WEEKDAY.fullmatch(phrase):
        day = _one_day(match["day"], said)
        nth = _NTH[match["nth"]]
        return f"{_times_fields(match['time'])} * * {day}{f'#{nth}' if nth else 'L'}"
    if match := _EVERY_N_MONTHS.fullmatch(phrase):
        return _every_n_months(match, int(match["n"]))
    raise ScheduleError.breaking(rules.SCHEDULE_TEXT_UNSUPPORTED)


def _one_day(text: str, said: str) -> int:
    """The day of the week in "first monday of the month": "weekday",
    "weekend" or "mon-fri" there are several days, and cron's `#` and `L`
    take one."""
    days = _parse_days(text)
    if len(days) != 1:
        raise ScheduleError(
            f"'{said}' names more than one day of the week. Name one day, "
            "e.g. 'first monday of the month'."
        )
    (day,) = days
    return day


def _every_n_months(match: re.Match[str], n: int) -> str:
    if n < 1 or 12 % n:
        raise ScheduleError(
            "Month intervals must divide 12 evenly: every 1, 2, 3, 4, 6 or 12 months."
        )
    months = {1: "*", 12: "1"}.get(n, f"*/{n}")
    return f"{_times_fields(match['time'])} {_dates_field(match['dates'])} {months} *"


def _in_whole_minutes(match: re.Match[str]) -> str:
    """ "1.5 hours" as "90 minutes", refused when it is no whole minute."""
    amount = Decimal(match[1]) * (60 if match[2].startswith("h") else 1)
    if amount != amount.to_integral_value():
        raise ScheduleError(
            f"'{match[0]}' is not a whole number of minutes: "
            "give the gap in whole minutes or hours."
        )
    return f"{int(amount)} minutes"


# The gaps a cron keeps evenly all day, in minutes.
_EVEN_GAPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60, 120, 180, 240, 360, 480, 720)


def _gap_words(minutes: int) -> str:
    if minutes == 60:
        return "every hour"
    if minutes % 60 == 0:
        return f"every {minutes // 60} hours"
    return "every minute" if minutes == 1 else f"every {minutes} minutes"


def _repeating(match: re.Match[str], n: int) -> str:
    """Every `n` minutes (60: hourly), all day or within a window of hours,
    on every day or the days named."""
    if n > 60 and n % 60 == 0:
        return _whole_hours_of_minutes(match, n // 60)
    if n > 1 and (n > 60 or 60 % n):
        below = max(gap for gap in _EVEN_GAPS if gap < n)
        above = min((gap for gap in _EVEN_GAPS if gap > n), default=None)
        longer = _gap_words(above) if above else "every day"
        raise ScheduleError(
            f"Checks cannot run every {n} minutes: a schedule repeats evenly "
            "within each hour (every 5, 10, 15, 20 or 30 minutes) or every few "
            "whole hours that divide the day (2, 3, 4, 6, 8 or 12). Choose "
            f"{_gap_words(below)} or {longer}."
        )
    if n < 1 or 60 % n:
        raise ScheduleError(
            "Minute intervals must divide 60 evenly, "
            "e.g. every 5, 10, 15, 20 or 30 minutes."
        )
    start = _parse_time(match["start"]) if match["start"] else None
    offset = _minute_offset(match["mm"]) if match["mm"] or not start else start[1]
    # Firecrawl writes `MM-59/N`, which for MM >= N leaves a long gap before the
    # next hour (":20 every 15" would run :20 :35 :50 and then wait 30 minutes).
    # Taking MM modulo N keeps the runs exactly N minutes apart through :20.
    offset %= n
    minutes = list(range(offset, 60, n))
    hours = "*" if start is None else _window_hours(match, start, minutes)
    days = _dow_field(_parse_days(match["days"])) if match["days"] else "*"
    return f"{_minute_field(n, offset)} {hours} * * {days}"


def _whole_hours_of_minutes(match: re.Match[str], hours: int) -> str:
    """ "every 120 minutes" is every 2 hours (from the minute given, within
    the hours and on the days given)."""
    minute = _minute_offset(match["mm"])
    if not match["start"]:
        return _every_n_hours(match, hours, (0, minute))
    start = _parse_time(match["start"])
    if match["mm"] and minute != start[1]:
        raise ScheduleError(
            f"'{match['start']} to {match['end']}' starts the runs at "
            f"{match['start']}: leave out the starting minute, or start the "
            f"hours at {start[0]}:{minute:02d}."
        )
    return _every_n_hours(match, hours, start)


def _minute_field(n: int, offset: int) -> str:
    if n == 1:
        return "*"
    if n == 60:
        return str(offset)
    return f"{offset}-59/{n}" if offset else f"*/{n}"


def _window_hours(
    match: re.Match[str], start: tuple[int, int], minutes: list[int]
) -> str:
    """Cron's hour field for "from 9am to 5pm": the hours whose runs all fall
    in the window (17:00 ends a quarter-hourly window at 16:45; midnight as
    an end is the day's end)."""
    window = f"{match['start']} to {match['end']}"
    if start[1] != minutes[0]:
        raise ScheduleError(
            f"'{window}' would have runs before {match['start']}: start it at "
            f"{start[0]}:{minutes[0]:02d}."
        )
    end_hour, end_minute = _parse_time(match["end"])
    if (end_hour, end_minute) == (0, 0):
        end_hour = 24
    last = end_hour if minutes[-1] <= end_minute else end_hour - 1
    # A run at midnight itself would be the next day's: the day's last hour
    # is 23, and cron has no hour 24.
    last = min(last, 23)
    if last < start[0]:
        raise ScheduleError(
            f"'{window}' holds no run: the end must come after the start, "
            "on the same day."
        )
    return str(last) if last == start[0] else f"{start[0]}-{last}"


def _every_n_hours(match: re.Match[str], n: int, start: tuple[int, int]) -> str:
    """Every `n` hours from `start` round the clock, or within the hours
    given ("from 9am to 5pm"), on every day or the days named."""
    days = _dow_field(_parse_days(match["days"])) if match["days"] else "*"
    minute = start[1]
    if match["end"]:
        # Within set hours the gap need not divide the day: the runs are
        # start, start + n, … up to the last that fits.
        last = int(_window_hours(match, start, [minute]).split("-")[-1])
        if n < 1:
            raise ScheduleError("Hour intervals must be at least 1 hour.")
        if last - start[0] < n:
            return f"{minute} {start[0]} * * {days}"
        last -= (last - start[0]) % n
        step = "" if n == 1 else f"/{n}"
        return f"{minute} {start[0]}-{last}{step} * * {days}"
    if n < 1 or 24 % n:
        raise ScheduleError(
            "Hour intervals must divide 24 evenly, e.g. every 2, 3, 4, 6, 8 or 12 "
            "hours; within set hours (“every 5 hours from 8am to 6pm”) any gap "
            "works."
        )
    # The gap divides the day, so the runs go round the clock: from 17:00
    # every 3 hours is also 02:00, 05:00, … and the first hour is start % n.
    hour = start[0] % n
    if n == 1:
        return f"{minute} * * * {days}"
    hours = f"{hour}-23/{n}" if hour else f"*/{n}"
    return f"{minute} {hour if n == 24 else hours} * * {days}"


def _minute_offset(text: str | None) -> int:
    minute = int(text) if text else 0
    if minute > 59:
        raise ScheduleError("The minute in a schedule must be between 0 and 59.")
    return minute


def _at_time_on_days(time_text: str | None, days: frozenset[int]) -> str:
    return f"{_times_fields(time_text)} * * {_dow_field(days)}"


def _times_fields(text: str | None) -> str:
    """Cron's minute and hour fields for "9am", or "9am and 5pm": one cron
    runs at every minute listed in every hour listed, so the times given
    must be all of those pairs (9:00 and 17:00, or 9:00 and 9:30)."""
    if not text:
        return "0 0"
    times = {_parse_time(one) for one in _ONE_TIME.findall(text)}
    minutes = sorted({minute for _, minute in times})
    hours = sorted({hour for hour, _ in times})
    if len(times) != len(minutes) * len(hours):
        raise ScheduleError(
            f"'{text}' cannot be one schedule: give times that share their "
            "minutes, such as 9:00 and 17:00, or their hour, such as 9:00 and 9:30."
        )
    return f"{','.join(map(str, minutes))} {','.join(map(str, hours))}"


def _dates_field(text: str | None) -> str:
    """Cron's day-of-month field for "the 1st", "1 and 15" or "last day"."""
    if not text:
        return "1"
    if text == "last day":
        return "L"
    dates = sorted({int(number) for number in re.findall(r"\d+", text)})
    if dates[0] < 1 or dates[-1] > 31:
        raise ScheduleError(f"'{text}' is not a day of the month (1 to 31).")
    if dates[-1] > 28:
        raise ScheduleError(
            f"Day {dates[-1]} is missing from some months, which would then have "
            "no check; to check at the end of every month, say "
            "'monthly on the last day'."
        )
    return ",".join(map(str, dates))


def _parse_time(text: str) -> tuple[int, int]:
    if text == "noon":
        return 12, 0
    if text == "midnight":
        return 0, 0
    match = _CLOCK.fullmatch(text)
    assert match is not None  # _TIME only lets clock-shaped text through
    hour, minute = int(match["h"]), int(match["m"] or 0)
    if match["ampm"]:
        valid_hour = 1 <= hour <= 12
        hour = hour % 12 + (12 if match["ampm"] == "pm" else 0)
    else:
        valid_hour = hour <= 23
    if not valid_hour or minute > 59:
        raise ScheduleError(f"'{text}' is not a valid time of day.")
    return hour, minute


def _parse_days(text: str) -> frozenset[int]:
    days: set[int] = set()
    for word in text.split():
        if word in ("and", "&"):
            continue
        days |= _DAY_WORDS.get(word) or _DAY_WORDS[word.removesuffix("s")]
    return frozenset(days)


def _dow_field(days: frozenset[int]) -> str:
    if days == EVERY_DAY:
        return "*"
    if days == WEEKDAYS:
        return "1-5"
    return ",".join(str(day) for day in sorted(days))


# --- Evaluation -----------------------------------------------------------------------


def next_run_after(schedule: Schedule, moment: datetime) -> datetime:
    """Return the first fire time strictly after `moment`, as an aware UTC datetime."""
    run = next(_runs(schedule, moment), None)
    if run is None:
        raise ScheduleError(f"Cron expression '{schedule.cron}' never runs.")
    return run


def next_runs(schedule: Schedule, moment: datetime, count: int) -> list[datetime]:
    """Return up to `count` fire times after `moment` (the dashboard's preview)."""
    return list(islice(_runs(schedule, moment), max(count, 0)))


def interval_minutes(schedule: Schedule, moment: datetime) -> int:
    """Return the minutes between the next two fire times after `moment`.

    For irregular schedules (weekdays only, DST days) this depends on `moment`.
    """
    runs = next_runs(schedule, moment, 2)
    if len(runs) < 2:
        raise ScheduleError(f"Cron expression '{schedule.cron}' never runs twice.")
    return max(1, int((runs[1] - runs[0]).total_seconds() // 60))


def shortest_interval_minutes(cron: str, moment: datetime) -> int:
    """The shortest gap, in minutes, between two runs of `cron` in the
    GAP_WINDOW after `moment`: how often the schedule runs at most.

    Unlike interval_minutes it does not depend on the moment within a week (a
    weekday schedule asked on a Friday), and it is worked out on UTC's clock,
    so a daylight-saving change in the window does not shorten a day. It is
    stored with the monitor when its schedule is set (Monitor.set_schedule).
    """
    return _shortest_interval(cron, _to_minute(moment))


@lru_cache(maxsize=256)
def _shortest_interval(cron: str, moment: datetime) -> int:
    runs = _runs(Schedule(cron, "UTC"), moment)
    first = previous = next(runs, None)
    shortest: timedelta | None = None
    for run in islice(runs, INTERVAL_MAX_RUNS):
        assert previous is not None and first is not None
        gap = run - previous
        shortest = gap if shortest is None else min(shortest, gap)
        if run - first > GAP_WINDOW or shortest <= timedelta(minutes=1):
            break
        previous = run
    if shortest is None:
        raise ScheduleError(f"Cron expression '{cron}' never runs twice.")
    return max(1, int(shortest.total_seconds() // 60))


def _runs(schedule: Schedule, moment: datetime) -> Iterator[datetime]:
    """Yield fire times strictly after `moment`, in UTC, strictly increasing.

    Raises CronSimError for an invalid expression as soon as it is created.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("moment must be a timezone-aware datetime")
    after = moment.astimezone(UTC)
    zone = _zone(schedule.timezone)
    if zone is UTC or _on_the_wall_clock(schedule.cron):
        local = after.astimezone(zone)
        return _increasing(CronSim(schedule.cron, local), after)
    return _increasing(_in_real_time(schedule.cron, zone, after), after)


def _on_the_wall_clock(cron: str) -> bool:
    # cronsim's own test for Debian cron's fixed-time jobs (see the module's
    # docstring); the others are walked by _in_real_time.
    minute, hour = cron.split()[:2]
    return not minute.startswith("*") and not hour.startswith("*")


def _in_real_time(cron: str, zone: tzinfo, after: datetime) -> Iterator[datetime]:
    """The moments whose time on `zone`'s clock matches `cron`, in order: a
    time the clock skips has no run, a time it repeats runs both times.

    cronsim does this itself for an aware start by stepping real time a whole
    hour at a time, which lands on :30 in a zone whose clock moves half an
    hour (Australia/Lord_Howe) and then misses runs until an hour matches
    again. Walking the naive wall clock and placing each time on the real
    clock afterwards is exact for every zone."""
    local = after.astimezone(zone)
    # While the clock repeats, the second pass of wall times before `local`
    # is still ahead: start the walk at the start of the repeat.
    repeat = _offset(local) - _offset(local.replace(fold=1))
    start = local.replace(tzinfo=None) - max(repeat, timedelta(0))
    return _on_the_real_clock(CronSim(cron, start), zone)


def _on_the_real_clock(walls: Iterator[datetime], zone: tzinfo) -> Iterator[datetime]:
    pending: list[datetime] = []
    for wall in walls:
        first = wall.replace(tzinfo=zone, fold=0)
        if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
            continue  # skipped by the clock
        second = wall.replace(tzinfo=zone, fold=1)
        bound = first.astimezone(UTC)
        # Every later wall time is at or after `bound` on the real clock.
        yield from _take_until(pending, bound)
        heapq.heappush(pending, bound)
        if _offset(second) != _offset(first):
            heapq.heappush(pending, second.astimezone(UTC))
    yield from _take_until(pending, None)


def _offset(moment: datetime) -> timedelta:
    offset = moment.utcoffset()
    assert offset is not None  # always given a zone
    return offset


def _take_until(pending: list[datetime], bound: datetime | None) -> Iterator[datetime]:
    while pending and (bound is None or pending[0] < bound):
        yield heapq.heappop(pending)


def _increasing(fire_times: Iterator[datetime], after: datetime) -> Iterator[datetime]:
    # cronsim walks fixed-time expressions on the naive wall clock. During a
    # fall-back hour that clock runs twice, so for a `moment` in the repeated hour
    # it can return the first occurrence of a wall time that is already in the
    # past (01:30 EDT when asked after 01:10 EST). Skip such times; cronsim
    # always moves its wall clock forward and gives up after 50 years, so this
    # cannot loop forever.
    last = after
    for fire_time in fire_times:
        run = fire_time.astimezone(UTC)
        if run > last:
            last = run
            yield run


def _zone(name: str) -> tzinfo:
    # cronsim special-cases datetime.UTC and then skips its DST handling, which is
    # exact for UTC and cheaper than ZoneInfo("UTC").
    return UTC if name == DEFAULT_TIMEZONE else ZoneInfo(name)
