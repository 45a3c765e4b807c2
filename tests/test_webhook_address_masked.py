"""A webhook's address is often its receiver's credential (Slack, Discord and
Zapier hook URLs are): who may read a monitor but not change it (a viewer, a
read-only API key) sees its shape, never the secret parts."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from checks.notify.drain import disable_webhook
from checks.notify.kinds.base import MASK, mask_url
from monitors.models import ApiKey, Channel, Membership
from tests.test_dashboard_views import PASSWORD, make_monitor

HOOK = "https://hooks.example.com/services/T0ABC/B0DEF/xyzXYZ123?token=s3cret"
SHOWN = f"https://hooks.example.com/services/{MASK}/{MASK}/{MASK}?token={MASK}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (HOOK, SHOWN),
        ("https://discord.com/api/webhooks/1234567/AbCdEf-tok",
         f"https://discord.com/api/webhooks/{MASK}/{MASK}"),
        ("https://user:pw@example.com:8443/hook#frag",
         f"https://{MASK}@example.com:8443/hook#{MASK}"),
        ("https://example.com", "https://example.com"),
        ("http://[::1]/receive/", "http://[::1]/receive/"),
        ("not an address", MASK),
    ],
)  # fmt: skip
def test_an_address_is_shown_by_its_shape_without_its_secrets(url, shown):
    assert mask_url(url) == shown


@pytest.fixture
def monitor(team):
    return make_monitor(team, webhook={"url": HOOK, "events": ["monitor.page"]})


def _api(team, scope: str) -> APIClient:
    _, raw = ApiKey.issue(team, name=scope, scope=scope)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_a_read_key_reads_the_webhook_address_masked_and_a_write_key_whole(
    team, monitor
):
    reader, writer = _api(team, ApiKey.Scope.READ), _api(team, ApiKey.Scope.WRITE)
    path = f"/v2/monitor/{monitor.pk}"

    assert reader.get(path).json()["data"]["webhook"]["url"] == SHOWN
    assert reader.get("/v2/monitor").json()["data"][0]["webhook"]["url"] == SHOWN
    assert writer.get(path).json()["data"]["webhook"]["url"] == HOOK


def test_a_read_key_reads_a_webhook_channels_address_masked_and_a_write_key_whole(
    team,
):
    # The same address as a monitor's own webhook, so the same rule: a
    # read key (a dashboard widget, a reporting script) must not be able to
    # post to the team's Slack or Discord by reading the channel list.
    channel = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": HOOK}
    )
    reader, writer = _api(team, ApiKey.Scope.READ), _api(team, ApiKey.Scope.WRITE)
    path = f"/v2/channels/{channel.pk}"

    assert reader.get(path).json()["data"]["settings"] == {"url": SHOWN}
    assert reader.get("/v2/channels").json()["data"][0]["settings"] == {"url": SHOWN}
    assert "xyzXYZ123" not in reader.get("/v2/channels").content.decode()
    assert writer.get(path).json()["data"]["settings"] == {"url": HOOK}
    assert writer.get("/v2/channels").json()["data"][0]["settings"] == {"url": HOOK}


def test_a_read_keys_export_leaves_the_webhooks_out_and_says_so(team, monitor):
    reader, writer = _api(team, ApiKey.Scope.READ), _api(team, ApiKey.Scope.WRITE)

    read = reader.get("/v2/export").json()["data"]
    written = writer.get("/v2/export").json()["data"]

    assert "s3cret" not in json.dumps(read)
    assert read["monitors"][0]["webhook"] is None
    assert "monitors[0].webhook" in read["redacted"]
    assert written["monitors"][0]["webhook"]["url"] == HOOK


def _member(client, team, django_user_model, role: str) -> None:
    user = django_user_model.objects.create_user(role, f"{role}@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=user, role=role)
    client.force_login(user)


def test_a_viewer_sees_the_webhook_address_masked_on_the_monitor_page(
    client, team, monitor, django_user_model
):
    _member(client, team, django_user_model, Membership.Role.VIEWER)

    page = html.unescape(client.get(monitor.get_absolute_url()).content.decode())
    exported = client.get(reverse("export")).content.decode()

    assert SHOWN in page
    assert "s3cret" not in page and "xyzXYZ123" not in page
    assert "s3cret" not in exported


def test_an_editor_sees_the_webhook_address_whole_only_in_the_form(
    client, team, monitor, django_user_model
):
    _member(client, team, django_user_model, Membership.Role.EDITOR)

    page = html.unescape(client.get(monitor.get_absolute_url()).content.decode())
    form = html.unescape(
        client.get(reverse("monitor-edit", args=[monitor.pk])).content.decode()
    )

    assert SHOWN in page and "s3cret" not in page
    assert f'value="{HOOK}"' in form


def test_the_monitor_page_names_the_webhooks_events_in_words_not_their_names(
    client, team, django_user_model
):
    events = ["monitor.page", "monitor.check.completed"]
    watched = make_monitor(team, webhook={"url": HOOK, "events": events})
    _member(client, team, django_user_model, Membership.Role.EDITOR)

    page = html.unescape(client.get(watched.get_absolute_url()).content.decode())

    assert "Each page's result, Check finished" in page
    for raw in events:
        assert raw not in page


def test_the_activity_log_keeps_a_turned_off_webhooks_address_in_shape_only(
    team, monitor
):
    assert disable_webhook(monitor, HOOK, timezone.now())
    read = _api(team, ApiKey.Scope.READ).get("/v2/activity").json()["data"]

    turned_off = [e for e in read if e["kind"] == "monitor.webhook_disabled"]
    assert turned_off[0]["details"]["url"] == SHOWN
    assert "s3cret" not in json.dumps(read) and "xyzXYZ123" not in json.dumps(read)


def test_masking_an_address_twice_changes_nothing_more():
    assert mask_url(mask_url(HOOK)) == SHOWN


@pytest.mark.django_db(transaction=True)
def test_the_migration_masks_addresses_old_entries_kept_whole():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    def migrate(targets):
        executor = MigrationExecutor(connection)
        executor.migrate(targets)
        return executor.loader.project_state(targets).apps

    old = migrate(
        [("checks", "0024_delivery_done_with"), ("teams", "0003_team_setting_activity")]
    )
    Team = old.get_model("monitors", "Team")
    Activity = old.get_model("teams", "Activity")
    team = Team.objects.create(name="Acme", slug="acme")
    turned_off = Activity.objects.create(
        team=team,
        kind="monitor.webhook_disabled",
        details={"reason": "its receiver answered 410 Gone", "url": HOOK},
    )
    other = Activity.objects.create(
        team=team, kind="monitor.edited", details={"url": HOOK}
    )

    new = migrate([("checks", "0025_mask_old_webhook_addresses")])
    Activity = new.get_model("teams", "Activity")
    assert Activity.objects.get(pk=turned_off.pk).details == {
        "reason": "its receiver answered 410 Gone",
        "url": SHOWN,
    }
    # Only the entries that kept a receiver's address are touched.
    assert Activity.objects.get(pk=other.pk).details == {"url": HOOK}
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
