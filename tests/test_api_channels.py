"""/v2/channels and a monitor's `channels` and `notification.slack`, through
the API as integrators (and the Firecrawl SDK) use it."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest
from django.db import connection, connections
from firecrawl import Firecrawl
from rest_framework.test import APIClient

from checks.models import Delivery
from monitors.models import Channel, Monitor, MonitorChannel
from teams.models import Activity
from tests.sites import Request, Site
from tests.test_admin_deleting import CHECKS, history_read, with_history


def data(response) -> Any:
    assert response.status_code == 200, response.content
    return response.json()["data"]


@pytest.fixture
def hook(site: Site, settings) -> list[Request]:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    got: list[Request] = []

    def answer(request: Request) -> tuple[int, dict[str, str], bytes]:
        got.append(request)
        return 200, {"Content-Type": "text/plain"}, b"thanks"

    site.handle("/hook", answer)
    return got


def test_creating_a_channel_stores_it_for_the_team_with_default_events(api, team):
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Ops", "kind": "webhook", "settings": {"url": "https://ex.com/h"}},
            format="json",
        )
    )

    channel = Channel.objects.get(pk=created["id"])
    assert channel.team == team
    assert created["events"] == ["meaningful", "failing"]
    assert created["digest"] is None and created["failingAfter"] == 3
    assert set(created) == {
        "id", "name", "kind", "settings", "events", "digest", "digestAt",
        "failingAfter", "createdAt", "updatedAt",
    }  # fmt: skip


def test_a_webhook_channel_comes_with_the_signing_secret_before_it_sends(api, team):
    # As a monitor's webhook does: the receiver's developer can copy the
    # secret from the Team page before the first message arrives signed.
    assert team.webhook_secret == ""
    data(
        api.post(
            "/v2/channels",
            {
                "name": "Chat",
                "kind": "slack_webhook",
                "settings": {"url": "https://hooks.slack.com/services/T0/B0/x"},
            },
            format="json",
        )
    )
    team.refresh_from_db()
    assert team.webhook_secret == ""  # Slack does not check signatures

    data(
        api.post(
            "/v2/channels",
            {"name": "Ops", "kind": "webhook", "settings": {"url": "https://ex.com/h"}},
            format="json",
        )
    )

    team.refresh_from_db()
    assert team.webhook_secret.startswith("whsec_")
    assert not Delivery.objects.exists()


def test_a_channel_test_is_sent_by_the_request_alone_not_queued_for_a_worker_too(
    api, site, hook, django_capture_on_commit_callbacks
):
    # Queued as well, a worker could take the message first: the request then
    # found nothing to send and answered "not delivered" with no reason,
    # though the service had it.
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Hook", "kind": "webhook", "settings": {"url": site.url("/hook")}},
            format="json",
        )
    )

    with django_capture_on_commit_callbacks(execute=False) as queued:
        result = data(api.post(f"/v2/channels/{created['id']}/test"))

    assert queued == []
    assert result["delivered"] is True and result["statusCode"] == 200
    assert len(hook) == 1
    delivery = Delivery.objects.get(channel_id=created["id"])
    assert delivery.status == "delivered" and delivery.attempts == 1


def test_an_apprise_url_is_write_only_and_shown_masked(api):
    url = "tgram://123456789:AAHsecretsecretsecret/987654"
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Telegram", "kind": "apprise", "settings": {"url": url}},
            format="json",
        )
    )
    assert "secret" not in json.dumps(created)
    assert created["settings"]["url"].startswith("tgram://")
    shown = data(api.get(f"/v2/channels/{created['id']}"))
    assert "secret" not in json.dumps(shown)

    # Sending the masked form back keeps the stored secret.
    data(
        api.patch(
            f"/v2/channels/{created['id']}",
            {"name": "Telegram ops", "settings": shown["settings"]},
            format="json",
        )
    )
    assert Channel.objects.get(pk=created["id"]).settings["url"] == url


# Webhook addresses as chat tools show them in their settings, which Apprise
# reads as its own URLs ("native" URLs): pasted as they are.
PASTED = {
    "Discord": "https://discord.com/api/webhooks/417429632418316298/tokenABCsecret",
    "Slack": "https://hooks.slack.com/services/T0AAA/B0BBB/slacksecrettoken",
    "Teams (Workflows)": (
        "https://prod-00.westus.logic.azure.com:443/workflows/abc123def/triggers"
        "/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers&sig=sigsecret"
    ),
    "Teams (Power Automate)": (
        "https://default1234.environment.api.powerplatform.com:443/powerautomate"
        "/automations/direct/workflows/abc123def/triggers/manual/paths/invoke"
        "?api-version=1&sig=sigsecret"
    ),
    "Google Chat": (
        "https://chat.googleapis.com/v1/spaces/AAAAspace/messages"
        "?key=keysecret&token=tokensecret"
    ),
    "ntfy": "https://ntfy.sh/pagewatch-alerts-secret",
    "Mattermost": "https://mattermost.example.com/hooks/hooksecrettoken",
}


@pytest.mark.parametrize("service", sorted(PASTED))
def test_a_webhook_address_pasted_from_a_chat_tool_is_saved_write_only(api, service):
    url = PASTED[service]
    created = data(
        api.post(
            "/v2/channels",
            {"name": service, "kind": "apprise", "settings": {"url": url}},
            format="json",
        )
    )

    assert Channel.objects.get(pk=created["id"]).settings == {"url": url}
    for shown in (created, data(api.get(f"/v2/channels/{created['id']}"))):
        assert "secret" not in json.dumps(shown)
        assert shown["settings"]["url"].startswith("https://")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        (
            "https://acme.webhook.office.com/webhookb2/abc@def/IncomingWebhook/1/2",
            "For Microsoft Teams, make a Workflows webhook",
        ),
        (
            "https://chat.acme.example/hooks/hooksecrettoken",
            "mmosts://chat.acme.example/",
        ),
        ("https://example.com/x", "“Webhook” channel"),
    ],
)
def test_an_https_address_apprise_does_not_recognise_says_what_to_do(api, url, words):
    response = api.post(
        "/v2/channels",
        {"name": "X", "kind": "apprise", "settings": {"url": url}},
        format="json",
    )

    assert response.status_code == 400
    said = response.json()["error"]
    assert "isn't one Apprise recognises" in said and words in said
    assert "URL scheme" not in said and "hooksecrettoken" not in said
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    ("host", "words"),
    [
        ("169.254.169.254", "is a cloud metadata address"),
        ("10.0.0.5", "is a private address"),
    ],
)
def test_a_pasted_webhook_address_at_a_forbidden_address_is_refused(
    api, settings, host, words
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    url = f"https://{host}/workflows/abc/triggers/manual/paths/invoke?sig=x"
    response = api.post(
        "/v2/channels",
        {"name": "X", "kind": "apprise", "settings": {"url": url}},
        format="json",
    )

    assert response.status_code == 400
    assert f"can never connect to {host}: {host} {words}" in response.json()["error"]
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/x",
        "https://mattermost.example.com/hooks/abc123",
        "https://hooks.slack.com.evil.example/services/T0/B0/x",
        "http://hooks.slack.com/services/T0/B0/x",
    ],
)
def test_a_slack_incoming_webhook_must_be_slacks_own_address(api, url):
    response = api.post(
        "/v2/channels",
        {"name": "Chat", "kind": "slack_webhook", "settings": {"url": url}},
        format="json",
    )

    assert response.status_code == 400
    body = response.json()
    assert body["details"][0]["path"] == ["settings", "url"]
    assert "https://hooks.slack.com/services/" in body["error"]
    assert "Chat and push (Apprise)" in body["error"] and "Webhook" in body["error"]
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/services/T0/B0/x",
        "https://HOOKS.SLACK.COM/services/T0/B0/x",
        "https://hooks.slack-gov.com/services/T0/B0/x",
    ],
)
def test_a_slack_incoming_webhook_at_slacks_address_is_saved(api, url):
    data(
        api.post(
            "/v2/channels",
            {"name": "Chat", "kind": "slack_webhook", "settings": {"url": url}},
            format="json",
        )
    )

    assert Channel.objects.get().settings == {"url": url}


def test_an_unknown_apprise_scheme_is_a_400_naming_it(api):
    response = api.post(
        "/v2/channels",
        {"name": "X", "kind": "apprise", "settings": {"url": "nosuch://a/b"}},
        format="json",
    )
    assert response.status_code == 400
    assert "nosuch://" in response.content.decode()
    assert not Channel.objects.exists()


def test_an_unknown_kind_is_a_400_listing_the_known_ones(api):
    response = api.post(
        "/v2/channels", {"name": "X", "kind": "fax", "settings": {}}, format="json"
    )
    assert response.status_code == 400
    assert "apprise" in response.content.decode()


def test_a_slack_channel_without_a_bot_token_is_a_400_naming_the_setting(api, settings):
    settings.SLACK_BOT_TOKEN = ""
    response = api.post(
        "/v2/channels",
        {"name": "S", "kind": "slack", "settings": {"channelId": "C1"}},
        format="json",
    )
    assert response.status_code == 400
    assert "SLACK_BOT_TOKEN" in response.content.decode()


def test_another_teams_channel_is_a_404_everywhere(api, other_team):
    theirs = Channel.objects.create(
        team=other_team, name="Theirs", kind="webhook", settings={"url": "https://e/h"}
    )
    for response in (
        api.get(f"/v2/channels/{theirs.pk}"),
        api.patch(f"/v2/channels/{theirs.pk}", {"name": "Mine"}, format="json"),
        api.delete(f"/v2/channels/{theirs.pk}"),
        api.post(f"/v2/channels/{theirs.pk}/test"),
        api.get("/v2/channels/not-a-number"),
    ):
        assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.name == "Theirs"
    assert data(api.get("/v2/channels")) == []


def test_testing_a_channel_sends_now_and_answers_what_the_service_said(api, site, hook):
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Hook", "kind": "webhook", "settings": {"url": site.url("/hook")}},
            format="json",
        )
    )

    result = data(api.post(f"/v2/channels/{created['id']}/test"))

    assert result == {
        "delivered": True,
        "statusCode": 200,
        "response": "thanks",
        "error": None,
    }
    assert json.loads(hook[0].body)["type"] == "channel.test"
    assert Delivery.objects.get(channel_id=created["id"]).status == "delivered"


def test_deleting_a_channel_unlinks_it_from_monitors(api, team, scrape_monitor_body):
    channel = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": "https://e/h"}
    )
    monitor = data(
        api.post(
            "/v2/monitor",
            scrape_monitor_body | {"channels": [channel.pk]},
            format="json",
        )
    )
    assert monitor["channels"] == [channel.pk]

    assert api.delete(f"/v2/channels/{channel.pk}").json() == {"success": True}

    assert data(api.get(f"/v2/monitor/{monitor['id']}"))["channels"] == []


def test_a_monitor_cannot_link_another_teams_channel(
    api, other_team, scrape_monitor_body
):
    theirs = Channel.objects.create(
        team=other_team, name="Theirs", kind="webhook", settings={"url": "https://e/h"}
    )
    response = api.post(
        "/v2/monitor", scrape_monitor_body | {"channels": [theirs.pk]}, format="json"
    )
    assert response.status_code == 400
    assert not Monitor.objects.exists()


def test_patching_channels_replaces_the_list(api, team, scrape_monitor_body):
    a, b = (
        Channel.objects.create(
            team=team, name=n, kind="webhook", settings={"url": "https://e/h"}
        )
        for n in ("A", "B")
    )
    monitor = data(
        api.post(
            "/v2/monitor", scrape_monitor_body | {"channels": [a.pk]}, format="json"
        )
    )
    updated = data(
        api.patch(f"/v2/monitor/{monitor['id']}", {"channels": [b.pk]}, format="json")
    )
    assert updated["channels"] == [b.pk]
    assert list(MonitorChannel.objects.values_list("channel_id", flat=True)) == [b.pk]


# --- notification.slack, Firecrawl's field -----------------------------------------


SLACK = {"enabled": True, "channelId": "C111", "channelName": "pricing"}


def test_notification_slack_needs_the_bot_token(api, settings, scrape_monitor_body):
    settings.SLACK_BOT_TOKEN = ""
    response = api.post(
        "/v2/monitor",
        scrape_monitor_body | {"notification": {"slack": SLACK}},
        format="json",
    )
    assert response.status_code == 400
    assert "SLACK_BOT_TOKEN" in response.content.decode()


def test_notification_slack_is_returned_as_given_and_is_the_monitors_own_channel(
    api, settings, scrape_monitor_body
):
    settings.SLACK_BOT_TOKEN = "xoxb-1"
    created = data(
        api.post(
            "/v2/monitor",
            scrape_monitor_body | {"notification": {"slack": SLACK}},
            format="json",
        )
    )
    assert created["notification"]["slack"] == SLACK
    own = Channel.objects.get(owner_monitor_id=created["id"])
    assert own.kind == "slack" and own.settings["channelId"] == "C111"
    # A monitor's own channel is not one of the team's listed channels.
    assert created["channels"] == []
    assert data(api.get("/v2/channels")) == []

    off = data(
        api.patch(
            f"/v2/monitor/{created['id']}",
            {"notification": {"slack": {"enabled": False}}},
            format="json",
        )
    )
    assert off["notification"]["slack"] == {"enabled": False}
    assert not Channel.objects.filter(owner_monitor_id=created["id"]).exists()


@pytest.mark.django_db(transaction=True)
def test_the_firecrawl_sdk_reads_back_and_updates_a_monitor_with_slack(
    live_server, api_key, api, settings, scrape_monitor_body
):
    settings.SLACK_BOT_TOKEN = "xoxb-1"
    # The SDK's model drops `slack` on create, so the monitor is made over HTTP.
    created = data(
        api.post(
            "/v2/monitor",
            scrape_monitor_body | {"notification": {"slack": SLACK}},
            format="json",
        )
    )
    sdk = Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)

    read = sdk.get_monitor(created["id"])
    assert read.name == created["name"]
    sdk.update_monitor(created["id"], name="Renamed")

    after = data(api.get(f"/v2/monitor/{created['id']}"))
    assert after["name"] == "Renamed"
    assert after["notification"]["slack"] == SLACK

    # firecrawl-py 4.55's notification model knows only `email`: a Slack
    # change goes over plain HTTP, as it would against Firecrawl.
    data(
        api.patch(
            f"/v2/monitor/{created['id']}",
            {"notification": {"slack": {"enabled": True, "channelId": "C222"}}},
            format="json",
        )
    )
    assert sdk.get_monitor(created["id"]).name == "Renamed"
    after = data(api.get(f"/v2/monitor/{created['id']}"))
    assert after["notification"]["slack"] == {"enabled": True, "channelId": "C222"}
    own = Channel.objects.get(owner_monitor_id=created["id"])
    assert own.settings["channelId"] == "C222"


def test_the_openapi_document_has_the_channel_endpoints(api):
    schema = api.get("/v2/openapi.json").json()
    assert "/v2/channels" in schema["paths"]
    assert "post" in schema["paths"]["/v2/channels/{channel_id}/test"]


@pytest.mark.parametrize("kind", ["webhook", "slack_webhook"])
@pytest.mark.parametrize(
    "url", ["http://127.0.0.1/hook", "http://169.254.169.254/latest/meta-data"]
)
def test_a_channel_posting_to_a_forbidden_address_is_refused_when_saved(
    api, team, settings, kind, url
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    response = api.post(
        "/v2/channels",
        {"name": "Inside", "kind": kind, "settings": {"url": url}},
        format="json",
    )

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["details"][0]["path"] == ["settings", "url"]
    assert "can never connect" in body["error"]
    assert not Channel.objects.filter(team=team).exists()


def test_editing_a_channel_to_a_metadata_address_is_refused(api, team):
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Ops", "kind": "webhook", "settings": {"url": "https://ex.com/h"}},
            format="json",
        )
    )

    response = api.patch(
        f"/v2/channels/{created['id']}",
        {"settings": {"url": "http://169.254.169.254/latest"}},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert Channel.objects.get(pk=created["id"]).settings["url"] == "https://ex.com/h"


def test_an_unknown_channel_field_is_a_400_naming_it_and_origin_is_ignored(api, team):
    body = {"name": "Ops", "kind": "webhook", "settings": {"url": "https://ex.com/h"}}

    refused = api.post("/v2/channels", {**body, "shared": True}, format="json")
    accepted = api.post("/v2/channels", {**body, "origin": "js-sdk@4"}, format="json")

    assert refused.status_code == 400, refused.content
    assert refused.json()["details"][0]["path"] == ["shared"]
    assert refused.json()["error"] == "shared: Unknown field."
    assert accepted.status_code == 200, accepted.content
    assert Channel.objects.filter(team=team).count() == 1


def test_the_openapi_document_lists_the_kinds_a_channel_can_be(api):
    """schemathesis created a channel of kind "0", which the document allowed
    and the server refused."""
    schemas = api.get("/v2/openapi.json").json()["components"]["schemas"]
    for name in ("ChannelInputRequest", "PatchedChannelInputRequest"):
        kind = schemas[name]["properties"]["kind"]
        ref = kind["allOf"][0]["$ref"] if "allOf" in kind else None
        enum = schemas[ref.rsplit("/", 1)[-1]] if ref else kind
        assert enum["enum"] == [
            "webhook", "slack", "slack_webhook", "apprise", "team_email"
        ]  # fmt: skip


def test_replacing_an_apprise_url_is_logged_by_name_without_the_url(api, team):
    old = "tgram://123456789:AAHoldsecretoldsecret/987654"
    new = "tgram://123456789:AAHnewsecretnewsecret/987654"
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Telegram", "kind": "apprise", "settings": {"url": old}},
            format="json",
        )
    )
    shown = data(api.get(f"/v2/channels/{created['id']}"))
    # Renamed with the masked URL sent back: the secret is kept, and said so.
    path = f"/v2/channels/{created['id']}"
    renaming = {"name": "Renamed", "settings": shown["settings"]}
    data(api.patch(path, renaming, format="json"))
    data(api.patch(path, {"settings": {"url": new}}, format="json"))

    renamed, replaced = Activity.objects.filter(
        team=team, kind=Activity.Kind.CHANNEL_EDITED
    ).order_by("pk")
    assert renamed.details == {"name": "Renamed"}
    assert replaced.details == {"name": "Renamed", "replaced": ["url"]}
    assert replaced.what_words == (
        "Changed the channel “Renamed” and replaced its secret address"
    )
    logged = json.dumps(list(Activity.objects.filter(team=team).values()), default=str)
    assert "secret" not in logged.replace("secret address", "")


def test_deleting_a_channel_takes_its_deliveries_without_reading_them(
    api, team, loaded
):
    monitor = with_history(team)
    shared = Channel.objects.get(team=team, owner_monitor=None)

    loaded.clear()
    answer = api.delete(f"/v2/channels/{shared.pk}")

    assert answer.json() == {"success": True}
    assert history_read(loaded) == {}
    assert not Channel.objects.filter(pk=shared.pk).exists()
    assert not Delivery.objects.filter(channel=shared.pk).exists()
    assert Delivery.objects.filter(monitor=monitor).count() == CHECKS + 1
    entry = Activity.objects.filter(kind=Activity.Kind.CHANNEL_DELETED).get()
    assert entry.details == {"name": "Ops"}


def test_turning_a_monitors_slack_off_takes_its_deliveries_without_reading_them(
    api, team, settings, loaded
):
    settings.SLACK_BOT_TOKEN = "xoxb-1"
    monitor = with_history(team)
    answer = api.patch(
        f"/v2/monitor/{monitor.pk}", {"notification": {"slack": SLACK}}, format="json"
    )
    assert answer.status_code == 200, answer.content
    own = Channel.objects.get(owner_monitor=monitor, kind="slack")
    Delivery.objects.bulk_create(
        Delivery(kind="slack", channel=own, monitor=monitor, event="monitor.changed")
        for _ in range(CHECKS)
    )

    loaded.clear()
    answer = api.patch(
        f"/v2/monitor/{monitor.pk}",
        {"notification": {"slack": {"enabled": False}}},
        format="json",
    )

    assert answer.status_code == 200, answer.content
    assert history_read(loaded) == {}
    assert not Channel.objects.filter(pk=own.pk).exists()
    assert not Delivery.objects.filter(kind="slack").exists()


# ------------------------------------------------ an edit racing a delete


def webhook_channel(api) -> dict[str, Any]:
    return data(
        api.post(
            "/v2/channels",
            {"name": "Ops", "kind": "webhook", "settings": {"url": "https://e.com/h"}},
            format="json",
        )
    )


def test_an_edit_that_lands_after_a_delete_does_not_bring_the_channel_back(
    api, monkeypatch
):
    # PATCH reads the channel, validates, then saves it: a DELETE committed in
    # between was undone by the save's INSERT, the channel back, linked to
    # nothing.
    from monitors.api import channels

    created = webhook_channel(api)
    save = channels.save_channel

    def deleted_meanwhile(team, data, now, channel=None):
        Channel.objects.filter(pk=channel.pk).delete()
        return save(team, data, now, channel)

    monkeypatch.setattr(channels, "save_channel", deleted_meanwhile)

    response = api.patch(
        f"/v2/channels/{created['id']}", {"name": "Late"}, format="json"
    )

    assert response.status_code == 404, response.content
    assert response.json()["error"] == "Channel not found"
    assert not Channel.objects.filter(pk=created["id"]).exists()
    assert not Activity.objects.filter(kind="channel.edited").exists()


@pytest.mark.django_db(transaction=True)
def test_a_delete_arriving_during_an_edit_waits_for_it_and_wins(api_key, monkeypatch):
    # The real race: the DELETE commits while the PATCH is inside its save.
    # The edit holds the row, so the delete waits for it, then removes it.
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks: SQLite serialises every writer")
    from checks.notify import digests

    def client() -> APIClient:
        made = APIClient()
        made.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
        return made

    created = webhook_channel(client())
    path = f"/v2/channels/{created['id']}"
    answers: dict[str, Any] = {}

    def delete() -> None:
        try:
            answers["delete"] = client().delete(path)
        finally:
            connections.close_all()

    deleting = threading.Thread(target=delete)
    schedule = digests.schedule

    def schedule_while_deleted(channel, now):
        deleting.start()
        deleting.join(timeout=1)  # held back by the edit's lock (or done)
        return schedule(channel, now)

    monkeypatch.setattr(digests, "schedule", schedule_while_deleted)

    answers["patch"] = client().patch(path, {"name": "Late"}, format="json")
    deleting.join(timeout=30)

    assert answers["patch"].status_code == 200, answers["patch"].content
    assert answers["delete"].status_code == 200, answers["delete"].content
    assert not Channel.objects.filter(pk=created["id"]).exists()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("json://10.0.0.5/hook", "10.0.0.5: 10.0.0.5 is a private address."),
        (
            "ntfy://169.254.169.254/topic",
            "169.254.169.254: 169.254.169.254 is a cloud metadata address.",
        ),
        ("mmost://127.0.0.1/abc123", "127.0.0.1: 127.0.0.1 is a loopback address."),
        ("json://[::1]/hook", "::1: ::1 is a loopback address."),
        # Apprise cuts a bracketed IPv6 host short ("fe80::"): the address
        # named is the one the URL holds.
        ("json://[fe80::1]:8080/hook", "fe80::1: fe80::1 is a link-local address."),
        (
            "json://[64:ff9b::a9fe:a9fe]/hook",
            "64:ff9b::a9fe:a9fe: 64:ff9b::a9fe:a9fe is a NAT64 address for "
            "169.254.169.254, which is a cloud metadata address.",
        ),
    ],
)
def test_an_apprise_url_at_a_private_address_is_refused_when_saved(
    api, team, settings, url, words
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    response = api.post(
        "/v2/channels",
        {"name": "Inside", "kind": "apprise", "settings": {"url": url}},
        format="json",
    )

    assert response.status_code == 400, response.content
    body = response.json()
    assert body["details"][0]["path"] == ["settings", "url"]
    assert f"Pagewatch can never connect to {words}" in body["error"]
    assert not Channel.objects.filter(team=team).exists()


def test_editing_an_apprise_url_to_a_private_address_is_refused(api, team, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    old = "json://hooks.example.com/hook"
    created = data(
        api.post(
            "/v2/channels",
            {"name": "Ops", "kind": "apprise", "settings": {"url": old}},
            format="json",
        )
    )

    response = api.patch(
        f"/v2/channels/{created['id']}",
        {"settings": {"url": "json://192.168.1.10/hook"}},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "192.168.1.10 is a private address" in response.json()["error"]
    assert Channel.objects.get(pk=created["id"]).settings["url"] == old


def test_an_apprise_url_at_the_metadata_address_is_refused_even_with_private_targets_on(
    api, team, settings
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    private = {
        "name": "NAS",
        "kind": "apprise",
        "settings": {"url": "json://10.0.0.5/"},
    }
    metadata = {
        "name": "Inside",
        "kind": "apprise",
        "settings": {"url": "json://169.254.169.254/latest"},
    }

    accepted = api.post("/v2/channels", private, format="json")
    refused = api.post("/v2/channels", metadata, format="json")

    assert accepted.status_code == 200, accepted.content
    assert refused.status_code == 400, refused.content
    assert "cloud metadata address" in refused.json()["error"]
    assert list(Channel.objects.values_list("name", flat=True)) == ["NAS"]


@pytest.mark.parametrize(
    "url",
    [
        "json://hooks.internal.example/hook",
        # Ids where a host would be, which a resolver could read as numbers.
        "discord://123456/abcdefabcdef",
        "tgram://1234567:AAHsecretsecretsecret/987654",
    ],
)
def test_an_apprise_url_naming_no_address_is_saved_without_looking_its_host_up(
    api, team, settings, monkeypatch, url
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    looked_up: list[object] = []
    real = socket.getaddrinfo

    def spy(host: Any, *args: Any, **kwargs: Any) -> Any:
        # The cache's own Redis (the API's rate limit) on this machine is
        # reached as ever; any other name is recorded, never looked up.
        if host in ("127.0.0.1", "localhost", "::1"):
            return real(host, *args, **kwargs)
        looked_up.append(host)
        return []

    monkeypatch.setattr("socket.getaddrinfo", spy)

    response = api.post(
        "/v2/channels",
        {"name": "Chat", "kind": "apprise", "settings": {"url": url}},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert Channel.objects.get(team=team).settings["url"] == url
    assert looked_up == []


EARLIER_HOOK = "https://chat.acme.example/hooks/abc123"


@pytest.mark.parametrize(
    "given",
    [{"url": EARLIER_HOOK}, {"url": "https://••••c123"}, {}],
    ids=["the address itself", "the address as shown", "no address"],
)
def test_a_slack_webhook_saved_before_the_hosts_rule_is_renamed_keeping_its_address(
    api, team, given
):
    # Another tool's hook, taken before only Slack's own hosts were.
    channel = Channel.objects.create(
        team=team, name="Chat", kind="slack_webhook",
        settings={"url": EARLIER_HOOK}, events=["meaningful"],
    )  # fmt: skip
    shown = data(api.get(f"/v2/channels/{channel.pk}"))["settings"]
    assert shown["url"] == "https://••••c123"

    renamed = data(
        api.patch(
            f"/v2/channels/{channel.pk}",
            {"name": "Team chat", "settings": given},
            format="json",
        )
    )

    assert renamed["name"] == "Team chat"
    channel.refresh_from_db()
    assert (channel.name, channel.settings) == ("Team chat", {"url": EARLIER_HOOK})


def test_a_new_address_for_a_slack_webhook_saved_before_the_rule_must_be_slacks(
    api, team
):
    channel = Channel.objects.create(
        team=team, name="Chat", kind="slack_webhook",
        settings={"url": EARLIER_HOOK}, events=["meaningful"],
    )  # fmt: skip

    response = api.patch(
        f"/v2/channels/{channel.pk}",
        {"settings": {"url": "https://chat.acme.example/hooks/other456"}},
        format="json",
    )

    assert response.status_code == 400
    assert "https://hooks.slack.com/services/" in response.json()["error"]
    channel.refresh_from_db()
    assert channel.settings == {"url": EARLIER_HOOK}
