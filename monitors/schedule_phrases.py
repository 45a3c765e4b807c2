"""Schedules as people say them, read as the phrases monitors.schedule knows.

Two tables, no language engine. `REWORDINGS` turns an everyday way of saying
a schedule ("9am daily", "twice a day", "Mon-Fri 9am", "every 6h") into the
words the schedule grammar reads ("daily at 9am", "every 12 hours", …), one
pattern at a time and in order. `REFUSALS` names the phrases no schedule
can keep evenly ("every other day") or that leave the time open ("every
morning"), each with why and the nearest phrase that works.

Both work on a phrase already cleaned by monitors.schedule.text_to_cron
(lower case, no `.` or `,`, single spaces), and import nothing of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# The days of the week and their short forms (0 is Sunday, as in cron): the
# one list of them, which monitors.schedule's grammar reads too.
DAY_WORDS: dict[str, int] = {
    "sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4,
    "friday": 5, "saturday": 6,
    "sun": 0, "mon": 1, "tue": 2, "tues": 2, "wed": 3, "thu": 4, "thur": 4,
    "thurs": 4, "fri": 5, "sat": 6,
}  # fmt: skip
# Longest first, so "thursday" is preferred over "thu".
_DAY_NAMES = "|".join(sorted(DAY_WORDS, key=len, reverse=True))
_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}
# A time of day written so it cannot be a count: "9am", "9 pm", "17:30", "noon".
_SURE_TIME = r"(?:noon|midnight|\d{1,2}:\d{2}(?: ?[ap]m)?|\d{1,2} ?[ap]m)"
_SURE_TIMES = rf"{_SURE_TIME}(?:(?: and| &)? {_SURE_TIME})*"
# What may come before a time that lacks its "at": "daily 9am", "mondays 9am".
_WHEN = (
    rf"daily|day|days|weekdays?|weekends?|weekly|week|monthly|month|"
    rf"(?:{_DAY_NAMES})s?|\d{{1,2}}(?:st|nd|rd|th)|last day"
)
_DATE = r"\d{1,2}(?:st|nd|rd|th)?"
_DATES = rf"(?:last day|{_DATE}(?:(?: and| &)? {_DATE})*)"
_PARTS_OF_DAY = {
    "morning": "8am",
    "afternoon": "2pm",
    "evening": "6pm",
    "night": "10pm",
}
# The hours a refusal suggests for "every 15 minutes in the morning".
_PART_HOURS = {
    "morning": ("8am", "noon"),
    "afternoon": ("noon", "6pm"),
    "evening": ("6pm", "10pm"),
    "night": ("10pm", "midnight"),
}
_OFFICE_HOURS = "from 9am to 5pm on weekdays"
# What a window of hours follows: "every 30 minutes 9am-5pm", "hourly 9-5".
_REPEATS = r"minutes|hours|hour|hourly"
_WITHIN_HOURS = re.compile(r" (?:during|in|within|from|between) ")

Rewording = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]


def _times_a(match: re.Match[str]) -> str:
    """ "twice a day" is every 12 hours; "4 times an hour" every 15 minutes:
    spread evenly, from midnight or the top of the hour. A count that does
    not split the day or hour evenly is left for REFUSALS."""
    count = 2 if match["count"] == "twice" else 1 if match["count"] == "once" else None
    count = count or int(match["n"])
    if match["unit"] == "day" and match.string.startswith(" at ", match.end()):
        return "daily"  # "twice a day at 9am and 9pm": the times say it
    if match["unit"] == "day" and _WITHIN_HOURS.search(match.string, match.end()):
        return match[0]  # "twice a day from 9am to 5pm": at which times?
    whole = {"day": 24, "hour": 60}[match["unit"]]
    if count < 1 or whole % count:
        return match[0]
    gap = whole // count
    unit = "hours" if match["unit"] == "day" else "minutes"
    return f"every {gap} {unit}"


def _part_of_day_at(match: re.Match[str]) -> str:
    """ "every evening at 7" is 19:00: the part of the day says am or pm."""
    hour = int(match["h"])
    minute = match["m"] or ""
    if match["part"] in ("evening", "night") and hour == 12:
        return f"at 12{minute}am"  # "every night at 12" is midnight
    if match["part"] == "morning" or not 1 <= hour < 12:
        return f"at {hour}{minute}" + ("am" if 1 <= hour < 12 else "")
    return f"at {hour}{minute}pm"


def _bare_window(match: re.Match[str]) -> str:
    """ "from 9 to 5" is 9am to 5pm: an end before the start, both written
    without am or pm, is the afternoon of the same day."""
    start, end = int(match["start"]), int(match["end"])
    if 1 <= end < start < 12:
        return f"{match['repeats']} from {start}am to {end}pm"
    return f"{match['repeats']} from {start}:00 to {end}:00"


def _number(match: re.Match[str]) -> str:
    return str(_NUMBER_WORDS[match[0]])


REWORDINGS: list[Rewording] = [
    # Punctuation people put between words and times.
    (re.compile(r" ?@ ?"), " at "),
    # "every 30 minutes 9am-5pm": a window written with a dash.
    (
        re.compile(
            rf"\b({_REPEATS})(?: from| between)? ({_SURE_TIME}) ?[-–] ?"
            rf"({_SURE_TIME})\b"
        ),
        r"\1 from \2 to \3",
    ),
    # "from 9 to 5": office hours, 9am to 5pm.
    (
        re.compile(
            rf"\b(?P<repeats>{_REPEATS})(?: from| between)? (?P<start>\d{{1,2}}) ?"
            r"(?:-|–| to | and | until | till ) ?(?P<end>\d{1,2})(?=$| on )"
        ),
        _bare_window,
    ),
    (re.compile(r" [-–] "), " "),
    (re.compile(r"([a-z]): ?(?=\d)"), r"\1 "),
    (re.compile(r"[!?;]+"), ""),
    (re.compile(r"\b(?:each|every single)\b"), "every"),
    (re.compile(r"\b12 (noon|midnight)\b"), r"\1"),
    (re.compile(r"\b(?:{})\b".format("|".join(_NUMBER_WORDS))), _number),
    # "09:00h", "9 o'clock", "at 0900".
    (re.compile(r"\b(\d{1,2}:\d{2}) ?h\b"), r"\1"),
    (re.compile(r"\b(\d{1,2}) ?o'? ?clock\b"), r"\1"),
    (re.compile(r"\bat ([01]\d|2[0-3])([0-5]\d)\b"), r"at \1:\2"),
    # Units: "6h", "6 hrs", "30m".
    (re.compile(r"\b(\d+) ?(?:h|hrs?|hours?)\b"), r"\1 hours"),
    (re.compile(r"\b(\d+) ?(?:m|mins?|minutes?)\b"), r"\1 minutes"),
    (re.compile(r"\bhalf (?:an )?hour\b"), "30 minutes"),
    (re.compile(r"\bquarter(?: of an | |-)hour\b"), "15 minutes"),
    (re.compile(r"\bat half past\b"), "at :30"),
    (re.compile(r"\bat (?:a )?quarter past\b"), "at :15"),
    (re.compile(r"\bat (?:a )?quarter to\b"), "at :45"),
    (re.compile(r"\bevery hour on the hour\b"), "hourly"),
    (re.compile(r"\bon the hour\b"), "at :00"),
    # How many times: "twice a day", "3 times per day", "once an hour".
    (
        re.compile(
            r"\b(?:(?P<count>once|twice)|(?P<n>\d+) times) (?:a|an|per) "
            r"(?P<unit>day|hour)\b"
        ),
        _times_a,
    ),
    (re.compile(r"\btwice daily\b"), "every 12 hours"),
    (re.compile(r"\bonce (?:a|an|per) (week|month)\b"), r"\1ly"),
    (re.compile(r"\bonce daily\b"), "daily"),
    (re.compile(r"\b(?:quarterly|every quarter)\b"), "every 3 months"),
    (re.compile(r"\b(?:yearly|annually|every year|once a year)\b"), "every 12 months"),
    (re.compile(r"^every 1 day\b"), "daily"),
    (re.compile(r"^every (?:1 week|7 days)\b"), "weekly"),
    # Working days by any name.
    (re.compile(r"\b(?:work|business|working) ?days?\b"), "weekdays"),
    (
        re.compile(
            r"\b(?:monday|mon) ?(?:-|–|to|through|thru|until|till) ?(?:friday|fri)\b"
        ),
        "weekdays",
    ),
    # Office hours: 9:00 to 17:00, Monday to Friday.
    (
        re.compile(
            r"(?: on weekdays)? (?:during|in|within) (?:the )?"
            r"(?:office|business|work|working) hours(?: on weekdays)?"
        ),
        f" {_OFFICE_HOURS}",
    ),
    # "every evening at 7": the part of the day says am or pm.
    (
        re.compile(
            r"\b(?P<part>morning|afternoon|evening|night)s? at "
            r"(?P<h>\d{1,2})(?P<m>:\d{2})?(?! ?[ap]m)\b"
        ),
        lambda match: f"{match['part']} {_part_of_day_at(match)}",
    ),
    (
        re.compile(r"^(?:every )?(?:morning|afternoon|evening|night)s? at\b"),
        "daily at",
    ),
    (
        re.compile(
            rf"\b((?:{_DAY_NAMES}|weekday|weekend)s?) (?:morning|afternoon|"
            r"evening|night)s? at\b"
        ),
        r"\1 at",
    ),
    # The time first: "9am daily", "at 5pm every weekday", "noon daily".
    (
        re.compile(
            rf"^(?:at )?(?P<t>{_SURE_TIMES}) (?P<rest>(?:every|on|daily|weekly|"
            rf"monthly|weekdays?|weekends?|(?:{_DAY_NAMES})s?)\b.*)$"
        ),
        r"\g<rest> at \g<t>",
    ),
    # A time alone, or "every midnight": every day.
    (re.compile(rf"^(?:at |every )?({_SURE_TIMES})$"), r"daily at \1"),
    # No "at" before the time: "daily 9am", "every monday 9am".
    (re.compile(rf"^(.*\b(?:{_WHEN})) ({_SURE_TIMES})$"), r"\1 at \2"),
    # Days of the month: "every 1st of the month", "end of month".
    (
        re.compile(r"\b(?:the )?(?:end|last day) of (?:the |every |each )?month\b"),
        "last day of the month",
    ),
    (
        re.compile(
            r"\b(?:the )?(?:first day|first|start|beginning) of "
            r"(?:the |every |each )?month\b"
        ),
        "1st of the month",
    ),
    (re.compile(r"\bon the first\b"), "on the 1st"),
    (
        re.compile(
            rf"^(?:every |on )?(?:the )?(?P<d>{_DATES}) of (?:the |every |each )?"
            r"month(?P<rest>.*)$"
        ),
        r"monthly on the \g<d>\g<rest>",
    ),
    (
        re.compile(r"^every (?P<d>\d{1,2}(?:st|nd|rd|th))(?P<rest>(?: at .*)?)$"),
        r"monthly on the \g<d>\g<rest>",
    ),
]


def reword(phrase: str) -> str:
    """The phrase in the words the schedule grammar reads."""
    for pattern, replacement in REWORDINGS:
        phrase = pattern.sub(replacement, phrase)
    return " ".join(phrase.split())


# --- Phrases no schedule can keep, or that leave the time open ---------------------

# What a refusal offers instead, by the gap asked for.
_NEAR_DAYS = {
    2: ("daily", "every monday, wednesday and friday"),
    3: ("every monday and thursday", "weekly"),
}
_AT = re.compile(rf" at {_SURE_TIMES}$| at \d{{1,2}}$")


def _quoted(*phrases: str) -> str:
    return " or ".join(f"'{phrase}'" for phrase in phrases)


def _at(phrase: str) -> str:
    found = _AT.search(phrase)
    return found[0] if found else ""


def _days_gap(days: int, phrase: str) -> str:
    said = "every other day" if "other" in phrase else f"every {days} days"
    at = _at(phrase)
    if days < 7:
        near = _NEAR_DAYS.get(days, ("every monday and thursday", "weekly"))
        why = f"a week of 7 days cannot be split into equal gaps of {days} days"
    else:
        near = ("monthly",) if days >= 28 else ("weekly", "monthly on the 1st and 15th")
        why = f"neither weeks nor months split into equal gaps of {days} days"
    return (
        f"Checks cannot run {said}: a schedule repeats on the same days of "
        f"every week, and {why}. The nearest: "
        f"{_quoted(*(one + at for one in near))}."
    )


def _weeks_gap(weeks: int, phrase: str) -> str:
    at = _at(phrase)
    near = ("weekly", "monthly on the 1st and 15th") if weeks == 2 else ("monthly",)
    return (
        f"Checks cannot run every {weeks} weeks: a schedule repeats on the same "
        "days of every month, and months (28 to 31 days) cannot be split into "
        f"equal gaps of {weeks} weeks. The nearest: "
        f"{_quoted(*(one + at for one in near))}."
    )


def _every_other(match: re.Match[str]) -> str:
    """ "every other day" and "every other week", "biweekly", "every other
    monday" (every second week)."""
    if match["unit"] == "day":
        return _days_gap(2, match.string)
    return _weeks_gap(2, match.string)


def _every_n_days(match: re.Match[str]) -> str | None:
    days = int(match["n"]) // (24 if match["unit"].startswith("hour") else 1)
    if match["unit"].startswith("hour") and int(match["n"]) % 24:
        return None  # "every 5 hours": the grammar says what works
    if days < 2:
        return None
    if days % 7 == 0:
        return _weeks_gap(days // 7, match.string) if days > 7 else None
    return _days_gap(days, match.string)


def _every_n_weeks(match: re.Match[str]) -> str | None:
    weeks = int(match["n"])
    return _weeks_gap(weeks, match.string) if weeks >= 2 else None


def _uneven_times(match: re.Match[str]) -> str | None:
    """ "5 times a day", "7 times an hour": no even spread."""
    count, unit = int(match["n"]), match["unit"]
    if count < 2:
        return None
    # How often a day or an hour splits evenly (an hour, into gaps of 5
    # minutes or more).
    fits = (1, 2, 3, 4, 6, 8, 12, 24) if unit == "day" else (1, 2, 3, 4, 6, 12)
    below = max(n for n in fits if n < count)
    above = min((n for n in fits if n > count), default=None)
    choose = f"{below} times a{'n' if unit == 'hour' else ''} {unit}"
    if above:
        choose += f" or {above} times a{'n' if unit == 'hour' else ''} {unit}"
    if unit == "day":
        return (
            f"Checks cannot run {count} times a day evenly: the day's 24 hours "
            "split into equal gaps only 1, 2, 3, 4, 6, 8, 12 or 24 times. Choose "
            f"{choose}, or name the times, such as 'daily at 9am, 1pm and 5pm'."
        )
    return (
        f"Checks cannot run {count} times an hour evenly: the hour splits into "
        "equal gaps of 5 minutes or more only 1, 2, 3, 4, 6 or 12 times. Choose "
        f"{choose}."
    )


def _times_within_hours(match: re.Match[str]) -> str:
    return (
        f"'{match.string}' does not say at what times within those hours. Name "
        "them, for example 'every weekday at 9am and 1pm'."
    )


def _months_gap(match: re.Match[str]) -> str | None:
    months = int(match["n"])
    fits = (1, 2, 3, 4, 6, 12)
    if months in fits or months < 1:
        return None
    below = max(n for n in fits if n < months)
    above = min((n for n in fits if n > months), default=None)
    choose = f"every {below} months" + (f" or every {above} months" if above else "")
    return (
        f"Checks cannot run every {months} months: a year of 12 months splits "
        "into equal gaps of 1, 2, 3, 4, 6 or 12 months only. Choose "
        f"{choose}."
    )


def _open_time(match: re.Match[str]) -> str:
    part = match["part"]
    part = "night" if part == "nightly" else part
    rest = " ".join(
        (match.string[: match.start()] + match.string[match.end() :]).split()
    )
    rest = re.sub(r"^(?:every|on)?$", "", rest) or "daily"
    if re.search(r"\b(?:minutes|hours|hourly)\b", rest):
        start, end = _PART_HOURS[part]
        example = f"{rest} from {start} to {end}"
    else:
        example = f"{rest} at {_PARTS_OF_DAY[part]}"
    return (
        f"'{match.string}' does not say at what time: {part}s start at "
        "different hours for different people. Say the time, for example "
        f"'{example}'."
    )


def _open_days(match: re.Match[str]) -> str:
    example = (
        "every monday and thursday at 9am"
        if match["unit"] == "week"
        else "monthly on the 1st and 15th at 9am"
    )
    return (
        f"'{match.string}' does not say on which days. Name them, for example "
        f"'{example}'."
    )


def _fifth_weekday(match: re.Match[str]) -> str:
    return (
        f"Not every month has a fifth {match['day']}, so some months would have "
        f"no check. The nearest: 'last {match['day']} of the month'."
    )


Refusal = tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]]

REFUSALS: list[Refusal] = [
    (
        re.compile(
            rf"\bevery (?:other|second|2nd) (?P<unit>day|week|{_DAY_NAMES})\b|"
            r"\b(?:bi-?weekly|fortnightly|every fortnight)\b"
        ),
        _every_other,
    ),
    (re.compile(r"\bevery (?P<n>\d+) (?P<unit>days?|hours)\b"), _every_n_days),
    (re.compile(r"\bevery (?P<n>\d+) weeks?\b"), _every_n_weeks),
    (
        re.compile(
            r"\b(?:twice|\d+ times) (?:a|per) day\b.* "
            r"(?:during|in|within|from|between) "
        ),
        _times_within_hours,
    ),
    (
        re.compile(r"\b(?P<n>\d+) times (?:a|an|per) (?P<unit>day|hour)\b"),
        _uneven_times,
    ),
    (re.compile(r"\bevery (?P<n>\d+) months?\b"), _months_gap),
    (
        re.compile(
            r"(?:\bin the )?\b(?P<part>morning|afternoon|evening|night|"
            r"nightly)s?\b"
        ),
        _open_time,
    ),
    (
        re.compile(r"^(?:twice|\d+ times) (?:a|an|per) (?P<unit>week|month)$"),
        _open_days,
    ),
    (re.compile(rf"\b(?:fifth|5th) (?P<day>{_DAY_NAMES}) of\b"), _fifth_weekday),
]


def refusal(phrase: str, said: str) -> str | None:
    """Why no schedule can keep `phrase` (as reworded) and what comes nearest,
    or None when it is not one of the phrases REFUSALS knows. Words that
    quote the phrase quote it as `said` (cleaned, not reworded)."""
    for pattern, explain in REFUSALS:
        if (match := pattern.search(phrase)) and (words := explain(match)):
            return words.replace(f"'{phrase}'", f"'{said}'")
    return None
