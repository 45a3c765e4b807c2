"""The dashboard form says every rule in plain words, while the API keeps its
own messages, both from one rule (issue #21.2): "judgeEnabled requires a
non-empty goal." is for programmers; the form says what to do in the words on
the page."""

from __future__ import annotations

import re

import pytest

from monitors import rules
from monitors.dashboard.forms import fields as forms
from monitors.dashboard.forms import words as form_words
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.schedule import ScheduleError, normalize_schedule
from tests.test_dashboard_forms import post

pytestmark = pytest.mark.django_db

# The contract's field names and DRF's stock phrasing, which nobody using the
# dashboard should meet.
API_WORDS = re.compile(
    r"judgeEnabled|retentionDays|maxResults|includeDomains|excludeDomains|"
    r"scrapeOptions|crawlOptions|searchWindow|includeDiffs|webhook\.|non-empty|"
    r"Ensure this|This field|elements|A valid integer|valid choice|This list|"
    r"cron or text|[Cc]ron|Unsupported|Invalid schedule"
)
ROW = "t0000aaaa"


def crawl(**fields: str) -> dict[str, str]:
    return {f"{ROW}-type": "crawl", f"{ROW}-url": "https://example.com/"} | {
        f"{ROW}-{name}": value for name, value in fields.items()
    }


def search(**fields: str) -> dict[str, str]:
    return {f"{ROW}-type": "search", f"{ROW}-queries": "pagewatch", "goal": "x"} | {
        f"{ROW}-{name}": value for name, value in fields.items()
    }


def row(**fields: str) -> dict[str, str]:
    return {f"{ROW}-{name}": value for name, value in fields.items()}


def lines(count: int, text: str = "x{}") -> str:
    return "\n".join(text.format(n) for n in range(count))


# (what a person typed, the field the message appears on, what it says)
CASES = [
    ({"name": ""}, "name", "Give the monitor a name."),
    ({"name": "n" * 257}, "name", "The name can be at most 256 characters long."),
    ({"schedule": ""}, "schedule", rules.SCHEDULE_MISSING.plain),
    *[
        ({"schedule": typed}, "schedule", rules.SCHEDULE_UNREADABLE_PLAIN)
        for typed in ("every banana", "0 9 * *", "@daily", "61 * * * *")
    ],
    (
        {"timezone": "Mars/Olympus"},
        "schedule",
        "“Mars/Olympus” is not a time zone we know: pick one from the list.",
    ),
    ({"target": []}, "targets", form_words.WORDS["targets"].missing),
    ({"goal": "g" * 2001}, "goal", "The goal can be at most 2,000 characters long."),
    ({"judge": "on"}, "judge", rules.GOAL_REQUIRED_FOR_JUDGE.plain),
    (search() | {"goal": ""}, "goal", rules.GOAL_REQUIRED_FOR_SEARCH.plain),
    *[
        (
            {"retention_days": days},
            "retention_days",
            "Enter a whole number of days from 1 to 365, or leave it empty.",
        )
        for days in ("0", "366", "thirty", "1.5")
    ],
    (
        {"webhook_headers": "X-Team: a"},
        "webhook_url",
        form_words.WORDS["webhook_url"].missing,
    ),
    (
        {"webhook_url": "https://h.example/", "webhook_events": []},
        "webhook_events",
        "Choose at least one kind of message to send.",
    ),
    (
        {"email_recipients": lines(26, "p{}@example.com")},
        "email_recipients",
        "At most 25 recipients.",
    ),
    (row(urls=""), f"{ROW}-urls", "Enter at least one page address."),
    (
        row(urls="https://example.com/" + "a" * 2048),
        f"{ROW}-urls",
        "URL is longer than 2048 characters.",  # the URL rule's own words
    ),
    (crawl(url=""), f"{ROW}-url", "Enter the address to start from."),
    (
        crawl(limit="0"),
        f"{ROW}-limit",
        "Enter a whole number of pages from 1 to 10,000, or leave it empty.",
    ),
    (
        crawl(depth="101"),
        f"{ROW}-depth",
        "Enter a whole number of clicks from 0 to 100, or leave it empty.",
    ),
    (
        crawl(include_paths=lines(101, "^/p{}")),
        f"{ROW}-include_paths",
        "At most 100 patterns.",
    ),
    (search(queries=""), f"{ROW}-queries", "Enter at least one search."),
    (search(queries=lines(13)), f"{ROW}-queries", "At most 12 searches."),
    (
        search(queries="q" * 257),
        f"{ROW}-queries",
        "A search can be at most 256 characters long.",
    ),
    (
        search(max_results="0"),
        f"{ROW}-max_results",
        "Enter a whole number of results from 1 to 50.",
    ),
    (
        search(search_window="2d"),
        f"{ROW}-search_window",
        "Choose one of the listed time spans.",
    ),
    (
        search(include_domains="a.com", exclude_domains="b.com"),
        f"{ROW}-exclude_domains",
        rules.DOMAINS_EXCLUSIVE.plain,
    ),
    (
        search(include_domains=lines(51, "s{}.com")),
        f"{ROW}-include_domains",
        "At most 50 sites.",
    ),
    (
        row(include_tags=", ".join(f"t{n}" for n in range(101))),
        f"{ROW}-include_tags",
        "At most 100 tags or selectors.",
    ),
    (
        row(headers="X-Long: " + "v" * 4097),
        f"{ROW}-headers",
        "A value can be at most 4,096 characters long.",
    ),
    (
        row(timeout="500"),
        f"{ROW}-timeout",
        "Enter a whole number of milliseconds from 1,000 to 300,000, or leave it "
        "empty.",
    ),
    (
        row(wait_for="70000"),
        f"{ROW}-wait_for",
        "Enter a whole number of milliseconds from 0 to 60,000, or leave it empty.",
    ),
]


@pytest.mark.parametrize(("typed", "slot", "expected"), CASES)
def test_every_rule_reads_in_plain_words_in_the_form(typed, slot, expected):
    form = MonitorForm(post(**typed))
    assert not form.is_valid()
    messages = form.errors.get(slot)
    assert messages, form.errors
    # A message about one line of a list names the line first.
    assert any(m == expected or m.endswith(f"”: {expected}") for m in messages)
    for shown in form.errors.values():
        assert not [m for m in shown if API_WORDS.search(m)], form.errors


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"judgeEnabled": True}, "judgeEnabled requires a non-empty goal."),
        ({"targets": []}, "targets: Ensure this field has at least 1 elements."),
        ({"retentionDays": 0}, "Ensure this value is greater than or equal to 1."),
        ({"schedule": {"cron": "0 9 * *"}}, "Cron expression must contain five fields"),
        ({"schedule": {"cron": "@daily"}}, "Cron expression must contain five fields"),
        (
            {"schedule": {"cron": "61 * * * *"}},
            "Invalid cron expression '61 * * * *': the minute field is not valid.",
        ),
        (
            {"schedule": {"text": "hourly", "timezone": "Mars/Olympus"}},
            "Invalid schedule timezone: Mars/Olympus",
        ),
        (
            {"schedule": {"text": "every banana"}},
            "Unsupported schedule text. Try phrases like 'every 30 minutes'",
        ),
    ],
)
def test_the_api_keeps_its_own_words_for_the_same_rules(api, body, expected):
    base = {
        "name": "n",
        "schedule": {"text": "hourly"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
    }
    response = api.post("/v2/monitor", base | body, format="json")
    assert response.status_code == 400
    assert expected in response.json()["error"]


def test_every_field_an_api_error_can_land_on_has_plain_words():
    slots = {
        *forms._MAIN_SLOTS.values(),
        *forms._WEBHOOK_SLOTS.values(),
        *forms._EMAIL_SLOTS.values(),
        *forms._TARGET_SLOTS.values(),
    }
    # Check boxes and the judging choice cannot hold a wrong value; the
    # schedule's problems are worded by its own rules.
    without_words = {"judge", "schedule", "email_enabled", "email_include_diffs"}
    without_words |= {"only_main_content", "mobile"}
    assert slots - without_words <= set(form_words.WORDS)


def test_an_unknown_time_zone_is_named_as_typed():
    with pytest.raises(ScheduleError) as caught:
        normalize_schedule(None, "hourly", "Mars/Olympus")

    assert form_words.schedule_problem(caught.value) == (
        "“Mars/Olympus” is not a time zone we know: pick one from the list."
    )


def test_a_schedule_that_would_not_run_for_years_is_said_plainly():
    error = ScheduleError.breaking(rules.CRON_NEVER_RUNS, cron="0 0 1 1 *", years="8")

    assert form_words.schedule_problem(error) == (
        "This schedule would not run for years, if ever: check its day and month."
    )
    assert error.message == (
        "Cron expression '0 0 1 1 *' does not run within the next 8 years, the "
        "longest wait Pagewatch accepts."
    )


def test_an_empty_schedule_box_reads_as_an_example_not_as_a_value():
    # The empty box's grey words looked like a schedule already set, so
    # "Enter a schedule, for example “every 30 minutes”" read as nonsense.
    placeholder = forms.MonitorFields().fields["schedule"].widget.attrs["placeholder"]
    assert placeholder.startswith("for example")
    assert placeholder.split("for example", 1)[1].strip(" ,:") == "every 30 minutes"


def test_a_line_that_is_not_an_address_is_named_once():
    form = MonitorForm(post(**{f"{ROW}-urls": "https://example.com/a\nnot an address"}))

    assert not form.is_valid()
    said = [m for shown in form.errors.values() for m in shown]
    assert (
        said.count(
            "“not an address” is not a web address: it should look like "
            "https://example.com/page."
        )
        == len(said)
        and said
    )


def test_a_line_with_another_problem_is_still_named_first():
    form = MonitorForm(
        post(**{f"{ROW}-urls": "https://example.com/a\nftp://x.example"})
    )

    assert not form.is_valid()
    said = [m for shown in form.errors.values() for m in shown]
    assert any(m.startswith("“ftp://x.example”: ") for m in said), said


def test_header_and_site_problems_quote_with_curly_quotes_as_the_form_does():
    form = MonitorForm(
        post(
            webhook_url="https://h.example/",
            webhook_headers="Host: x\nX-é: y\nX-Team: été",
            **search(include_domains="https://example.com/x"),
        )
    )

    assert not form.is_valid()
    assert form.errors["webhook_headers"] == [
        "Header “Host” is set by Pagewatch and cannot be overridden.",
        "“X-é” is not a valid header name: use letters, digits and hyphens, "
        "e.g. X-Team.",
        "The value of header “X-Team” cannot be sent: “é” is not a plain ASCII "
        "character.",
    ]
    assert form.errors[f"{ROW}-include_domains"] == [
        "“https://example.com/x” is not a hostname (give e.g. example.com, no "
        "scheme or path)."
    ]


def test_the_api_keeps_straight_quotes_in_its_header_messages(api):
    body = {
        "name": "n",
        "schedule": {"text": "hourly"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
        "webhook": {"url": "https://h.example/", "headers": {"Host": "x"}},
    }
    response = api.post("/v2/monitor", body, format="json")
    assert "Header 'Host' is set by Pagewatch" in response.json()["error"]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("/[abc/", "This pattern is not valid: “[abc” opens a “[” that is never "
                   "closed."),
        ("/(ab/", "This pattern is not valid: “(ab” opens a “(” that is never "
                  "closed."),
        ("/ab)/", "This pattern is not valid: a “)” in “ab)” closes nothing."),
        ("/(?<=x)y/", "This pattern is not valid: “(?<=” is not supported here "
                      "(no look-arounds or back-references)."),
        ("/a{2,1}/", "This pattern is not valid: the count in “{2,1}” is not "
                     "possible."),
    ],
)  # fmt: skip
def test_a_pattern_that_cannot_be_read_says_plainly_what_is_wrong_and_where(
    typed, expected
):
    form = MonitorForm(post(ignore_lines=typed))

    assert not form.is_valid()
    assert form.errors["ignore_lines"] == [f"“{typed}”: {expected}"]


def test_a_crawl_path_pattern_that_cannot_be_read_is_said_the_same_way():
    form = MonitorForm(post(**crawl(include_paths="^/news/[0-9")))

    assert not form.is_valid()
    assert form.errors[f"{ROW}-include_paths"] == [
        "“^/news/[0-9”: This pattern is not valid: “[0-9” opens a “[” that is "
        "never closed."
    ]


def test_the_api_keeps_the_pattern_engines_own_reason(api):
    body = {
        "name": "n",
        "schedule": {"text": "hourly"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
        "ignoreLines": ["/[abc/"],
    }
    response = api.post("/v2/monitor", body, format="json")
    assert "Not a pattern we can use: missing ]: [abc." in response.json()["error"]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("(a)\\1", "“\\1” is not supported here (no back-references)"),
        ("abc\\", "it ends with a lone “\\”"),
        ("a**", "“**” repeats a repeat"),
    ],
)
def test_other_unreadable_patterns_say_what_is_wrong_without_the_engines_terms(
    typed, expected
):
    form = MonitorForm(post(**crawl(exclude_paths=typed)))

    assert not form.is_valid()
    [said] = form.errors[f"{ROW}-exclude_paths"]
    assert said.endswith(f"This pattern is not valid: {expected}.")
