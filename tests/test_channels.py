"""Channels: a team's places to be told, their kinds, and what a finished check
sends to them, through the outbox (fake Slack Web API and Apprise receivers on
127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from datetime import UTC, datetime, time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from checks.models import Check, Delivery
from checks.notify import channels as channel_events
from checks.notify import drain, kinds
from checks.notify.kinds import ChannelKind, DeliveryError, Sent, apprise, outbound
from checks.notify.kinds.outbound import Outbound
from monitors.models import Channel, Monitor, MonitorChannel, Team
from tests.notifying import judged, make_monitor
from tests.sites import Request, Site
from tests.test_settings import in_fresh_process

pytest_plugins = ["tests.notifying"]


class FakeSlack:
    """Slack's Web API as much as Pagewatch uses it: auth.test,
    conversations.list, chat.postMessage; answers can be scripted."""

    TOKEN = "xoxb-test-token"

    def __init__(self, site: Site) -> None:
        self.site = site
        self.posted: list[dict[str, Any]] = []
        self.next_answers: list[tuple[int, dict[str, str], dict[str, Any]]] = []
        for method in ("auth.test", "conversations.list", "chat.postMessage"):
            site.handle(f"/api/{method}", self._answer)

    @property
    def url(self) -> str:
        return self.site.url("/api/")

    def _answer(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        method = urlsplit(request.path).path.rsplit("/", 1)[-1]
        if request.header("Authorization") != f"Bearer {self.TOKEN}":
            answer: dict[str, Any] = {"ok": False, "error": "invalid_auth"}
            return (
                200,
                {"Content-Type": "application/json"},
                json.dumps(answer).encode(),
            )
        if self.next_answers:
            status, headers, body = self.next_answers.pop(0)
            return (
                status,
                {"Content-Type": "application/json", **headers},
                json.dumps(body).encode(),
            )
        if method == "auth.test":
            answer = {"ok": True, "team": "Acme", "user": "pagewatch"}
        elif method == "conversations.list":
            answer = {
                "ok": True,
                "channels": [
                    {"id": "C111", "name": "pricing"},
                    {"id": "C222", "name": "alerts"},
                ],
            }
        else:
            payload = json.loads(request.body)
            if payload.get("channel") not in ("C111", "C222"):
                answer = {"ok": False, "error": "channel_not_found"}
            else:
                self.posted.append(payload)
                answer = {"ok": True, "ts": "1700000000.000100"}
        return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()


@pytest.fixture
def slack(site: Site, settings: Any) -> FakeSlack:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    fake = FakeSlack(site)
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = fake.url
    return fake


def make_channel(team, monitor=None, **fields: Any) -> Channel:
    fields.setdefault("name", "Pricing team")
    fields.setdefault("events", list(Channel.DEFAULT_EVENTS))
    channel = Channel.objects.create(team=team, **fields)
    if monitor is not None:
        MonitorChannel.objects.create(monitor=monitor, channel=channel)
    return channel


def slack_said(block: dict[str, Any]) -> str:
    """What a reader sees of one Slack block: a section's or header's text,
    or a rich text block's words (its links show their words)."""
    if "text" in block:
        return block["text"]["text"]
    return "".join(
        element["text"]
        for section in block.get("elements") or []
        for element in section["elements"]
    )


def daily_digest_channel(team: Team, monitor: Monitor) -> Channel:
    """A channel of the test kind that gets a daily digest at 09:00 in the
    team's time zone, scheduled as saving it does."""
    from checks.notify import digests

    channel = make_channel(
        team, monitor, kind="pigeon", settings={"loft": "north"},
        digest="daily", digest_at=time(9, 0),
    )  # fmt: skip
    digests.schedule(channel, datetime.now(UTC))
    channel.save()
    return channel


def meaningful_check(scenario, monitor) -> Check:
    return scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/about", "same"),
        ],
    )


# --- Slack ---------------------------------------------------------------------


def test_a_meaningful_change_is_posted_to_slack_as_blocks(
    team, slack, scenario, queued
):
    monitor = make_monitor(team, goal="Prices")
    channel = make_channel(team, monitor, kind="slack", settings={"channelId": "C111"})

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.DELIVERED
    [post] = slack.posted
    assert post["channel"] == "C111"
    text = json.dumps(post["blocks"])
    assert "Pricing page" in post["text"]
    assert "The price went up." in text
    assert "$19" in text and "$24" in text
    assert "See the diff" in text


def test_a_check_whose_changes_were_all_noise_sends_nothing_to_slack(
    team, slack, scenario, queued
):
    monitor = make_monitor(team, goal="Prices")
    make_channel(team, monitor, kind="slack", settings={"channelId": "C111"})

    scenario.run(
        monitor,
        [("https://example.com/pricing", "changed", {"judgment": judged(False)})],
    )
    queued.run()

    assert not Delivery.objects.to_channels().exists()
    assert slack.posted == []


def test_every_change_channel_hears_of_noise_too(team, slack, scenario, queued):
    monitor = make_monitor(team, goal="Prices")
    make_channel(
        team, monitor, kind="slack", settings={"channelId": "C111"}, events=["change"]
    )

    scenario.run(
        monitor,
        [("https://example.com/pricing", "changed", {"judgment": judged(False)})],
    )
    queued.run()

    assert len(slack.posted) == 1


def test_slack_channel_not_found_fails_for_good_in_plain_words(
    team, slack, scenario, queued
):
    monitor = make_monitor(team)
    channel = make_channel(team, monitor, kind="slack", settings={"channelId": "C999"})

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.FAILED
    assert "channel_not_found" in delivery.last_error
    assert delivery.attempts == 1


def test_slack_invalid_auth_fails_for_good(team, slack, settings, scenario, queued):
    settings.SLACK_BOT_TOKEN = "xoxb-wrong"
    monitor = make_monitor(team)
    channel = make_channel(team, monitor, kind="slack", settings={"channelId": "C111"})

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.FAILED
    assert "invalid_auth" in delivery.last_error


def test_slack_rate_limit_waits_as_long_as_retry_after_says(
    team, slack, scenario, queued
):
    slack.next_answers.append((429, {"Retry-After": "7200"}, {"ok": False}))
    monitor = make_monitor(team)
    channel = make_channel(team, monitor, kind="slack", settings={"channelId": "C111"})

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.PENDING
    assert "rate limited" in delivery.last_error
    wait = delivery.next_attempt_at - delivery.updated_at
    assert wait.total_seconds() >= 7200 - 5


def test_the_slack_picker_lists_the_workspaces_channels(slack):
    from checks.notify.kinds.slack import list_channels

    assert list_channels() == [
        {"id": "C111", "name": "pricing"},
        {"id": "C222", "name": "alerts"},
    ]


def test_a_slack_incoming_webhook_gets_the_same_blocks(
    team, site, settings, scenario, queued
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    got: list[dict[str, Any]] = []

    def hook(request: Request) -> tuple[int, dict[str, str], bytes]:
        got.append(json.loads(request.body))
        return 200, {"Content-Type": "text/plain"}, b"ok"

    site.handle("/services/T0/B0/xyz", hook)
    monitor = make_monitor(team)
    make_channel(
        team,
        monitor,
        kind="slack_webhook",
        settings={"url": site.url("/services/T0/B0/xyz")},
    )

    meaningful_check(scenario, monitor)
    queued.run()

    [message] = got
    assert message["blocks"][0]["type"] == "header"
    assert "The price went up." in json.dumps(message["blocks"])
    # As the app's messages: the pages' addresses are not unfurled into
    # previews of each page under the message.
    assert message["unfurl_links"] is False and message["unfurl_media"] is False


# --- Apprise -------------------------------------------------------------------


@pytest.fixture
def inbox(site: Site, settings: Any) -> list[Request]:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    received: list[Request] = []

    def take(request: Request) -> tuple[int, dict[str, str], bytes]:
        received.append(request)
        return 200, {"Content-Type": "application/json"}, b'{"ok": true}'

    # ntfy posts its topic in a JSON body to the server's root.
    for path in ("/json", "/", "/hooks/abc123"):
        site.handle(path, take)
    return received


def test_an_apprise_json_url_gets_the_message(team, site, inbox, scenario, queued):
    host = urlsplit(site.url()).netloc
    monitor = make_monitor(team)
    channel = make_channel(
        team, monitor, kind="apprise", settings={"url": f"json://{host}/json"}
    )

    meaningful_check(scenario, monitor)
    queued.run()

    assert Delivery.objects.get(channel=channel).status == Delivery.Status.DELIVERED
    [request] = inbox
    payload = json.loads(request.body)
    assert "Pricing page" in payload["title"]
    assert "The price went up." in payload["message"]


def test_an_apprise_ntfy_url_and_a_mattermost_webhook_get_the_message(
    team, site, inbox, scenario, queued
):
    host = urlsplit(site.url()).netloc
    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="apprise", settings={"url": f"ntfy://{host}/topic"}
    )
    make_channel(
        team,
        monitor,
        name="Mattermost",
        kind="apprise",
        settings={"url": f"mmost://{host}/abc123"},
    )

    meaningful_check(scenario, monitor)
    queued.run()

    by_path = {urlsplit(r.path).path: json.loads(r.body) for r in inbox}
    assert sorted(by_path) == ["/", "/hooks/abc123"]
    assert by_path["/"]["topic"] == "topic"
    assert all(d.status == "delivered" for d in Delivery.objects.to_channels())


@pytest.mark.parametrize(
    "url", ["json://127.0.0.1:9/x", "json://169.254.169.254/latest/meta-data/"]
)
def test_an_apprise_url_at_a_private_or_metadata_address_is_refused(
    team, settings, scenario, queued, url
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    monitor = make_monitor(team)
    channel = make_channel(team, monitor, kind="apprise", settings={"url": url})

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.FAILED
    assert delivery.last_error.startswith("Refused:")


def test_in_one_drain_another_apprise_sends_refusal_is_not_this_sends_failure(
    site, settings
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True  # metadata addresses stay shut
    arrived, refused = threading.Event(), threading.Event()

    def take(request: Request) -> tuple[int, dict[str, str], bytes]:
        # Fails for a reason of its own, once the other send was refused by
        # the proxy both share.
        arrived.set()
        refused.wait(10)
        return 500, {"Content-Type": "application/json"}, b'{"ok": false}'

    site.handle("/json", take)
    host = urlsplit(site.url()).netloc

    async def outcome(attempt: Any, outbound: Outbound) -> Sent | DeliveryError:
        try:
            return await attempt.run(outbound)
        except DeliveryError as exc:
            return exc

    async def one_drain() -> tuple[Any, Any]:
        async with Outbound() as outbound:
            failing = asyncio.ensure_future(
                outcome(apprise.prepare_url(f"json://{host}/json", "T", "B"), outbound)
            )
            assert await asyncio.to_thread(arrived.wait, 10)
            metadata = apprise.prepare_url(
                "json://169.254.169.254/latest/meta-data/", "T", "B"
            )
            blocked = await outcome(metadata, outbound)
            refused.set()
            return await failing, blocked

    failed, blocked = asyncio.run(one_drain())

    assert isinstance(blocked, DeliveryError) and blocked.permanent
    assert (
        blocked.message.startswith("Refused:") and "169.254.169.254" in blocked.message
    )
    assert isinstance(failed, DeliveryError) and not failed.permanent
    assert failed.message.startswith("Apprise could not send:")
    assert len(site.requests_to("/json")) == 1


def test_a_pasted_discord_address_is_sent_through_the_address_policy(
    settings, monkeypatch
):
    # Apprise reads the address Discord shows as its own discord:// URL and
    # sends to discord.com: through the proxy, which looks the host up and
    # refuses it here, as it does a host that resolves to the metadata service.
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True  # metadata addresses stay shut
    looked_up: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["169.254.169.254"]

    monkeypatch.setattr(outbound, "system_resolver", resolver)
    url = "https://discord.com/api/webhooks/417429632418316298/tokenabcdefghijklmnop"

    with pytest.raises(DeliveryError) as raised:
        apprise.send_url(url, "Pricing page", "The price went up.")

    assert looked_up and set(looked_up) == {"discord.com"}
    assert raised.value.permanent
    assert raised.value.message.startswith("Refused:")
    assert "169.254.169.254" in raised.value.message


def test_an_unknown_apprise_scheme_is_refused_by_name():
    with pytest.raises(kinds.SettingsError) as raised:
        kinds.kind_for("apprise").clean({"url": "nosuch://host/x"})
    assert "nosuch://" in raised.value.errors["url"]


def test_an_apprise_secret_is_shown_masked():
    shown = kinds.kind_for("apprise").masked({"url": "tgram://123456:ABCDEFsecret/42"})
    assert shown["url"].startswith("tgram://")
    assert "ABCDEF" not in shown["url"]


# What gunicorn loads before it forks (every URL's view) and what a worker
# loads (every tasks module), in a fresh interpreter. Apprise (for its
# channels) and segno (for the second factor's QR code) are imported only
# where they are used.
LOADED_AT_START = """
import sys, django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
import checks.tasks, checks.notify.tasks, monitors.tasks
print(sorted({m.split(".")[0] for m in sys.modules} & {"apprise", "segno"}))
"""


def test_the_web_and_the_worker_start_without_importing_apprise_or_segno(tmp_path):
    assert in_fresh_process(LOADED_AT_START, tmp_path) == "[]"


# --- Failing and recovering ------------------------------------------------------


def test_a_failing_monitor_alerts_once_and_recovers_once(
    team, site, inbox, scenario, queued
):
    host = urlsplit(site.url()).netloc
    monitor = make_monitor(team)
    channel = make_channel(
        team,
        monitor,
        kind="apprise",
        settings={"url": f"json://{host}/json"},
        events=["failing"],
        failing_after=3,
    )

    for _ in range(5):  # five failures: one alert, after the third
        scenario.run(monitor, [("https://example.com/pricing", "error")])
    queued.run()
    assert [d.event for d in Delivery.objects.filter(channel=channel)] == [
        "channel.failing"
    ]
    assert "is failing" in json.loads(inbox[0].body)["title"]

    scenario.run(monitor, [("https://example.com/pricing", "same")])
    scenario.run(monitor, [("https://example.com/pricing", "same")])
    queued.run()

    events = list(
        Delivery.objects.filter(channel=channel)
        .order_by("created_at", "id")
        .values_list("event", flat=True)
    )
    assert events == ["channel.failing", "channel.recovered"]
    assert "works again" in json.loads(inbox[1].body)["title"]


def test_two_failures_are_not_yet_failing(team, scenario, queued):
    monitor = make_monitor(team)
    channel = make_channel(
        team, monitor, kind="webhook", settings={"url": "https://example.com/h"}
    )
    for _ in range(2):
        scenario.run(monitor, [("https://example.com/pricing", "error")])
    assert not Delivery.objects.filter(channel=channel).exists()


@pytest.mark.parametrize(
    ("code", "kind"),
    [(403, ""), (503, "challenge")],  # a refusal, or a challenge whatever its status
)
def test_a_blocked_page_is_named_blocked_by_the_site(
    team, slack, scenario, queued, code, kind
):
    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="slack", settings={"channelId": "C111"}, events=["change"]
    )
    scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            (
                "https://example.com/shop",
                "error",
                {"status_code": code, "error": f"HTTP {code}", "error_kind": kind},
            ),
        ],
    )
    queued.run()

    assert "blocked by the site" in json.dumps(slack.posted[0]["blocks"])


# --- The registry ----------------------------------------------------------------


class Pigeon(ChannelKind):
    name = "pigeon"
    label = "Carrier pigeon"
    fields = {"loft": ("Loft", "Where the bird flies.")}
    flown: list[dict[str, Any]] = []

    def send(self, delivery: Delivery) -> Sent:
        if delivery.channel.settings["loft"] == "closed":
            raise DeliveryError("The loft is closed.", permanent=True)
        self.flown.append(self.message(delivery))
        return Sent(200, "coo")


@pytest.fixture
def pigeon():
    kinds.register(Pigeon)
    Pigeon.flown = []
    yield Pigeon
    kinds.unregister("pigeon")


def test_a_kind_added_through_the_registry_alone_delivers_end_to_end(
    team, pigeon, scenario, queued
):
    monitor = make_monitor(team)
    channel = make_channel(team, monitor, kind="pigeon", settings={"loft": "north"})

    meaningful_check(scenario, monitor)
    queued.run()

    delivery = Delivery.objects.get(channel=channel)
    assert delivery.status == Delivery.Status.DELIVERED
    assert pigeon.flown[0]["monitor"]["name"] == "Pricing page"


def test_a_channel_test_sends_now_and_says_what_the_service_answered(
    team, pigeon, queued
):
    channel = make_channel(team, kind="pigeon", settings={"loft": "closed"})

    delivery = channel_events.send_test(channel)

    assert delivery.status == Delivery.Status.FAILED
    assert delivery.last_error == "The loft is closed."


# --- Digests ----------------------------------------------------------------------


def test_a_daily_digest_lists_the_days_meaningful_changes_at_its_local_time(
    team, pigeon, scenario, queued
):
    import time_machine

    from checks.notify import digests

    team.time_zone = "Europe/Berlin"
    team.save()
    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        channel = daily_digest_channel(team, monitor)
        # 09:00 in Berlin is 08:00 UTC in winter.
        assert channel.next_digest_at == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
        meaningful_check(scenario, monitor)
        noise = {"judgment": judged(False), "verdict": "noise"}
        scenario.run(monitor, [("https://example.com/x", "changed", noise)])
        assert digests.queue_due(datetime.now(UTC)) == []  # not yet due
    assert not Delivery.objects.filter(channel=channel).exists()

    with time_machine.travel(datetime(2026, 3, 2, 8, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))
        assert digests.queue_due(datetime.now(UTC)) == []  # claimed once
    drain.deliver(made.pk)

    made.refresh_from_db()
    assert made.status == Delivery.Status.DELIVERED
    [message] = pigeon.flown
    assert message["type"] == "channel.digest"
    [entry] = message["monitors"]
    assert [p["url"] for p in entry["pages"]] == ["https://example.com/pricing"]
    # Its moments in the API's one format (UTC, milliseconds, "Z"); it tells
    # of the changes up to its own time, 09:00 in Berlin.
    assert message["until"] == "2026-03-02T08:00:00.000Z"
    assert message["since"].endswith(".000Z")
    assert entry["pages"][0]["at"] == "2026-03-02T06:00:00.000Z"
    channel.refresh_from_db()
    assert channel.next_digest_at == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)


def test_a_digest_with_nothing_to_say_sends_nothing(team, pigeon, queued):
    from datetime import UTC, datetime

    import time_machine

    from checks.notify import digests

    with time_machine.travel(datetime(2026, 6, 1, 7, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team)
        channel = make_channel(
            team, monitor, kind="pigeon", settings={"loft": "n"}, digest="weekly"
        )
        digests.schedule(channel, datetime.now(UTC))
        channel.save()
    with time_machine.travel(datetime(2026, 6, 8, 10, 0, tzinfo=UTC), tick=False):
        assert digests.queue_due(datetime.now(UTC)) == []
    channel.refresh_from_db()
    assert channel.next_digest_at == datetime(2026, 6, 15, 9, 0, tzinfo=UTC)
    assert not Delivery.objects.filter(channel=channel).exists()


def test_a_digest_channel_is_not_told_each_change_at_once(
    team, pigeon, scenario, queued
):
    monitor = make_monitor(team)
    make_channel(team, monitor, kind="pigeon", settings={"loft": "n"}, digest="daily")
    meaningful_check(scenario, monitor)
    assert not Delivery.objects.to_channels().exists()


def test_a_page_address_with_a_pipe_cannot_choose_its_slack_link_text():
    from checks.notify import messages
    from checks.notify.kinds import slack

    disguised = "https://evil.example/x|https://bank.example/login"
    message = {
        "type": messages.CHANGE,
        "monitor": {"name": "Prices"},
        "pages": [
            {
                "url": disguised,
                "label": "Changed",
                "link": "https://pagewatch.example/monitors/1/checks/2/",
            }
        ],
        "link": "https://pagewatch.example/monitors/1/checks/2/",
    }

    [section] = slack.blocks(message)[1]["elements"]
    link = section["elements"][0]

    # A link is its own element: a page's "|" cannot end its target early
    # and choose the words shown for it.
    assert link["type"] == "link"
    assert link["url"] == link["text"] == disguised


def test_page_words_in_a_slack_message_are_never_made_links_or_mentions_by_slack():
    from checks.notify import messages
    from checks.notify.kinds import slack

    page = {
        "url": "https://shop.example/pricing",
        "label": "Changed",
        "status": "changed",
        # A judge's reason and quotes echo the page, and pages say anything.
        "reason": "Pay now at https://evil.example/pay, @channel",
        "before": "Pro $49",
        "after": "Pro $59 #general",
        "link": "https://pagewatch.example/monitors/1/checks/2/pages/3/",
    }
    message = {
        "type": messages.CHANGE,
        "monitor": {"name": "Prices"},
        "pages": [page],
        "failures": [{"label": "Web search", "reason": "see www.evil.example"}],
        "link": "https://pagewatch.example/monitors/1/checks/2/",
    }
    digest = {
        "type": messages.DIGEST,
        "since": "2026-06-08T09:00:00+00:00",
        "monitors": [
            {"monitor": {"name": "Prices", "link": page["link"]}, "pages": [page]}
        ],
    }

    blocks = [block for shaped in (message, digest) for block in slack.blocks(shaped)]
    texts = [block["text"] for block in blocks if block["type"] == "section"]

    # Verbatim: Slack leaves bare addresses, #channels and @mentions as typed
    # in our mrkdwn (its default turns them into links and pings); our own
    # <url|words> links still work. Page words go in rich text, which makes
    # no links or mentions of its own.
    assert texts and all(text["verbatim"] is True for text in texts)
    assert any("<https://pagewatch.example/" in text["text"] for text in texts)
    mrkdwn = json.dumps(texts)
    for words in ("evil.example", "@channel", "#general", "www.evil.example"):
        assert words not in mrkdwn
        assert words in json.dumps(blocks)


def test_page_text_sent_to_an_apprise_service_that_reads_html_arrives_as_text(
    site, inbox
):
    host = urlsplit(site.url()).netloc
    # Telegram, Matrix and others read HTML; `format=html` makes the JSON
    # plugin one of them.
    url = f"json://{host}/json?format=html"
    page_text = 'Now: <a href="https://evil.example/">https://bank.example/</a>'

    apprise.send_url(url, "Pricing <b>page</b>", page_text)

    [request] = inbox
    message = json.loads(request.body)["message"]
    assert "<a" not in message and "</a>" not in message
    assert "&lt;a" in message
    assert "href=&quot;https://evil.example/&quot;&gt;" in message


@pytest.fixture
def discord_like(site, settings) -> tuple[str, list[Request]]:
    """An Apprise URL of Fluxer, Apprise's Discord-style plugin that takes a
    host of our choosing (both read @everyone, @here and <@id> in a body as
    pings, and refuse a message over 2000 characters), and what it receives."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    received: list[Request] = []

    def take(request: Request) -> tuple[int, dict[str, str], bytes]:
        received.append(request)
        return 204, {}, b""

    site.handle("/webhooks/417429632418316298/tokenabcdefghijklmnop", take)
    host = urlsplit(site.url()).netloc
    return f"fluxer://{host}/417429632418316298/tokenabcdefghijklmnop", received


def test_a_page_saying_at_everyone_does_not_ping_a_discord_like_channel(discord_like):
    url, received = discord_like
    url += "?format=markdown"
    page_text = "Now: @everyone @here <@123456789> <@&987654321>"

    apprise.send_url(url, "Pricing page", page_text)

    [request] = received
    payload = json.loads(request.body)
    assert "allow_mentions" not in payload
    assert "👉" not in json.dumps(payload, ensure_ascii=False)


def test_a_page_cannot_hide_a_link_address_in_a_markdown_channel(discord_like):
    url, received = discord_like
    url += "?format=markdown"
    page_text = "Now: [Sign in again](https://elsewhere.example/login)"

    apprise.send_url(url, "Pricing page", page_text)

    [request] = received
    sent = json.dumps(json.loads(request.body), ensure_ascii=False)
    # Discord-style Markdown would show "Sign in again" as a link to an
    # address the reader never sees; escaped, both are shown as words.
    assert "](" not in sent
    said = json.loads(request.body)["embeds"][0]["description"]
    assert r"\[Sign in again\]\(https://elsewhere.example/login\)" in said.replace(
        apprise.NO_MENTION, ""
    )


def test_a_change_of_many_pages_fits_a_discord_like_channels_2000_characters(
    team, discord_like, scenario, queued
):
    url, received = discord_like
    monitor = make_monitor(team, goal="Prices")
    make_channel(team, monitor, kind="apprise", settings={"url": url})
    pages = [
        (f"https://example.com/plans/{n}", "changed", {"judgment": judged(True)})
        for n in range(12)
    ]
    check = scenario.run(monitor, pages)
    queued.run()

    # Discord (and Fluxer, its look-alike) refuse a message over 2000
    # characters, title included: it would never arrive. Pages are left out
    # instead, said so, and the link to all of them stays.
    # Fluxer shows Markdown, so Pagewatch has it sent as Markdown: an embed.
    [request] = received
    [embed] = json.loads(request.body)["embeds"]
    said = embed["description"]
    assert len(embed["title"]) + len(said) <= 2000
    assert "https://example.com/plans/0" in said
    assert re.search(r"…and \d+ more", said)
    assert check.get_absolute_url() in said


def digest_of(monitors: int, pages: int) -> dict[str, Any]:
    from datetime import UTC, datetime

    from checks.notify import messages

    base = "https://pagewatch.example/monitors"
    return messages.digest(
        datetime(2026, 3, 1, 8, 0, tzinfo=UTC),
        datetime(2026, 3, 2, 8, 0, tzinfo=UTC),
        [
            {
                "monitor": {"id": str(m), "name": f"Shop {m}", "link": f"{base}/{m}/"},
                "pages": [
                    {
                        "url": f"https://shop{m}.example/products/item-{p}",
                        "status": "new" if p == 1 else "changed",
                        "reason": "The price of the item went up by a few euros.",
                        "at": "2026-03-01T12:00:00+00:00",
                        "link": f"{base}/{m}/checks/c{m}/pages/p{p}/",
                    }
                    for p in range(pages)
                ],
                "more": 0,
            }
            for m in range(monitors)
        ],
    )


def test_a_busy_digest_names_every_monitor_in_slack_within_its_limits():
    from checks.notify.kinds import slack

    blocks = slack.blocks(digest_of(monitors=4, pages=20))

    texts = [slack_said(b) for b in blocks[1:]]
    said = "\n".join(texts)
    # Slack takes 50 blocks and 3000 characters a section; one section cut at
    # its limit dropped every monitor after the first few pages, mid-link.
    assert len(blocks) <= 50
    assert all(len(text) <= 3000 for text in texts)
    for m in range(4):
        assert f"Shop {m}" in said
        assert f"https://shop{m}.example/products/item-0" in said
    assert "more" in said
    # A new page has no diff: its link says where it goes.
    new_page = next(line for line in said.splitlines() if "item-1 " in line)
    assert "(new page)" in new_page and "see the diff" not in new_page


def test_a_digest_of_sixty_monitors_stays_within_slacks_fifty_blocks():
    from checks.notify.kinds import slack

    blocks = slack.blocks(digest_of(monitors=60, pages=1))

    assert len(blocks) <= 50
    said = json.dumps(blocks, ensure_ascii=False)
    assert "Shop 0" in said
    assert re.search(r"…and \d+ more monitors", said)


def test_a_digest_says_since_when_in_the_teams_time_zone(team, pigeon, scenario):
    import time_machine

    from checks.notify import digests, messages
    from checks.notify.kinds import slack

    team.time_zone = "Europe/Berlin"
    team.save()
    with time_machine.travel(datetime(2026, 3, 1, 8, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        daily_digest_channel(team, monitor)
    with time_machine.travel(datetime(2026, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        meaningful_check(scenario, monitor)
    with time_machine.travel(datetime(2026, 3, 2, 8, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))

    message = json.loads(made.body)
    # The team reads its own clock: 08:00 UTC is 09:00 in Berlin in winter,
    # said as the dashboard says times, not as "2026-03-01T08:00 UTC".
    since = "since Sun 01 Mar 2026, 09:00 CET"
    assert since in messages.text(message)
    assert since in json.dumps(slack.blocks(message), ensure_ascii=False)
    assert "UTC" not in messages.text(message)


def test_slack_says_why_a_page_failed_and_offers_a_diff_only_for_a_change(
    team, slack, scenario, queued
):
    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="slack", settings={"channelId": "C111"}, events=["change"]
    )
    scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/careers", "new"),
            ("https://example.com/broken", "error", {"error_kind": "timeout"}),
        ],
    )
    queued.run()

    sections = {
        url: slack_said(block)
        for block in slack.posted[0]["blocks"][1:]
        for url in ("pricing", "careers", "broken")
        if slack_said(block).startswith(f"https://example.com/{url} ")
    }
    # The reader is told why, in the dashboard's words, as Apprise tells it.
    assert "The page took too long to answer." in sections["broken"]
    assert "See the diff" in sections["pricing"]
    # A new or failed page has no diff to see: the link says where it goes.
    assert "See the diff" not in sections["careers"]
    assert "See the diff" not in sections["broken"]
    assert "Open in Pagewatch" in sections["careers"]


def test_apprise_names_a_diff_only_for_a_changed_page(
    team, site, inbox, scenario, queued
):
    host = urlsplit(site.url()).netloc
    monitor = make_monitor(team)
    make_channel(team, monitor, kind="apprise", settings={"url": f"json://{host}/json"})

    scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/gone", "removed"),
        ],
    )
    queued.run()

    body = json.loads(inbox[0].body)["message"]
    changed, removed = body.split("- https://example.com/")[1:3]
    assert "Diff: " in changed
    assert "Diff: " not in removed and "In Pagewatch: " in removed


def test_an_apprise_message_does_not_repeat_its_title_as_its_first_line(
    team, site, inbox, scenario, queued
):
    host = urlsplit(site.url()).netloc
    monitor = make_monitor(team)
    make_channel(team, monitor, kind="apprise", settings={"url": f"json://{host}/json"})

    scenario.run(monitor, [("https://example.com/pricing", "changed")])
    queued.run()

    sent = json.loads(inbox[0].body)
    assert sent["title"].startswith(f"{monitor.name}: ")
    assert sent["title"] not in sent["message"]
    assert sent["message"].lstrip().startswith("- https://example.com/pricing")


def change_with_failures(failures: int, pages: int = 10) -> dict[str, Any]:
    from checks.notify import messages

    link = "https://pagewatch.example/monitors/1/checks/2/"
    return {
        "type": messages.CHANGE,
        "monitor": {"name": "Prices"},
        "counts": f"{pages} pages changed",
        "pages": [
            {
                "url": f"https://shop.example/item-{n}",
                "status": "changed",
                "label": "changed",
                "link": f"{link}pages/{n}/",
            }
            for n in range(pages)
        ],
        "failures": [
            {"label": "Web search", "reason": f"Search {n} answered HTTP 500."}
            for n in range(failures)
        ],
        "more": 3,
        "link": link,
    }


def test_a_change_with_sixty_failed_searches_stays_within_slacks_fifty_blocks():
    from checks.notify.kinds import slack

    blocks = slack.blocks(change_with_failures(60))

    # Slack refuses a message of more than 50 blocks whole: it never arrives.
    assert len(blocks) == 50
    said = [slack_said(b) for b in blocks[1:]]
    assert said[9].startswith("https://shop.example/item-9 ")
    shown = sum(1 for text in said if text.startswith("Web search:"))
    # The failures left out join the pages already left out in one count.
    assert said[-2] == f"…and {3 + 60 - shown} more."
    assert "Open the check in Pagewatch" in said[-1]


def test_a_change_with_a_few_failures_lists_every_one_in_slack():
    from checks.notify.kinds import slack

    message = change_with_failures(38) | {"more": 0}
    blocks = slack.blocks(message)

    # Header, 10 pages, 38 failures and the link: exactly 50, no "more".
    said = json.dumps(blocks, ensure_ascii=False)
    assert len(blocks) == 50
    assert "Search 37 answered" in said and "more." not in said


def test_a_long_slack_header_is_cut_with_an_ellipsis():
    from checks.notify.kinds import slack

    message = change_with_failures(0) | {"monitor": {"name": "Prices " * 40}}
    header = slack.blocks(message)[0]["text"]["text"]

    # Slack takes 150 characters in a header; the name is cut, saying so, and
    # what happened stays.
    assert len(header) <= 150
    assert header == f"{('Prices ' * 40)[:119].rstrip()}…: {message['counts']}"

    message["counts"] = "a count " * 40
    header = slack.blocks(message)[0]["text"]["text"]
    assert len(header) == 150
    assert header.endswith("…")


def failing_message(
    team, pigeon, scenario, queued, pages, error, target_results=None
) -> str:
    """The "is failing" text a pigeon channel hears after one check that
    failed with `pages` (and `target_results`) and its own `error`."""
    from checks.notify import messages

    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="pigeon", settings={"loft": "north"},
        events=["failing"], failing_after=1,
    )  # fmt: skip
    check = scenario.start(monitor)
    check.target_results = target_results
    check.save(update_fields=["target_results"])
    for url, status, fields in pages:
        scenario.page(check, url, status, **fields)
    scenario.finish(check, Check.Status.FAILED, error)
    queued.run()
    [message] = pigeon.flown
    return messages.text(message)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (
            {"status_code": 403, "error": "HTTP 403", "error_kind": "http_4xx"},
            "The site refused access (HTTP 403).",
        ),
        ({"error": "ReadTimeout", "error_kind": "timeout"}, "The page took too long"),
    ],
)
def test_a_failing_alert_says_why_the_page_could_not_be_checked(
    team, pigeon, scenario, queued, fields, words
):
    page = ("https://example.com/pricing", "error", fields)

    said = failing_message(
        team, pigeon, scenario, queued, [page], "The page could not be checked."
    )

    # The check's own summary ("The page could not be checked.") tells the
    # team nothing they can act on; the page's reason does.
    assert f"Last error: {words}" in said
    assert "could not be checked" not in said


@pytest.mark.parametrize(
    "raw",
    [
        "Scrape failed: <html><body><h1>502 Bad Gateway</h1></body></html>",
        "Scrape failed (scrapeId=3f2a9c1e-77b0, attempt=2): upstream reset",
    ],
)
def test_a_failing_alert_never_sends_a_checks_raw_internal_text(
    team, pigeon, scenario, queued, raw
):
    said = failing_message(team, pigeon, scenario, queued, [], raw)

    assert "<" not in said and "scrapeId" not in said and "upstream" not in said
    assert "Last error: Something went wrong on our side" in said


def test_a_failing_alert_keeps_a_pages_words_but_not_its_raw_text(
    team, pigeon, scenario, queued
):
    fields = {"error": "<html><title>Oops</title></html>", "error_kind": "browser"}
    page = ("https://example.com/pricing", "error", fields)

    said = failing_message(
        team, pigeon, scenario, queued, [page], "The page could not be checked."
    )

    assert "Last error: The browser could not show this page." in said
    assert "<" not in said and "Oops" not in said


def test_a_failing_alert_keeps_a_check_error_written_in_plain_words(
    team, pigeon, scenario, queued
):
    from checks.runner import TIME_LIMIT_MESSAGE

    said = failing_message(team, pigeon, scenario, queued, [], TIME_LIMIT_MESSAGE)

    assert f"Last error: {TIME_LIMIT_MESSAGE}" in said


def test_a_failing_alert_says_a_failed_search_in_words_not_its_raw_answer(
    team, pigeon, scenario, queued
):
    raw = "SearXNG answered HTTP 502: <html><body>Bad gateway</body></html>"
    results = [{"type": "search", "searchCompleted": False, "degradedReason": raw}]

    said = failing_message(team, pigeon, scenario, queued, [], raw, results)

    assert "Last error: The web search failed." in said
    assert "<" not in said and "Bad gateway" not in said


def test_a_failing_alert_gives_a_pages_words_without_its_exception_text(
    team, pigeon, scenario, queued
):
    raw = "httpx.ConnectError: [Errno 111] Connection refused"
    fields = {"error": raw, "error_kind": "refused"}
    page = ("https://example.com/pricing", "error", fields)

    said = failing_message(
        team, pigeon, scenario, queued, [page], "The page could not be checked."
    )

    assert "Last error: The site refused the connection.\n" in said
    assert "Errno" not in said and "httpx" not in said


def test_a_change_message_says_a_failed_page_in_words_without_its_exception_text(
    team, slack, scenario, queued
):
    raw = "ReadTimeout: timed out after 30 s"
    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="slack", settings={"channelId": "C111"}, events=["change"]
    )
    scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            (
                "https://example.com/slow",
                "error",
                {"error_kind": "timeout", "error": raw},
            ),
        ],
    )
    queued.run()

    from checks.notify import messages

    [posted] = slack.posted
    message = json.loads(Delivery.objects.to_channels().get().body)
    for said in (json.dumps(posted), messages.text(message)):
        assert "The page took too long to answer." in said
        assert "ReadTimeout" not in said and "30 s" not in said


def test_a_change_message_says_a_failed_search_in_words_not_its_raw_answer(
    team, pigeon, scenario, queued
):
    from checks.notify import messages

    raw = "SearXNG answered HTTP 502: <html><body>Bad gateway</body></html>"
    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="pigeon", settings={"loft": "north"}, events=["change"]
    )
    check = scenario.start(monitor)
    check.target_results = [
        {"type": "search", "searchCompleted": False, "degradedReason": raw}
    ]
    check.save(update_fields=["target_results"])
    scenario.page(check, "https://example.com/new", "new")
    scenario.finish(check)
    queued.run()

    [message] = pigeon.flown
    said = messages.text(message)
    assert "- Web search: The web search failed." in said
    assert "<" not in said and "Bad gateway" not in said


def test_chat_says_a_failed_target_once_not_failed_twice():
    from checks.notify import messages
    from checks.notify.kinds import slack

    message = change_with_failures(1) | {
        "failures": [{"label": "Web search", "reason": "The web search failed."}]
    }

    in_slack = "\n".join(slack_said(b) for b in slack.blocks(message))
    said = messages.text(message) + in_slack
    assert "failed: The web search failed" not in said
    assert "- Web search: The web search failed." in messages.text(message)
    assert "Web search: The web search failed." in in_slack


def test_a_failing_alert_names_the_page_whose_error_it_gives(
    team, pigeon, scenario, queued
):
    pages = [
        ("https://example.com/pricing", "same", {}),
        ("https://example.com/plans/pro", "error", {"error_kind": "timeout"}),
    ]

    said = failing_message(
        team, pigeon, scenario, queued, pages, "The page could not be checked."
    )

    # A monitor of many pages: the reader is told which one to look at.
    assert "Last error: The page took too long" in said
    assert "\nPage: https://example.com/plans/pro\n" in said


def test_a_failing_alert_reads_its_page_error_and_that_pages_address_at_once(
    team, scenario, django_assert_num_queries
):
    from checks.notify import messages

    monitor = make_monitor(team)
    check = scenario.start(monitor)
    scenario.page(check, "https://example.com/plans/pro", "error", error_kind="timeout")
    scenario.finish(check, Check.Status.FAILED, "The page could not be checked.")

    with django_assert_num_queries(1):
        said = messages.failing(monitor, 3, check)

    assert said["error"].startswith("The page took too long")
    assert said["errorUrl"] == "https://example.com/plans/pro"


def test_a_failing_alert_without_a_page_error_names_no_page(
    team, pigeon, scenario, queued
):
    said = failing_message(team, pigeon, scenario, queued, [], "Lost.")

    assert "Page:" not in said


def test_failing_and_recovered_messages_say_what_their_link_opens():
    from checks.notify import messages
    from checks.notify.kinds import slack

    monitor = {"id": "1", "name": "Prices", "link": "https://pw.example/monitors/1/"}
    failing = {"type": messages.FAILING, "monitor": monitor, "failures": 2,
               "error": None, "link": monitor["link"]}  # fmt: skip
    recovered = {"type": messages.RECOVERED, "monitor": monitor,
                 "link": monitor["link"]}  # fmt: skip

    for message in (failing, recovered):
        said = messages.text(message)
        # Like a change's "See the check: …", not a bare address.
        assert said.endswith("\nSee the monitor: https://pw.example/monitors/1/")
        in_slack = [slack_said(b) for b in slack.blocks(message)]
        assert not any("See the monitor" in words for words in in_slack)
        assert in_slack[-1] == (
            "<https://pw.example/monitors/1/|Open the monitor in Pagewatch>"
        )


def test_a_failing_alert_after_one_failed_check_says_its_last_check_failed(
    team, pigeon, scenario, queued
):
    said = failing_message(team, pigeon, scenario, queued, [], "Lost.")

    assert said.startswith("Pricing page is failing: its last check failed.\n")
    assert "1 check" not in said


def test_a_digest_of_every_change_does_not_call_the_noise_in_it_meaningful(
    team, pigeon, scenario
):
    import time_machine

    from checks.notify import digests, messages

    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        every = daily_digest_channel(team, monitor)
        every.events = ["change"]
        every.save(update_fields=["events"])
        meaningful_only = daily_digest_channel(team, monitor)
        meaningful_check(scenario, monitor)
        noise = {"judgment": judged(False), "verdict": "noise"}
        scenario.run(monitor, [("https://example.com/x", "changed", noise)])
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        made = {d.channel_id: d for d in digests.queue_due(datetime.now(UTC))}

    of_every = json.loads(made[every.pk].body)
    assert of_every["changes"] == 2
    assert messages.title(of_every) == "Pagewatch digest: 2 changes"
    assert messages.digest_intro(of_every).startswith("Changes since ")
    assert "meaningful" not in messages.text(of_every).lower()
    of_meaningful = json.loads(made[meaningful_only.pk].body)
    assert messages.title(of_meaningful) == "Pagewatch digest: 1 meaningful change"
    assert messages.digest_intro(of_meaningful).startswith("Meaningful changes since ")


def test_chat_names_a_page_that_failed_could_not_be_checked_not_error(
    team, pigeon, scenario, queued
):
    from checks.notify import messages

    monitor = make_monitor(team)
    make_channel(
        team, monitor, kind="pigeon", settings={"loft": "north"}, events=["change"]
    )
    scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/slow", "error", {"error_kind": "timeout"}),
        ],
    )
    queued.run()

    said = messages.text(pigeon.flown[0])
    assert "- https://example.com/slow — could not be checked\n" in said
    assert "— error" not in said


def test_a_digest_says_a_change_was_not_judged_as_change_messages_do(
    team, pigeon, scenario
):
    import time_machine

    from checks.ai.judge import not_judged
    from checks.notify import digests, messages
    from checks.notify.kinds import slack

    refused = not_judged(
        "The AI model's endpoint refused the request (HTTP 401). Check LLM_API_KEY."
    )
    fields = {"judgment": refused.judgment, "verdict": "not_judged"}
    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        daily_digest_channel(team, monitor)
        scenario.run(monitor, [("https://example.com/pricing", "changed", fields)])
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))

    message = json.loads(made.body)
    said = messages.text(message)
    assert "- https://example.com/pricing (not judged)\n" in said
    blocks = "\n".join(slack_said(b) for b in slack.blocks(message))
    assert "• https://example.com/pricing (not judged) (" in blocks
    # The judge's failure is a server matter: no setting names for the team.
    for text in (said, blocks):
        assert "LLM_" not in text and "Not judged:" not in text


def test_a_digest_of_every_change_marks_the_ones_judged_unimportant(
    team, pigeon, scenario
):
    import time_machine

    from checks.notify import digests, messages
    from checks.notify.kinds import slack

    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        channel = daily_digest_channel(team, monitor)
        channel.events = ["change"]
        channel.save(update_fields=["events"])
        meaningful_check(scenario, monitor)
        noise = {"judgment": judged(False), "verdict": "noise"}
        scenario.run(monitor, [("https://example.com/x", "changed", noise)])
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))

    message = json.loads(made.body)
    said = messages.text(message)
    assert "- https://example.com/x (judged unimportant): " in said
    assert "- https://example.com/pricing: " in said
    blocks = "\n".join(slack_said(b) for b in slack.blocks(message))
    assert "• https://example.com/x (judged unimportant): " in blocks


def test_a_failing_alert_never_sends_an_exceptions_text(team, pigeon, scenario, queued):
    raw = "httpx.ConnectError: [Errno 111] Connection refused"

    said = failing_message(team, pigeon, scenario, queued, [], raw)

    assert "Errno" not in said and "httpx" not in said
    assert "Last error: Something went wrong on our side" in said


def slack_texts(blocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every piece of text in Slack blocks as (how Slack reads it, text):
    ("mrkdwn", …) and ("plain_text", …) text objects, ("rich", …) rich text
    elements, which Slack shows exactly as given."""
    found: list[tuple[str, str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text"):
                found.append((node["type"], node["text"]))
            elif node.get("type") in ("text", "link"):
                found.append(("rich", node["text"]))
            else:
                walk(list(node.values()))

    walk(blocks)
    return found


def test_slack_shows_page_words_with_its_formatting_characters_as_typed():
    from checks.notify import messages
    from checks.notify.kinds import slack

    # Slack's mrkdwn has no escape for *, _ and ~: in a mrkdwn text they
    # turn page words bold, italic or struck through, or end our own styling.
    reason = "The *Pro* plan_price went from ~$19 to <b>$24</b> & more"
    before, after = "Pro *$19* _monthly_", "Pro ~$24~ <new>"
    page = {
        "url": "https://shop.example/plans_and_prices",
        "label": "changed (meaningful)",
        "status": "changed",
        "reason": reason,
        "before": before,
        "after": after,
        "link": "https://pagewatch.example/monitors/1/checks/2/pages/3/",
    }
    failure = {"label": "Web search", "reason": "“*acme*” found_nothing"}
    message = {
        "type": messages.CHANGE,
        "monitor": {"name": "Prices"},
        "pages": [page],
        "failures": [failure],
        "link": "https://pagewatch.example/monitors/1/checks/2/",
    }
    digest = {
        "type": messages.DIGEST,
        "since": "2026-06-08T09:00:00+00:00",
        "monitors": [
            {"monitor": {"name": "*Shop* & co", "link": page["link"]}, "pages": [page]}
        ],
    }

    for shaped in (message, digest):
        texts = slack_texts(slack.blocks(shaped)[1:])
        rich = [text for how, text in texts if how == "rich"]
        mrkdwn = "\n".join(text for how, text in texts if how == "mrkdwn")
        for words in (reason, page["url"]):
            assert any(words in text for text in rich)
            assert words not in mrkdwn
    said = slack_texts(slack.blocks(message))
    for words in (before, after, "“*acme*” found_nothing"):
        assert any(words in text for how, text in said if how == "rich")
        assert not any(words in text for how, text in said if how != "rich")
    digest_said = slack_texts(slack.blocks(digest))
    assert ("rich", "*Shop* & co") in digest_said


def test_slacks_notification_text_escapes_what_slack_reads_as_links_and_pings():
    from checks.notify import messages
    from checks.notify.kinds import slack

    message = change_with_failures(0) | {"monitor": {"name": "<!channel> A&B"}}

    # Slack reads "<…>" in a message's text as a link or a ping to everyone.
    assert slack.fallback(message) == ("&lt;!channel&gt; A&amp;B: " + message["counts"])
    assert messages.title(message).startswith("<!channel> A&B")


def test_a_failing_alert_in_slack_links_to_the_monitor():
    from checks.notify import messages
    from checks.notify.kinds import slack

    link = "https://pagewatch.example/monitors/1/"
    message = {
        "type": messages.FAILING,
        "monitor": {"name": "Prices_EU *live*", "link": link},
        "failures": 3,
        "error": "The site refused access (HTTP 403).",
        "link": link,
    }

    texts = slack_texts(slack.blocks(message))
    # Verbatim mrkdwn leaves a bare address as text: the reader had no link.
    assert any(how == "mrkdwn" and f"<{link}|" in text for how, text in texts)
    assert any(
        how == "rich" and text.startswith("Prices_EU *live* is failing")
        for how, text in texts
    )


def test_a_search_result_that_could_not_be_judged_is_told_as_one_not_as_a_page(
    team, pigeon, scenario, queued
):
    from checks.notify import messages

    monitor = make_monitor(team, goal="Prices")
    make_channel(
        team, monitor, kind="pigeon", settings={"loft": "north"}, events=["change"]
    )
    unjudged = {
        "metadata": {"searchStatus": "skipped"},
        "error_kind": "not_judged",
        "error": "This result could not be judged against the goal: HTTP 500",
    }
    scenario.run(
        monitor,
        [
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/gone", "error", {"error_kind": "timeout"}),
            ("https://news.example/a", "new", {"metadata": {"searchStatus": "alert"}}),
            ("https://news.example/b", "error", unjudged),
            ("https://news.example/c", "error", unjudged),
        ],
    )
    queued.run()

    [message] = pigeon.flown
    # A monitor watching pages and a web search: the results the judge could
    # not read are search results, said in the dashboard's words.
    assert message["counts"] == (
        "1 page changed (1 meaningful), 1 new match, 1 page with an error, "
        "2 search results could not be judged"
    )
    said = messages.text(message)
    assert "- https://news.example/b — could not be judged\n" in said
    assert "- https://example.com/gone — could not be checked\n" in said


def test_a_digest_names_a_new_match_and_tells_of_a_page_removed(team, pigeon, scenario):
    import time_machine

    from checks.notify import digests, messages
    from checks.notify.kinds import slack

    match = {"metadata": {"searchStatus": "alert"}}
    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        monitor = make_monitor(team, goal="Prices")
        daily_digest_channel(team, monitor)
        scenario.run(
            monitor,
            [
                ("https://news.example/launch", "new", match),
                ("https://example.com/careers", "new"),
                ("https://example.com/old-plan", "removed"),
            ],
        )
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))

    message = json.loads(made.body)
    said = messages.text(message)
    in_slack = "\n".join(slack_said(b) for b in slack.blocks(message))
    # As change messages say them: a page gone is news too.
    for text in (said, in_slack):
        assert "https://news.example/launch (new match)" in text
        assert "https://example.com/careers (new page)" in text
        assert "https://example.com/old-plan (removed)" in text


def test_the_slack_picker_lists_a_big_workspaces_channels_past_the_first_page(
    site, settings
):
    from urllib.parse import parse_qs

    from checks.notify.kinds.slack import list_channels

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = site.url("/api/")
    asked: list[dict[str, list[str]]] = []

    def conversations(request: Request) -> tuple[int, dict[str, str], bytes]:
        # Slack's read methods take their arguments as form fields (or in
        # the query string), not JSON: a JSON body is read as no arguments.
        fields = parse_qs(request.body.decode())
        asked.append(fields)
        second = fields.get("cursor") == ["next-page"]
        answer = {
            "ok": True,
            "channels": [{"id": "C333", "name": "ops"}]
            if second
            else [{"id": "C111", "name": "pricing"}],
            "response_metadata": {"next_cursor": "" if second else "next-page"},
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()

    site.handle("/api/conversations.list", conversations)

    # Slack answers a page at a time: the channel a team wants may be on the
    # second, and the dashboard's picker is the only way to choose it.
    assert [c["id"] for c in list_channels()] == ["C111", "C333"]
    assert asked[0]["types"] == ["public_channel,private_channel"]
    assert asked[0]["exclude_archived"] == ["true"]


def test_the_slack_picker_keeps_the_pages_read_when_slack_rate_limits_a_later_one(
    site, settings
):
    from checks.notify.kinds.slack import list_channels

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = site.url("/api/")
    pages_asked: list[str] = []

    def conversations(request: Request) -> tuple[int, dict[str, str], bytes]:
        cursor = parse_qs(request.body.decode()).get("cursor", [""])[0]
        pages_asked.append(cursor)
        if cursor:
            # Slack rate-limits conversations.list hard (tier 2).
            answer: dict[str, Any] = {"ok": False, "error": "ratelimited"}
            headers = {"Content-Type": "application/json", "Retry-After": "30"}
            return 429, headers, json.dumps(answer).encode()
        answer = {
            "ok": True,
            "channels": [{"id": "C111", "name": "pricing"}],
            "response_metadata": {"next_cursor": "next-page"},
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()

    site.handle("/api/conversations.list", conversations)

    # The first page's channels are still offered: without them the picker
    # falls back to a field where the channel's id must be typed.
    assert list_channels() == [{"id": "C111", "name": "pricing"}]
    assert pages_asked == ["", "next-page"]


def test_the_slack_picker_fails_when_slack_refuses_its_first_page(site, settings):
    from checks.notify.kinds.slack import list_channels

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = site.url("/api/")

    def conversations(request: Request) -> tuple[int, dict[str, str], bytes]:
        answer = {"ok": False, "error": "ratelimited"}
        headers = {"Content-Type": "application/json", "Retry-After": "30"}
        return 429, headers, json.dumps(answer).encode()

    site.handle("/api/conversations.list", conversations)

    with pytest.raises(DeliveryError):
        list_channels()


def test_a_page_address_too_long_for_a_slack_link_is_shown_as_text():
    from checks.notify.kinds import slack

    long_url = "https://shop.example/search?q=" + "x" * 3500
    message = change_with_failures(0, pages=1)
    message["pages"][0]["url"] = long_url

    [section] = slack.blocks(message)[1]["elements"]

    # Block Kit takes addresses of up to 3000 characters; a longer one got
    # the whole message refused (invalid_blocks), so it never arrived. The
    # address is shown as text; the link to the diff stays.
    first = section["elements"][0]
    assert first == {"type": "text", "text": long_url, "style": {"bold": True}}
    assert section["elements"][-1]["type"] == "link"


def test_a_busy_weeks_digest_names_every_monitor_and_counts_every_change(
    team, pigeon, scenario
):
    import time_machine

    from checks.models import PageResult
    from checks.notify import digests, messages

    with time_machine.travel(datetime(2026, 3, 2, 6, 0, tzinfo=UTC), tick=False):
        quiet = make_monitor(team, name="Quiet page")
        busy = make_monitor(team, name="Busy crawl")
        channel = daily_digest_channel(team, quiet)
        MonitorChannel.objects.create(monitor=busy, channel=channel)
        scenario.run(quiet, [("https://example.com/terms", "changed")])
    with time_machine.travel(datetime(2026, 3, 2, 7, 0, tzinfo=UTC), tick=False):
        check = scenario.start(busy)
        PageResult.objects.bulk_create(
            PageResult(check_run=check, target_id=check.pk, status="changed",
                       url=f"https://busy.example/p{n}")
            for n in range(1100)
        )  # fmt: skip
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        [made] = digests.queue_due(datetime.now(UTC))

    message = json.loads(made.body)
    # Only the newest 1000 changes were read: the quiet monitor's older
    # change went unmentioned, and the count said what was listed.
    names = [entry["monitor"]["name"] for entry in message["monitors"]]
    assert names == ["Busy crawl", "Quiet page"]
    assert message["monitors"][0]["more"] == 1100 - digests.PAGES_PER_MONITOR
    assert message["changes"] == 1101
    assert messages.title(message) == "Pagewatch digest: 1101 meaningful changes"
