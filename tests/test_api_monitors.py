"""The /v2/monitor resource end to end through the REST API: create, list, get,
update and delete, tenancy, PATCH semantics, e-mail subscriptions and schedules
(reference §3, §4, §6, §7 and "Pagewatch decisions")."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth import get_user_model

from monitors.models import EmailRecipient, Membership, Monitor, Target

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"
# A Saturday; nothing special happens on this day in UTC.
NOW = datetime(2026, 5, 16, 15, 7, 30, tzinfo=UTC)

MONITOR_KEYS = {
    "id",
    "name",
    "status",
    "schedule",
    "nextRunAt",
    "lastRunAt",
    "currentCheckId",
    "targets",
    "webhook",
    "notification",
    "retentionDays",
    "estimatedCreditsPerMonth",
    "unchangedPagesFree",
    "lastCheckSummary",
    "goal",
    "judgeEnabled",
    "ignoreLines",  # Pagewatch extension: the noise rule
    "fetchWith",  # Pagewatch extension: plain HTTP, a browser, or either
    "changeRules",  # Pagewatch extension: which changes matter, without AI
    "mutedUntil",  # Pagewatch extension: until when it tells no one
    "emailRecipientSubscriptions",
    "channels",  # Pagewatch extension: the team's channels it sends to
    "tags",  # Pagewatch extension: the names of its tags
    "feedUrl",  # Pagewatch extension: the Atom feed of its changes
    "warning",  # Pagewatch extension: what will not run on this server
    "createdAt",
    "updatedAt",
}


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def iso(moment: datetime) -> str:
    """Firecrawl's format (JavaScript's toISOString): milliseconds and "Z"."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def body(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
    }
    base.update(copy.deepcopy(overrides))
    return base


def create(api, **overrides: Any) -> dict[str, Any]:
    response = api.post(URL, body(**overrides), format="json")
    assert response.status_code == 200, response.content
    assert response.json()["success"] is True
    return response.json()["data"]


def update(api, monitor_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    response = api.patch(f"{URL}/{monitor_id}", payload, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["success"] is True
    return response.json()["data"]


# ------------------------------------------------------------------ create / get


def test_create_answers_200_with_the_stored_monitor(api, team, clock):
    response = api.post(URL, body(), format="json")

    assert response.status_code == 200
    payload = response.json()
    assert payload["success"] is True
    data = payload["data"]
    assert set(data) == MONITOR_KEYS
    monitor = Monitor.objects.get(pk=data["id"])
    assert monitor.team == team
    assert data["name"] == "Pricing page"
    assert data["status"] == "active"
    assert data["schedule"] == {"cron": "*/30 * * * *", "timezone": "UTC"}
    assert data["nextRunAt"] == "2026-05-16T15:30:00.000Z"
    assert monitor.next_run_at == datetime(2026, 5, 16, 15, 30, tzinfo=UTC)
    assert data["lastRunAt"] is None
    assert data["currentCheckId"] is None
    assert data["webhook"] is None
    assert data["notification"] == {}
    assert data["retentionDays"] == 30
    assert data["lastCheckSummary"] is None
    assert data["goal"] is None
    assert data["judgeEnabled"] is False
    assert data["emailRecipientSubscriptions"] == []
    assert data["createdAt"] == data["updatedAt"] == iso(NOW)
    target = Target.objects.get(monitor=monitor)
    assert data["targets"] == [
        {
            "id": str(target.id),
            "type": "scrape",
            "urls": ["https://example.com/pricing"],
            "scrapeOptions": {},
        }
    ]


def test_create_keeps_a_target_id_the_client_chose(api):
    chosen = "0190a0a0-0000-7000-8000-00000000abcd"
    targets = [{"id": chosen, "type": "scrape", "urls": ["https://example.com/"]}]
    data = create(api, targets=targets)
    assert data["targets"][0]["id"] == chosen
    assert Target.objects.get(pk=chosen).monitor_id == uuid.UUID(data["id"])


def test_create_with_a_target_id_used_elsewhere_gets_a_fresh_one(api, other_api):
    theirs = create(other_api)["targets"][0]["id"]
    targets = [{"id": theirs, "type": "scrape", "urls": ["https://example.com/"]}]
    mine = create(api, targets=targets)
    assert mine["targets"][0]["id"] != theirs
    assert Target.objects.get(pk=theirs).monitor.team.slug == "globex"


def test_create_stores_every_target_type_in_the_order_given(api):
    targets = [
        {
            "type": "crawl",
            "url": "https://example.com/blog",
            "crawlOptions": {"limit": 5},
        },
        {"type": "search", "queries": ["pagewatch"], "maxResults": 5},
        {"type": "scrape", "urls": ["https://example.com/"]},
    ]
    data = create(api, targets=targets, goal="Anything new")
    assert [t["type"] for t in data["targets"]] == ["crawl", "search", "scrape"]
    assert data["targets"][0] == {
        "id": data["targets"][0]["id"],
        "type": "crawl",
        "url": "https://example.com/blog",
        "crawlOptions": {"limit": 5},
        "scrapeOptions": {},
    }
    assert data["targets"][1] == {
        "id": data["targets"][1]["id"],
        "type": "search",
        "queries": ["pagewatch"],
        "searchWindow": "24h",
        "maxResults": 5,
    }


def test_get_returns_what_create_returned(api, clock):
    created = create(api, goal="Price changes", retentionDays=90)
    response = api.get(f"{URL}/{created['id']}")
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": created}


# ------------------------------------------------------------------ list


def test_list_shows_newest_first_and_pages_with_limit_and_offset(api, clock):
    ids = []
    for index in range(5):
        clock.shift(timedelta(minutes=1))
        ids.append(create(api, name=f"Monitor {index}")["id"])
    newest_first = list(reversed(ids))

    def page(query: str) -> list[str]:
        response = api.get(f"{URL}?{query}")
        assert response.status_code == 200
        assert response.json()["success"] is True
        return [m["id"] for m in response.json()["data"]]

    assert page("") == newest_first
    assert page("limit=2") == newest_first[:2]
    assert page("limit=2&offset=2") == newest_first[2:4]
    assert page("limit=2&offset=4") == newest_first[4:]
    assert page("offset=5") == []


def test_list_returns_25_monitors_unless_asked_for_more(api, team):
    for index in range(26):
        Monitor.objects.create(team=team, name=f"m{index}", schedule_cron="0 * * * *")
    assert len(api.get(URL).json()["data"]) == 25
    assert len(api.get(f"{URL}?limit=100").json()["data"]) == 26


def test_list_shows_only_the_callers_live_monitors(api, other_api):
    mine = create(api)["id"]
    deleted = create(api)["id"]
    assert api.delete(f"{URL}/{deleted}").status_code == 200
    create(other_api)

    listed = [m["id"] for m in api.get(URL).json()["data"]]
    assert listed == [mine]


def test_list_items_have_the_full_monitor_shape(api):
    create(api, goal="g", notification={"email": {"recipients": ["x@example.com"]}})
    [item] = api.get(URL).json()["data"]
    assert set(item) == MONITOR_KEYS


# ------------------------------------------------------------------ tenancy


NOT_FOUND = {"success": False, "error": "Monitor not found", "code": "NOT_FOUND"}


@pytest.mark.parametrize(
    ("method", "payload"),
    [("get", None), ("patch", {"name": "Stolen"}), ("delete", None)],
)
def test_other_team_gets_404_on_every_monitor_endpoint(api, other_api, method, payload):
    created = create(api)
    before = Monitor.objects.get(pk=created["id"])

    response = getattr(other_api, method)(
        f"{URL}/{created['id']}", payload, format="json"
    )

    assert response.status_code == 404
    assert response.json() == NOT_FOUND
    after = Monitor.objects.get(pk=created["id"])
    assert (after.name, after.deleted_at, after.updated_at) == (
        before.name,
        None,
        before.updated_at,
    )


@pytest.mark.parametrize(
    "monitor_id",
    [
        "0190a0a0-0000-7000-8000-000000000001",
        # A random-looking id no monitor has, fixed so that every pytest-xdist
        # worker collects the same tests.
        "3f2b8c1e-9d4a-4e6f-b7a2-5c8d1e0f9a64",
        "not-a-uuid",
        "1",
        "0190a0a0-0000-7000-8000-00000000000g",
        "x" * 300,
        "%00",
        "a%20b",
        "{0190a0a0-0000-7000-8000-000000000001}",
    ],
)
@pytest.mark.parametrize(
    ("method", "payload"),
    [("get", None), ("patch", {"name": "x"}), ("delete", None)],
)
def test_unknown_or_malformed_monitor_id_looks_like_another_teams(
    api, method, payload, monitor_id
):
    response = getattr(api, method)(f"{URL}/{monitor_id}", payload, format="json")
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


# ------------------------------------------------------------------ PATCH


def test_update_answers_200_and_changes_only_what_was_sent(api, clock):
    created = create(
        api,
        goal="Price changes",
        retentionDays=90,
        webhook={"url": "https://hooks.example.com/x"},
        notification={"email": {"enabled": True, "recipients": ["a@example.com"]}},
    )
    clock.shift(timedelta(minutes=3))

    data = update(api, created["id"], {"name": "Renamed"})

    assert data["name"] == "Renamed"
    assert data["updatedAt"] == iso(NOW + timedelta(minutes=3))
    unchanged = set(MONITOR_KEYS) - {"name", "updatedAt"}
    assert {k: data[k] for k in unchanged} == {k: created[k] for k in unchanged}
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.name == "Renamed"
    assert monitor.retention_days == 90
    assert monitor.notification["email"]["recipients"] == ["a@example.com"]


def test_a_webhook_set_through_the_api_comes_with_the_teams_signing_secret(api, team):
    created = create(api)
    team.refresh_from_db()
    assert team.webhook_secret == ""  # no webhook, no secret yet
    update(api, created["id"], {"webhook": {"url": "https://hooks.example.com/x"}})
    team.refresh_from_db()
    secret = team.webhook_secret
    assert secret.startswith("whsec_")
    create(api, webhook={"url": "https://hooks.example.com/y"})
    team.refresh_from_db()
    assert team.webhook_secret == secret  # one per team, made once


def test_the_api_sends_every_page_and_leaves_the_dashboards_page_choice_alone(api):
    created = create(api, webhook={"url": "https://hooks.example.com/x"})
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.webhook_pages == Monitor.WebhookPages.ALL  # Firecrawl's default

    monitor.webhook_pages = Monitor.WebhookPages.CHANGED  # chosen in the dashboard
    monitor.save(update_fields=["webhook_pages"])
    data = update(
        api, created["id"], {"webhook": {"url": "https://hooks.example.com/y"}}
    )

    monitor.refresh_from_db()
    assert monitor.webhook_pages == Monitor.WebhookPages.CHANGED
    assert data["webhook"]["url"] == "https://hooks.example.com/y"
    assert "webhookPages" not in data and "webhookPages" not in data["webhook"]


def test_targets_replace_the_list_and_a_target_sent_back_with_its_id_keeps_it(api):
    created = create(
        api,
        targets=[
            {"type": "scrape", "urls": ["https://example.com/a"]},
            {"type": "scrape", "urls": ["https://example.com/b"]},
        ],
    )
    kept, dropped = created["targets"]

    data = update(
        api,
        created["id"],
        {
            "targets": [
                {"type": "crawl", "url": "https://example.com/new"},
                {
                    "id": kept["id"],
                    "type": "scrape",
                    "urls": ["https://example.com/a2"],
                },
            ]
        },
    )

    new, same = data["targets"]
    assert same["id"] == kept["id"]
    assert same["urls"] == ["https://example.com/a2"]
    assert new["id"] not in (kept["id"], dropped["id"])
    stored = Target.objects.filter(monitor_id=created["id"]).order_by("position")
    assert [(str(t.id), t.type, t.position) for t in stored] == [
        (new["id"], "crawl", 0),
        (kept["id"], "scrape", 1),
    ]
    assert not Target.objects.filter(pk=dropped["id"]).exists()


def test_target_sent_back_with_its_id_but_another_type_starts_afresh(api):
    created = create(api)
    old_id = created["targets"][0]["id"]
    data = update(
        api,
        created["id"],
        {"targets": [{"id": old_id, "type": "crawl", "url": "https://example.com/"}]},
    )
    assert data["targets"][0]["type"] == "crawl"
    assert data["targets"][0]["id"] != old_id
    assert not Target.objects.filter(pk=old_id).exists()


def test_target_id_of_another_teams_monitor_is_not_taken_over(api, other_api):
    theirs = create(other_api)
    their_target = theirs["targets"][0]["id"]
    mine = create(api)

    data = update(
        api,
        mine["id"],
        {
            "targets": [
                {"id": their_target, "type": "scrape", "urls": ["https://a.example/"]}
            ]
        },
    )

    assert data["targets"][0]["id"] != their_target
    target = Target.objects.get(pk=their_target)
    assert str(target.monitor_id) == theirs["id"]
    assert target.urls == ["https://example.com/pricing"]


def test_a_freed_target_id_with_another_monitors_history_is_not_taken_over(
    api, other_api
):
    # A target removed from a monitor frees its id, but its pages' history
    # stays, found by target id and address (PageResultQuerySet.history_of):
    # someone who knew the id must not give it to a target of their own and
    # read that history through their page's "Compare with".
    from checks.models import Check, PageResult

    theirs = create(other_api)
    their_target = theirs["targets"][0]["id"]
    check = Check.objects.create(monitor_id=theirs["id"], status="completed")
    PageResult.objects.create(
        check_run=check,
        target_id=their_target,
        url="https://example.com/pricing",
        status=PageResult.Status.NEW,
    )
    Target.objects.filter(pk=their_target).delete()
    mine = create(api)

    data = update(
        api,
        mine["id"],
        {
            "targets": [
                {
                    "id": their_target,
                    "type": "scrape",
                    "urls": ["https://example.com/pricing"],
                }
            ]
        },
    )

    assert data["targets"][0]["id"] != their_target


def test_schedule_without_timezone_keeps_the_monitors_zone(api, clock):
    created = create(
        api, schedule={"text": "daily at 9am", "timezone": "Europe/Berlin"}
    )
    assert created["nextRunAt"] == "2026-05-17T07:00:00.000Z"

    data = update(api, created["id"], {"schedule": {"cron": "30 18 * * *"}})

    assert data["schedule"] == {"cron": "30 18 * * *", "timezone": "Europe/Berlin"}
    assert data["nextRunAt"] == "2026-05-16T16:30:00.000Z"
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.schedule_timezone == "Europe/Berlin"
    assert monitor.next_run_at == datetime(2026, 5, 16, 16, 30, tzinfo=UTC)


def test_schedule_with_timezone_moves_the_monitor_to_that_zone(api, clock):
    created = create(
        api, schedule={"text": "daily at 9am", "timezone": "Europe/Berlin"}
    )
    data = update(
        api,
        created["id"],
        {"schedule": {"text": "daily at 9am", "timezone": "America/New_York"}},
    )
    assert data["schedule"] == {"cron": "0 9 * * *", "timezone": "America/New_York"}
    assert data["nextRunAt"] == "2026-05-17T13:00:00.000Z"


def test_schedule_with_only_a_timezone_moves_the_current_cron_to_it(api, clock):
    # What `firecrawl monitor update --timezone X` sends.
    created = create(api, schedule={"text": "daily at 9am"})
    data = update(api, created["id"], {"schedule": {"timezone": "Asia/Tokyo"}})
    assert data["schedule"] == {"cron": "0 9 * * *", "timezone": "Asia/Tokyo"}
    assert data["nextRunAt"] == "2026-05-17T00:00:00.000Z"


def test_update_without_schedule_keeps_next_run_at(api, clock):
    created = create(api)
    clock.shift(timedelta(hours=5))
    data = update(api, created["id"], {"name": "Later"})
    assert data["nextRunAt"] == created["nextRunAt"]


@pytest.mark.parametrize("cleared", [None, ""])
def test_clearing_the_goal_turns_judging_off(api, cleared):
    created = create(api, goal="Price changes")
    assert created["judgeEnabled"] is True

    data = update(api, created["id"], {"goal": cleared})

    assert (data["goal"], data["judgeEnabled"]) == (None, False)
    monitor = Monitor.objects.get(pk=created["id"])
    assert (monitor.goal, monitor.judge_enabled) == (None, False)


def test_giving_a_goal_on_update_turns_judging_on(api):
    created = create(api)
    data = update(api, created["id"], {"goal": "  Price changes "})
    assert (data["goal"], data["judgeEnabled"]) == ("Price changes", True)


def test_judging_can_be_switched_off_while_keeping_the_goal(api):
    created = create(api, goal="Price changes")
    data = update(api, created["id"], {"judgeEnabled": False})
    assert (data["goal"], data["judgeEnabled"]) == ("Price changes", False)
    data = update(api, created["id"], {"judgeEnabled": True})
    assert data["judgeEnabled"] is True


def test_a_search_monitor_without_a_provider_is_saved_with_a_plain_warning(
    api, settings
):
    settings.LLM_BASE_URL = "http://llm.internal/v1"
    data = create(api, targets=[{"type": "search", "queries": ["q"]}], goal="News")
    assert data["warning"] == (
        "Web searches are not run: no search provider is configured on this "
        "Pagewatch. An administrator sets SEARXNG_URL (a self-hosted SearXNG), or "
        "BRAVE_API_KEY, TAVILY_API_KEY or FIRECRAWL_API_KEY."
    )
    assert api.get(f"{URL}/{data['id']}").json()["data"]["warning"] == data["warning"]


def test_a_search_monitor_with_a_provider_has_no_warning(api, settings):
    settings.SEARXNG_URL = "http://searx.internal:8080"
    settings.LLM_BASE_URL = "http://llm.internal/v1"
    data = create(api, targets=[{"type": "search", "queries": ["q"]}], goal="News")
    assert data["warning"] is None


def test_clearing_the_goal_of_a_search_monitor_needs_judging_off(api):
    created = create(api, targets=[{"type": "search", "queries": ["q"]}], goal="News")

    response = api.patch(f"{URL}/{created['id']}", {"goal": None}, format="json")
    assert response.status_code == 400
    assert "goal" in response.json()["error"]
    assert Monitor.objects.get(pk=created["id"]).goal == "News"

    data = update(api, created["id"], {"goal": None, "judgeEnabled": False})
    assert (data["goal"], data["judgeEnabled"]) == (None, False)


def test_adding_a_search_target_to_a_monitor_whose_judging_is_off_is_allowed(api):
    # Firecrawl checks the merged state: judging already off counts as opted out.
    created = create(api)
    data = update(
        api, created["id"], {"targets": [{"type": "search", "queries": ["q"]}]}
    )
    assert data["targets"][0]["type"] == "search"
    assert data["judgeEnabled"] is False


def test_webhook_null_clears_the_webhook(api):
    created = create(api, webhook={"url": "https://hooks.example.com/x"})
    data = update(api, created["id"], {"webhook": None})
    assert data["webhook"] is None
    assert Monitor.objects.get(pk=created["id"]).webhook is None


def test_webhook_on_update_replaces_the_old_one_with_defaults_filled_in(api):
    created = create(
        api,
        webhook={
            "url": "https://hooks.example.com/x",
            "headers": {"Authorization": "Bearer a"},
            "events": ["monitor.page"],
        },
    )
    data = update(
        api, created["id"], {"webhook": {"url": "https://hooks.example.com/y"}}
    )
    expected = {
        "url": "https://hooks.example.com/y",
        "headers": {},
        "metadata": {},
        "events": ["monitor.page", "monitor.check.completed"],
    }
    assert data["webhook"] == expected
    assert Monitor.objects.get(pk=created["id"]).webhook == expected


def test_notification_null_clears_the_notification(api):
    created = create(api, notification={"email": {"enabled": True}})
    data = update(api, created["id"], {"notification": None})
    assert data["notification"] == {}
    assert Monitor.objects.get(pk=created["id"]).notification == {}


def test_notification_on_update_gets_the_same_defaults_as_on_create(api):
    created = create(api)
    data = update(
        api,
        created["id"],
        {"notification": {"email": {"recipients": ["A@example.com"]}}},
    )
    expected = {
        "email": {
            "enabled": False,
            "recipients": ["a@example.com"],
            "includeDiffs": False,
        }
    }
    assert data["notification"] == expected
    assert Monitor.objects.get(pk=created["id"]).notification == expected


def test_pausing_clears_next_run_at(api, clock):
    created = create(api)
    data = update(api, created["id"], {"status": "paused"})
    assert (data["status"], data["nextRunAt"]) == ("paused", None)
    monitor = Monitor.objects.get(pk=created["id"])
    assert (monitor.status, monitor.next_run_at) == ("paused", None)
    assert (
        not Monitor.objects.due(NOW + timedelta(days=7)).filter(pk=monitor.pk).exists()
    )


def test_changing_the_schedule_of_a_paused_monitor_keeps_it_unscheduled(api, clock):
    created = create(api)
    update(api, created["id"], {"status": "paused"})
    data = update(api, created["id"], {"schedule": {"text": "hourly"}})
    assert (data["status"], data["nextRunAt"]) == ("paused", None)
    assert data["schedule"]["cron"] == "0 * * * *"


def test_resuming_computes_next_run_at_from_now(api, clock):
    created = create(api)
    update(api, created["id"], {"status": "paused"})
    clock.move_to(datetime(2026, 5, 20, 8, 41, tzinfo=UTC))

    data = update(api, created["id"], {"status": "active"})

    assert (data["status"], data["nextRunAt"]) == ("active", "2026-05-20T09:00:00.000Z")
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.next_run_at == datetime(2026, 5, 20, 9, 0, tzinfo=UTC)


def test_resuming_with_a_new_schedule_uses_the_new_schedule(api, clock):
    created = create(api)
    update(api, created["id"], {"status": "paused"})
    data = update(
        api, created["id"], {"status": "active", "schedule": {"text": "daily at 6pm"}}
    )
    assert data["nextRunAt"] == "2026-05-16T18:00:00.000Z"


def test_pausing_twice_and_resuming_an_active_monitor_change_nothing(api, clock):
    created = create(api)
    assert (
        update(api, created["id"], {"status": "active"})["nextRunAt"]
        == (created["nextRunAt"])
    )
    update(api, created["id"], {"status": "paused"})
    assert update(api, created["id"], {"status": "paused"})["nextRunAt"] is None


# ------------------------------------------------------------------ DELETE


def test_delete_answers_200_with_success_and_the_monitor_is_gone(api, clock):
    created = create(api)

    response = api.delete(f"{URL}/{created['id']}")

    assert response.status_code == 200
    assert response.json() == {"success": True}
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.deleted_at == NOW
    assert monitor.next_run_at is None
    assert (
        not Monitor.objects.due(NOW + timedelta(days=1)).filter(pk=monitor.pk).exists()
    )
    for method, payload in (("get", None), ("patch", {"name": "x"}), ("delete", None)):
        again = getattr(api, method)(f"{URL}/{created['id']}", payload, format="json")
        assert again.status_code == 404
        assert again.json() == NOT_FOUND
    assert api.get(URL).json()["data"] == []


# ------------------------------------------------------------------ e-mail recipients


@pytest.fixture
def member(team, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = get_user_model().objects.create_user(
        "owner", email="Owner@Acme.example", password="x"
    )
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


def subscriptions(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        s["email"]: (s["status"], s["source"])
        for s in data["emailRecipientSubscriptions"]
    }


def test_team_member_is_confirmed_and_outsider_must_opt_in(api, member):
    data = create(
        api,
        notification={
            "email": {
                "enabled": True,
                "recipients": ["owner@acme.example", "Client@Elsewhere.example"],
            }
        },
    )
    assert subscriptions(data) == {
        "owner@acme.example": ("confirmed", "team"),
        "client@elsewhere.example": ("pending", "opt_in"),
    }
    rows = {r.email: r for r in EmailRecipient.objects.filter(monitor_id=data["id"])}
    assert rows["owner@acme.example"].confirmed_at is not None
    assert rows["client@elsewhere.example"].confirmed_at is None
    assert all(
        set(s) == {"email", "status", "source", "confirmationEmailSent"}
        for s in data["emailRecipientSubscriptions"]
    )


def test_removing_and_re_adding_a_recipient_keeps_its_state(api, member):
    outsider = "client@elsewhere.example"
    created = create(
        api, notification={"email": {"enabled": True, "recipients": [outsider]}}
    )
    row = EmailRecipient.objects.get(monitor_id=created["id"], email=outsider)
    EmailRecipient.objects.filter(pk=row.pk).update(
        status=EmailRecipient.Status.UNSUBSCRIBED
    )

    removed = update(
        api, created["id"], {"notification": {"email": {"recipients": []}}}
    )
    assert removed["emailRecipientSubscriptions"] == []
    readded = update(
        api, created["id"], {"notification": {"email": {"recipients": [outsider]}}}
    )

    assert subscriptions(readded) == {outsider: ("unsubscribed", "opt_in")}
    assert list(
        EmailRecipient.objects.filter(monitor_id=created["id"]).values_list(
            "pk", flat=True
        )
    ) == [row.pk]


def test_update_without_notification_leaves_subscriptions_alone(api, member):
    created = create(
        api, notification={"email": {"recipients": ["owner@acme.example"]}}
    )
    data = update(api, created["id"], {"name": "x"})
    assert subscriptions(data) == {"owner@acme.example": ("confirmed", "team")}
    assert EmailRecipient.objects.filter(monitor_id=created["id"]).count() == 1


# ------------------------------------------------------------------ schedules


@pytest.mark.parametrize(
    ("text", "cron", "next_run"),
    [
        ("every 30 minutes", "*/30 * * * *", "2026-05-16T15:30:00.000Z"),
        (
            "every 15 minutes starting at :07",
            "7-59/15 * * * *",
            "2026-05-16T15:22:00.000Z",
        ),
        ("hourly", "0 * * * *", "2026-05-16T16:00:00.000Z"),
        ("every 2 hours", "0 */2 * * *", "2026-05-16T16:00:00.000Z"),
        ("daily", "0 0 * * *", "2026-05-17T00:00:00.000Z"),
        ("daily at 9:00", "0 9 * * *", "2026-05-17T09:00:00.000Z"),
        ("Daily at 5:30 P.M.", "30 17 * * *", "2026-05-16T17:30:00.000Z"),
        ("weekly", "0 0 * * 0", "2026-05-17T00:00:00.000Z"),
        ("every weekday at 9am", "0 9 * * 1-5", "2026-05-18T09:00:00.000Z"),
    ],
)
def test_schedule_text_is_stored_as_cron_with_its_next_run(
    api, clock, text, cron, next_run
):
    data = create(api, schedule={"text": text})
    assert data["schedule"] == {"cron": cron, "timezone": "UTC"}
    assert data["nextRunAt"] == next_run


def test_daily_schedule_follows_the_zone_across_spring_forward(api):
    # Europe/Berlin moves from UTC+1 to UTC+2 on 2026-03-29.
    with time_machine.travel(datetime(2026, 3, 27, 12, tzinfo=UTC), tick=False):
        before = create(
            api, schedule={"text": "daily at 9am", "timezone": "Europe/Berlin"}
        )
    with time_machine.travel(datetime(2026, 3, 28, 12, tzinfo=UTC), tick=False):
        after = create(
            api, schedule={"text": "daily at 9am", "timezone": "Europe/Berlin"}
        )
    assert before["nextRunAt"] == "2026-03-28T08:00:00.000Z"
    assert after["nextRunAt"] == "2026-03-29T07:00:00.000Z"


def test_time_skipped_by_spring_forward_runs_at_the_first_valid_minute(api):
    # 02:30 does not exist in New York on 2026-03-08; Debian cron runs at 03:00.
    with time_machine.travel(datetime(2026, 3, 8, 5, tzinfo=UTC), tick=False):
        data = create(
            api, schedule={"cron": "30 2 * * *", "timezone": "America/New_York"}
        )
    assert data["nextRunAt"] == "2026-03-08T07:00:00.000Z"


def test_resuming_inside_a_repeated_fall_back_hour_never_goes_back_in_time(api):
    # 01:30 happens twice in New York on 2026-11-01 (05:30Z and 06:30Z).
    with time_machine.travel(datetime(2026, 10, 31, 12, tzinfo=UTC), tick=False):
        created = create(
            api, schedule={"cron": "30 1 * * *", "timezone": "America/New_York"}
        )
        update(api, created["id"], {"status": "paused"})
    with time_machine.travel(datetime(2026, 11, 1, 6, 10, tzinfo=UTC), tick=False):
        data = update(api, created["id"], {"status": "active"})
    assert data["nextRunAt"] == "2026-11-02T06:30:00.000Z"


# ------------------------------------------------------------------ fetchWith


def test_pages_are_loaded_automatically_unless_the_monitor_says_otherwise(api, team):
    created = create(api)
    forced = update(api, created["id"], {"fetchWith": "browser"})

    assert created["fetchWith"] == "auto"
    assert forced["fetchWith"] == "browser"
    assert Monitor.objects.get(pk=created["id"]).fetch_with == "browser"
    assert update(api, created["id"], {"name": "Renamed"})["fetchWith"] == "browser"


def test_never_a_browser_is_refused_for_options_only_a_browser_can_honour(api, team):
    waits = [{"type": "scrape", "urls": ["https://example.com/"],
              "scrapeOptions": {"waitFor": 1000}}]  # fmt: skip
    refused = api.post(URL, body(targets=waits, fetchWith="http"), format="json")
    created = create(api, targets=waits)
    patched = api.patch(f"{URL}/{created['id']}", {"fetchWith": "http"}, format="json")
    unknown = api.post(URL, body(fetchWith="chrome"), format="json")

    for response in (refused, patched):
        assert response.status_code == 400
        assert response.json()["error"].startswith(
            'fetchWith: "http" never opens a browser, and a target asks for'
        )
        assert response.json()["details"][0]["path"] == ["fetchWith"]
    assert unknown.status_code == 400
    assert Monitor.objects.get(pk=created["id"]).fetch_with == "auto"
    assert Monitor.objects.filter(team=team).count() == 1


def test_a_monitor_that_needs_a_browser_the_server_lacks_says_so(api, team, settings):
    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"

    plain = create(api)
    forced = create(api, fetchWith="browser")

    assert plain["warning"] is None
    assert "BROWSER_EXECUTABLE" in forced["warning"]


EXTRACTING = [
    {
        "type": "scrape",
        "urls": ["https://example.com/"],
        "scrapeOptions": {"formats": [{"type": "json", "prompt": "the price"}]},
    }
]
IGNORING_ROBOTS = [
    {
        "type": "crawl",
        "url": "https://example.com/",
        "crawlOptions": {"ignoreRobotsTxt": True},
    }
]


@pytest.mark.parametrize(
    ("fields", "setting", "enabled"),
    [
        ({"targets": EXTRACTING}, "LLM_BASE_URL", "http://llm.internal/v1"),
        ({"goal": "Price changes"}, "LLM_BASE_URL", "http://llm.internal/v1"),
        ({"targets": IGNORING_ROBOTS}, "CRAWL_ALLOW_IGNORE_ROBOTS", True),
    ],
)
def test_what_this_server_cannot_do_is_warned_naming_the_setting_until_set(
    api, settings, fields, setting, enabled
):
    settings.LLM_BASE_URL = ""
    settings.CRAWL_ALLOW_IGNORE_ROBOTS = False
    data = create(api, **fields)
    assert setting in data["warning"]
    assert api.get(f"{URL}/{data['id']}").json()["data"]["warning"] == data["warning"]

    setattr(settings, setting, enabled)

    assert api.get(f"{URL}/{data['id']}").json()["data"]["warning"] is None
