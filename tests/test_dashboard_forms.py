"""monitors.dashboard.forms: what people type becomes the API's JSON, and the
API serializer's errors land next to the right field."""

from __future__ import annotations

import pytest
from django.http import QueryDict
from django.utils import timezone

from monitors.dashboard.forms.fields import MAX_TARGET_ROWS, split_schedule
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.editing import create_monitor
from monitors.wire.monitor import MonitorWriteSerializer

pytestmark = pytest.mark.django_db


def post(**fields) -> QueryDict:
    data = QueryDict(mutable=True)
    base = {
        "name": "Pricing",
        "schedule": "every 30 minutes",
        "timezone": "UTC",
        "judge": "auto",
        "target": "t0000aaaa",
        "t0000aaaa-type": "scrape",
        "t0000aaaa-urls": "https://example.com/a",
        "t0000aaaa-only_main_content": "on",
    }
    for key, value in (base | fields).items():
        if isinstance(value, list):
            data.setlist(key, value)
        elif value is not None:
            data[key] = value
    return data


def make_monitor(team, **overrides):
    body = {
        "name": "Pricing",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/a"]}],
        **overrides,
    }
    serializer = MonitorWriteSerializer(data=body)
    serializer.is_valid(raise_exception=True)
    return create_monitor(team, serializer.validated_data, timezone.now())


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("*/30 * * * *", ("*/30 * * * *", None)),
        ("0 9 * * 1-5", ("0 9 * * 1-5", None)),
        ("  every 30 minutes ", (None, "every 30 minutes")),
        ("Daily at 9am", (None, "Daily at 9am")),
        ("", (None, None)),
    ],
)
def test_one_schedule_box_takes_words_or_cron(typed, expected):
    assert split_schedule(typed) == expected


def test_a_plain_form_becomes_the_api_body():
    form = MonitorForm(post())
    assert form.payload() == {
        "name": "Pricing",
        "tags": [],
        "schedule": {"timezone": "UTC", "text": "every 30 minutes"},
        "targets": [
            {"type": "scrape", "urls": ["https://example.com/a"], "scrapeOptions": {}}
        ],
        "goal": "",
        "ignoreLines": [],
        "changeRules": {
            "lines": "any",
            "containing": [],
            "appears": "",
            "disappears": "",
        },
        "fetchWith": "auto",
        "webhook": None,
        "notification": {
            "email": {"enabled": False, "recipients": [], "includeDiffs": False}
        },
        "channels": [],
    }
    assert form.is_valid()
    assert form.validated_data["schedule"] == {
        "cron": "*/30 * * * *",
        "timezone": "UTC",
    }


def test_judging_choice_maps_to_judge_enabled():
    assert "judgeEnabled" not in MonitorForm(post(judge="auto")).payload()
    assert MonitorForm(post(judge="on")).payload()["judgeEnabled"] is True
    assert MonitorForm(post(judge="off")).payload()["judgeEnabled"] is False
    assert "judgeEnabled" not in MonitorForm(post(judge="maybe")).payload()


def test_numbers_are_sent_as_numbers_and_anything_else_as_typed():
    form = MonitorForm(
        post(
            **{
                "t0000aaaa-timeout": "5000",
                "t0000aaaa-wait_for": "1.5s",
                "retention_days": " 7 ",
            }
        )
    )
    payload = form.payload()
    assert payload["retentionDays"] == 7
    assert payload["targets"][0]["scrapeOptions"] == {
        "timeout": 5000,
        "waitFor": "1.5s",
    }
    assert not form.is_valid()
    assert form.errors["t0000aaaa-wait_for"] == [
        "Enter a whole number of milliseconds from 0 to 60,000, or leave it empty."
    ]


def test_header_lines_must_be_name_colon_value():
    form = MonitorForm(
        post(
            webhook_url="https://h.example/", webhook_headers="X-Team: a\nno colon here"
        )
    )
    assert not form.is_valid()
    assert form.errors["webhook_headers"] == [
        "Extra headers, line 2: write each entry as “Name: value”."
    ]
    assert form.payload()["webhook"]["headers"] == {"X-Team": "a"}


def test_bad_header_and_metadata_lines_say_which_field_and_the_shape_each_wants():
    form = MonitorForm(
        post(
            webhook_url="https://h.example/",
            webhook_headers="no colon here",
            webhook_metadata="just words",
        )
    )

    assert not form.is_valid()
    assert form.errors["webhook_headers"] == [
        "Extra headers, line 1: write each entry as “Name: value”."
    ]
    assert form.errors["webhook_metadata"] == [
        "Metadata, line 1: write each entry as “key: value”."
    ]


def test_an_empty_webhook_is_no_webhook_but_headers_without_an_address_are_an_error():
    assert MonitorForm(post(webhook_url="  ")).payload()["webhook"] is None
    form = MonitorForm(post(webhook_headers="X-Team: a"))
    assert not form.is_valid()
    assert form.errors["webhook_url"] == [
        "Enter the address that should receive the webhook (or clear its headers "
        "and metadata)."
    ]


def test_unchecking_every_webhook_event_is_reported_on_the_events():
    form = MonitorForm(post(webhook_url="https://h.example/", webhook_events=[]))
    assert not form.is_valid()
    assert list(form.errors) == ["webhook_events"]


def test_errors_of_list_items_name_the_line():
    form = MonitorForm(
        post(**{"t0000aaaa-urls": "https://ok.example/\nfile:///etc/passwd"})
    )
    assert not form.is_valid()
    assert form.errors["t0000aaaa-urls"] == [
        "“file:///etc/passwd”: Only http:// and https:// URLs are allowed."
    ]


def test_every_bad_path_pattern_is_reported_at_once_beside_other_errors():
    form = MonitorForm(
        post(
            target=["t0000bbbb"],
            **{
                "t0000bbbb-type": "crawl",
                "t0000bbbb-url": "example.com",
                "t0000bbbb-include_paths": "/blog/.*\n[unclosed\n(?<=x)y",
                "t0000bbbb-exclude_paths": "\\",
            },
        )
    )
    assert not form.is_valid()
    included = form.errors["t0000bbbb-include_paths"]
    assert [m.split("”")[0].split("“")[-1] for m in included] == [
        "[unclosed",
        "(?<=x)y",
    ]
    assert len(form.errors["t0000bbbb-exclude_paths"]) == 1
    assert "Start the address with https://" in form.errors["t0000bbbb-url"][0]


def test_a_css_selector_the_page_cleaner_cannot_read_is_named_on_its_field():
    form = MonitorForm(post(**{"t0000aaaa-exclude_tags": "nav, div[["}))
    assert not form.is_valid()
    [message] = form.errors["t0000aaaa-exclude_tags"]
    assert "“div[[” is not a CSS selector Pagewatch can read" in message
    assert "excludeTags" not in message


def test_unknown_option_errors_stay_on_their_target_row(team):
    monitor = make_monitor(
        team, targets=[{"type": "scrape", "urls": ["https://example.com/a"]}]
    )
    target = monitor.targets.get()
    # formats set through the API are kept; a broken one is reported on the row.
    target.scrape_options = {"formats": ["nonsense"]}
    target.save()
    monitor.refresh_from_db()
    form = MonitorForm(post(**{"t0000aaaa-id": str(target.id)}), monitor=monitor)
    assert not form.is_valid()
    assert form.errors["t0000aaaa"] == [
        "scrapeOptions.formats: Unknown format 'nonsense'. Use one of: markdown, html, "
        "rawHtml, links, images, summary, screenshot."
    ]


def test_the_goal_rules_are_checked_even_while_other_fields_are_wrong():
    form = MonitorForm(
        post(
            schedule="every banana",
            target=["t0000bbbb"],
            **{"t0000bbbb-type": "search", "t0000bbbb-queries": "acme"},
        )
    )
    assert not form.is_valid()
    assert set(form.errors) == {"schedule", "goal"}


def test_errors_show_for_touched_fields_and_cross_field_rules():
    form = MonitorForm(
        post(
            name="",
            target=["t0000bbbb"],
            **{"t0000bbbb-type": "search", "t0000bbbb-queries": "acme"},
        )
    )
    form.is_valid()
    assert set(form.visible_errors(None)) == {"name", "goal"}
    assert set(form.visible_errors({"t0000bbbb-queries"})) == {"goal"}
    assert set(form.visible_errors({"name"})) == {"name"}
    assert form.visible_errors(set()) == {}


def test_never_a_browser_is_refused_in_plain_words_for_pages_that_need_one():
    form = MonitorForm(post(fetch_with="http", **{"t0000aaaa-wait_for": "2000"}))

    assert not form.is_valid()
    assert form.errors["fetch_with"] == [
        "Some pages ask to wait, to perform steps, for a screenshot or to look "
        "like a phone, and only a browser can do that: choose “Automatically” or "
        "“Always in a real browser”."
    ]
    assert MonitorForm(post(fetch_with="browser")).payload()["fetchWith"] == "browser"


def test_rows_come_in_page_order_and_odd_keys_are_ignored():
    data = post(target=["t0000bbbb", "../x", "t0000aaaa", "t0000bbbb"])
    data["t0000bbbb-type"] = "crawl"
    data["t0000bbbb-url"] = "https://blog.example/"
    form = MonitorForm(data)
    assert [row.key for row in form.targets] == ["t0000bbbb", "t0000aaaa"]
    assert [t["type"] for t in form.payload()["targets"]] == ["crawl", "scrape"]


def test_too_many_rows_are_cut_and_reported_by_the_serializer():
    keys = [f"t{n:08x}" for n in range(MAX_TARGET_ROWS + 20)]
    data = post(target=keys)
    for key in keys:
        data[f"{key}-type"] = "scrape"
        data[f"{key}-urls"] = "https://example.com/a"
    form = MonitorForm(data)
    assert len(form.targets) == MAX_TARGET_ROWS
    assert not form.is_valid()
    assert form.errors["targets"] == [
        "A monitor can watch at most 50 targets: spread them over several monitors."
    ]


def test_adding_and_removing_rows_without_javascript():
    form = MonitorForm(post())
    form.change_rows(add="search")
    assert [row.kind for row in form.targets] == ["scrape", "search"]
    form.change_rows(remove="t0000aaaa")
    assert [row.kind for row in form.targets] == ["search"]
    form.change_rows(add="bogus")
    assert [row.kind for row in form.targets] == ["search"]


def test_editing_keeps_other_notification_channels_and_target_ids(team):
    monitor = make_monitor(team)
    monitor.notification = {
        "email": {"enabled": False, "recipients": []},
        "slack": {"x": 1},
    }
    target = monitor.targets.get()
    form = MonitorForm(post(**{"t0000aaaa-id": str(target.id)}), monitor=monitor)
    payload = form.payload()
    assert payload["notification"]["slack"] == {"x": 1}
    assert payload["targets"][0]["id"] == str(target.id)


def test_a_target_id_from_another_monitor_is_not_sent(team):
    stranger = make_monitor(team, name="Other").targets.get()
    monitor = make_monitor(team)
    form = MonitorForm(post(**{"t0000aaaa-id": str(stranger.id)}), monitor=monitor)
    assert "id" not in form.payload()["targets"][0]


def test_an_unbound_edit_form_shows_the_stored_monitor(team):
    monitor = make_monitor(
        team,
        goal="Price changes",
        judgeEnabled=False,
        webhook={"url": "https://h.example/", "headers": {"A": "b"}},
    )
    form = MonitorForm(monitor=monitor)
    assert form.main["schedule"].value() == "Every weekday at 09:00"
    assert form.main["judge"].value() == "off"
    assert form.main["webhook_headers"].value() == "A: b"
    assert [row.kind for row in form.targets] == ["scrape"]
    assert form.targets[0]["urls"].value() == "https://example.com/a"


def test_a_schedule_without_words_that_read_back_is_shown_as_its_cron(team):
    monitor = make_monitor(team, schedule={"cron": "0 9 1-7 * *", "timezone": "UTC"})

    assert MonitorForm(monitor=monitor).main["schedule"].value() == "0 9 1-7 * *"


def test_saving_the_schedule_box_untouched_keeps_the_cron_as_written(team):
    schedule = {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Berlin"}
    monitor = make_monitor(team, schedule=schedule)
    row = MonitorForm(monitor=monitor).targets[0]
    data = post(
        schedule="Every weekday at 09:00",
        timezone="Europe/Berlin",
        target=[row.key],
        **{
            f"{row.key}-id": str(monitor.targets.get().id),
            f"{row.key}-type": "scrape",
            f"{row.key}-urls": "https://example.com/a",
        },
    )
    form = MonitorForm(data, monitor=monitor)

    assert form.is_valid(), form.errors
    form.save(team, timezone.now())
    monitor.refresh_from_db()
    assert monitor.schedule_cron == "0 9 * * MON-FRI"


def test_changing_the_words_in_the_schedule_box_changes_the_schedule(team):
    schedule = {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Berlin"}
    monitor = make_monitor(team, schedule=schedule)
    form = MonitorForm(post(schedule="Every weekday at 10:00"), monitor=monitor)

    assert form.payload()["schedule"] == {
        "text": "Every weekday at 10:00",
        "timezone": "UTC",
    }


def test_a_search_monitor_that_opted_out_of_judging_saves_again_unchanged(team):
    monitor = make_monitor(
        team,
        judgeEnabled=False,
        targets=[{"type": "search", "queries": ["acme"]}],
    )
    initial = MonitorForm(monitor=monitor)
    assert initial.main["judge"].value() == "off"
    row = initial.targets[0]
    data = post(
        target=[row.key],
        judge="off",
        **{
            f"{row.key}-id": str(monitor.targets.get().id),
            f"{row.key}-type": "search",
            f"{row.key}-queries": "acme",
            f"{row.key}-search_window": "24h",
            f"{row.key}-max_results": "10",
        },
    )
    assert MonitorForm(data, monitor=monitor).is_valid()


def test_the_page_events_choice_is_saved_shown_again_and_checked(team):
    hook = {"webhook_url": "https://h.example/", "webhook_events": ["monitor.page"]}
    form = MonitorForm(post(**hook, webhook_pages="changed"))
    assert form.is_valid(), form.errors
    assert "webhookPages" not in form.payload()  # not part of the API body
    monitor = form.save(team, timezone.now())
    assert monitor.webhook_pages == "changed"
    assert MonitorForm(monitor=monitor).main["webhook_pages"].value() == "changed"

    unchanged = MonitorForm(post(**hook), monitor=monitor)
    assert unchanged.is_valid()  # nothing chosen: every page, as the API does
    assert unchanged.save(team, timezone.now()).webhook_pages == "all"

    odd = MonitorForm(post(webhook_pages="sometimes"), monitor=monitor)
    assert not odd.is_valid()
    assert odd.errors["webhook_pages"] == [
        "Choose every page or only the pages that changed."
    ]


def test_the_webhook_choices_say_what_is_sent():
    labels = dict(MonitorForm().main.fields["webhook_events"].choices)
    assert "each page checked" in labels["monitor.page"]
    pages = dict(MonitorForm().main.fields["webhook_pages"].choices)
    assert pages == {
        "all": "Every page, unchanged ones included",
        "changed": "Only pages that changed (new or changed)",
    }


def test_a_digit_int_cannot_read_is_not_taken_for_a_channel_number():
    # "²" passes str.isdigit() and int() refuses it: a 500 in the form.
    data = post()
    data.setlist("channels", ["²", "7"])
    assert MonitorForm(data).payload()["channels"] == [7]


def test_which_changes_matter_is_saved_shown_again_and_removed_when_emptied(team):
    rules = {
        "change_lines": "removed",
        "change_containing": "Sale\n\n/\\d+% off/",
        "change_disappears": " Out of stock ",
    }
    form = MonitorForm(post(**rules))
    assert form.is_valid(), form.errors
    monitor = form.save(team, timezone.now())

    assert monitor.change_rules == {
        "lines": "removed",
        "containing": ["Sale", "/\\d+% off/"],
        "appears": None,
        "disappears": "Out of stock",
    }
    shown = MonitorForm(monitor=monitor).main
    assert shown["change_lines"].value() == "removed"
    assert shown["change_containing"].value() == "Sale\n/\\d+% off/"
    assert shown["change_disappears"].value() == "Out of stock"

    emptied = MonitorForm(post(change_lines="any"), monitor=monitor)
    assert emptied.is_valid(), emptied.errors
    assert emptied.save(team, timezone.now()).change_rules is None


def test_broken_change_rules_are_said_in_plain_words_beside_their_field():
    form = MonitorForm(
        post(
            change_lines="sometimes",
            change_containing="fine\n/[unclosed/",
            change_appears="x" * 301,
        )
    )

    assert not form.is_valid()
    assert form.errors["change_lines"] == [
        "Choose which lines count: added or removed, only added, or only removed."
    ]
    assert form.errors["change_appears"] == [
        "The text can be at most 300 characters long."
    ]
    fixed = MonitorForm(post(change_containing="fine\n/[unclosed/"))
    assert not fixed.is_valid()
    assert fixed.errors["change_containing"] == [
        "“/[unclosed/”: This pattern is not valid: “[unclosed” opens a “[” that "
        "is never closed."
    ]
