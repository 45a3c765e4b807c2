"""One set of rules for the API and the dashboard form: the form checks its
edit with the rules the API's serializers call (monitors.rules_monitor, the
kinds' `check`, monitors.rules_problems), finds each problem where the API
finds it, and hands monitors.editing what the API would have handed it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.utils import timezone

from monitors import rules, rules_monitor
from monitors.dashboard.forms.checking import EditCheck
from monitors.editing import create_monitor
from monitors.models import Channel
from monitors.rules_problems import Problem, problems_in
from monitors.target_kinds import kind_for
from monitors.wire.errors import flatten_errors
from monitors.wire.monitor import (
    MonitorUpdateSerializer,
    MonitorWriteSerializer,
    nested,
)

pytestmark = pytest.mark.django_db

# An edit as the dashboard's form builds it: every key, in the API's shape.
BASE: dict[str, Any] = {
    "name": "Pricing",
    "schedule": {"timezone": "UTC", "text": "every 30 minutes"},
    "targets": [
        {"type": "scrape", "urls": ["https://example.com/a"], "scrapeOptions": {}}
    ],
    "goal": "",
    "ignoreLines": [],
    "changeRules": {"lines": "any", "containing": [], "appears": "", "disappears": ""},
    "fetchWith": "auto",
    "webhook": None,
    "notification": {
        "email": {"enabled": False, "recipients": [], "includeDiffs": False}
    },
    "channels": [],
}

RICH: dict[str, Any] = BASE | {
    "name": "  Pricing pages ",
    "schedule": {"timezone": "Europe/Berlin", "cron": "0 9 * * 1-5"},
    "targets": [
        {
            "type": "scrape",
            "urls": ["https://example.com/a", "https://example.com/a"],
            "scrapeOptions": {
                "onlyMainContent": False,
                "headers": {"Accept-Language": "de"},
                "waitFor": 2000,
                "formats": ["markdown", "screenshot"],
                "excludeTags": ["nav", ".cookie"],
            },
        },
        {
            "type": "crawl",
            "url": "https://blog.example/",
            "crawlOptions": {"limit": 50, "includePaths": ["^/blog/"]},
            "scrapeOptions": {"timeout": 5000},
        },
        {
            "type": "search",
            "queries": ["acme pricing"],
            "searchWindow": "7d",
            "maxResults": 20,
            "includeDomains": ["News.Example.", "news.example"],
        },
    ],
    "goal": "  Price changes  ",
    "judgeEnabled": True,
    "ignoreLines": ["Last updated", "/^\\d+ views$/", "Last updated"],
    "changeRules": {
        "lines": "added",
        "containing": [" Sale ", "", "/\\d+% off/", "Sale"],
        "appears": "  ",
        "disappears": " Out of stock ",
    },
    "webhook": {
        "url": "https://hooks.example/pw",
        "events": ["monitor.page", "monitor.page"],
        "headers": {"X-Team": "growth"},
        "metadata": {"team": "marketing"},
    },
    "notification": {
        "email": {
            "enabled": True,
            "recipients": ["Alerts@Example.com", "alerts@example.com"],
            "includeDiffs": True,
        }
    },
    "retentionDays": 90,
}


def plain_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def api_problems(body: dict[str, Any], **context: Any) -> set[tuple[Any, ...]]:
    serializer = MonitorWriteSerializer(data=body, context=context)
    assert not serializer.is_valid()
    return {(tuple(i["path"]), i["code"]) for i in flatten_errors(serializer.errors)}


def form_problems(body: dict[str, Any], **context: Any) -> set[tuple[Any, ...]]:
    checked = EditCheck(body, monitor=None, team=context.get("team"))
    return {(p.path, p.code) for p in checked.problems}


def test_the_form_hands_over_what_the_api_would_have_saved(team):
    channel = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": "https://e.example/h"}
    )
    body = RICH | {"channels": [channel.pk, channel.pk]}
    serializer = MonitorWriteSerializer(data=body, context={"team": team})
    assert serializer.is_valid(), serializer.errors

    checked = EditCheck(body, monitor=None, team=team)

    assert checked.problems == []
    assert plain_json(checked.cleaned) == plain_json(serializer.validated_data)
    assert checked.cleaned["channels"] == [channel.pk]
    assert checked.cleaned["goal"] == "Price changes"


def test_an_edit_of_a_stored_monitor_is_cleaned_as_the_api_cleans_a_patch(team):
    made = MonitorWriteSerializer(data=RICH)
    assert made.is_valid(), made.errors
    monitor = create_monitor(team, made.validated_data, timezone.now())
    body = BASE | {"schedule": {"timezone": "Asia/Tokyo"}, "goal": "Prices"}
    serializer = MonitorUpdateSerializer(
        data=body,
        context={"monitor": monitor, "current_timezone": monitor.schedule_timezone},
    )
    assert serializer.is_valid(), serializer.errors

    checked = EditCheck(body, monitor=monitor, team=None)

    assert checked.problems == []
    assert plain_json(checked.cleaned) == plain_json(serializer.validated_data)
    # A zone alone moves the stored cron to it.
    assert checked.cleaned["schedule"] == {
        "cron": "0 9 * * 1-5",
        "timezone": "Asia/Tokyo",
    }


@pytest.mark.parametrize(
    "change",
    [
        {"name": ""},
        {"name": "n" * (rules.NAME_MAX + 1)},
        {"schedule": {"timezone": "UTC", "cron": "61 * * * *"}},
        {"schedule": {"timezone": "Mars/Olympus", "text": "hourly"}},
        {"schedule": {"timezone": "UTC", "text": "x" * (rules.SCHEDULE_MAX + 1)}},
        {"targets": []},
        {"targets": [{"type": "feed", "urls": []}]},
        {"targets": [{"type": "scrape", "urls": ["http://169.254.169.254/"]}]},
        {"targets": [{"type": "scrape", "urls": ["https://e.example/", "file:///x"]}]},
        {"targets": [{"type": "crawl", "url": "https://e.example/",
                      "crawlOptions": {"includePaths": ["[", "(?<=x)y"]}}]},
        {"targets": [{"type": "search", "queries": ["a"], "includeDomains": ["a.com"],
                      "excludeDomains": ["b.com"]}], "goal": "x"},
        {"targets": [{"type": "scrape", "urls": ["https://e.example/"],
                      "scrapeOptions": {"formats": ["nonsense"]}}]},
        {"targets": [{"type": "search", "queries": ["acme"]}]},
        {"targets": [{"type": "scrape", "urls": ["https://e.example/"]}] * 51},
        {"goal": "g" * (rules.GOAL_MAX + 1)},
        {"judgeEnabled": True},
        {"ignoreLines": ["fine", "/(/"]},
        {"ignoreLines": ["x"] * (rules.IGNORE_LINES_MAX + 1)},
        {"changeRules": {"lines": "changed", "containing": [], "appears": "",
                         "disappears": ""}},
        {"changeRules": {"lines": "any", "containing": ["ok", "/[/"], "appears": "",
                         "disappears": ""}},
        {"changeRules": {"lines": "any", "containing": ["w"] * 21, "appears": "",
                         "disappears": ""}},
        {"changeRules": {"lines": "any", "containing": ["w" * 301], "appears": "",
                         "disappears": ""}},
        {"changeRules": {"lines": "any", "containing": [], "appears": "/(?=x)/",
                         "disappears": "d" * 301}},
        {"fetchWith": "sometimes"},
        {"fetchWith": "http", "targets": [{"type": "scrape", "urls": ["https://e.example/"],
                                           "scrapeOptions": {"waitFor": 1000}}]},
        {"webhook": {"url": "", "events": ["monitor.page"], "headers": {"A": "b"},
                     "metadata": {}}},
        {"webhook": {"url": "http://10.0.0.1/", "events": ["monitor.page"],
                     "headers": {}, "metadata": {}}},
        {"webhook": {"url": "https://h.example/", "events": [], "headers": {},
                     "metadata": {}}},
        {"webhook": {"url": "https://h.example/", "events": ["monitor.page"],
                     "headers": {"Host": "x", "X-Ok": "été"}, "metadata": {}}},
        {"notification": {"email": {"enabled": True, "recipients": ["nope"],
                                    "includeDiffs": False}}},
        {"notification": {"email": {"enabled": True, "includeDiffs": False,
                                    "recipients": [f"p{n}@ex.io" for n in range(26)]}}},
        {"channels": [987654]},
        {"retentionDays": 0},
        {"retentionDays": "thirty"},
    ],
)  # fmt: skip
def test_the_form_finds_each_problem_where_the_api_finds_it(change, team):
    body = BASE | change

    assert form_problems(body, team=team) == api_problems(body, team=team)


def test_every_problem_of_the_form_is_worded_by_the_rule_the_api_words(team):
    body = BASE | {"judgeEnabled": True}

    [problem] = EditCheck(body, monitor=None, team=team).problems

    assert problem == Problem(
        ("judgeEnabled",),
        rules.GOAL_REQUIRED_FOR_JUDGE.code,
        rules.GOAL_REQUIRED_FOR_JUDGE.api,
    )


def test_a_kinds_problems_read_back_in_the_apis_shape_unchanged():
    kind = kind_for("scrape")
    assert kind is not None
    data = {
        "type": "scrape",
        "urls": ["https://e.example/", "ftp://x", "y" * 3000],
        "scrapeOptions": {
            "formats": ["nonsense", {"type": "json"}],
            "headers": {"Bad Name": "v"},
            "waitFor": -1,
            "actions": "no",
        },
    }
    serializer = kind.serializer(data=data)
    assert not serializer.is_valid()

    target, problems = kind.check(data)

    assert target == {}
    assert problems == problems_in(serializer.errors)
    assert flatten_errors(nested(problems)) == flatten_errors(serializer.errors)
    assert len(problems) >= 6


def test_a_channel_of_another_team_reads_as_a_missing_one(team, other_team):
    theirs = Channel.objects.create(
        team=other_team, name="Theirs", kind="webhook", settings={"url": "https://e/h"}
    )
    ours = Channel.objects.create(
        team=team, name="Ours", kind="webhook", settings={"url": "https://e/h"}
    )

    assert rules_monitor.channel_problem(team, [ours.pk]) is None
    assert rules_monitor.channel_problem(team, [ours.pk, theirs.pk]) == (
        f"No channel of this team has the id {theirs.pk}."
    )
    assert rules_monitor.channel_problem(None, [ours.pk]) is not None
    assert rules_monitor.channel_problem(team, [2**64]) is not None


def test_judging_follows_the_goal_unless_switched_off_on_purpose():
    search = [{"type": "search", "queries": ["a"]}]

    assert rules_monitor.judging({"goal": "Prices"}, None) == (True, None)
    assert rules_monitor.judging({"goal": None}, None) == (False, None)
    assert rules_monitor.judging({"goal": None, "targets": search}, None) == (
        False,
        ("goal", rules.GOAL_REQUIRED_FOR_SEARCH),
    )
    assert rules_monitor.judging(
        {"goal": None, "judgeEnabled": False, "targets": search}, None
    ) == (False, None)
