"""The official Python SDK (firecrawl-py 4.55.0) against a live Pagewatch.

What the SDK sends (firecrawl/v2/methods/monitor.py, utils/http_client.py):
every POST/PATCH body gets a top-level `origin`; models are dumped with
exclude_none=True, so `goal=None` is simply not sent and `goal=""` is the way
to clear a goal; `MonitorSchedule` always sends `timezone` ("UTC" unless set).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from firecrawl import Firecrawl
from firecrawl.v2.types import (
    ChangeTrackingFormat,
    Format,
    MonitorEmailNotification,
    MonitorNotification,
    MonitorSchedule,
    MonitorTarget,
    MonitorWebhookConfig,
    ScrapeOptions,
    ScreenshotAction,
)
from firecrawl.v2.utils import http_client
from firecrawl.v2.utils.error_handler import (
    BadRequestError,
    FirecrawlError,
    UnauthorizedError,
)

from monitors.models import EmailRecipient, Monitor, Target
from tests.proxy import SubPathProxy

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = MonitorTarget(type="scrape", urls=["https://example.com/pricing"])


@pytest.fixture
def sdk(live_server, api_key) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


@pytest.fixture
def other_sdk(live_server, other_api_key) -> Firecrawl:
    return Firecrawl(api_key=other_api_key, api_url=live_server.url, max_retries=1)


@pytest.fixture
def sent(monkeypatch) -> list[dict[str, Any]]:
    """The JSON bodies the SDK puts on the wire."""
    bodies: list[dict[str, Any]] = []
    for verb in ("post", "patch"):
        real = getattr(http_client.requests, verb)

        def spy(*args: Any, _real=real, **kwargs: Any):
            bodies.append(kwargs.get("json"))
            return _real(*args, **kwargs)

        monkeypatch.setattr(http_client.requests, verb, spy)
    return bodies


def make(sdk: Firecrawl, **kwargs: Any):
    kwargs.setdefault("name", "Pricing page")
    kwargs.setdefault("schedule", {"text": "every 30 minutes"})
    kwargs.setdefault("targets", [PAGE])
    return sdk.create_monitor(**kwargs)


# ------------------------------------------------------------------ the happy path


def test_create_monitor_through_the_sdk_stores_it_for_the_keys_team(sdk, team, sent):
    monitor = make(
        sdk,
        goal="Tell me when prices change",
        webhook=MonitorWebhookConfig(
            url="https://hooks.example.com/pw", metadata={"env": "test"}
        ),
        notification=MonitorNotification(
            email=MonitorEmailNotification(enabled=True, recipients=["a@example.com"])
        ),
        retention_days=90,
    )

    assert sent[-1]["origin"].startswith("python-sdk")
    assert monitor.status == "active"
    assert monitor.schedule.cron == "*/30 * * * *"
    assert monitor.schedule.timezone == "UTC"
    assert monitor.goal == "Tell me when prices change"
    assert monitor.judge_enabled is True
    assert monitor.retention_days == 90
    # 1440 checks of one page; no LLM is configured, so no judge is counted.
    assert monitor.estimated_credits_per_month == 1440
    assert monitor.next_run_at is not None
    assert monitor.webhook["events"] == ["monitor.page", "monitor.check.completed"]
    [subscription] = monitor.email_recipient_subscriptions
    assert (subscription.email, subscription.status) == ("a@example.com", "pending")
    stored = Monitor.objects.get(pk=monitor.id)
    assert stored.team == team
    assert stored.retention_days == 90
    assert [t.urls for t in stored.targets.all()] == [["https://example.com/pricing"]]
    assert EmailRecipient.objects.filter(monitor=stored).count() == 1


def test_create_monitor_accepts_every_target_kind_from_the_sdk(sdk):
    monitor = make(
        sdk,
        goal="New posts",
        targets=[
            PAGE,
            MonitorTarget(
                type="crawl",
                url="https://example.com/blog",
                crawl_options={"limit": 20, "includePaths": ["^/blog/"]},
            ),
            MonitorTarget(type="search", queries=["pagewatch"], max_results=5),
        ],
    )
    assert [t["type"] for t in monitor.targets] == ["scrape", "crawl", "search"]
    assert all(t["id"] for t in monitor.targets)
    crawl = Target.objects.get(monitor_id=monitor.id, type="crawl")
    assert crawl.crawl_options == {"limit": 20, "includePaths": ["^/blog/"]}


def test_typed_scrape_options_from_the_sdk_are_stored_under_their_api_names(sdk, sent):
    options = ScrapeOptions(
        only_main_content=False,
        include_tags=["main"],
        headers={"Cookie": "session=1"},
        remove_base64_images=True,
        formats=["markdown", ChangeTrackingFormat(modes=["git-diff"])],
        actions=[ScreenshotAction(full_page=True)],
    )
    monitor = make(
        sdk,
        targets=[
            MonitorTarget(
                type="scrape", urls=["https://example.com/"], scrape_options=options
            ),
            MonitorTarget(
                type="crawl",
                url="https://example.com/blog",
                crawl_options={"max_discovery_depth": 2, "include_paths": ["^/blog/"]},
            ),
        ],
    )

    # firecrawl-py 4.55 sends a typed ScrapeOptions by its Python names.
    assert "only_main_content" in sent[-1]["targets"][0]["scrapeOptions"]
    scrape = Target.objects.get(monitor_id=monitor.id, type="scrape")
    assert scrape.scrape_options == {
        "onlyMainContent": False,
        "includeTags": ["main"],
        "headers": {"Cookie": "session=1"},
        "removeBase64Images": True,
        "formats": ["markdown", {"type": "changeTracking", "modes": ["git-diff"]}],
        "actions": [{"type": "screenshot", "fullPage": True}],
    }
    crawl = Target.objects.get(monitor_id=monitor.id, type="crawl")
    assert crawl.crawl_options == {"maxDiscoveryDepth": 2, "includePaths": ["^/blog/"]}
    assert monitor.targets[0]["scrapeOptions"] == scrape.scrape_options


def test_plain_formats_as_objects_from_the_sdk_are_accepted(sdk):
    # Firecrawl's scrape options take every format as {"type": ...} too (a
    # string is read as that object); the SDKs' Format type sends them so.
    options = ScrapeOptions(
        formats=[Format(type="markdown"), Format(type="raw_html"), Format(type="links")]
    )
    monitor = make(
        sdk,
        targets=[
            MonitorTarget(
                type="scrape", urls=["https://example.com/"], scrape_options=options
            )
        ],
    )

    stored = Target.objects.get(monitor_id=monitor.id).scrape_options
    assert stored == {
        "formats": [{"type": "markdown"}, {"type": "rawHtml"}, {"type": "links"}]
    }


def test_list_monitors_pages_with_limit_and_offset(sdk, other_sdk):
    ids = [make(sdk, name=f"Monitor {i}").id for i in range(3)]
    base = datetime(2026, 1, 1, tzinfo=UTC)
    for minutes, monitor_id in enumerate(ids):
        Monitor.objects.filter(pk=monitor_id).update(
            created_at=base + timedelta(minutes=minutes)
        )
    make(other_sdk, name="Not yours")
    newest_first = list(reversed(ids))

    assert [m.id for m in sdk.list_monitors()] == newest_first
    assert [m.id for m in sdk.list_monitors(limit=2)] == newest_first[:2]
    assert [m.id for m in sdk.list_monitors(limit=2, offset=2)] == newest_first[2:]
    assert sdk.list_monitors(offset=3) == []


def test_get_monitor_returns_what_create_returned(sdk):
    created = make(sdk, goal="x")
    fetched = sdk.get_monitor(created.id)
    assert fetched.model_dump() == created.model_dump()


def test_a_muted_monitor_reads_in_the_sdk_with_its_mute_as_an_extra_field(sdk):
    created = make(sdk)
    Monitor.objects.filter(pk=created.id).update(
        muted_until=timezone.now() + timedelta(hours=1)
    )

    fetched = sdk.get_monitor(created.id)
    [listed] = sdk.list_monitors()

    assert fetched.id == listed.id == created.id
    assert fetched.name == "Pricing page"
    assert fetched.model_extra["mutedUntil"].endswith("Z")
    assert listed.model_extra["mutedUntil"] == fetched.model_extra["mutedUntil"]


def test_update_monitor_pauses_and_resumes(sdk, sent):
    monitor = make(sdk)

    paused = sdk.update_monitor(monitor.id, status="paused")
    assert sent[-1] == {"status": "paused", "origin": sent[-1]["origin"]}
    assert (paused.status, paused.next_run_at) == ("paused", None)
    assert Monitor.objects.get(pk=monitor.id).next_run_at is None

    resumed = sdk.update_monitor(monitor.id, status="active")
    assert resumed.status == "active"
    stored = Monitor.objects.get(pk=monitor.id)
    assert stored.next_run_at is not None
    assert stored.next_run_at > timezone.now()


def test_update_monitor_schedule_text_and_zone(sdk):
    monitor = make(sdk)
    updated = sdk.update_monitor(
        monitor.id,
        schedule=MonitorSchedule(text="daily at 9am", timezone="Europe/Berlin"),
    )
    assert updated.schedule.cron == "0 9 * * *"
    assert updated.schedule.timezone == "Europe/Berlin"
    stored = Monitor.objects.get(pk=monitor.id)
    assert (stored.schedule_cron, stored.schedule_timezone) == (
        "0 9 * * *",
        "Europe/Berlin",
    )
    local = stored.next_run_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (9, 0)


def test_update_monitor_keeps_targets_sent_back_with_their_ids(sdk):
    monitor = make(
        sdk,
        targets=[
            MonitorTarget(type="scrape", urls=["https://example.com/a"]),
            MonitorTarget(type="scrape", urls=["https://example.com/b"]),
        ],
    )
    first, second = monitor.targets
    changed = dict(second, urls=["https://example.com/b2"])

    updated = sdk.update_monitor(
        monitor.id,
        targets=[
            changed,
            MonitorTarget(type="crawl", url="https://example.com/"),
        ],
    )

    kept, added = updated.targets
    assert kept["id"] == second["id"]
    assert kept["urls"] == ["https://example.com/b2"]
    assert added["id"] not in (first["id"], second["id"])
    stored = {
        str(pk)
        for pk in Target.objects.filter(monitor_id=monitor.id).values_list(
            "pk", flat=True
        )
    }
    assert stored == {second["id"], added["id"]}


def test_update_monitor_with_an_empty_goal_clears_it(sdk, sent):
    monitor = make(sdk, goal="Tell me when prices change")

    untouched = sdk.update_monitor(monitor.id, name="Renamed", goal=None)
    assert "goal" not in sent[-1]
    assert untouched.goal == "Tell me when prices change"

    cleared = sdk.update_monitor(monitor.id, goal="")
    assert (cleared.goal, cleared.judge_enabled) == (None, False)
    stored = Monitor.objects.get(pk=monitor.id)
    assert (stored.goal, stored.judge_enabled) == (None, False)


def test_update_monitor_with_an_empty_notification_turns_email_off(sdk):
    # The SDK drops None values, so it cannot send `webhook: null` (clearing a
    # webhook is a raw-API feature, see test_api_monitors); `{}` does reach us.
    monitor = make(
        sdk,
        webhook=MonitorWebhookConfig(url="https://hooks.example.com"),
        notification=MonitorNotification(
            email=MonitorEmailNotification(enabled=True, recipients=["a@example.com"])
        ),
    )
    updated = sdk.update_monitor(monitor.id, notification={}, webhook=None)
    assert updated.notification == {}
    assert updated.email_recipient_subscriptions == []
    assert updated.webhook["url"] == "https://hooks.example.com"
    assert Monitor.objects.get(pk=monitor.id).notification == {}


def test_delete_monitor_then_it_is_gone(sdk):
    monitor = make(sdk)

    assert sdk.delete_monitor(monitor.id) is True

    assert Monitor.objects.get(pk=monitor.id).deleted_at is not None
    assert sdk.list_monitors() == []
    with pytest.raises(FirecrawlError) as caught:
        sdk.get_monitor(monitor.id)
    assert caught.value.status_code == 404
    assert "Monitor not found" in str(caught.value)


# ------------------------------------------------------------------ errors


def test_other_teams_sdk_gets_monitor_not_found(sdk, other_sdk):
    monitor = make(sdk)
    calls = [
        lambda: other_sdk.get_monitor(monitor.id),
        lambda: other_sdk.update_monitor(monitor.id, name="Mine now"),
        lambda: other_sdk.delete_monitor(monitor.id),
    ]
    for call in calls:
        with pytest.raises(FirecrawlError) as caught:
            call()
        assert caught.value.status_code == 404
        assert "Monitor not found" in str(caught.value)
    stored = Monitor.objects.get(pk=monitor.id)
    assert (stored.name, stored.deleted_at) == ("Pricing page", None)


def test_wrong_key_raises_unauthorized(live_server, db):
    sdk = Firecrawl(api_key="pw_not-a-key", api_url=live_server.url, max_retries=1)
    with pytest.raises(UnauthorizedError) as caught:
        sdk.list_monitors()
    assert caught.value.status_code == 401
    assert "Invalid token" in str(caught.value)


def search(**fields: Any) -> dict[str, Any]:
    return {"type": "search", "queries": ["q"], **fields}


REJECTIONS = [
    ({"name": "n" * 257}, "name: Ensure this field has no more than 256 characters."),
    ({"goal": "g" * 2001}, "goal: Ensure this field has no more than 2000 characters."),
    ({"targets": []}, "targets: Ensure this field has at least 1 elements."),
    (
        {"targets": [PAGE] * 51},
        "targets: Ensure this field has no more than 50 elements.",
    ),
    ({"retention_days": 0}, "retentionDays: Ensure this value is greater than or"),
    ({"retention_days": 366}, "retentionDays: Ensure this value is less than or"),
    (
        {
            "notification": MonitorNotification(
                email=MonitorEmailNotification(
                    recipients=[f"p{i}@example.com" for i in range(26)]
                )
            )
        },
        "notification.email.recipients: Ensure this field has no more than 25",
    ),
    (
        {
            "notification": MonitorNotification(
                email=MonitorEmailNotification(recipients=["not-an-address"])
            )
        },
        "notification.email.recipients[0]: Enter a valid email address.",
    ),
    (
        {"goal": "g", "targets": [search(queries=[f"q{i}" for i in range(13)])]},
        "targets[0].queries: Ensure this field has no more than 12 elements.",
    ),
    (
        {"goal": "g", "targets": [search(queries=["q" * 257])]},
        "targets[0].queries[0]: Ensure this field has no more than 256 characters.",
    ),
    (
        {"goal": "g", "targets": [search(maxResults=51)]},
        "targets[0].maxResults: Ensure this value is less than or equal to 50.",
    ),
    (
        {"goal": "g", "targets": [search(searchWindow="2d")]},
        'targets[0].searchWindow: "2d" is not a valid choice.',
    ),
    (
        {
            "goal": "g",
            "targets": [search(includeDomains=["a.com"], excludeDomains=["b.com"])],
        },
        "includeDomains and excludeDomains are mutually exclusive.",
    ),
    (
        {"schedule": MonitorSchedule(cron="0 * * * *", text="hourly")},
        "schedule: Schedule must include either cron or text, not both.",
    ),
    (
        {"schedule": MonitorSchedule(cron="0 9 * * *", timezone="Mars/Olympus")},
        "schedule: Invalid schedule timezone: Mars/Olympus",
    ),
    (
        {"schedule": MonitorSchedule(cron="*/4 * * * *")},
        "schedule: Schedule must not run more often than every 5 minutes",
    ),
    (
        {"targets": [MonitorTarget(type="scrape", urls=["ftp://example.com/"])]},
        "targets[0].urls[0]: Only http:// and https:// URLs are allowed.",
    ),
    (
        {"targets": [MonitorTarget(type="scrape", urls=["https://u:p@example.com/"])]},
        "targets[0].urls[0]: URL must not contain a user name or password.",
    ),
    (
        {
            "webhook": MonitorWebhookConfig(
                url="https://hooks.example.com", headers={"X-Firecrawl-Signature": "x"}
            )
        },
        "webhook.headers.X-Firecrawl-Signature: Header 'X-Firecrawl-Signature' is "
        "set by Pagewatch",
    ),
    (
        {"judge_enabled": True},
        "judgeEnabled: judgeEnabled requires a non-empty goal.",
    ),
    (
        {"targets": [search()]},
        "goal: A search target requires a non-empty goal",
    ),
    (
        {"targets": [{"type": "scrape", "urls": ["https://a.example"], "every": 5}]},
        "targets[0].every: Unknown field.",
    ),
    (
        {
            "targets": [
                {
                    "type": "scrape",
                    "urls": ["https://a.example"],
                    "scrapeOptions": {"proxy": "tor"},
                }
            ]
        },
        'targets[0].scrapeOptions.proxy: "tor" is not a valid choice.',
    ),
    (
        {
            "targets": [
                MonitorTarget(
                    type="crawl", url="https://a.example", crawl_options={"limit": 0}
                )
            ]
        },
        "targets[0].crawlOptions.limit: Ensure this value is greater than or",
    ),
]


@pytest.mark.parametrize(("kwargs", "message"), REJECTIONS)
def test_each_rule_reaches_the_sdk_as_bad_request_with_our_message(
    sdk, kwargs, message
):
    with pytest.raises(BadRequestError) as caught:
        make(sdk, **kwargs)
    assert caught.value.status_code == 400
    assert caught.value.code == "BAD_REQUEST"
    assert message in str(caught.value)
    assert Monitor.objects.count() == 0


def test_empty_update_reaches_the_sdk_as_bad_request(sdk):
    monitor = make(sdk)
    with pytest.raises(BadRequestError) as caught:
        sdk.update_monitor(monitor.id)
    assert "Update body cannot be empty." in str(caught.value)


def test_update_rules_reach_the_sdk_with_our_message(sdk):
    monitor = make(sdk)
    with pytest.raises(BadRequestError) as caught:
        sdk.update_monitor(monitor.id, judge_enabled=True)
    assert "judgeEnabled requires a non-empty goal." in str(caught.value)
    assert Monitor.objects.get(pk=monitor.id).judge_enabled is False


def test_oversize_body_is_refused_by_the_live_server_with_413(sdk, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    with pytest.raises(FirecrawlError) as caught:
        make(sdk, goal="g" * 1990, name="n" * 256, targets=[PAGE] * 30)
    assert caught.value.status_code == 413
    assert "Request body is too large." in str(caught.value)
    assert Monitor.objects.count() == 0


def test_a_tagged_monitor_reads_and_updates_through_the_sdk_unchanged(sdk, team):
    from monitors.models import Tag

    created = make(sdk)
    stored = Monitor.objects.get(pk=created.id)
    stored.tags.set(Tag.objects.named(team, ["Competitors"]))

    fetched = sdk.get_monitor(created.id)
    listed = sdk.list_monitors()
    renamed = sdk.update_monitor(created.id, name="Renamed")

    assert fetched.id == created.id and fetched.name == created.name
    assert [m.id for m in listed] == [created.id]
    assert renamed.name == "Renamed"
    # The SDK knows nothing of tags and sends none: they stay.
    assert Monitor.objects.get(pk=created.id).tag_names == ["Competitors"]


def test_the_sdk_drops_the_api_urls_sub_path_so_the_proxy_must_pass_v2_on(
    live_server, api_key, team, settings
):
    """firecrawl-py joins `/v2/...` onto api_url's host alone (urljoin of an
    absolute path), unlike the JS SDK: behind a proxy that passes on only
    /pagewatch/, it gets the proxy's 404; README's nginx example passes
    /v2/ on as well for it."""
    Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="0 * * * *", schedule_timezone="UTC"
    )
    with SubPathProxy(live_server.url, "/pagewatch") as only_sub_path:
        settings.PUBLIC_BASE_URL = only_sub_path.url
        settings.FORCE_SCRIPT_NAME = "/pagewatch"
        sdk = Firecrawl(api_key=api_key, api_url=only_sub_path.url, max_retries=1)
        with pytest.raises(FirecrawlError):
            sdk.list_monitors()
        assert [path for _, path in only_sub_path.requests] == ["/v2/monitor"]

    with SubPathProxy(live_server.url, "/pagewatch", also=["/v2/"]) as proxy:
        settings.PUBLIC_BASE_URL = proxy.url
        sdk = Firecrawl(api_key=api_key, api_url=proxy.url, max_retries=1)
        assert [m.name for m in sdk.list_monitors()] == ["Pricing"]
        assert [path for _, path in proxy.requests] == ["/v2/monitor"]
