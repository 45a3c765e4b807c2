"""Schedules as people type them: a team assistant, a marketer or a lawyer
writes what they would say ("twice a day", "9am daily", "Daily @ 9 AM."),
and either gets the one schedule it clearly means or is told why not and
what comes nearest. Firecrawl's documented phrases keep Firecrawl's cron."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.urls import reverse

from monitors import moving
from monitors.dashboard.forms.fields import split_schedule
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.models import Membership, Monitor
from monitors.moving import plan
from monitors.schedule import (
    Schedule,
    ScheduleError,
    looks_like_cron,
    next_runs,
    normalize_schedule,
)
from monitors.schedule_words import schedule_box_text
from tests.test_dashboard_forms import post

# A Wednesday; every test pins its clock.
NOW = datetime(2026, 5, 6, 12, 0, tzinfo=UTC)


def cron_of(text: str, timezone: str | None = None) -> str:
    return normalize_schedule(None, text, timezone, now=NOW).cron


def refusal_of(text: str) -> str:
    with pytest.raises(ScheduleError) as caught:
        normalize_schedule(None, text, None, now=NOW)
    return caught.value.message


# --- Firecrawl's documented phrases: exactly Firecrawl's cron ---------------------


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        pytest.param("every 30 minutes", "*/30 * * * *", id="fc-every-30-minutes"),
        pytest.param(
            "every 15 minutes starting at :07", "7-59/15 * * * *", id="fc-offset-07"
        ),
        pytest.param("hourly", "0 * * * *", id="fc-hourly"),
        pytest.param("every 2 hours", "0 */2 * * *", id="fc-every-2-hours"),
        pytest.param("daily", "0 0 * * *", id="fc-daily"),
        pytest.param("daily at 9:00", "0 9 * * *", id="fc-daily-9-00"),
        pytest.param("daily at 9am", "0 9 * * *", id="fc-daily-9am"),
        pytest.param("daily at 5:30 PM", "30 17 * * *", id="fc-daily-5-30-pm"),
        pytest.param("weekly", "0 0 * * 0", id="fc-weekly"),
    ],
)
def test_firecrawls_documented_phrases_give_firecrawls_cron(text, cron):
    assert cron_of(text) == cron


# --- phrases people type that have one clear meaning ------------------------------


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        # How often in a day or an hour: spread evenly from midnight.
        pytest.param("twice a day", "0 */12 * * *", id="twice-a-day"),
        pytest.param("twice daily", "0 */12 * * *", id="twice-daily"),
        pytest.param("3 times a day", "0 */8 * * *", id="3-times-a-day"),
        pytest.param("three times a day", "0 */8 * * *", id="three-times-a-day"),
        pytest.param("4 times per day", "0 */6 * * *", id="4-times-per-day"),
        pytest.param("once a day", "0 0 * * *", id="once-a-day"),
        pytest.param(
            "twice a day at 9am and 9pm", "0 9,21 * * *", id="twice-a-day-at-times"
        ),
        pytest.param("once an hour", "0 * * * *", id="once-an-hour"),
        pytest.param("once a week", "0 0 * * 0", id="once-a-week"),
        pytest.param("once a month", "0 0 1 * *", id="once-a-month"),
        pytest.param("twice an hour", "*/30 * * * *", id="twice-an-hour"),
        pytest.param(
            "twice a day on weekdays", "0 */12 * * 1-5", id="twice-a-day-weekdays"
        ),
        # A time with no day: every day.
        pytest.param("at midnight", "0 0 * * *", id="at-midnight"),
        pytest.param("at noon", "0 12 * * *", id="at-noon"),
        pytest.param("at noon and 5pm", "0 12,17 * * *", id="at-noon-and-5pm"),
        pytest.param("at 9am", "0 9 * * *", id="at-9am"),
        pytest.param("every midnight", "0 0 * * *", id="every-midnight"),
        # Units people shorten.
        pytest.param("every 6h", "0 */6 * * *", id="every-6h"),
        pytest.param("every 12h", "0 */12 * * *", id="every-12h"),
        pytest.param("every 12 hours", "0 */12 * * *", id="every-12-hours"),
        pytest.param("every 30m", "*/30 * * * *", id="every-30m"),
        pytest.param("every 6 h", "0 */6 * * *", id="every-6-space-h"),
        pytest.param(
            "every 4h starting at 2am", "0 2-23/4 * * *", id="every-4h-from-2am"
        ),
        # Numbers in words.
        pytest.param("every five minutes", "*/5 * * * *", id="every-five-minutes"),
        pytest.param("every two hours", "0 */2 * * *", id="every-two-hours"),
        pytest.param("every fifteen minutes", "*/15 * * * *", id="every-fifteen"),
        pytest.param("every quarter hour", "*/15 * * * *", id="every-quarter-hour"),
        pytest.param("every half an hour", "*/30 * * * *", id="every-half-an-hour"),
        pytest.param("every hour on the hour", "0 * * * *", id="hour-on-the-hour"),
        # The time before the day, or no "at".
        pytest.param("9am daily", "0 9 * * *", id="9am-daily"),
        pytest.param("9am every day", "0 9 * * *", id="9am-every-day"),
        pytest.param("at 9am daily", "0 9 * * *", id="at-9am-daily"),
        pytest.param("noon daily", "0 12 * * *", id="noon-daily"),
        pytest.param("9:00 every weekday", "0 9 * * 1-5", id="9-00-every-weekday"),
        pytest.param("5pm on weekdays", "0 17 * * 1-5", id="5pm-on-weekdays"),
        pytest.param("at 5pm every weekday", "0 17 * * 1-5", id="at-5pm-weekday"),
        pytest.param("daily 9am", "0 9 * * *", id="daily-9am"),
        pytest.param("daily 09:00", "0 9 * * *", id="daily-09-00"),
        pytest.param("each day 9:00", "0 9 * * *", id="each-day-9-00"),
        pytest.param("each day at 9:00", "0 9 * * *", id="each-day-at-9-00"),
        pytest.param("every Monday 9am", "0 9 * * 1", id="every-monday-9am"),
        pytest.param("weekdays 9am", "0 9 * * 1-5", id="weekdays-9am"),
        # Typos, case, extra spaces and punctuation.
        pytest.param("Daily @ 9 AM.", "0 9 * * *", id="daily-at-sign-9-am"),
        pytest.param("every day @ 5pm", "0 17 * * *", id="every-day-at-sign"),
        pytest.param("daily - 9am", "0 9 * * *", id="daily-dash-9am"),
        pytest.param("daily: 9am", "0 9 * * *", id="daily-colon-9am"),
        pytest.param("  DAILY   AT  9AM!  ", "0 9 * * *", id="shouting-spaces"),
        pytest.param("every day at 9.00am", "0 9 * * *", id="dotted-time-am"),
        pytest.param("every day at 09:00h", "0 9 * * *", id="time-with-h"),
        pytest.param("daily at 0900", "0 9 * * *", id="military-time"),
        pytest.param("daily at 9 o'clock", "0 9 * * *", id="oclock"),
        # Working days, by any name.
        pytest.param("every weekday at 9", "0 9 * * 1-5", id="every-weekday-at-9"),
        pytest.param("each weekday at 9am", "0 9 * * 1-5", id="each-weekday"),
        pytest.param("every workday at 9am", "0 9 * * 1-5", id="every-workday"),
        pytest.param("every business day at 9am", "0 9 * * 1-5", id="business-day"),
        pytest.param("every working day at 9am", "0 9 * * 1-5", id="working-day"),
        pytest.param("Mon-Fri 9am", "0 9 * * 1-5", id="mon-fri-9am"),
        pytest.param("monday to friday at 9am", "0 9 * * 1-5", id="mon-to-fri"),
        pytest.param(
            "monday through friday at 9am", "0 9 * * 1-5", id="mon-through-fri"
        ),
        pytest.param("mondays", "0 0 * * 1", id="mondays"),
        pytest.param("every weekend", "0 0 * * 0,6", id="every-weekend"),
        pytest.param("hourly on weekdays", "0 * * * 1-5", id="hourly-on-weekdays"),
        # Office hours: 9:00 to 17:00, Monday to Friday.
        pytest.param(
            "every 10 minutes during office hours",
            "*/10 9-16 * * 1-5",
            id="every-10-minutes-office-hours",
        ),
        pytest.param(
            "every hour during business hours",
            "0 9-17 * * 1-5",
            id="hourly-business-hours",
        ),
        pytest.param(
            "hourly on weekdays during office hours",
            "0 9-17 * * 1-5",
            id="hourly-weekdays-office-hours",
        ),
        pytest.param(
            "every 2 hours during working hours",
            "0 9-17/2 * * 1-5",
            id="every-2-hours-working-hours",
        ),
        pytest.param(
            "every 30 minutes 9am-5pm",
            "*/30 9-16 * * *",
            id="every-30-minutes-dash-window",
        ),
        pytest.param(
            "every 30 minutes from 9am-5pm on weekdays",
            "*/30 9-16 * * 1-5",
            id="every-30-minutes-from-dash-window",
        ),
        # A stated time makes a part of the day clear.
        pytest.param("every morning at 9", "0 9 * * *", id="every-morning-at-9"),
        pytest.param("every night at 12", "0 0 * * *", id="every-night-at-12"),
        pytest.param("12 noon daily", "0 12 * * *", id="12-noon-daily"),
        pytest.param(
            "twice an hour during office hours",
            "*/30 9-16 * * 1-5",
            id="twice-an-hour-office-hours",
        ),
        pytest.param("every evening at 7", "0 19 * * *", id="every-evening-at-7"),
        pytest.param(
            "every monday morning at 8", "0 8 * * 1", id="monday-morning-at-8"
        ),
        # Days of the month.
        pytest.param("every 1st of the month", "0 0 1 * *", id="every-1st-of-month"),
        pytest.param("1st of every month", "0 0 1 * *", id="1st-of-every-month"),
        pytest.param(
            "on the 15th of each month at 9am", "0 9 15 * *", id="15th-of-each-month"
        ),
        pytest.param(
            "the 1st and 15th of the month", "0 0 1,15 * *", id="1st-and-15th"
        ),
        pytest.param("first day of the month", "0 0 1 * *", id="first-day-of-month"),
        pytest.param("every month on the first", "0 0 1 * *", id="month-on-first"),
        pytest.param("last day of the month", "0 0 L * *", id="last-day-of-month"),
        pytest.param("end of month", "0 0 L * *", id="end-of-month"),
        pytest.param("every 15th", "0 0 15 * *", id="every-15th"),
        pytest.param("9am on the 1st of every month", "0 9 1 * *", id="9am-on-the-1st"),
        # A weekday of the month.
        pytest.param(
            "first monday of the month", "0 0 * * 1#1", id="first-monday-of-month"
        ),
        pytest.param(
            "the first Monday of every month at 9am",
            "0 9 * * 1#1",
            id="first-monday-at-9am",
        ),
        pytest.param(
            "2nd tuesday of each month", "0 0 * * 2#2", id="second-tuesday-of-month"
        ),
        pytest.param(
            "last friday of the month at 5pm", "0 17 * * 5L", id="last-friday-5pm"
        ),
        # Months and years.
        pytest.param("quarterly", "0 0 1 */3 *", id="quarterly"),
        pytest.param("every quarter", "0 0 1 */3 *", id="every-quarter"),
        pytest.param("every 6 months", "0 0 1 */6 *", id="every-6-months"),
        pytest.param("yearly", "0 0 1 1 *", id="yearly"),
        pytest.param("annually", "0 0 1 1 *", id="annually"),
        pytest.param("every year", "0 0 1 1 *", id="every-year"),
        # Whole days and weeks that are the plain ones.
        pytest.param("every 1 day", "0 0 * * *", id="every-1-day"),
        pytest.param("every 7 days", "0 0 * * 0", id="every-7-days"),
        pytest.param("every 1 week", "0 0 * * 0", id="every-1-week"),
    ],
)
def test_a_phrase_people_type_becomes_the_schedule_it_means(text, cron):
    assert cron_of(text) == cron


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("twice a day", ["00:00", "12:00", "00:00"], id="twice"),
        pytest.param("3 times a day", ["16:00", "00:00", "08:00"], id="three-times"),
    ],
)
def test_times_a_day_run_evenly_from_midnight(text, shown):
    runs = next_runs(Schedule(cron_of(text), "UTC"), NOW, 3)
    assert [run.strftime("%H:%M") for run in runs] == shown


def test_a_phrase_keeps_to_its_time_zone():
    berlin = normalize_schedule(None, "9am daily", "Europe/Berlin", now=NOW)

    assert (berlin.cron, berlin.timezone) == ("0 9 * * *", "Europe/Berlin")
    # 09:00 in Berlin on a summer day is 07:00 UTC.
    assert next_runs(berlin, NOW, 1) == [datetime(2026, 5, 7, 7, 0, tzinfo=UTC)]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("every 1 minute", id="every-1-minute"),
        pytest.param("20 times an hour during office hours", id="20-an-hour"),
        pytest.param("every 2m", id="every-2m"),
    ],
)
def test_a_phrase_still_keeps_to_the_five_minute_minimum(text):
    assert refusal_of(text) == "Schedule must not run more often than every 5 minutes"


# --- phrases a schedule cannot keep, or that leave the time open -----------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param(
            "every other day",
            "Checks cannot run every other day: a schedule repeats on the same "
            "days of every week, and a week of 7 days cannot be split into equal "
            "gaps of 2 days. The nearest: 'daily' or 'every monday, wednesday "
            "and friday'.",
            id="every-other-day",
        ),
        pytest.param(
            "every 2 days at 9am",
            "Checks cannot run every 2 days: a schedule repeats on the same days "
            "of every week, and a week of 7 days cannot be split into equal gaps "
            "of 2 days. The nearest: 'daily at 9am' or 'every monday, wednesday "
            "and friday at 9am'.",
            id="every-2-days-at-9am",
        ),
        pytest.param(
            "every 3 days",
            "Checks cannot run every 3 days: a schedule repeats on the same days "
            "of every week, and a week of 7 days cannot be split into equal gaps "
            "of 3 days. The nearest: 'every monday and thursday' or 'weekly'.",
            id="every-3-days",
        ),
        pytest.param(
            "every 48 hours",
            "Checks cannot run every 2 days: a schedule repeats on the same days "
            "of every week, and a week of 7 days cannot be split into equal gaps "
            "of 2 days. The nearest: 'daily' or 'every monday, wednesday and "
            "friday'.",
            id="every-48-hours",
        ),
        pytest.param(
            "every 2 weeks",
            "Checks cannot run every 2 weeks: a schedule repeats on the same "
            "days of every month, and months (28 to 31 days) cannot be split "
            "into equal gaps of 2 weeks. The nearest: 'weekly' or 'monthly on "
            "the 1st and 15th'.",
            id="every-2-weeks",
        ),
        pytest.param(
            "every other week",
            "Checks cannot run every 2 weeks: a schedule repeats on the same "
            "days of every month, and months (28 to 31 days) cannot be split "
            "into equal gaps of 2 weeks. The nearest: 'weekly' or 'monthly on "
            "the 1st and 15th'.",
            id="every-other-week",
        ),
        pytest.param(
            "Biweekly",
            "Checks cannot run every 2 weeks: a schedule repeats on the same "
            "days of every month, and months (28 to 31 days) cannot be split "
            "into equal gaps of 2 weeks. The nearest: 'weekly' or 'monthly on "
            "the 1st and 15th'.",
            id="biweekly",
        ),
        pytest.param(
            "fortnightly",
            "Checks cannot run every 2 weeks: a schedule repeats on the same "
            "days of every month, and months (28 to 31 days) cannot be split "
            "into equal gaps of 2 weeks. The nearest: 'weekly' or 'monthly on "
            "the 1st and 15th'.",
            id="fortnightly",
        ),
        pytest.param(
            "every 90 minutes",
            "Checks cannot run every 90 minutes: a schedule repeats evenly "
            "within each hour (every 5, 10, 15, 20 or 30 minutes) or every few "
            "whole hours that divide the day (2, 3, 4, 6, 8 or 12). Choose "
            "every hour or every 2 hours.",
            id="every-90-minutes",
        ),
        pytest.param(
            "every 45 minutes",
            "Checks cannot run every 45 minutes: a schedule repeats evenly "
            "within each hour (every 5, 10, 15, 20 or 30 minutes) or every few "
            "whole hours that divide the day (2, 3, 4, 6, 8 or 12). Choose "
            "every 30 minutes or every hour.",
            id="every-45-minutes",
        ),
        pytest.param(
            "5 times a day",
            "Checks cannot run 5 times a day evenly: the day's 24 hours split "
            "into equal gaps only 1, 2, 3, 4, 6, 8, 12 or 24 times. Choose 4 "
            "times a day or 6 times a day, or name the times, such as 'daily at "
            "9am, 1pm and 5pm'.",
            id="5-times-a-day",
        ),
        pytest.param(
            "every 5 months",
            "Checks cannot run every 5 months: a year of 12 months splits into "
            "equal gaps of 1, 2, 3, 4, 6 or 12 months only. Choose every 4 "
            "months or every 6 months.",
            id="every-5-months",
        ),
        pytest.param(
            "every morning",
            "'every morning' does not say at what time: mornings start at "
            "different hours for different people. Say the time, for example "
            "'daily at 8am'.",
            id="every-morning",
        ),
        pytest.param(
            "every weekday morning",
            "'every weekday morning' does not say at what time: mornings start at "
            "different hours for different people. Say the time, for example "
            "'every weekday at 8am'.",
            id="every-weekday-morning",
        ),
        pytest.param(
            "every evening",
            "'every evening' does not say at what time: evenings start at "
            "different hours for different people. Say the time, for example "
            "'daily at 6pm'.",
            id="every-evening",
        ),
        pytest.param(
            "every 15 minutes in the morning",
            "'every 15 minutes in the morning' does not say at what time: "
            "mornings start at different hours for different people. Say the "
            "time, for example 'every 15 minutes from 8am to noon'.",
            id="every-15-minutes-in-the-morning",
        ),
        pytest.param(
            "twice a day during office hours",
            "'twice a day during office hours' does not say at what times within "
            "those hours. Name them, for example 'every weekday at 9am and 1pm'.",
            id="twice-a-day-office-hours",
        ),
        pytest.param(
            "7 times an hour",
            "Checks cannot run 7 times an hour evenly: the hour splits into equal "
            "gaps of 5 minutes or more only 1, 2, 3, 4, 6 or 12 times. Choose 6 "
            "times an hour or 12 times an hour.",
            id="7-times-an-hour",
        ),
        pytest.param(
            "every 2nd day",
            "Checks cannot run every 2 days: a schedule repeats on the same days "
            "of every week, and a week of 7 days cannot be split into equal gaps "
            "of 2 days. The nearest: 'daily' or 'every monday, wednesday and "
            "friday'.",
            id="every-2nd-day",
        ),
        pytest.param(
            "nightly",
            "'nightly' does not say at what time: nights start at different "
            "hours for different people. Say the time, for example 'daily at "
            "10pm'.",
            id="nightly",
        ),
        pytest.param(
            "twice a week",
            "'twice a week' does not say on which days. Name them, for example "
            "'every monday and thursday at 9am'.",
            id="twice-a-week",
        ),
        pytest.param(
            "twice a month",
            "'twice a month' does not say on which days. Name them, for example "
            "'monthly on the 1st and 15th at 9am'.",
            id="twice-a-month",
        ),
        pytest.param(
            "fifth monday of the month",
            "Not every month has a fifth monday, so some months would have no "
            "check. The nearest: 'last monday of the month'.",
            id="fifth-monday",
        ),
    ],
)
def test_a_phrase_a_schedule_cannot_keep_says_why_and_what_comes_nearest(text, words):
    assert refusal_of(text) == words


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param(
            "last weekday of the month", "last weekday of the month", id="weekday"
        ),
        pytest.param(
            "2nd Weekend of the month at 9am.",
            "2nd weekend of the month at 9am",
            id="weekend",
        ),
        pytest.param(
            "first mon-fri of the month", "first mon-fri of the month", id="mon-fri"
        ),
        pytest.param(
            "last weekends of every month", "last weekends of every month", id="plural"
        ),
    ],
)
def test_a_weekday_of_the_month_naming_several_days_asks_for_one(text, said):
    assert refusal_of(text) == (
        f"'{said}' names more than one day of the week. Name one day, "
        "e.g. 'first monday of the month'."
    )


# Every kind of phrase the tables read, with days that are more than one day.
_SEVERAL_DAYS = (
    "weekday",
    "weekdays",
    "weekend",
    "weekends",
    "mon-fri",
    "monday to friday",
    "business days",
    "monday and friday",
    "sat & sun",
    "tuesday thursday",
)
_PHRASES_WITH_DAYS = (
    "{days}",
    "every {days}",
    "on {days}",
    "{days} at 9am",
    "9am {days}",
    "{days} 9am",
    "at 5pm every {days}",
    "every {days} at 9am and 5pm",
    "every {days} at noon",
    "{days} @ 9",
    "each {days} at 9 o'clock",
    "every {days} 9:30",
    "{days} at 0900",
    "{days} mornings at 9",
    "{days} evening at 7",
    "every {days} morning",
    "{days} in the morning",
    "weekly on {days}",
    "every week on {days} at 9",
    "every 15 minutes on {days}",
    "every 90 minutes on {days}",
    "every 1.5 hours on {days}",
    "every 30 minutes from 9am to 5pm on {days}",
    "every 30 minutes 9am-5pm on {days}",
    "every 2 hours from 9 to 5 on {days}",
    "every 120 minutes from 9am to 5pm on {days}",
    "every 6h on {days}",
    "every half hour on {days}",
    "hourly on {days}",
    "hourly 9-5 on {days}",
    "every hour on the hour on {days}",
    "every 15 minutes during business hours on {days}",
    "twice a day on {days}",
    "3 times a day on {days}",
    "every other {days}",
    "every second {days}",
    "first {days} of the month",
    "last {days} of the month",
    "2nd {days} of the month at 9am",
    "the last {days} of every month at 5pm",
    "1st {days} of every month",
    "fifth {days} of the month",
    "{days} of the month",
    "every {days} of the month",
    "monthly on {days}",
    "quarterly on {days}",
    "every 3 months on {days}",
    "once a week on {days}",
    "first {days}",
    "last {days}",
    "every {days} and {days}",
    "{days} {days} at 9am",
)


@pytest.mark.parametrize("days", _SEVERAL_DAYS)
def test_every_phrase_with_several_days_gives_a_schedule_or_says_why(days):
    escaped = []
    for phrase in (template.format(days=days) for template in _PHRASES_WITH_DAYS):
        try:
            normalize_schedule(None, phrase, "Europe/Berlin", now=NOW)
        except ScheduleError as refused:
            assert refused.message, phrase
        except Exception as crash:  # anything but ScheduleError is the bug
            escaped.append(f"{phrase!r}: {type(crash).__name__}: {crash}")

    assert escaped == []


@pytest.mark.parametrize(
    "suggested",
    [
        "daily",
        "every monday, wednesday and friday at 9am",
        "every monday and thursday",
        "weekly",
        "monthly on the 1st and 15th",
        "daily at 8am",
        "every weekday at 8am",
        "every monday and thursday at 9am",
        "monthly on the 1st and 15th at 9am",
        "last monday of the month",
        "4 times a day",
        "daily at 9am, 1pm and 5pm",
        "every 4 months",
        "every 15 minutes from 8am to noon",
        "every 2 hours from 10pm to midnight",
        "every weekday at 9am and 1pm",
        "6 times an hour",
        "12 times an hour",
    ],
)
def test_every_phrase_a_refusal_suggests_is_accepted(suggested):
    assert cron_of(suggested)


def test_a_phrase_nobody_could_read_still_gets_the_general_advice():
    assert refusal_of("whenever you like").startswith("Unsupported schedule text.")


# --- one box for words or cron --------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "is_cron"),
    [
        pytest.param("*/30 * * * *", True, id="star-cron"),
        pytest.param("0 9 * * 1-5", True, id="number-cron"),
        pytest.param("0 9 * * MON", True, id="day-name-cron"),
        pytest.param("0 9 * *", True, id="short-cron"),
        pytest.param("@daily", True, id="macro"),
        pytest.param("9am daily", False, id="time-first"),
        pytest.param("3 times a day", False, id="count-first"),
        pytest.param("1st of every month", False, id="date-first"),
        pytest.param("9:00 every weekday", False, id="clock-first"),
        pytest.param("every weekday at 9 am", False, id="five-words"),
    ],
)
def test_words_starting_with_a_number_are_not_taken_for_cron(typed, is_cron):
    assert looks_like_cron(typed) is is_cron
    assert split_schedule(typed) == ((typed, None) if is_cron else (None, typed))


# --- the API ------------------------------------------------------------------------


def _create(api, text: str, timezone: str = "UTC"):
    return api.post(
        "/v2/monitor",
        {
            "name": "Court calendar",
            "schedule": {"text": text, "timezone": timezone},
            "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
        },
        format="json",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "cron"),
    [
        pytest.param("twice a day", "0 */12 * * *", id="twice-a-day"),
        pytest.param("Daily @ 9 AM.", "0 9 * * *", id="daily-at-sign"),
        pytest.param("first monday of the month", "0 0 * * 1#1", id="first-monday"),
        pytest.param("quarterly", "0 0 1 */3 *", id="quarterly"),
    ],
)
def test_the_api_stores_a_phrase_as_its_cron_and_reads_it_back(api, text, cron):
    response = _create(api, text, "Europe/Berlin")

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["schedule"] == {"cron": cron, "timezone": "Europe/Berlin"}
    assert Monitor.objects.get(pk=data["id"]).schedule_cron == cron
    fetched = api.get(f"/v2/monitor/{data['id']}").json()["data"]
    assert fetched["schedule"] == {"cron": cron, "timezone": "Europe/Berlin"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param("every other day", "Checks cannot run every other day", id="eod"),
        pytest.param("every 2 weeks", "Checks cannot run every 2 weeks", id="2-weeks"),
        pytest.param("every morning", "does not say at what time", id="morning"),
    ],
)
def test_the_api_refuses_a_phrase_it_cannot_keep_saying_why(api, text, words):
    response = _create(api, text)

    assert response.status_code == 400
    assert words in response.json()["error"]
    assert "Unsupported schedule text" not in response.json()["error"]
    assert not Monitor.objects.exists()


@pytest.mark.django_db
def test_the_api_still_refuses_a_phrase_more_often_than_the_minimum(api):
    response = _create(api, "every 2m")

    assert response.status_code == 400
    assert "more often than every 5 minutes" in response.json()["error"]


@pytest.mark.django_db
def test_the_api_asks_for_one_day_when_a_weekday_of_the_month_names_several(api):
    created = _create(api, "first monday of the month").json()["data"]

    response = _create(api, "last weekday of the month")
    patched = api.patch(
        f"/v2/monitor/{created['id']}",
        {"schedule": {"text": "first mon-fri of the month"}},
        format="json",
    )

    error = response.json()["error"]
    assert response.status_code == 400
    assert "Name one day, e.g. 'first monday of the month'" in error
    assert patched.status_code == 400
    assert "names more than one day of the week" in patched.json()["error"]
    (monitor,) = Monitor.objects.all()
    assert monitor.schedule_cron == "0 0 * * 1#1"


# --- the dashboard form -------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "cron"),
    [
        pytest.param("9am daily", "0 9 * * *", id="9am-daily"),
        pytest.param("twice a day", "0 */12 * * *", id="twice-a-day"),
        pytest.param("1st of every month", "0 0 1 * *", id="1st-of-month"),
    ],
)
def test_the_form_takes_a_phrase_people_type(typed, cron):
    form = MonitorForm(post(schedule=typed, timezone="Europe/Berlin"))

    assert form.is_valid(), form.errors
    assert form.validated_data["schedule"] == {
        "cron": cron,
        "timezone": "Europe/Berlin",
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        pytest.param(
            "every other day",
            "Checks cannot run every other day: a schedule repeats on the same "
            "days of every week, and a week of 7 days cannot be split into equal "
            "gaps of 2 days. The nearest: “daily” or “every monday, wednesday "
            "and friday”.",
            id="every-other-day",
        ),
        pytest.param(
            "every morning",
            "“every morning” does not say at what time: mornings start at "
            "different hours for different people. Say the time, for example "
            "“daily at 8am”.",
            id="every-morning",
        ),
    ],
)
def test_the_form_tells_the_person_why_and_what_to_type_instead(typed, shown):
    form = MonitorForm(post(schedule=typed))

    assert not form.is_valid()
    assert form.errors["schedule"] == [shown]


@pytest.mark.django_db
def test_the_form_and_its_preview_ask_for_one_day_of_the_week(
    client, team, django_user_model
):
    user = django_user_model.objects.create_user("ada", "ada@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    form = MonitorForm(post(schedule="2nd weekend of the month at 9am"))

    preview = client.get(
        reverse("schedule-preview"),
        {"schedule": "last weekday of the month", "timezone": "UTC"},
    )

    assert not form.is_valid()
    assert form.errors["schedule"] == [
        "“2nd weekend of the month at 9am” names more than one day of the week. "
        "Name one day, e.g. “first monday of the month”."
    ]
    assert preview.status_code == 200
    assert "Not a schedule we can use yet." in preview.content.decode()


def test_a_list_row_naming_several_days_of_the_month_is_read_and_explained():
    items = moving.read(
        "csv",
        data=b"url,schedule\nhttps://a.test/,last weekday of the month\n"
        b"https://b.test/,first monday of the month\n",
        filename="list.csv",
    )
    plan.validate(items)
    several, one = items

    assert not several.importable
    assert "Name one day, e.g. 'first monday of the month'" in several.reason
    assert one.importable
    assert one.validated["schedule"]["cron"] == "0 0 * * 1#1"


@pytest.mark.django_db
def test_the_forms_help_says_which_times_twice_a_day_picks(
    client, team, django_user_model
):
    user = django_user_model.objects.create_user("ada", "ada@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)

    page = client.get(reverse("monitor-create")).content.decode()

    assert "“twice a day” runs at 00:00 and 12:00" in page


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        pytest.param("every 30 minutes from 9 to 5", "*/30 9-16 * * *", id="9-to-5"),
        pytest.param(
            "every 30 minutes between 9 and 5 on weekdays",
            "*/30 9-16 * * 1-5",
            id="between-9-and-5",
        ),
        pytest.param("every 30 minutes 9-5", "*/30 9-16 * * *", id="9-dash-5"),
        pytest.param("every hour from 9 to 17", "0 9-17 * * *", id="9-to-17"),
        pytest.param("every hour at half past", "30 * * * *", id="half-past"),
        pytest.param("every quarter of an hour", "*/15 * * * *", id="quarter-of-hour"),
    ],
)
def test_hours_written_without_am_or_pm_read_as_the_working_day(text, cron):
    assert cron_of(text) == cron


@pytest.mark.parametrize(
    ("cron", "shown"),
    [
        pytest.param("0 0 * * 1#1", "First Monday of the month at 00:00", id="1st-mon"),
        pytest.param("0 9 * * 2#2", "Second Tuesday of the month at 09:00", id="2nd"),
        pytest.param("0 17 * * 5L", "Last Friday of the month at 17:00", id="last-fri"),
        pytest.param("0 0 1 */3 *", "Every 3 months on day 1 at 00:00", id="quarterly"),
        pytest.param(
            "30 8 1,15 */6 *", "Every 6 months on days 1 and 15 at 08:30", id="6-months"
        ),
    ],
)
def test_the_schedule_box_shows_new_phrases_in_words_that_read_back(cron, shown):
    schedule = Schedule(cron, "UTC")

    assert schedule_box_text(schedule) == shown
    assert cron_of(shown) == cron


def _readme_section() -> str:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    return readme.split("## Schedules in words\n", 1)[1].split("\n## ", 1)[0]


def test_every_phrase_the_readme_lists_as_accepted_is_accepted():
    rows = [line for line in _readme_section().splitlines() if line.startswith("| `")]
    said = [p for row in rows for p in re.findall(r"`([^`]+)`", row.split(" | ")[0])]

    assert len(said) > 40
    for phrase in said:
        assert cron_of(phrase), phrase


def test_every_phrase_the_readme_lists_as_refused_is_refused_saying_why():
    text = _readme_section().split("Some phrases no schedule can keep", 1)[1]
    text = text.split("Checks still run", 1)[0]
    offered = re.findall(r"`([^`]+)`", "".join(re.findall(r"\([^)]*\)", text)))
    refused = re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", text))

    assert len(refused) > 10 and len(offered) > 3
    for phrase in refused:
        assert "Unsupported schedule text" not in refusal_of(phrase), phrase
    for phrase in offered:
        assert cron_of(phrase), phrase


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        pytest.param("daily at 9 and 17", "0 9,17 * * *", id="daily-at-9-and-17"),
        pytest.param("monthly on days 1 and 15", "0 0 1,15 * *", id="days-1-and-15"),
        pytest.param("every 3 hours from 02:17", "17 2-23/3 * * *", id="from-02-17"),
    ],
)
def test_phrases_read_before_are_read_as_before_next_to_the_new_ones(text, cron):
    assert cron_of(text) == cron
