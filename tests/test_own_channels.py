"""A monitor's own Firecrawl `webhook` and `notification.email` are channels
underneath (checks.notify.own): rows with `owner_monitor`, kinds in the
registry, every delivery sent through its channel's kind. The wire format
stays Firecrawl's; the data migration turns older monitors' settings and
deliveries into such channels without loss."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from checks.models import Delivery
from checks.notify import kinds
from monitors.models import Channel, Monitor
from tests.notifying import judged, make_monitor, run_queued, webhook_config

pytest_plugins = ["tests.notifying"]

MEMBER = "olive@acme.test"
WEBHOOK = {
    "url": "https://hooks.example.com/in",
    "headers": {"Authorization": "Bearer t"},
    "metadata": {"env": "prod"},
    "events": ["monitor.check.completed"],
}
EMAIL = {"enabled": True, "recipients": ["ops@example.com"], "includeDiffs": False}


def data(response) -> Any:
    assert response.status_code == 200, response.content
    return response.json()["data"]


def own(monitor_id: Any) -> dict[str, Channel]:
    rows = Channel.objects.filter(owner_monitor_id=monitor_id)
    return {channel.kind: channel for channel in rows}


@pytest.mark.django_db
def test_the_api_stores_webhook_and_email_as_own_channels_and_reads_them_unchanged(
    api, scrape_monitor_body
):
    body = scrape_monitor_body | {"webhook": WEBHOOK, "notification": {"email": EMAIL}}
    created = data(api.post("/v2/monitor", body, format="json"))

    channels = own(created["id"])
    assert channels["firecrawl_webhook"].settings == WEBHOOK | {"pages": "all"}
    assert channels["email"].settings == EMAIL
    assert data(api.get(f"/v2/monitor/{created['id']}"))["webhook"] == WEBHOOK
    # Not team channels: neither listed nor among the monitor's `channels`.
    assert created["channels"] == [] and data(api.get("/v2/channels")) == []


@pytest.mark.django_db
def test_removing_the_webhook_empties_its_channel_and_keeps_it_for_history(
    api, scrape_monitor_body
):
    body = scrape_monitor_body | {"webhook": WEBHOOK}
    created = data(api.post("/v2/monitor", body, format="json"))
    url = f"/v2/monitor/{created['id']}"

    assert data(api.patch(url, {"webhook": None}, format="json"))["webhook"] is None
    assert own(created["id"])["firecrawl_webhook"].settings == {}
    hook = "https://hooks.example.com/new"
    assert (
        data(api.patch(url, {"webhook": hook}, format="json"))["webhook"]["url"] == hook
    )
    assert own(created["id"])["firecrawl_webhook"].settings["url"] == hook
    assert Channel.objects.filter(owner_monitor_id=created["id"]).count() == 1


@pytest.mark.django_db
def test_the_own_kinds_are_in_the_registry_but_not_offered_as_team_channels(api):
    assert kinds.kind_for("firecrawl_webhook") and kinds.kind_for("email")
    offered = {kind.name for kind in kinds.all_kinds()}
    assert "email" not in offered and "firecrawl_webhook" not in offered

    answer = api.post(
        "/v2/channels",
        {"name": "Mine", "kind": "email", "settings": {}},
        format="json",
    )
    assert answer.status_code == 400
    assert not Channel.objects.exists()


@pytest.mark.django_db
def test_every_delivery_of_a_check_goes_to_a_channel_of_its_own_kind(
    team, django_user_model, receiver, scenario, queued, mailoutbox
):
    user = django_user_model.objects.create_user("olive", MEMBER, "pw-123456789")
    team.members.add(user)
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url), email={"enabled": True}
    )
    scenario.run(monitor, [("https://e.com/a", "changed", {"judgment": judged(True)})])
    run_queued(queued)

    rows = list(Delivery.objects.select_related("channel"))
    assert {row.kind for row in rows} == {"firecrawl_webhook", "email"}
    assert all(row.channel.owner_monitor_id == monitor.pk for row in rows)
    assert all(row.kind == row.channel.kind for row in rows)
    assert all(row.status == "delivered" for row in rows)
    assert len(receiver.requests) == 2 and [m.to for m in mailoutbox] == [[MEMBER]]


@pytest.mark.django_db
def test_a_webhook_written_to_the_monitor_directly_is_followed_by_its_channel(
    team, receiver, scenario, queued
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Monitor.objects.filter(pk=monitor.pk).update(
        webhook=webhook_config(receiver.url, metadata={"v": "2"})
    )
    monitor.refresh_from_db()
    scenario.finish(scenario.start(monitor))
    run_queued(queued)

    assert own(monitor.pk)["firecrawl_webhook"].settings["metadata"] == {"v": "2"}
    assert receiver.payloads()[0]["metadata"] == {"v": "2"}


def test_the_admin_sees_the_webhook_headers_masked():
    kind = kinds.kind_for("firecrawl_webhook")
    shown = kind.masked(WEBHOOK | {"headers": {"Authorization": "Bearer s3cret-token"}})
    assert "s3cret" not in str(shown) and shown["url"] == WEBHOOK["url"]


@pytest.mark.django_db
def test_only_changed_pages_reach_the_webhook_when_the_monitor_asks(
    team, receiver, scenario, queued
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Monitor.objects.filter(pk=monitor.pk).update(webhook_pages="changed")
    monitor.refresh_from_db()
    scenario.run(monitor, [("https://e.com/a", "same"), ("https://e.com/b", "new")])
    run_queued(queued)

    pages = [p for p in receiver.payloads() if p["type"] == "monitor.page"]
    assert [p["data"][0]["url"] for p in pages] == ["https://e.com/b"]
    assert own(monitor.pk)["firecrawl_webhook"].settings["pages"] == "changed"


# ---------------------------------------------------------------- migration

BEFORE = [("checks", "0020_delivery_to_channels"),
          ("monitors", "0013_own_channel_per_kind")]  # fmt: skip
AFTER = [("checks", "0021_own_webhook_and_email_channels")]


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def old_world(apps: Any) -> dict[str, Any]:
    """Monitors, recipients and deliveries as they were before own channels."""
    Team = apps.get_model("monitors", "Team")
    Monitor = apps.get_model("monitors", "Monitor")
    Recipient = apps.get_model("monitors", "EmailRecipient")
    Channel = apps.get_model("monitors", "Channel")
    Delivery = apps.get_model("checks", "Delivery")
    Attempt = apps.get_model("checks", "DeliveryAttempt")
    team = Team.objects.create(name="Old", slug="old")

    def monitor(name: str, **fields: Any) -> Any:
        return Monitor.objects.create(
            team=team, name=name, schedule_cron="*/30 * * * *", **fields
        )

    both = monitor("Both", webhook=WEBHOOK, notification={"email": EMAIL},
                   webhook_pages="changed")  # fmt: skip
    gone = monitor("Webhook removed since", webhook=None)
    quiet = monitor("Nothing set", notification={})
    states = {}
    for email, status in (("ops@example.com", "confirmed"),
                          ("new@example.com", "pending"),
                          ("left@example.com", "unsubscribed")):  # fmt: skip
        states[email] = Recipient.objects.create(
            monitor=both, email=email, status=status, source="opt_in"
        )
    hook = Delivery.objects.create(
        kind="webhook", monitor=both, event="monitor.check.completed",
        url=WEBHOOK["url"], body='{"a": 1}', status="delivered", attempts=1,
    )  # fmt: skip
    Attempt.objects.create(delivery=hook, number=1, started_at=hook.created_at,
                           success=True, status_code=200)  # fmt: skip
    mail = Delivery.objects.create(
        kind="email", monitor=both, event="email.confirmation",
        email="new@example.com", recipient=states["new@example.com"],
    )  # fmt: skip
    old_hook = Delivery.objects.create(
        kind="webhook", monitor=gone, event="monitor.test",
        url="https://old.example.com/h", status="failed",
    )  # fmt: skip
    theirs = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": "https://o.ex/h"}
    )
    team_row = Delivery.objects.create(
        kind="webhook", channel=theirs, monitor=both, event="channel.change"
    )
    return {"both": both.pk, "gone": gone.pk, "quiet": quiet.pk, "hook": hook.pk,
            "mail": mail.pk, "old_hook": old_hook.pk, "team_row": team_row.pk,
            "theirs": theirs.pk}  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_own_channels_of_old_webhooks_and_emails_without_loss():
    ids = old_world(migrate(BEFORE))

    new = migrate(AFTER)
    Channel = new.get_model("monitors", "Channel")
    Delivery = new.get_model("checks", "Delivery")
    Recipient = new.get_model("monitors", "EmailRecipient")
    mine = {c.kind: c for c in Channel.objects.filter(owner_monitor_id=ids["both"])}
    assert mine["firecrawl_webhook"].settings == WEBHOOK | {"pages": "changed"}
    assert mine["email"].settings == EMAIL
    assert mine["firecrawl_webhook"].team_id == mine["email"].team_id
    hook = Delivery.objects.get(pk=ids["hook"])
    assert (hook.kind, hook.channel_id) == (
        "firecrawl_webhook",
        mine["firecrawl_webhook"].pk,
    )
    assert (hook.status, hook.attempts, hook.body) == ("delivered", 1, '{"a": 1}')
    assert hook.attempt_log.get().status_code == 200
    mail = Delivery.objects.get(pk=ids["mail"])
    assert (mail.kind, mail.channel_id) == ("email", mine["email"].pk)
    assert mail.recipient.email == "new@example.com"
    states = dict(Recipient.objects.values_list("email", "status"))
    assert states == {"ops@example.com": "confirmed", "new@example.com": "pending",
                      "left@example.com": "unsubscribed"}  # fmt: skip
    # A webhook removed since keeps its deliveries, on an empty channel.
    old = Delivery.objects.get(pk=ids["old_hook"])
    assert old.kind == "firecrawl_webhook" and old.channel.settings == {}
    assert old.channel.owner_monitor_id == ids["gone"]
    assert not Channel.objects.filter(owner_monitor_id=ids["quiet"]).exists()
    # A team channel's rows are left as they were.
    team_row = Delivery.objects.get(pk=ids["team_row"])
    assert (team_row.kind, team_row.channel_id) == ("webhook", ids["theirs"])

    old_apps = migrate(BEFORE)
    Delivery = old_apps.get_model("checks", "Delivery")
    back = Delivery.objects.get(pk=ids["hook"])
    assert (back.kind, back.channel_id) == ("webhook", None)
    assert (
        not old_apps.get_model("monitors", "Channel")
        .objects.filter(owner_monitor__isnull=False)
        .exists()
    )
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
