"""Every input rule of /v2/monitor at and just past its boundary, and the error
envelope for everything a client can get wrong (reference §2, §5; issue #2).

A rejected request must answer 400 with
{"success": false, "error": "<message naming the field>", "code": "BAD_REQUEST",
"details": [...]} and must leave the database untouched; an accepted value at
the boundary must be stored as given."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from checks.search.canonical import host_of, in_domains
from checks.targets.options import snake_case
from monitors import rules
from monitors.models import Monitor, Target

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"


def body(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
    }
    base.update(copy.deepcopy(overrides))
    return base


def search_target(**overrides: Any) -> dict[str, Any]:
    return {"type": "search", "queries": ["pagewatch release"], **overrides}


def create(api: APIClient, payload: dict[str, Any]):
    return api.post(URL, payload, format="json")


def assert_rejected(response, field: str) -> dict[str, Any]:
    """400 in the contract's envelope, with a message that names `field`."""
    assert response.status_code == 400, response.content
    payload = response.json()
    assert payload["success"] is False
    assert payload["code"] == "BAD_REQUEST"
    assert field in payload["error"], payload["error"]
    assert isinstance(payload["details"], list) and payload["details"]
    for issue in payload["details"]:
        assert {"code", "path", "message"} <= issue.keys()
    return payload


def assert_create_rejected(api: APIClient, payload: dict[str, Any], field: str) -> dict:
    result = assert_rejected(create(api, payload), field)
    assert Monitor.objects.count() == 0
    assert Target.objects.count() == 0
    return result


def assert_created(api: APIClient, payload: dict[str, Any]) -> dict[str, Any]:
    response = create(api, payload)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert Monitor.objects.filter(pk=data["id"]).exists()
    return data


@pytest.fixture
def monitor_id(api) -> str:
    return assert_created(api, body())["id"]


def patch(api: APIClient, monitor_id: str, payload: Any):
    return api.patch(f"{URL}/{monitor_id}", payload, format="json")


# ------------------------------------------------------------------ name and goal


def test_name_of_256_characters_is_stored(api):
    data = assert_created(api, body(name="n" * 256))
    assert Monitor.objects.get(pk=data["id"]).name == "n" * 256


@pytest.mark.parametrize("name", ["n" * 257, "", "   ", None, 42])
def test_name_longer_than_256_blank_or_not_text_is_rejected(api, name):
    assert_create_rejected(api, body(name=name), "name")


@pytest.mark.parametrize("field", ["name", "schedule", "targets"])
def test_each_required_field_is_named_when_missing(api, field):
    payload = body()
    del payload[field]
    assert_create_rejected(api, payload, field)


def test_goal_of_2000_characters_is_stored_and_turns_judging_on(api):
    data = assert_created(api, body(goal="g" * 2000))
    monitor = Monitor.objects.get(pk=data["id"])
    assert monitor.goal == "g" * 2000
    assert monitor.judge_enabled is True


def test_goal_of_2001_characters_is_rejected(api):
    assert_create_rejected(api, body(goal="g" * 2001), "goal")


def test_goal_is_trimmed_and_blank_goal_is_stored_as_null(api):
    trimmed = assert_created(api, body(goal="  price drops  "))
    assert Monitor.objects.get(pk=trimmed["id"]).goal == "price drops"
    blank = assert_created(api, body(goal="   "))
    monitor = Monitor.objects.get(pk=blank["id"])
    assert monitor.goal is None
    assert monitor.judge_enabled is False


# ------------------------------------------------------------------ goal rules


def test_goal_without_judge_enabled_turns_judging_on(api):
    data = assert_created(api, body(goal="Tell me when the price changes"))
    assert data["judgeEnabled"] is True


def test_goal_with_judge_enabled_false_keeps_judging_off(api):
    data = assert_created(api, body(goal="Price changes", judgeEnabled=False))
    assert data["judgeEnabled"] is False
    assert data["goal"] == "Price changes"


@pytest.mark.parametrize("goal", [None, "", "   "])
def test_judge_enabled_true_needs_a_goal(api, goal):
    payload = body(judgeEnabled=True)
    if goal is not None:
        payload["goal"] = goal
    error = assert_create_rejected(api, payload, "judgeEnabled")
    assert rules.GOAL_REQUIRED_FOR_JUDGE.api in error["error"]


@pytest.mark.parametrize("goal", [None, "", "  "])
def test_search_target_needs_a_goal(api, goal):
    payload = body(targets=[search_target()])
    if goal is not None:
        payload["goal"] = goal
    error = assert_create_rejected(api, payload, "goal")
    assert rules.GOAL_REQUIRED_FOR_SEARCH.api in error["error"]


def test_search_target_without_goal_is_allowed_when_judging_is_off(api):
    data = assert_created(api, body(targets=[search_target()], judgeEnabled=False))
    assert data["goal"] is None
    assert data["judgeEnabled"] is False


def test_search_target_with_goal_is_judged(api):
    data = assert_created(api, body(targets=[search_target()], goal="New releases"))
    assert data["judgeEnabled"] is True


def test_search_target_mixed_with_scrape_target_still_needs_a_goal(api):
    payload = body(
        targets=[
            {"type": "scrape", "urls": ["https://example.com/"]},
            search_target(),
        ]
    )
    assert_create_rejected(api, payload, "goal")


# ------------------------------------------------------------------ targets


def test_fifty_targets_are_stored_in_order(api):
    targets = [
        {"type": "scrape", "urls": [f"https://example.com/{i}"]} for i in range(50)
    ]
    data = assert_created(api, body(targets=targets))
    stored = Target.objects.filter(monitor_id=data["id"]).order_by("position")
    assert [t.urls[0] for t in stored] == [
        f"https://example.com/{i}" for i in range(50)
    ]


@pytest.mark.parametrize("count", [0, 51])
def test_zero_or_more_than_fifty_targets_are_rejected(api, count):
    targets = [
        {"type": "scrape", "urls": [f"https://example.com/{i}"]} for i in range(count)
    ]
    assert_create_rejected(api, body(targets=targets), "targets")


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"type": "ftp", "urls": ["https://example.com"]}, "targets[0].type"),
        ({"urls": ["https://example.com"]}, "targets[0].type"),
        ({"type": "scrape", "urls": []}, "targets[0].urls"),
        ({"type": "scrape"}, "targets[0].urls"),
        ({"type": "scrape", "urls": "https://example.com"}, "targets[0].urls"),
        ({"type": "crawl"}, "targets[0].url"),
        ({"type": "scrape", "urls": ["https://a.example"], "depth": 2}, "depth"),
        ({"type": "scrape", "urls": ["https://a.example"], "id": "x"}, "targets[0].id"),
        ({"type": "search", "queries": []}, "targets[0].queries"),
        ("https://example.com", "targets[0]"),
    ],
)
def test_malformed_target_is_rejected_naming_its_field(api, target, field):
    assert_create_rejected(api, body(targets=[target], goal="g"), field)


def test_target_ids_must_be_unique(api):
    target_id = "0190a0a0-0000-7000-8000-000000000001"
    targets = [
        {"id": target_id, "type": "scrape", "urls": ["https://a.example/"]},
        {"id": target_id, "type": "scrape", "urls": ["https://b.example/"]},
    ]
    assert_create_rejected(api, body(targets=targets), "unique")


def test_duplicate_urls_in_one_target_are_stored_once(api):
    urls = ["https://example.com/a", "https://example.com/b", "https://example.com/a"]
    data = assert_created(api, body(targets=[{"type": "scrape", "urls": urls}]))
    assert data["targets"][0]["urls"] == urls[:2]


# ------------------------------------------------------------------ search targets


def test_search_target_defaults_are_stored_and_returned(api):
    data = assert_created(api, body(targets=[search_target()], goal="g"))
    assert data["targets"][0]["searchWindow"] == "24h"
    assert data["targets"][0]["maxResults"] == 10
    target = Target.objects.get(monitor_id=data["id"])
    assert (target.search_window, target.max_results) == ("24h", 10)


def test_twelve_queries_of_256_characters_are_stored(api):
    queries = [f"{i:02d}" + "q" * 254 for i in range(12)]
    data = assert_created(api, body(targets=[search_target(queries=queries)], goal="g"))
    assert Target.objects.get(monitor_id=data["id"]).queries == queries


def test_a_query_given_twice_is_kept_once(api):
    # Each query is one search per check, billed per result: the same query
    # twice would cost twice and find nothing more (URLs and domains are kept
    # once already).
    queries = ["pagewatch release", " pagewatch release ", "pagewatch 2.0"]
    data = assert_created(
        api,
        body(targets=[search_target(queries=queries)], goal="g", judgeEnabled=False),
    )
    once = ["pagewatch release", "pagewatch 2.0"]
    assert data["targets"][0]["queries"] == once
    target = Target.objects.get(monitor_id=data["id"])
    assert target.queries == once


def test_thirteen_queries_are_rejected(api):
    target = search_target(queries=[f"query {i}" for i in range(13)])
    assert_create_rejected(api, body(targets=[target], goal="g"), "targets[0].queries")


def test_query_of_257_characters_is_rejected(api):
    target = search_target(queries=["ok", "q" * 257])
    assert_create_rejected(
        api, body(targets=[target], goal="g"), "targets[0].queries[1]"
    )


# A control character is no part of what anyone searches for, a
# bidirectional override makes a query read on screen other than what is sent,
# and a line or paragraph separator splits a query into lines in one place
# (the form's box) and not another (the API).
@pytest.mark.parametrize(
    ("character", "code"),
    [("\u202e", "U+202E"), ("\u2066", "U+2066"), ("\x01", "U+0001"),
     ("\x1b", "U+001B"), ("\x7f", "U+007F"), ("\x85", "U+0085"),
     ("\u2028", "U+2028"), ("\u2029", "U+2029")],
)  # fmt: skip
def test_a_query_with_a_control_or_direction_character_is_refused_saying_where(
    api, character, code
):
    target = search_target(queries=["acme", f"acme{character}launch"])
    result = assert_create_rejected(
        api, body(targets=[target], goal="g"), "targets[0].queries[1]"
    )
    assert result["error"] == (
        f"targets[0].queries[1]: Character 5 of this search is an invisible "
        f"control character ({code}): remove it."
    )


@pytest.mark.parametrize("mark", ["\u200e", "\u200f", "\u061c"])
def test_a_query_with_a_direction_mark_of_right_to_left_text_is_stored(api, mark):
    # Marks, unlike overrides, only settle where a neutral character goes:
    # ordinary in Arabic or Hebrew text typed or pasted.
    query = f"\u0633\u0639\u0631 {mark}100 USD"
    target = search_target(queries=[query])
    data = assert_created(api, body(targets=[target], goal="g"))
    assert Target.objects.get(monitor_id=data["id"]).queries == [query]


@pytest.mark.parametrize("max_results", [1, 50])
def test_max_results_at_its_bounds_is_stored(api, max_results):
    target = search_target(maxResults=max_results)
    data = assert_created(api, body(targets=[target], goal="g"))
    assert Target.objects.get(monitor_id=data["id"]).max_results == max_results


@pytest.mark.parametrize("max_results", [0, 51, "ten", 2.5])
def test_max_results_outside_1_to_50_is_rejected(api, max_results):
    target = search_target(maxResults=max_results)
    assert_create_rejected(api, body(targets=[target], goal="g"), "maxResults")


@pytest.mark.parametrize("window", rules.SEARCH_WINDOWS)
def test_every_search_window_is_accepted(api, window):
    data = assert_created(
        api, body(targets=[search_target(searchWindow=window)], goal="g")
    )
    assert data["targets"][0]["searchWindow"] == window


@pytest.mark.parametrize("window", ["2d", "24H", "", None])
def test_unknown_search_window_is_rejected(api, window):
    target = search_target(searchWindow=window)
    assert_create_rejected(api, body(targets=[target], goal="g"), "searchWindow")


@pytest.mark.parametrize("field", ["includeDomains", "excludeDomains"])
def test_fifty_domains_are_stored_lower_cased(api, field):
    domains = [f"Site{i}.Example.COM" for i in range(50)]
    data = assert_created(
        api, body(targets=[search_target(**{field: domains})], goal="g")
    )
    assert data["targets"][0][field] == [d.lower() for d in domains]


@pytest.mark.parametrize("field", ["includeDomains", "excludeDomains"])
def test_a_domain_written_in_letters_is_stored_in_the_ascii_form_results_are_matched_in(
    api, field
):
    domains = ["Bücher.de", "xn--bcher-kva.de", "müller.example.com"]
    data = assert_created(
        api, body(targets=[search_target(**{field: domains})], goal="g")
    )
    ascii_names = ["xn--bcher-kva.de", "xn--mller-kva.example.com"]
    assert data["targets"][0][field] == ascii_names
    stored = getattr(Target.objects.get(monitor_id=data["id"]), snake_case(field))
    assert stored == ascii_names
    # A result's address in either form is then one of them.
    for url in ("https://www.bücher.de/a", "https://xn--bcher-kva.de/b"):
        assert in_domains(host_of(url), stored)


def test_a_domain_rule_with_sharp_s_is_its_own_site_as_its_results_are(api):
    # IDNA 2003 wrote faß.example as fass.example, another site's name.
    target = search_target(includeDomains=["faß.example"])
    data = assert_created(api, body(targets=[target], goal="g"))
    stored = Target.objects.get(monitor_id=data["id"]).include_domains
    assert stored == ["xn--fa-hia.example"]
    assert in_domains(host_of("https://faß.example/a"), stored)
    assert not in_domains(host_of("https://fass.example/a"), stored)


@pytest.mark.parametrize("field", ["includeDomains", "excludeDomains"])
def test_fifty_one_domains_are_rejected(api, field):
    domains = [f"site{i}.example.com" for i in range(51)]
    target = search_target(**{field: domains})
    assert_create_rejected(api, body(targets=[target], goal="g"), field)


@pytest.mark.parametrize(
    "domain", ["https://example.com", "example.com/path", "localhost", "exa mple.com"]
)
def test_domain_with_scheme_path_or_no_dot_is_rejected(api, domain):
    target = search_target(includeDomains=["ok.example", domain])
    assert_create_rejected(api, body(targets=[target], goal="g"), "includeDomains[1]")


def test_include_and_exclude_domains_are_mutually_exclusive(api):
    target = search_target(includeDomains=["a.example"], excludeDomains=["b.example"])
    error = assert_create_rejected(
        api, body(targets=[target], goal="g"), "excludeDomains"
    )
    assert "mutually exclusive" in error["error"]


def test_legacy_search_keys_are_dropped_silently(api):
    target = search_target(depth="deep", alertMode="first_match", recheckAfter=5)
    data = assert_created(api, body(targets=[target], goal="g"))
    assert not {"depth", "alertMode", "recheckAfter"} & data["targets"][0].keys()


# ------------------------------------------------------------------ retention


def test_retention_defaults_to_30_days(api):
    data = assert_created(api, body())
    assert data["retentionDays"] == 30
    assert Monitor.objects.get(pk=data["id"]).retention_days == 30


@pytest.mark.parametrize("days", [1, 365])
def test_retention_at_its_bounds_is_stored(api, days):
    data = assert_created(api, body(retentionDays=days))
    assert Monitor.objects.get(pk=data["id"]).retention_days == days


@pytest.mark.parametrize("days", [0, 366, -1, "thirty", 1.5, True])
def test_retention_outside_1_to_365_is_rejected(api, days):
    assert_create_rejected(api, body(retentionDays=days), "retentionDays")


# ------------------------------------------------------------------ schedule


def test_schedule_with_cron_and_text_is_rejected(api):
    schedule = {"cron": "*/30 * * * *", "text": "every 30 minutes"}
    error = assert_create_rejected(api, body(schedule=schedule), "schedule")
    assert "either cron or text" in error["error"]


@pytest.mark.parametrize(
    "schedule",
    [{}, {"timezone": "UTC"}, {"cron": None, "text": None, "timezone": None}],
)
def test_schedule_without_cron_or_text_is_rejected(api, schedule):
    error = assert_create_rejected(api, body(schedule=schedule), "schedule")
    assert "either cron or text" in error["error"]


@pytest.mark.parametrize("field", ["cron", "text"])
def test_schedule_with_blank_cron_or_text_is_rejected(api, field):
    assert_create_rejected(api, body(schedule={field: "  "}), f"schedule.{field}")


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"cron": 5}, "schedule.cron"),
        ({"text": ["hourly"]}, "schedule.text"),
        ({"cron": "0 9 * * *", "timezone": 1}, "schedule.timezone"),
        ("every 30 minutes", "schedule"),
    ],
)
def test_schedule_values_must_be_strings(api, schedule, field):
    assert_create_rejected(api, body(schedule=schedule), field)


def test_schedule_with_unknown_key_is_rejected(api):
    schedule = {"cron": "*/30 * * * *", "every": "day"}
    assert_create_rejected(api, body(schedule=schedule), "schedule.every")


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "UTC+2", "../../etc/passwd", "x" * 65]
)
def test_schedule_timezone_must_be_an_iana_zone(api, zone):
    schedule = {"cron": "0 9 * * *", "timezone": zone}
    assert_create_rejected(api, body(schedule=schedule), "schedule")


def test_schedule_timezone_in_any_case_is_stored_canonically(api):
    schedule = {"text": "daily at 9am", "timezone": "europe/berlin"}
    data = assert_created(api, body(schedule=schedule))
    assert data["schedule"] == {"cron": "0 9 * * *", "timezone": "Europe/Berlin"}


@pytest.mark.parametrize(
    "schedule", [{"cron": "*/5 * * * *"}, {"text": "every 5 minutes"}]
)
def test_schedule_every_five_minutes_is_the_fastest_allowed(api, schedule):
    data = assert_created(api, body(schedule=schedule))
    assert data["schedule"]["cron"] == "*/5 * * * *"


@pytest.mark.parametrize(
    "schedule",
    [
        {"cron": "*/4 * * * *"},
        {"cron": "* * * * *"},
        {"cron": "0,3 * * * *"},
        {"text": "every 4 minutes"},
        {"text": "every minute"},
    ],
)
def test_schedule_faster_than_every_five_minutes_is_rejected(api, schedule):
    error = assert_create_rejected(api, body(schedule=schedule), "schedule")
    assert "more often than every 5 minutes" in error["error"]


@pytest.mark.parametrize(
    "schedule",
    [
        {"cron": "0 9 * *"},
        {"cron": "61 * * * *"},
        {"cron": "0 9 31 2 *"},
        {"cron": "c" * 129},
        {"text": "whenever you like"},
        {"text": "every 45 minutes"},
        {"text": "every 5 hours"},
    ],
)
def test_schedule_that_cannot_be_read_is_rejected(api, schedule):
    assert_create_rejected(api, body(schedule=schedule), "schedule")


# ------------------------------------------------------------------ URLs


def test_url_of_2048_characters_is_stored(api):
    url = "https://example.com/" + "a" * (2048 - len("https://example.com/"))
    data = assert_created(api, body(targets=[{"type": "scrape", "urls": [url]}]))
    assert data["targets"][0]["urls"] == [url]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/" + "a" * 2029,  # 2049 characters
        "ftp://example.com/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://user:secret@example.com/",
        "https://user@example.com/",
        "https://example.com\\@evil.example/",
        "https://example.com/a b",
        "https:///path-only",
        "example.com",
        "",
    ],
)
def test_scrape_url_must_be_plain_http_or_https(api, url):
    targets = [{"type": "scrape", "urls": ["https://ok.example/", url]}]
    assert_create_rejected(api, body(targets=targets), "targets[0].urls[1]")


@pytest.mark.parametrize("url", ["gopher://example.com", "https://u:p@example.com"])
def test_crawl_url_follows_the_same_rule(api, url):
    assert_create_rejected(api, body(targets=[{"type": "crawl", "url": url}]), "url")


# ------------------------------------------------------------------ webhook


def webhook(**overrides: Any) -> dict[str, Any]:
    return {"url": "https://hooks.example.com/pagewatch", **overrides}


def test_webhook_defaults_to_every_event_and_empty_maps(api):
    data = assert_created(api, body(webhook=webhook()))
    expected = {
        "url": "https://hooks.example.com/pagewatch",
        "headers": {},
        "metadata": {},
        "events": ["monitor.page", "monitor.check.completed"],
    }
    assert data["webhook"] == expected
    assert Monitor.objects.get(pk=data["id"]).webhook == expected


def test_webhook_given_as_a_bare_url_is_stored_as_an_object(api):
    data = assert_created(api, body(webhook="https://hooks.example.com/x"))
    assert data["webhook"]["url"] == "https://hooks.example.com/x"
    assert data["webhook"]["events"] == list(rules.WEBHOOK_EVENTS)


def test_webhook_headers_metadata_and_one_event_are_stored(api):
    hook = webhook(
        headers={"Authorization": "Bearer s3cret"},
        metadata={"environment": "production"},
        events=["monitor.check.completed"],
    )
    data = assert_created(api, body(webhook=hook))
    assert Monitor.objects.get(pk=data["id"]).webhook == hook


@pytest.mark.parametrize(
    ("hook", "field"),
    [
        ({}, "webhook.url"),
        (webhook(url="ftp://hooks.example.com"), "webhook.url"),
        (webhook(url="https://user:pw@hooks.example.com"), "webhook.url"),
        (webhook(url="https://hooks.example.com\\x"), "webhook.url"),
        (webhook(events=["monitor.page", "crawl.completed"]), "webhook.events"),
        (webhook(events=[]), "webhook.events"),
        (webhook(events="monitor.page"), "webhook.events"),
        (webhook(headers={"X-Firecrawl-Signature": "forged"}), "webhook.headers"),
        (webhook(headers={"x-firecrawl-webhook-id": "forged"}), "webhook.headers"),
        (webhook(headers={"Content-Length": "1"}), "webhook.headers"),
        (webhook(headers={"Bad Header": "x"}), "webhook.headers"),
        (webhook(headers={"X-Ok": "line\r\nbreak"}), "webhook.headers"),
        (webhook(headers={"X-Ok": 5}), "webhook.headers"),
        (webhook(headers=["X-Ok"]), "webhook.headers"),
        (webhook(metadata={"count": 5}), "webhook.metadata"),
        (webhook(metadata={"nested": {"a": "b"}}), "webhook.metadata"),
        (webhook(secret="x"), "webhook.secret"),
        (42, "webhook"),
    ],
)
def test_invalid_webhook_is_rejected_naming_its_field(api, hook, field):
    assert_create_rejected(api, body(webhook=hook), field)


def test_webhook_with_more_than_50_headers_is_rejected(api):
    fifty = {f"X-H{i}": "v" for i in range(50)}
    fifty_one = fifty | {"X-H50": "v"}
    assert_create_rejected(
        api, body(webhook=webhook(headers=fifty_one)), "webhook.headers"
    )
    data = assert_created(api, body(webhook=webhook(headers=fifty)))
    assert Monitor.objects.get(pk=data["id"]).webhook["headers"] == fifty


# ------------------------------------------------------------------ notification


def email(**overrides: Any) -> dict[str, Any]:
    return {"notification": {"email": {"enabled": True, **overrides}}}


def test_email_notification_defaults_are_filled_in(api):
    data = assert_created(api, body(**email()))
    expected = {"email": {"enabled": True, "recipients": [], "includeDiffs": False}}
    assert data["notification"] == expected


def test_twenty_five_recipients_are_stored_lower_cased(api):
    recipients = [f"Person{i}@Example.com" for i in range(25)]
    data = assert_created(api, body(**email(recipients=recipients)))
    stored = Monitor.objects.get(pk=data["id"]).notification["email"]["recipients"]
    assert stored == [r.lower() for r in recipients]


def test_twenty_six_recipients_are_rejected(api):
    recipients = [f"person{i}@example.com" for i in range(26)]
    assert_create_rejected(
        api, body(**email(recipients=recipients)), "notification.email.recipients"
    )


@pytest.mark.parametrize("address", ["not-an-email", "a@", "@example.com", "a b@c.com"])
def test_recipient_must_be_an_email_address(api, address):
    recipients = ["ok@example.com", address]
    assert_create_rejected(
        api, body(**email(recipients=recipients)), "notification.email.recipients[1]"
    )


@pytest.mark.parametrize(
    ("notification", "field"),
    [
        ({"email": {"enabled": "maybe"}}, "notification.email.enabled"),
        ({"email": {"cc": ["a@example.com"]}}, "notification.email.cc"),
        ({"email": "a@example.com"}, "notification.email"),
        ({"pager": {"enabled": True}}, "notification.pager"),
    ],
)
def test_invalid_notification_is_rejected_naming_its_field(api, notification, field):
    assert_create_rejected(api, body(notification=notification), field)


def test_a_blank_webhook_string_is_refused_naming_the_webhook(api, monitor_id):
    payload = assert_rejected(patch(api, monitor_id, {"webhook": " "}), "webhook")
    assert payload["error"] == (
        "webhook: May not be blank: give a URL, or null to remove the webhook."
    )


@pytest.mark.parametrize("field", ["notification", "webhook"])
@pytest.mark.parametrize("value", [[], [1], 123, True])
def test_an_update_whose_notification_or_webhook_is_not_an_object_is_refused(
    api, monitor_id, field, value
):
    before = Monitor.objects.get(pk=monitor_id)
    payload = assert_rejected(patch(api, monitor_id, {field: value}), field)
    assert "object" in payload["error"] or "dictionary" in payload["error"]
    after = Monitor.objects.get(pk=monitor_id)
    assert (after.notification, after.webhook) == (before.notification, before.webhook)


# -------------------------------------------------------------- scrape/crawl options


def test_scrape_options_keep_unknown_keys_and_typed_values(api):
    options = {
        "formats": ["markdown", {"type": "json", "prompt": "prices"}],
        "onlyMainContent": True,
        "maxAge": 0,
        "headers": {"Accept-Language": "en"},
        "location": {"country": "DE", "languages": ["de-DE"]},
        "actions": [{"type": "wait", "milliseconds": 500}],
        "proxy": "auto",
        "futureOption": {"nested": [1, 2]},
    }
    target = {
        "type": "scrape",
        "urls": ["https://example.com/"],
        "scrapeOptions": options,
    }
    data = assert_created(api, body(targets=[target]))
    assert Target.objects.get(monitor_id=data["id"]).scrape_options == options
    assert data["targets"][0]["scrapeOptions"] == options


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"formats": ["pdf-magic"]}, "scrapeOptions.formats[0]"),
        ({"formats": [{"type": "nope"}]}, "scrapeOptions.formats[0]"),
        ({"maxAge": -1}, "scrapeOptions.maxAge"),
        ({"waitFor": "soon"}, "scrapeOptions.waitFor"),
        ({"timeout": 10}, "scrapeOptions.timeout"),
        ({"proxy": "tor"}, "scrapeOptions.proxy"),
        ({"onlyMainContent": "perhaps"}, "scrapeOptions.onlyMainContent"),
        ({"location": {"country": "Germany"}}, "scrapeOptions.location.country"),
        ({"location": {"city": "Berlin"}}, "scrapeOptions.location.city"),
        ({"actions": [{"milliseconds": 5}]}, "scrapeOptions.actions[0].type"),
        ({"parsers": ["docx"]}, "scrapeOptions.parsers[0]"),
        ({"headers": {"X": 1}}, "scrapeOptions.headers"),
        ("markdown", "scrapeOptions"),
        ({"includeTags": ["main", "div[["]}, "scrapeOptions.includeTags[1]"),
        ({"excludeTags": [":has("]}, "scrapeOptions.excludeTags[0]"),
        ({"excludeTags": ["#"]}, "scrapeOptions.excludeTags[0]"),
    ],
)
def test_typed_scrape_options_are_validated(api, options, field):
    target = {
        "type": "scrape",
        "urls": ["https://example.com/"],
        "scrapeOptions": options,
    }
    assert_create_rejected(api, body(targets=[target]), f"targets[0].{field}")


def test_css_selectors_the_page_cleaner_reads_are_stored(api):
    tags = ["main", "div.price > span", "#content", "nav, footer", "a[href^='/x']"]
    options = {"includeTags": tags, "excludeTags": [".ad:not(.keep)"]}
    data = assert_created(
        api,
        body(targets=[{"type": "scrape", "urls": ["https://x.test/"],
                       "scrapeOptions": options}]),
    )  # fmt: skip
    assert Target.objects.get(monitor_id=data["id"]).scrape_options == options


def scrape(options: dict[str, Any]) -> dict[str, Any]:
    return body(
        targets=[
            {"type": "scrape", "urls": ["https://x.test/"], "scrapeOptions": options}
        ]
    )


EVERY_ACTION = [
    {"type": "wait", "milliseconds": 500},
    {"type": "wait", "selector": "#price"},
    {"type": "click", "selector": ".tab", "all": True},
    {"type": "write", "text": "socks"},
    {"type": "press", "key": "Enter"},
    {"type": "scroll", "direction": "up", "selector": "main"},
    {"type": "screenshot", "fullPage": True, "quality": 80,
     "viewport": {"width": 800, "height": 600}},
    {"type": "scrape"},
    {"type": "executeJavascript", "script": "document.title"},
    {"type": "pdf", "landscape": True, "scale": 0.5, "format": "A4"},
]  # fmt: skip


def test_every_action_type_is_accepted_and_stored_as_given(api):
    data = assert_created(api, scrape({"actions": EVERY_ACTION, "waitFor": 1000}))
    stored = Target.objects.get(monitor_id=data["id"]).scrape_options
    assert stored["actions"] == EVERY_ACTION


@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        (
            {"actions": [{"type": "wait"}]},
            "actions[0].milliseconds",
            "Either 'milliseconds' or 'selector' must be provided, but not both.",
        ),
        (
            {"actions": [{"type": "wait", "milliseconds": 5, "selector": "p"}]},
            "actions[0].milliseconds",
            "Either 'milliseconds' or 'selector' must be provided, but not both.",
        ),
        ({"actions": [{"type": "click"}]}, "actions[0].selector", None),
        ({"actions": [{"type": "press", "key": 13}]}, "actions[0].key", None),
        ({"actions": [{"type": "write"}]}, "actions[0].text", None),
        (
            {"actions": [{"type": "scroll", "direction": "left"}]},
            "actions[0].direction",
            None,
        ),
        ({"actions": [{"type": "executeJavascript"}]}, "actions[0].script", None),
        ({"actions": [{"type": "pdf", "scale": 5}]}, "actions[0].scale", None),
        ({"actions": [{"type": "pdf", "format": "B5"}]}, "actions[0].format", None),
        (
            {"actions": [{"type": "screenshot", "viewport": {"width": 9000}}]},
            "actions[0].viewport.width",
            None,
        ),
        ({"actions": [{"type": "hover"}]}, "actions[0].type", None),
        ({"actions": ["click"]}, "actions[0]", None),
        (
            {"actions": [{"type": "scrape"}] * 51},
            "actions",
            "Number of actions cannot exceed 50.",
        ),
        (
            {"actions": [{"type": "wait", "milliseconds": 30_000}] * 3},
            "actions",
            "Total wait time (waitFor + wait actions) cannot exceed 60 seconds.",
        ),
        (
            {"waitFor": 59_500, "actions": [{"type": "wait", "selector": "p"}]},
            "waitFor",
            "Total wait time (waitFor + wait actions) cannot exceed 60 seconds.",
        ),
        (
            {"formats": ["screenshot", {"type": "screenshot", "fullPage": True}]},
            "formats",
            "You may only specify one screenshot format.",
        ),
        (
            {"formats": [{"type": "screenshot", "quality": 0}]},
            "formats[0].quality",
            None,
        ),
    ],
)
def test_actions_and_screenshots_beyond_firecrawls_rules_get_a_clear_400(
    api, options, field, message
):
    result = assert_create_rejected(
        api, scrape(options), f"targets[0].scrapeOptions.{field}"
    )
    if message is not None:
        assert message in str(result)


def test_actions_within_the_limits_are_accepted(api):
    actions = [{"type": "wait", "milliseconds": 29_000}] * 2 + [
        {"type": "wait", "selector": "#x"}
    ]
    assert_created(api, scrape({"waitFor": 1000, "actions": actions}))
    assert_created(api, scrape({"actions": [{"type": "scrape"}] * 50}))


def test_an_update_past_the_wait_limit_is_refused_and_changes_nothing(api, monitor_id):
    options = {"waitFor": 30_000, "actions": [{"type": "wait", "milliseconds": 30_001}]}
    target = {"type": "scrape", "urls": ["https://x.test/"], "scrapeOptions": options}

    response = patch(api, monitor_id, {"targets": [target]})

    assert_rejected(response, "targets[0].scrapeOptions.waitFor")
    assert Target.objects.get(monitor_id=monitor_id).scrape_options == {}


def test_crawl_options_keep_unknown_keys_and_typed_values(api):
    options = {
        "limit": 10000,
        "maxDiscoveryDepth": 2,
        "includePaths": ["^/blog/.*"],
        "sitemap": "skip",
        "maxDepth": 3,
        "somethingNew": True,
    }
    target = {"type": "crawl", "url": "https://example.com/", "crawlOptions": options}
    data = assert_created(api, body(targets=[target]))
    assert Target.objects.get(monitor_id=data["id"]).crawl_options == options


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "crawlOptions.limit"),
        ({"limit": 10001}, "crawlOptions.limit"),
        ({"sitemap": "never"}, "crawlOptions.sitemap"),
        ({"includePaths": ["("]}, "crawlOptions.includePaths"),
        ({"excludePaths": "^/admin"}, "crawlOptions.excludePaths"),
        ({"delay": -1}, "crawlOptions.delay"),
        ([1, 2], "crawlOptions"),
    ],
)
def test_typed_crawl_options_are_validated(api, options, field):
    target = {"type": "crawl", "url": "https://example.com/", "crawlOptions": options}
    assert_create_rejected(api, body(targets=[target]), f"targets[0].{field}")


# ------------------------------------------------------------------ unknown keys


def test_unknown_top_level_key_is_rejected_by_name(api):
    error = assert_create_rejected(api, body(colour="blue"), "colour")
    assert error["details"][0]["path"] == ["colour"]


def test_origin_sent_by_the_sdks_is_accepted_and_ignored(api):
    data = assert_created(api, body(origin="python-sdk@4.52.1"))
    assert "origin" not in data


@pytest.mark.parametrize("payload", [[], "monitor", 7, None])
def test_body_that_is_not_an_object_is_rejected(api, payload):
    response = api.post(URL, json.dumps(payload), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST"
    assert Monitor.objects.count() == 0


# ------------------------------------------------------------------ update body


@pytest.mark.parametrize("payload", [{}, {"origin": "python-sdk@4.52.1"}])
def test_empty_update_body_is_rejected(api, monitor_id, payload):
    before = Monitor.objects.get(pk=monitor_id).updated_at
    response = patch(api, monitor_id, payload)
    error = assert_rejected(response, "Update body cannot be empty")
    assert error["error"] == "Update body cannot be empty."
    assert Monitor.objects.get(pk=monitor_id).updated_at == before


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"status": "deleted"}, "status"),
        ({"status": "running"}, "status"),
        ({"name": "n" * 257}, "name"),
        ({"goal": "g" * 2001}, "goal"),
        ({"targets": []}, "targets"),
        ({"retentionDays": 366}, "retentionDays"),
        ({"schedule": {"cron": "*/2 * * * *"}}, "schedule"),
        ({"schedule": {}}, "schedule"),
        ({"judgeEnabled": True}, "judgeEnabled"),
        ({"targets": [search_target()], "goal": ""}, "goal"),
        ({"webhook": {"headers": {"X-A": "b"}}}, "webhook.url"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_update_is_rejected_and_changes_nothing(
    api, monitor_id, payload, field
):
    before = Monitor.objects.get(pk=monitor_id)
    target_ids = set(Target.objects.filter(monitor=before).values_list("id", flat=True))
    assert_rejected(patch(api, monitor_id, payload), field)
    after = Monitor.objects.get(pk=monitor_id)
    assert (after.name, after.status, after.goal, after.judge_enabled) == (
        before.name,
        before.status,
        before.goal,
        before.judge_enabled,
    )
    assert after.schedule_cron == before.schedule_cron
    assert after.updated_at == before.updated_at
    assert set(Target.objects.filter(monitor=after).values_list("id", flat=True)) == (
        target_ids
    )


# ------------------------------------------------------------------ envelope


def test_malformed_json_gets_bad_request_invalid_json(api):
    response = api.generic(
        "POST", URL, '{"name": "x",', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "Request body is not valid JSON.",
        "code": "BAD_REQUEST_INVALID_JSON",
    }
    assert Monitor.objects.count() == 0


def test_json_with_nan_is_malformed(api):
    text = json.dumps(body()).replace('"Pricing page"', "NaN")
    response = api.generic("POST", URL, text, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST_INVALID_JSON"


@pytest.mark.parametrize(
    "text", ["[" * 100_000, '{"name": ' + "[" * 100_000 + "}", '{"a":' * 50_000]
)
def test_json_nested_beyond_reason_is_refused_not_a_server_error(api, text):
    response = api.generic("POST", URL, text, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "error": "Request body is nested too deeply.",
        "code": "BAD_REQUEST_INVALID_JSON",
    }
    assert Monitor.objects.count() == 0


def test_json_nested_beyond_reason_on_update_is_refused(api, monitor_id):
    text = '{"goal": ' + "[" * 100_000 + "}"
    response = api.generic(
        "PATCH", f"{URL}/{monitor_id}", text, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST_INVALID_JSON"


def test_malformed_json_on_update_gets_bad_request_invalid_json(api, monitor_id):
    response = api.generic(
        "PATCH", f"{URL}/{monitor_id}", "{nope", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST_INVALID_JSON"


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "text/plain", "application/xml"],
)
def test_body_that_is_not_json_gets_415(api, content_type):
    response = api.generic("POST", URL, "name=x", content_type=content_type)
    assert response.status_code == 415
    payload = response.json()
    assert payload["success"] is False
    assert payload["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert Monitor.objects.count() == 0


def test_body_larger_than_the_upload_limit_gets_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    payload = json.dumps(body(goal="g" * 5000))
    response = api.generic("POST", URL, payload, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "success": False,
        "error": "Request body is too large.",
        "code": "PAYLOAD_TOO_LARGE",
    }
    assert Monitor.objects.count() == 0


def test_body_just_under_the_upload_limit_is_read(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    payload = json.dumps(body(goal="g" * 1500))
    assert len(payload) < 4096
    response = api.generic("POST", URL, payload, content_type="application/json")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("put", URL),
        ("delete", URL),
        ("patch", URL),
        ("post", f"{URL}/0190a0a0-0000-7000-8000-000000000001"),
        ("put", f"{URL}/0190a0a0-0000-7000-8000-000000000001"),
    ],
)
def test_unsupported_method_gets_405_in_the_envelope(api, method, path):
    response = getattr(api, method)(path, {}, format="json")
    assert response.status_code == 405
    payload = response.json()
    assert payload["success"] is False
    assert payload["code"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize(
    "path", ["/v2/monitors", "/v2/", "/v2/scrape", "/v2/monitor/a/b/c", "/v2/monitor//"]
)
def test_unknown_v2_path_gets_a_json_404(api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {
        "success": False,
        "error": "Not found",
        "code": "NOT_FOUND",
    }


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=abc", "limit"),
        ("limit=2.5", "limit"),
        ("offset=-1", "offset"),
        ("offset=abc", "offset"),
        ("limit=99999999999999999999999", "limit"),
    ],
)
def test_list_paging_out_of_range_is_rejected(api, query, field):
    assert_rejected(api.get(f"{URL}?{query}"), field)


@pytest.mark.parametrize(
    "query",
    # An empty value is no value: the default (as on every integer parameter).
    [
        "limit=1",
        "limit=100",
        "limit=",
        "offset=0",
        "offset=1000000",
        f"offset={10**30}",
    ],
)
def test_list_paging_at_its_bounds_is_accepted(api, query):
    response = api.get(f"{URL}?{query}")
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": []}


# ------------------------------------------- strings JSON can spell but UTF-8 cannot


def post_raw(api: APIClient, payload: dict[str, Any]):
    # json.dumps escapes a lone surrogate as \\ud800, as any client's JSON may;
    # the test client's own encoder would fail on it before sending.
    return api.post(URL, json.dumps(payload), content_type="application/json")


def scrape_with(**fields: Any) -> dict[str, Any]:
    return {"type": "scrape", "urls": ["https://example.com/"], **fields}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (body(targets=[scrape_with(scrapeOptions={"foo": "\ud800"})]),
         "targets[0].scrapeOptions.foo"),
        (body(targets=[scrape_with(scrapeOptions={"\ud800": 1})]),
         "targets[0].scrapeOptions"),
        (body(targets=[{"type": "crawl", "url": "https://example.com/",
                        "crawlOptions": {"zz": ["\udfff"]}}]),
         "targets[0].crawlOptions.zz[0]"),
        (body(targets=[scrape_with(urls=["https://example.com/\ud800"])]),
         "targets[0].urls[0]"),
        (body(webhook={"url": "https://example.com/hook",
                       "headers": {"X-\ud800": "v"}}),
         "webhook.headers"),
        (body(name="Price \udc00"), "name"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_anywhere_in_the_body_is_refused_naming_where(
    api, payload, field
):
    result = assert_rejected(post_raw(api, payload), field)
    assert "Surrogate characters are not allowed" in result["error"]
    assert Monitor.objects.count() == 0
    # The team's list still renders: nothing unencodable was stored.
    assert api.get(URL).json() == {"success": True, "data": []}


def test_of_several_lone_surrogates_the_first_in_the_body_is_named(api):
    payload = body(name="A \ud800", goal="B \udc00")
    result = assert_rejected(post_raw(api, payload), "name")
    assert result["error"].startswith("name: ")


def test_a_lone_surrogate_in_an_update_changes_nothing(api, monitor_id):
    response = api.patch(
        f"{URL}/{monitor_id}",
        json.dumps({"name": "y", "goal": "\ud800"}),
        content_type="application/json",
    )
    assert_rejected(response, "goal")
    assert Monitor.objects.get(pk=monitor_id).name == "Pricing page"
    assert api.get(f"{URL}/{monitor_id}").status_code == 200


def test_an_option_in_both_spellings_keeps_the_api_spelling(api, monitor_id):
    # A monitor saved before Python spellings were read keeps its
    # only_main_content; the dashboard's form, which edits onlyMainContent and
    # sends the rest of the options back as stored, then sends both.
    Target.objects.filter(monitor_id=monitor_id).update(
        scrape_options={"only_main_content": False}
    )
    edit = scrape_with(
        scrapeOptions={"onlyMainContent": True, "only_main_content": False}
    )
    response = patch(api, monitor_id, {"targets": [edit]})
    assert response.status_code == 200, response.content
    stored = Target.objects.get(monitor_id=monitor_id).scrape_options
    assert stored == {"onlyMainContent": True}


def test_a_plain_format_object_with_options_is_refused(api):
    # Firecrawl's plain format objects are strict: {"type"} and nothing else.
    payload = body(
        targets=[scrape_with(scrapeOptions={"formats": [{"type": "html", "x": 1}]})]
    )
    assert_create_rejected(api, payload, "targets[0].scrapeOptions.formats[0]")


# Firecrawl's json, changeTracking, summary and attributes format objects are
# strict: a key beside the ones it defines is a 400, not quietly kept.
@pytest.mark.parametrize(
    "fmt",
    [
        {"type": "json", "schema": {"type": "object"}, "foo": 1},
        {"type": "json", "prompt": "prices", "foo": 1},
        {"type": "changeTracking", "modes": ["git-diff"], "foo": 1},
        {"type": "changeTracking", "modes": ["json"],
         "schema": {"type": "object"}, "foo": 1},
        {"type": "attributes",
         "selectors": [{"selector": "a", "attribute": "href"}], "foo": 1},
    ],
)  # fmt: skip
def test_a_format_object_with_a_key_firecrawl_does_not_define_is_refused_by_name(
    api, fmt
):
    payload = body(targets=[scrape_with(scrapeOptions={"formats": ["markdown", fmt]})])
    result = assert_create_rejected(api, payload, "formats[1].foo")
    assert result["error"] == "targets[0].scrapeOptions.formats[1].foo: Unknown field."


def test_a_summary_format_object_takes_no_options_and_names_each_as_other_keys_are(
    api,
):
    fmt = {"type": "summary", "prompt": "In French", "tag": "x"}
    payload = body(targets=[scrape_with(scrapeOptions={"formats": [fmt]})])
    result = assert_create_rejected(api, payload, "formats[0].prompt")
    said = "targets[0].scrapeOptions.formats[0].prompt: Unknown field."
    assert result["error"] == said
    where = ["targets", 0, "scrapeOptions", "formats", 0]
    assert [(issue["path"], issue["message"]) for issue in result["details"]] == [
        ([*where, "prompt"], "Unknown field."),
        ([*where, "tag"], "Unknown field."),
    ]


def test_every_key_firecrawl_defines_on_an_extraction_format_is_accepted(api):
    formats = [
        "markdown",
        # As firecrawl-py (4.55) sends a typed JsonFormat: every field, unset
        # ones as null.
        {"type": "json", "prompt": "Prices", "schema": {"type": "object"},
         "checkPromptInjection": None},
        {"type": "changeTracking", "modes": ["json", "git-diff"],
         "schema": {"type": "object"}, "prompt": "Prices", "tag": "main"},
    ]  # fmt: skip
    data = assert_created(
        api, body(targets=[scrape_with(scrapeOptions={"formats": formats})])
    )
    assert Target.objects.get(monitor_id=data["id"]).scrape_options == {
        "formats": formats
    }


def test_check_prompt_injection_on_a_json_format_must_be_true_or_false(api):
    fmt = {"type": "json", "prompt": "Prices", "checkPromptInjection": "yes"}
    payload = body(targets=[scrape_with(scrapeOptions={"formats": [fmt]})])
    assert_create_rejected(
        api, payload, "targets[0].scrapeOptions.formats[0].checkPromptInjection"
    )


# PostgreSQL keeps JSON as jsonb, which cannot hold U+0000 ("\u0000 cannot be
# converted to text"): typed fields refuse it, but kept-as-given option values
# and map keys reached the database and the request ended in a 500.
@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (body(targets=[scrape_with(scrapeOptions={"foo": "a\x00b"})]),
         "targets[0].scrapeOptions.foo"),
        (body(targets=[scrape_with(scrapeOptions={"fo\x00o": 1})]),
         "targets[0].scrapeOptions"),
        (body(targets=[scrape_with(scrapeOptions={
            "formats": [{"type": "json", "prompt": "Price\x00"}]})]),
         "targets[0].scrapeOptions.formats[0].prompt"),
        (body(targets=[{"type": "crawl", "url": "https://example.com/",
                        "crawlOptions": {"zz": ["\x00"]}}]),
         "targets[0].crawlOptions.zz[0]"),
        (body(webhook={"url": "https://example.com/hook",
                       "metadata": {"env\x00": "prod"}}),
         "webhook.metadata"),
    ],
)  # fmt: skip
def test_a_nul_character_anywhere_in_the_body_is_refused_naming_where(
    api, payload, field
):
    result = assert_rejected(post_raw(api, payload), field)
    assert "Null characters are not allowed" in result["error"]
    assert Monitor.objects.count() == 0


def test_a_nul_character_in_an_update_changes_nothing(api, monitor_id):
    response = api.patch(
        f"{URL}/{monitor_id}",
        json.dumps(
            {"name": "y", "targets": [scrape_with(scrapeOptions={"k": "\x00"})]}
        ),
        content_type="application/json",
    )
    assert_rejected(response, "targets[0].scrapeOptions.k")
    assert Monitor.objects.get(pk=monitor_id).name == "Pricing page"
