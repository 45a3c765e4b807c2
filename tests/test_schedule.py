from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from monitors.schedule import (
    Schedule,
    ScheduleError,
    interval_minutes,
    next_run_after,
    next_runs,
    normalize_schedule,
)
from monitors.schedule_words import describe, schedule_box_text

# A Wednesday. Every test pins its clock; none reads the wall clock.
NOW = datetime(2026, 5, 6, 12, 0, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def normalize(
    cron: str | None = None,
    text: str | None = None,
    timezone: str | None = None,
    now: datetime = NOW,
) -> Schedule:
    return normalize_schedule(cron, text, timezone, now=now)


def error_of(**kwargs: str | None) -> str:
    with pytest.raises(ScheduleError) as caught:
        normalize(**kwargs)
    return caught.value.message


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# --- text -> cron ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        ("every 30 minutes", "*/30 * * * *"),
        ("every 5 mins", "*/5 * * * *"),
        ("every 10 min", "*/10 * * * *"),
        ("every 60 minutes", "0 * * * *"),
        ("every 15 minutes starting at :07", "7-59/15 * * * *"),
        ("every 15 minutes start on 7", "7-59/15 * * * *"),
        ("every 30 minutes starting :00", "*/30 * * * *"),
        ("hourly", "0 * * * *"),
        ("every hour", "0 * * * *"),
        ("hourly at :15", "15 * * * *"),
        ("every hour starting at 45", "45 * * * *"),
        ("every 1 hour", "0 * * * *"),
        ("every 2 hours", "0 */2 * * *"),
        ("every 6 hrs", "0 */6 * * *"),
        ("every 3 hours from 02:17", "17 2-23/3 * * *"),
        ("every 2 hours from 00:30", "30 */2 * * *"),
        ("every 3 hours starting at 5:17pm", "17 2-23/3 * * *"),
        ("every 1 hour from 10:05", "5 * * * *"),
        ("every 24 hours", "0 0 * * *"),
        ("daily", "0 0 * * *"),
        ("every day", "0 0 * * *"),
        ("daily at 9:00", "0 9 * * *"),
        ("daily at 9am", "0 9 * * *"),
        ("daily at 5:30 PM", "30 17 * * *"),
        ("Daily at 5:30 P.M.", "30 17 * * *"),
        ("daily at 17:45", "45 17 * * *"),
        ("daily at 12am", "0 0 * * *"),
        ("daily at 12pm", "0 12 * * *"),
        ("every day at noon", "0 12 * * *"),
        ("every day at midnight", "0 0 * * *"),
        ("weekly", "0 0 * * 0"),
        ("every week", "0 0 * * 0"),
        ("weekly on friday at 6pm", "0 18 * * 5"),
        ("every weekday at 9am", "0 9 * * 1-5"),
        ("weekdays at 9:30", "30 9 * * 1-5"),
        ("every monday at 10:00", "0 10 * * 1"),
        ("mondays at 10:00", "0 10 * * 1"),
        ("every sunday", "0 0 * * 0"),
        ("every monday and thursday at 8am", "0 8 * * 1,4"),
        ("every Monday, Wednesday and Friday at 7:15 am", "15 7 * * 1,3,5"),
        ("every tue & thu at 18:00", "0 18 * * 2,4"),
        ("weekends at noon", "0 12 * * 0,6"),
        ("every weekend at 10am", "0 10 * * 0,6"),
        ("  EVERY   30   MINUTES.  ", "*/30 * * * *"),
        ("daily at 9am and 5pm", "0 9,17 * * *"),
        ("every weekday at 9:00, 12:00 and 17:00", "0 9,12,17 * * 1-5"),
        ("every day at 9:00 & 9:30", "0,30 9 * * *"),
        ("monthly", "0 0 1 * *"),
        ("every month", "0 0 1 * *"),
        ("monthly at 9am", "0 9 1 * *"),
        ("monthly on the 15th at 8:30", "30 8 15 * *"),
        ("every month on the 1st and 15th at 9am", "0 9 1,15 * *"),
        ("monthly on day 3", "0 0 3 * *"),
        ("monthly on the last day at 5pm", "0 17 L * *"),
        ("every 15 minutes from 9am to 5pm", "*/15 9-16 * * *"),
        ("every 15 minutes between 09:00 and 17:45 on weekdays", "*/15 9-17 * * 1-5"),
        ("every 15 minutes from 09:05 to 17:50", "5-59/15 9-17 * * *"),
        ("every 30 minutes from 8am to midnight", "*/30 8-23 * * *"),
        ("hourly from 9am to 5pm", "0 9-17 * * *"),
        ("every hour on weekdays", "0 * * * 1-5"),
        ("hourly at :30 on weekends", "30 * * * 0,6"),
        ("every 20 minutes on mondays and wednesdays", "*/20 * * * 1,3"),
        ("every half hour from 8am to 6pm", "*/30 8-17 * * *"),
        # Spellings people use: a dot in the time, "everyday", no space.
        ("daily at 9.30", "30 9 * * *"),
        ("every weekday at 5.45 p.m.", "45 17 * * 1-5"),
        ("everyday at 8am", "0 8 * * *"),
        ("every 30min", "*/30 * * * *"),
        ("every 2hrs", "0 */2 * * *"),
    ],
)
def test_schedule_text_becomes_cron(text: str, cron: str) -> None:
    assert normalize(text=text).cron == cron


def test_every_15_minutes_starting_at_07_becomes_offset_cron() -> None:
    assert normalize(text="every 15 minutes starting at :07").cron == "7-59/15 * * * *"


def test_offset_past_the_interval_keeps_runs_evenly_spaced() -> None:
    # Firecrawl would write 20-59/15 (:20 :35 :50, then a 30-minute wait).
    schedule = normalize(text="every 15 minutes starting at :20")

    assert schedule.cron == "5-59/15 * * * *"
    assert interval_minutes(schedule, utc(2026, 5, 6, 12, 51)) == 15


@pytest.mark.parametrize(
    "text", ["every", "daily at", "whenever you like", "every banana"]
)
def test_unsupported_text_suggests_working_phrases(text: str) -> None:
    assert error_of(text=text) == (
        "Unsupported schedule text. Try phrases like 'every 30 minutes', 'hourly', "
        "'every 2 hours', 'daily at 9:00', 'every weekday at 9am' or 'weekly'."
    )


def test_a_day_some_months_lack_is_refused_pointing_at_the_last_day() -> None:
    assert error_of(text="monthly on the 31st") == (
        "Day 31 is missing from some months, which would then have no check; "
        "to check at the end of every month, say 'monthly on the last day'."
    )


def test_times_one_cron_cannot_hold_together_are_refused_saying_which_can() -> None:
    assert error_of(text="daily at 9:30 and 17:00") == (
        "'9:30 and 17:00' cannot be one schedule: give times that share their "
        "minutes, such as 9:00 and 17:00, or their hour, such as 9:00 and 9:30."
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "every 15 minutes from 9:20 to 5pm",
            "'9:20 to 5pm' would have runs before 9:20: start it at 9:05.",
        ),
        (
            "every 15 minutes from 5pm to 9am",
            "'5pm to 9am' holds no run: the end must come after the start, "
            "on the same day.",
        ),
    ],
)
def test_a_window_one_cron_cannot_keep_to_is_refused_saying_why(
    text: str, error: str
) -> None:
    assert error_of(text=text) == error


def test_every_30_minutes_is_accepted_because_30_divides_60() -> None:
    assert normalize(text="every 30 minutes").cron == "*/30 * * * *"


def test_minute_interval_that_does_not_divide_60_is_rejected_naming_the_nearest() -> (
    None
):
    assert error_of(text="every 45 minutes") == (
        "Checks cannot run every 45 minutes: a schedule repeats evenly within "
        "each hour (every 5, 10, 15, 20 or 30 minutes) or every few whole hours "
        "that divide the day (2, 3, 4, 6, 8 or 12). Choose every 30 minutes or "
        "every hour."
    )


@pytest.mark.parametrize("text", ["every 0 minutes"])
def test_minute_interval_of_nothing_is_rejected(text: str) -> None:
    assert error_of(text=text) == (
        "Minute intervals must divide 60 evenly, "
        "e.g. every 5, 10, 15, 20 or 30 minutes."
    )


@pytest.mark.parametrize("text", ["every 5 hours", "every 10 hours"])
def test_hour_interval_that_does_not_divide_24_is_rejected(text: str) -> None:
    assert error_of(text=text) == (
        "Hour intervals must divide 24 evenly, e.g. every 2, 3, 4, 6, 8 or 12 "
        "hours; within set hours (“every 5 hours from 8am to 6pm”) any gap works."
    )


@pytest.mark.parametrize(
    "text", ["daily at 13pm", "daily at 0am", "daily at 24:00", "daily at 9:60"]
)
def test_impossible_time_of_day_is_rejected(text: str) -> None:
    assert error_of(text=text).endswith("is not a valid time of day.")


def test_minute_offset_past_59_is_rejected() -> None:
    assert error_of(text="hourly at :60") == (
        "The minute in a schedule must be between 0 and 59."
    )


# --- cron, both/neither, lengths ------------------------------------------------------


def test_cron_whitespace_is_normalised() -> None:
    assert normalize(cron="  0   9 *\t* 1-5 ").cron == "0 9 * * 1-5"


def test_cron_and_text_together_are_rejected() -> None:
    assert error_of(cron="0 * * * *", text="hourly") == (
        "Schedule must include either cron or text, not both."
    )


@pytest.mark.parametrize(("cron", "text"), [(None, None), ("", "  ")])
def test_neither_cron_nor_text_is_rejected(cron: str | None, text: str | None) -> None:
    assert (
        error_of(cron=cron, text=text) == "Schedule must include either cron or text."
    )


def test_cron_of_128_characters_is_accepted() -> None:
    assert normalize(cron="0 9 * * *".ljust(128)).cron == "0 9 * * *"


def test_cron_of_129_characters_is_rejected() -> None:
    assert error_of(cron="0 9 * * *".ljust(129)) == (
        "Cron expression must be at most 128 characters."
    )


def test_text_of_128_characters_is_accepted() -> None:
    assert normalize(text="daily at 9am".ljust(128)).cron == "0 9 * * *"


def test_text_of_129_characters_is_rejected() -> None:
    assert error_of(text="daily at 9am".ljust(129)) == (
        "Schedule text must be at most 128 characters."
    )


@pytest.mark.parametrize("cron", ["0 9 * *", "0 0 9 * * *", "@daily"])
def test_cron_without_five_fields_is_rejected(cron: str) -> None:
    assert error_of(cron=cron) == "Cron expression must contain five fields"


@pytest.mark.parametrize(
    ("cron", "field"),
    [
        ("61 * * * *", "minute"),
        ("*/x * * * *", "minute"),
        ("0 24 * * *", "hour"),
        ("0 0 32 * *", "day-of-month"),
        ("0 0 * 13 *", "month"),
        ("0 0 * * 8", "day-of-week"),
    ],
)
def test_invalid_cron_names_the_expression_and_field(cron: str, field: str) -> None:
    assert error_of(cron=cron) == (
        f"Invalid cron expression '{cron}': the {field} field is not valid."
    )


@pytest.mark.parametrize("cron", ["0 0 30 2 *", "0 0 31 2 *", "0 0 31 4,6,9,11 *"])
def test_a_date_none_of_its_months_has_is_named_as_such(cron: str) -> None:
    assert error_of(cron=cron) == (
        f"Invalid cron expression '{cron}': none of the months it names has that day."
    )


@pytest.mark.parametrize(
    ("now", "first_run"),
    [
        (NOW, utc(2028, 2, 29)),
        # 2100 is no leap year: the longest wait a valid cron can have.
        (utc(2096, 3, 1), utc(2104, 2, 29)),
    ],
)
def test_a_rare_but_valid_cron_is_accepted(now: datetime, first_run: datetime) -> None:
    schedule = normalize_schedule("0 0 29 2 *", None, "UTC", now=now)
    assert next_run_after(schedule, now) == first_run


def test_a_first_run_further_away_says_the_longest_wait(monkeypatch) -> None:
    # No cron cronsim accepts waits longer than a leap day does; a stand-in
    # for one that would shows what the person reads.
    from monitors import schedule as schedules

    monkeypatch.setattr(schedules, "_runs", lambda *_: iter([utc(2035, 1, 1)]))
    # Another test may have validated this cron at the same minute already.
    schedules._check_runs.cache_clear()
    assert error_of(cron="0 0 1 1 *") == (
        "Cron expression '0 0 1 1 *' does not run within the next 8 years, "
        "the longest wait Pagewatch accepts."
    )


def test_cron_day_names_are_accepted() -> None:
    assert normalize(cron="0 9 * * mon-fri").cron == "0 9 * * mon-fri"


# --- minimum interval -----------------------------------------------------------------

TOO_OFTEN = "Schedule must not run more often than every 5 minutes"


def test_every_5_minutes_is_accepted() -> None:
    assert normalize(cron="*/5 * * * *").cron == "*/5 * * * *"


def test_every_4_minutes_is_rejected() -> None:
    assert error_of(cron="*/4 * * * *") == TOO_OFTEN


def test_every_minute_text_parses_but_is_too_often() -> None:
    assert error_of(text="every minute") == TOO_OFTEN


@pytest.mark.parametrize("minute", [0, 1, 2, 3, 4, 30, 58, 59])
def test_0_3_is_rejected_whenever_it_is_submitted(minute: int) -> None:
    # Firecrawl looks only at the next two runs, so at :30 it sees a 57-minute gap.
    assert error_of(cron="0,3 * * * *", now=utc(2026, 5, 6, 12, minute)) == TOO_OFTEN


def test_gap_across_the_hour_boundary_is_rejected() -> None:
    assert error_of(cron="0,58 * * * *") == TOO_OFTEN


def test_gap_across_midnight_is_rejected() -> None:
    # 23:57 -> 00:00 is the only short gap; it appears once a day.
    assert error_of(cron="0,57 0,23 * * *", now=utc(2026, 5, 6, 0, 30)) == TOO_OFTEN


def test_gap_of_exactly_the_minimum_across_midnight_is_accepted() -> None:
    assert normalize(cron="0,55 0,23 * * *").cron == "0,55 0,23 * * *"


def test_gap_between_adjacent_weekdays_is_rejected() -> None:
    # Friday 23:58 -> Saturday 00:00, submitted on a Sunday.
    sunday = utc(2026, 5, 10, 12)
    assert error_of(cron="0,58 0,23 * * 5,6", now=sunday) == TOO_OFTEN


def test_short_gap_in_a_rare_schedule_is_rejected_before_its_first_run() -> None:
    # Submitted mid-month: the window starts at the first run, not at "now".
    assert error_of(cron="0,1 0 1 * *") == TOO_OFTEN


def test_minimum_interval_comes_from_settings(settings) -> None:
    settings.MIN_SCHEDULE_INTERVAL_MINUTES = 15

    assert error_of(text="every 10 minutes") == (
        "Schedule must not run more often than every 15 minutes"
    )
    assert normalize(text="every 15 minutes").cron == "*/15 * * * *"


@pytest.mark.parametrize(
    "now", [utc(2026, 10, 10), utc(2026, 10, 20), utc(2026, 10, 24, 23)]
)
def test_every_2_hours_in_berlin_meets_a_2_hour_minimum_whenever_it_is_submitted(
    settings, now: datetime
) -> None:
    # The clock going back on 25 October runs 02:00 twice, an hour apart:
    # measured on Berlin's clock, the schedule was refused in the 8 days before.
    settings.MIN_SCHEDULE_INTERVAL_MINUTES = 120

    schedule = normalize(text="every 2 hours", timezone="Europe/Berlin", now=now)

    assert schedule.cron == "0 */2 * * *"


def test_minimum_of_one_minute_reads_naturally(settings) -> None:
    settings.MIN_SCHEDULE_INTERVAL_MINUTES = 1

    assert normalize(text="every minute").cron == "* * * * *"


def test_validation_uses_the_current_time_when_none_is_given() -> None:
    schedule = normalize_schedule(None, "hourly", None)

    assert schedule == Schedule(cron="0 * * * *", timezone="UTC")


# --- time zones -----------------------------------------------------------------------


def test_timezone_defaults_to_utc() -> None:
    assert normalize(text="hourly").timezone == "UTC"


def test_timezone_name_is_canonicalised_like_intl() -> None:
    assert (
        normalize(text="hourly", timezone="europe/berlin").timezone == "Europe/Berlin"
    )


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "CET+1", "../../etc/passwd", "localtime", "Factory"]
)
def test_unknown_timezone_is_rejected(zone: str) -> None:
    assert (
        error_of(text="hourly", timezone=zone) == f"Invalid schedule timezone: {zone}"
    )


def test_daily_time_is_local_to_the_schedule_timezone() -> None:
    schedule = normalize(text="daily at 9am", timezone="America/New_York")

    assert next_run_after(schedule, NOW) == utc(2026, 5, 6, 13, 0)  # 09:00 EDT


# --- next_run_after -------------------------------------------------------------------


def test_next_run_is_strictly_after_a_moment_on_a_fire_time() -> None:
    schedule = Schedule(cron="*/30 * * * *", timezone="UTC")

    assert next_run_after(schedule, utc(2026, 5, 6, 12, 30)) == utc(2026, 5, 6, 13, 0)


def test_next_run_ignores_seconds_and_microseconds() -> None:
    schedule = Schedule(cron="*/30 * * * *", timezone="UTC")
    moment = utc(2026, 5, 6, 12, 29, 59) + timedelta(microseconds=999_999)

    assert next_run_after(schedule, moment) == utc(2026, 5, 6, 12, 30)


def test_next_run_is_aware_utc_for_a_moment_in_another_zone() -> None:
    schedule = Schedule(cron="0 9 * * *", timezone="Europe/Berlin")
    moment = datetime(2026, 5, 6, 8, 0, tzinfo=NEW_YORK)  # 14:00 in Berlin

    run = next_run_after(schedule, moment)

    assert run == utc(2026, 5, 7, 7, 0)
    assert run.tzinfo is UTC


def test_naive_moment_is_a_programming_error() -> None:
    schedule = Schedule(cron="0 * * * *", timezone="UTC")

    with pytest.raises(ValueError, match="timezone-aware"):
        next_run_after(schedule, datetime(2026, 5, 6, 12))


# --- DST: Europe/Berlin (29 Mar and 25 Oct 2026), America/New_York (8 Mar, 1 Nov) -----


def test_berlin_spring_forward_moves_a_skipped_0230_to_0300() -> None:
    schedule = Schedule(cron="30 2 * * *", timezone="Europe/Berlin")

    runs = next_runs(schedule, utc(2026, 3, 28, 12), 2)

    assert runs == [utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]  # 03:00, 02:30


def test_berlin_fall_back_runs_a_repeated_0230_once_at_its_first_occurrence() -> None:
    schedule = Schedule(cron="30 2 * * *", timezone="Europe/Berlin")

    runs = next_runs(schedule, utc(2026, 10, 24, 12), 2)

    assert runs == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]  # CEST, CET


def test_berlin_every_2_hours_skips_the_missing_0200() -> None:
    schedule = Schedule(cron="0 */2 * * *", timezone="Europe/Berlin")

    runs = next_runs(schedule, utc(2026, 3, 28, 22), 3)

    local = [run.astimezone(BERLIN).strftime("%H:%M") for run in runs]
    assert local == ["00:00", "04:00", "06:00"]


def test_berlin_every_30_minutes_stays_30_real_minutes_apart_over_the_gap() -> None:
    schedule = Schedule(cron="*/30 * * * *", timezone="Europe/Berlin")

    runs = next_runs(schedule, utc(2026, 3, 29, 0, 15), 3)  # 01:15 CET

    assert runs == [
        utc(2026, 3, 29, 0, 30),
        utc(2026, 3, 29, 1),
        utc(2026, 3, 29, 1, 30),
    ]


def test_new_york_spring_forward_moves_a_skipped_0230_to_0300() -> None:
    schedule = Schedule(cron="30 2 * * *", timezone="America/New_York")

    runs = next_runs(schedule, utc(2026, 3, 7, 12), 2)

    assert runs == [utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]  # 03:00, 02:30 EDT


def test_new_york_fall_back_runs_a_repeated_0130_once() -> None:
    schedule = Schedule(cron="30 1 * * *", timezone="America/New_York")

    runs = next_runs(schedule, utc(2026, 10, 31, 12), 2)

    assert runs == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]  # EDT, EST


def test_new_york_fall_back_never_returns_a_run_before_a_moment_in_the_repeat() -> None:
    # 01:10 EST, after 01:30 EDT has already happened: cronsim alone answers 01:30
    # EDT (05:30 UTC), which is in the past.
    schedule = Schedule(cron="30 1 * * *", timezone="America/New_York")
    moment = datetime(2026, 11, 1, 1, 10, tzinfo=NEW_YORK, fold=1)

    assert next_run_after(schedule, moment) == utc(2026, 11, 2, 6, 30)


def test_new_york_hourly_runs_in_both_repeated_hours() -> None:
    schedule = Schedule(cron="0 * * * *", timezone="America/New_York")

    runs = next_runs(schedule, utc(2026, 11, 1, 4, 30), 3)

    assert runs == [utc(2026, 11, 1, 5), utc(2026, 11, 1, 6), utc(2026, 11, 1, 7)]


def test_walking_a_dst_year_always_moves_forward() -> None:
    schedule = Schedule(cron="30 1,2 * * *", timezone="America/New_York")

    runs = next_runs(schedule, utc(2026, 1, 1), 800)

    assert all(b > a for a, b in zip(runs, runs[1:], strict=False))
    assert runs[-1] > utc(2027, 1, 1)


# --- DST by half an hour: Australia/Lord_Howe (5 Apr and 4 Oct 2026) ---------------
# Its clock moves 30 minutes (02:00 +11 -> 01:30 +10:30 in April; 02:00 +10:30 ->
# 02:30 +11 in October). Stepping through real time by whole hours, as cronsim
# does for a `*` in the minute or hour, lands on :30 after the change and missed
# every run until the next hour matched.

LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def lord_howe_times(cron: str, after: datetime, count: int) -> list[str]:
    runs = next_runs(Schedule(cron, "Australia/Lord_Howe"), after, count)
    return [run.astimezone(LORD_HOWE).strftime("%H:%M%z") for run in runs]


def test_lord_howe_every_2_hours_runs_at_0200_on_the_day_the_clock_goes_back() -> None:
    after = datetime(2026, 4, 4, 23, 30, tzinfo=LORD_HOWE)

    assert lord_howe_times("0 */2 * * *", after, 3) == [
        "00:00+1100",
        "02:00+1030",
        "04:00+1030",
    ]


def test_lord_howe_office_hours_start_at_nine_on_both_change_days() -> None:
    # Asked after the day before's last run, as the dispatcher asks.
    back = lord_howe_times("*/10 9-17 * * *", utc(2026, 4, 4, 7), 2)
    forward = lord_howe_times("*/10 9-17 * * *", utc(2026, 10, 3, 7, 30), 2)

    assert back == ["09:00+1030", "09:10+1030"]
    assert forward == ["09:00+1100", "09:10+1100"]


def test_lord_howe_hourly_at_45_runs_in_every_hour_round_both_changes() -> None:
    back = lord_howe_times(
        "45 * * * *", datetime(2026, 4, 5, 0, 50, tzinfo=LORD_HOWE), 3
    )
    forward = lord_howe_times(
        "45 * * * *", datetime(2026, 10, 4, 1, 50, tzinfo=LORD_HOWE), 2
    )

    # 01:45 comes twice when the clock goes back, as the repeated hour of Berlin.
    assert back == ["01:45+1100", "01:45+1030", "02:45+1030"]
    assert forward == ["02:45+1100", "03:45+1100"]


def test_lord_howe_every_30_minutes_stays_30_real_minutes_apart() -> None:
    for start in (utc(2026, 4, 4, 12), utc(2026, 10, 3, 12)):
        runs = next_runs(Schedule("*/30 * * * *", "Australia/Lord_Howe"), start, 60)

        assert {b - a for a, b in zip(runs, runs[1:], strict=False)} == {
            timedelta(minutes=30)
        }


def test_lord_howe_daily_0130_runs_once_when_the_clock_goes_back() -> None:
    runs = next_runs(
        Schedule("30 1 * * *", "Australia/Lord_Howe"), utc(2026, 4, 4, 0), 2
    )

    assert [run.astimezone(LORD_HOWE).strftime("%d %H:%M%z") for run in runs] == [
        "05 01:30+1100",
        "06 01:30+1030",
    ]


def test_lord_howe_daily_0215_runs_at_0230_when_the_clock_skips_it() -> None:
    runs = next_runs(
        Schedule("15 2 * * *", "Australia/Lord_Howe"), utc(2026, 10, 3, 0), 2
    )

    assert [run.astimezone(LORD_HOWE).strftime("%d %H:%M%z") for run in runs] == [
        "04 02:30+1100",
        "05 02:15+1100",
    ]


# --- Pacific/Chatham (+12:45/+13:45; 5 Apr 03:45 -> 02:45, 27 Sep 02:45 -> 03:45) --


def test_chatham_every_minute_of_hour_2_runs_through_the_repeated_quarter() -> None:
    chatham = ZoneInfo("Pacific/Chatham")
    after = datetime(2026, 4, 5, 2, 58, tzinfo=chatham)  # the first 02:58, +13:45

    runs = next_runs(Schedule("* 2 * * *", "Pacific/Chatham"), after, 3)

    assert [run.astimezone(chatham).strftime("%H:%M%z") for run in runs] == [
        "02:59+1345",
        "02:45+1245",
        "02:46+1245",
    ]


def test_chatham_daily_0300_runs_at_0345_when_the_clock_skips_it() -> None:
    runs = next_runs(Schedule("0 3 * * *", "Pacific/Chatham"), utc(2026, 9, 26, 0), 1)

    assert runs == [datetime(2026, 9, 27, 3, 45, tzinfo=ZoneInfo("Pacific/Chatham"))]


def test_kolkata_daily_0930_is_0400_utc_all_year() -> None:
    runs = next_runs(Schedule("30 9 * * *", "Asia/Kolkata"), utc(2026, 3, 28), 3)
    later = next_runs(Schedule("30 9 * * *", "Asia/Kolkata"), utc(2026, 10, 24), 3)

    assert {(run.hour, run.minute) for run in runs + later} == {(4, 0)}


def test_kathmandu_daily_0900_is_0315_utc() -> None:
    runs = next_runs(Schedule("0 9 * * *", "Asia/Kathmandu"), utc(2026, 10, 3), 2)

    assert runs == [utc(2026, 10, 3, 3, 15), utc(2026, 10, 4, 3, 15)]


def test_kiritimati_monday_0900_is_sunday_in_utc_across_the_date_line() -> None:
    kiritimati = ZoneInfo("Pacific/Kiritimati")  # +14, all year

    runs = next_runs(Schedule("0 9 * * 1", "Pacific/Kiritimati"), utc(2026, 10, 3), 2)

    assert runs == [utc(2026, 10, 4, 19), utc(2026, 10, 11, 19)]
    assert {run.astimezone(kiritimati).strftime("%A %H:%M") for run in runs} == {
        "Monday 09:00"
    }


# --- next_runs and interval_minutes ---------------------------------------------------


def test_next_runs_lists_the_preview_in_order() -> None:
    schedule = Schedule(cron="0 9 * * 1-5", timezone="UTC")

    runs = next_runs(schedule, utc(2026, 5, 7, 12), 3)  # Thursday

    assert runs == [utc(2026, 5, 8, 9), utc(2026, 5, 11, 9), utc(2026, 5, 12, 9)]


def test_next_runs_of_zero_is_empty() -> None:
    assert next_runs(Schedule(cron="0 * * * *", timezone="UTC"), NOW, 0) == []


@pytest.mark.parametrize(
    ("cron", "minutes"),
    [("*/30 * * * *", 30), ("0 */2 * * *", 120), ("0 9 * * *", 1440)],
)
def test_interval_is_the_gap_between_the_next_two_runs(cron: str, minutes: int) -> None:
    assert interval_minutes(Schedule(cron=cron, timezone="UTC"), NOW) == minutes


def test_weekday_interval_spans_the_weekend_when_asked_on_friday() -> None:
    schedule = Schedule(cron="0 9 * * 1-5", timezone="UTC")

    assert interval_minutes(schedule, utc(2026, 5, 8, 8)) == 3 * 24 * 60


def test_daily_interval_is_23_hours_across_spring_forward() -> None:
    schedule = Schedule(cron="0 9 * * *", timezone="Europe/Berlin")

    assert interval_minutes(schedule, utc(2026, 3, 28)) == 23 * 60


# --- describe -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "words"),
    [
        ("* * * * *", "Every minute"),
        ("*/30 * * * *", "Every 30 minutes"),
        ("0,30 * * * *", "Every 30 minutes"),
        ("7-59/15 * * * *", "Every 15 minutes starting at :07"),
        ("20-59/15 * * * *", "Hourly at :20, :35 and :50"),
        ("0,10 * * * *", "Hourly at :00 and :10"),
        ("15 * * * *", "Hourly at :15"),
        ("0 */2 * * *", "Every 2 hours"),
        # How an import spreads "every 3 hours" over the gap.
        ("17 2-23/3 * * *", "Every 3 hours from 02:17"),
        ("30 1-23/2 * * *", "Every 2 hours from 01:30"),
        ("30 1-23/2 * * *", "Every 2 hours from 01:30"),
        ("0 9 * * *", "Daily at 09:00"),
        ("0 9,17 * * *", "Daily at 09:00 and 17:00"),
        ("0 9 * * 1-5", "Every weekday at 09:00"),
        ("0 9 * * MON-FRI", "Every weekday at 09:00"),
        ("0 8 * * 1,4", "Mondays and Thursdays at 08:00"),
        ("15 7 * * 5,3,1", "Mondays, Wednesdays and Fridays at 07:15"),
        ("0 8 * * 0,1", "Mondays and Sundays at 08:00"),
        ("0 12 * * 0,6", "Weekends at 12:00"),
        ("0 0 * * 0", "Weekly on Sunday at 00:00"),
        ("0 0 * * 7", "Weekly on Sunday at 00:00"),
        ("0 10 * * 1", "Weekly on Monday at 10:00"),
        # Office hours: evenly through a block of hours.
        ("*/15 9-17 * * 1-5", "Every 15 minutes from 09:00 to 17:45 on weekdays"),
        ("0 9-17 * * 1-5", "Hourly from 09:00 to 17:00 on weekdays"),
        ("*/30 * * * 1-5", "Every 30 minutes on weekdays"),
        ("0 */2 * * 6", "Every 2 hours on Saturdays"),
        # Days of the month and months.
        ("0 9 1 * *", "Monthly on day 1 at 09:00"),
        ("0 9 1,15 * *", "Monthly on days 1 and 15 at 09:00"),
        ("0 9 1-7 * *", "Monthly on days 1 to 7 at 09:00"),
        ("30 17 L * *", "Monthly on the last day at 17:30"),
        ("0 0 1 1 *", "At 00:00 on day 1 of January"),
        ("0 0 1 */3 *", "Every 3 months on day 1 at 00:00"),
        ("0 0 1 1,7 *", "Every 6 months on day 1 at 00:00"),
        ("0 0 1 2,5,8,11 *", "At 00:00 on day 1 of February, May, August and November"),
        ("0 9 * * 1#1", "First Monday of the month at 09:00"),
        ("0 9 * * 5L", "Last Friday of the month at 09:00"),
        ("*/30 * 1 * *", "Every 30 minutes on day 1 of every month"),
        ("0 9 * 12 *", "Daily at 09:00 in December"),
        ("0 9 * 6-8 1-5", "Every weekday at 09:00 in June, July and August"),
        # crontab(5): both day fields written out, so either matches: every day.
        ("0 9 1-31 * 1", "Daily at 09:00"),
        # A `*` day of the month makes both fields count: Mondays only.
        ("0 9 */1 * 1", "Weekly on Monday at 09:00"),
    ],
)
def test_describe_says_when_it_runs_in_plain_words(cron: str, words: str) -> None:
    assert describe(Schedule(cron=cron, timezone="UTC")) == words


@pytest.mark.parametrize(
    "cron",
    [
        "0 9 LW * *",
        "0 9 1 * 1#1",  # day 1, or the first Monday
        "0 9 */2 * *",
        "0 9 1-7 * 1",  # day 1 to 7, or any Monday
        "0 0,6,12,18,21 * * *",
        "not a cron",
    ],
)
def test_describe_has_no_words_for_unusual_schedules(cron: str) -> None:
    assert describe(Schedule(cron=cron, timezone="UTC")) is None


@pytest.mark.parametrize(
    "text",
    [
        "every 30 minutes",
        "every 15 minutes starting at :07",
        "hourly at :15",
        "every 2 hours",
        "daily at 9:00",
        "every weekday at 9am",
        "every monday and thursday at 8am",
        "weekly",
    ],
)
def test_every_documented_phrase_has_a_plain_description(text: str) -> None:
    assert describe(normalize(text=text)) is not None


# --- what the form's schedule box shows -----------------------------------------------


@pytest.mark.parametrize(
    ("cron", "shown"),
    [
        ("*/30 * * * *", "Every 30 minutes"),
        ("7-59/15 * * * *", "Every 15 minutes starting at :07"),
        ("15 * * * *", "Hourly at :15"),
        ("0 */2 * * *", "Every 2 hours"),
        # How an import spreads "every 3 hours" over the gap.
        ("17 2-23/3 * * *", "Every 3 hours from 02:17"),
        ("30 1-23/2 * * *", "Every 2 hours from 01:30"),
        ("0 9 * * *", "Daily at 09:00"),
        ("0 9 * * MON-FRI", "Every weekday at 09:00"),
        ("15 7 * * 5,3,1", "Mondays, Wednesdays and Fridays at 07:15"),
        ("0 12 * * 0,6", "Weekends at 12:00"),
        ("0 0 * * 7", "Weekly on Sunday at 00:00"),
        ("0 9,17 * * *", "Daily at 09:00 and 17:00"),
        ("0 9 1 * *", "Monthly on day 1 at 09:00"),
        ("0 9 1,15 * *", "Monthly on days 1 and 15 at 09:00"),
        ("30 17 L * *", "Monthly on the last day at 17:30"),
        ("*/15 9-17 * * 1-5", "Every 15 minutes from 09:00 to 17:45 on weekdays"),
        ("0 9-17 * * *", "Hourly from 09:00 to 17:00"),
        ("0 * * * 1-5", "Hourly at :00 on weekdays"),
        ("*/20 * * * 1,3", "Every 20 minutes on Mondays and Wednesdays"),
    ],
)
def test_the_schedule_box_shows_words_that_read_back_as_the_same_schedule(
    cron: str, shown: str
) -> None:
    schedule = Schedule(cron=cron, timezone="UTC")

    assert schedule_box_text(schedule) == shown
    assert next_runs(normalize(text=shown), NOW, 20) == next_runs(schedule, NOW, 20)


@pytest.mark.parametrize(
    "cron",
    [
        "0 9 1-7 * *",  # described, but "days 1 to 7" is not a phrase we read
        "0 0,6,12,18,21 * * *",  # no words at all
    ],
)
def test_the_schedule_box_shows_cron_when_the_words_would_not_read_back(
    cron: str,
) -> None:
    assert schedule_box_text(Schedule(cron=cron, timezone="UTC")) == cron


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        ("every 120 minutes", "0 */2 * * *"),
        ("every 360 minutes", "0 */6 * * *"),
        ("every 120 minutes starting at :15", "15 */2 * * *"),
        ("every 0.5 hours", "*/30 * * * *"),
        ("every 2.0 hrs", "0 */2 * * *"),
    ],
)
def test_minutes_making_whole_hours_and_decimal_hours_are_read_as_meant(
    text: str, cron: str
) -> None:
    assert normalize(text=text).cron == cron


@pytest.mark.parametrize(
    ("text", "minutes"), [("every 1.5 hours", 90), ("every 1.2 hours", 72)]
)
def test_a_decimal_gap_cron_cannot_keep_is_refused_not_read_without_its_dot(
    text: str, minutes: int
) -> None:
    assert error_of(text=text) == (
        f"Checks cannot run every {minutes} minutes: a schedule repeats evenly "
        "within each hour (every 5, 10, 15, 20 or 30 minutes) or every few whole "
        "hours that divide the day (2, 3, 4, 6, 8 or 12). Choose every hour or "
        "every 2 hours."
    )


def test_a_gap_of_part_of_a_minute_is_refused_saying_why() -> None:
    assert error_of(text="every 7.5 minutes") == (
        "'7.5 minutes' is not a whole number of minutes: give the gap in whole "
        "minutes or hours."
    )


@pytest.mark.parametrize(
    ("text", "cron"),
    [
        ("every 120 minutes on weekdays", "0 */2 * * 1-5"),
        ("every 2 hours on weekdays", "0 */2 * * 1-5"),
        ("every 120 minutes starting at :15 on weekends", "15 */2 * * 0,6"),
        ("every 3 hours from 02:17 on mondays", "17 2-23/3 * * 1"),
        ("every 2 hours from 9am to 5pm", "0 9-17/2 * * *"),
        ("every 2 hours from 9am to 6pm", "0 9-17/2 * * *"),
        ("every 120 minutes from 9am to 5pm on weekdays", "0 9-17/2 * * 1-5"),
        ("every 3 hours between 8:30 and 18:00 on weekends", "30 8-17/3 * * 0,6"),
        ("every 5 hours from 8am to 6pm", "0 8-18/5 * * *"),
        # Midnight as the end is the day's end: the last run is in hour 23.
        ("every 2 hours from 8am to midnight", "0 8-22/2 * * *"),
        ("every 3 hours from 9am to midnight", "0 9-21/3 * * *"),
        ("hourly from 6pm to midnight", "0 18-23 * * *"),
    ],
)
def test_whole_hour_gaps_can_be_kept_to_days_and_office_hours(
    text: str, cron: str
) -> None:
    assert normalize(text=text).cron == cron


@pytest.mark.parametrize(
    ("cron", "shown"),
    [
        ("0 */2 * * 1-5", "Every 2 hours on weekdays"),
        ("0 */2 * * 6", "Every 2 hours on Saturdays"),
        ("0 9-17/2 * * 1-5", "Every 2 hours from 09:00 to 17:00 on weekdays"),
        ("30 8-17/3 * * *", "Every 3 hours from 08:30 to 17:30"),
        # Not evenly round the clock (20:00 to 00:00 is 4 hours), said as is.
        ("0 */5 * * *", "Every 5 hours from 00:00 to 20:00"),
        ("0 8-22/2 * * *", "Every 2 hours from 08:00 to 22:00"),
    ],
)
def test_hour_gaps_on_some_days_or_hours_show_words_that_read_back(
    cron: str, shown: str
) -> None:
    schedule = Schedule(cron=cron, timezone="UTC")

    assert schedule_box_text(schedule) == shown
    assert next_runs(normalize(text=shown), NOW, 20) == next_runs(schedule, NOW, 20)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "every 5 hours on weekdays",
            "Hour intervals must divide 24 evenly, e.g. every 2, 3, 4, 6, 8 or 12 "
            "hours; within set hours (“every 5 hours from 8am to 6pm”) any gap works.",
        ),
        (
            "every 2 hours from 5pm to 9am",
            "'5pm to 9am' holds no run: the end must come after the start, on the "
            "same day.",
        ),
        (
            "every 120 minutes starting at :15 from 9am to 5pm",
            "'9am to 5pm' starts the runs at 9am: leave out the starting minute, "
            "or start the hours at 9:15.",
        ),
    ],
)
def test_hour_gaps_that_cannot_be_kept_are_refused_saying_what_works(
    text: str, message: str
) -> None:
    assert error_of(text=text) == message
