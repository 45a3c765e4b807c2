"""Roles in a team: owner, editor and viewer, checked on every dashboard view
and action. A refused action answers 403 with a page in plain words and
changes nothing; a team always keeps an owner."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from checks.models import Check, Delivery, DeliveryAttempt
from checks.notify import own
from monitors.models import (
    ApiKey,
    Channel,
    ImportRun,
    LastOwnerError,
    Membership,
    Monitor,
    MonitorChannel,
    Team,
)
from teams.models import Invitation
from tests.moving import backup_zip
from tests.test_dashboard_views import PASSWORD, make_check, make_monitor, scrape_form

OWNER, EDITOR, VIEWER = (Membership.Role.OWNER, Membership.Role.EDITOR,
                         Membership.Role.VIEWER)  # fmt: skip
VIEW, EDIT, MANAGE = (
    Membership.Action.VIEW,
    Membership.Action.EDIT,
    Membership.Action.MANAGE,
)


def text_of(response) -> str:
    return html.unescape(response.content.decode())


@dataclass
class World:
    """One team with one of everything a dashboard action can touch."""

    team: Team
    people: dict[str, Any]
    monitor: Monitor
    check: Check
    key: ApiKey
    delivery: Delivery
    invitation: Invitation
    memberships: dict[str, Membership] = field(default_factory=dict)
    expired: Invitation | None = None


@pytest.fixture
def world(team, django_user_model) -> World:
    people, memberships = {}, {}
    for role, name in ((OWNER, "olive"), (EDITOR, "eddie"), (VIEWER, "vera")):
        user = django_user_model.objects.create_user(
            name, f"{name}@acme.test", PASSWORD
        )
        people[role] = user
        memberships[role] = Membership.objects.create(team=team, user=user, role=role)
    # Someone none of the three is: removing oneself is leaving, which any
    # role may do.
    casey = django_user_model.objects.create_user("casey", "casey@acme.test", PASSWORD)
    memberships["colleague"] = Membership.objects.create(team=team, user=casey)
    monitor = make_monitor(team, webhook={"url": "https://hooks.example.com/x"})
    check = make_check(monitor)
    key, _ = ApiKey.issue(team, name="CI")
    delivery = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        event="monitor.test",
        url="https://hooks.example.com/x",
        status=Delivery.Status.FAILED,
    )
    invitation, _ = Invitation.issue(
        team, "newcomer@acme.test", VIEWER, people[OWNER], timezone.now()
    )
    expired, _ = Invitation.issue(
        team, "latecomer@acme.test", VIEWER, people[OWNER],
        timezone.now() - timedelta(days=8),
    )  # fmt: skip
    return World(
        team, people, monitor, check, key, delivery, invitation, memberships, expired
    )


def state() -> tuple:
    """Everything a dashboard action may change, to compare before and after."""
    return (
        list(Monitor.objects.order_by("pk").values_list(
            "pk", "name", "status", "next_run_at", "deleted_at", "updated_at",
            "feed_token")),
        list(ApiKey.objects.order_by("pk").values_list("pk", "revoked_at", "scope")),
        list(Membership.objects.order_by("pk").values_list("pk", "role")),
        list(Invitation.objects.order_by("pk").values_list(
            "pk", "revoked_at", "accepted_at")),
        list(Team.objects.order_by("pk").values_list(
            "pk", "webhook_secret", "previous_webhook_secret",
            "activity_retention_days", "require_second_factor", "feed_token",
            "feeds_enabled")),
        Check.objects.count(),
        ImportRun.objects.count(),
        list(Delivery.objects.order_by("pk").values_list("pk", "status", "attempts")),
    )  # fmt: skip


def monitor_form(name: str) -> dict[str, Any]:
    return scrape_form(name=name)


# (what, method, url(world), data(world), the action it needs)
ACTIONS: list[tuple[str, str, Any, Any, str]] = [
    ("list monitors", "get", lambda w: reverse("monitor-list"), None, VIEW),
    ("see a monitor", "get", lambda w: w.monitor.get_absolute_url(), None, VIEW),
    ("see a check", "get", lambda w: w.check.get_absolute_url(), None, VIEW),
    ("see the history", "get", lambda w: reverse("team-history"), None, VIEW),
    ("see deliveries", "get",
     lambda w: reverse("monitor-deliveries", args=[w.monitor.pk]), None, VIEW),
    ("see API keys", "get", lambda w: reverse("api-keys"), None, VIEW),
    ("see the team", "get", lambda w: reverse("team-members"), None, VIEW),
    ("see the activity", "get", lambda w: reverse("team-activity"), None, VIEW),
    ("open the new monitor form", "get", lambda w: reverse("monitor-create"), None,
     EDIT),
    ("create a monitor", "post", lambda w: reverse("monitor-create"),
     lambda w: monitor_form("Made by a forged form"), EDIT),
    ("open the edit form", "get",
     lambda w: reverse("monitor-edit", args=[w.monitor.pk]), None, EDIT),
    ("edit a monitor", "post", lambda w: reverse("monitor-edit", args=[w.monitor.pk]),
     lambda w: monitor_form("Renamed"), EDIT),
    ("validate the form", "post", lambda w: reverse("monitor-validate-new"),
     lambda w: monitor_form("x"), EDIT),
    ("pause a monitor", "post",
     lambda w: reverse("monitor-toggle", args=[w.monitor.pk]),
     lambda w: {"status": "paused"}, EDIT),
    ("run a monitor", "post", lambda w: reverse("monitor-run", args=[w.monitor.pk]),
     lambda w: {}, EDIT),
    ("delete a monitor", "post",
     lambda w: reverse("monitor-delete", args=[w.monitor.pk]), lambda w: {}, EDIT),
    ("send a test event", "post",
     lambda w: reverse("monitor-webhook-test", args=[w.monitor.pk]), lambda w: {},
     EDIT),
    ("retry a delivery", "post",
     lambda w: reverse("delivery-retry", args=[w.monitor.pk, w.delivery.pk]),
     lambda w: {}, EDIT),
    ("open the add channel form", "get",
     lambda w: reverse("channel-create") + "?kind=webhook", None, EDIT),
    ("open the import page", "get", lambda w: reverse("import-start"), None, EDIT),
    ("start an import", "post", lambda w: reverse("import-start"),
     lambda w: {"source": "changedetection",
                "file": SimpleUploadedFile("backup.zip", backup_zip())}, EDIT),
    ("export the monitors", "get", lambda w: reverse("export"), None, VIEW),
    ("create an API key", "post", lambda w: reverse("api-keys"),
     lambda w: {"name": "Zapier", "scope": "read"}, MANAGE),
    ("revoke an API key", "post", lambda w: reverse("api-key-revoke", args=[w.key.pk]),
     lambda w: {}, MANAGE),
    ("show the webhook secret", "post", lambda w: reverse("webhook-secret-show"),
     lambda w: {}, MANAGE),
    ("rotate the webhook secret", "post", lambda w: reverse("webhook-secret-rotate"),
     lambda w: {}, MANAGE),
    ("invite someone", "post", lambda w: reverse("team-invite"),
     lambda w: {"email": "sam@acme.test", "role": "editor"}, MANAGE),
    ("withdraw an invitation", "post",
     lambda w: reverse("invitation-revoke", args=[w.invitation.pk]), lambda w: {},
     MANAGE),
    ("invite again after an invitation expired", "post",
     lambda w: reverse("invitation-renew", args=[w.expired.pk]), lambda w: {},
     MANAGE),
    ("remove an expired invitation from the list", "post",
     lambda w: reverse("invitation-revoke", args=[w.expired.pk]), lambda w: {},
     MANAGE),
    ("change a role", "post",
     lambda w: reverse("member-role", args=[w.memberships[EDITOR].pk]),
     lambda w: {"role": "owner"}, MANAGE),
    ("require a second factor", "post", lambda w: reverse("team-second-factor"),
     lambda w: {"required": "on"}, MANAGE),
    ("keep activity longer", "post", lambda w: reverse("team-retention"),
     lambda w: {"activity_retention_days": "730"}, MANAGE),
    ("make a new monitor feed link", "post",
     lambda w: reverse("monitor-feed-renew", args=[w.monitor.pk]), lambda w: {},
     EDIT),
    ("make a new team feed link", "post", lambda w: reverse("team-feed-renew"),
     lambda w: {}, MANAGE),
    ("turn feeds off", "post", lambda w: reverse("team-feeds-switch"),
     lambda w: {"feeds": "off"}, MANAGE),
    ("remove a member", "post",
     lambda w: reverse("member-remove", args=[w.memberships["colleague"].pk]),
     lambda w: {}, MANAGE),
]  # fmt: skip
# Allowed POSTs that change nothing stored (the secret exists already).
CHANGE_NOTHING = {"validate the form", "show the webhook secret"}
ROLE_ALLOWS = {OWNER: {VIEW, EDIT, MANAGE}, EDITOR: {VIEW, EDIT}, VIEWER: {VIEW}}


@pytest.mark.parametrize("role", [OWNER, EDITOR, VIEWER])
@pytest.mark.parametrize(("what", "method", "url", "data", "needs"), ACTIONS,
                         ids=[a[0] for a in ACTIONS])  # fmt: skip
def test_each_role_may_do_what_it_allows_and_nothing_else(
    client, world, role, what, method, url, data, needs
):
    client.force_login(world.people[role])
    before = state()
    call = client.get if method == "get" else client.post
    response = call(url(world), data(world) if data else None)

    if needs in ROLE_ALLOWS[role]:
        assert response.status_code in (200, 302, 400), (what, response.status_code)
        if method == "post" and what not in CHANGE_NOTHING:
            assert state() != before, f"{what} changed nothing"
    else:
        assert response.status_code == 403
        assert state() == before
        page = text_of(response)
        assert "Your role does not allow this" in page
        assert "Nothing was changed." in page
        assert "olive" in page  # the owner to ask


def test_the_refusal_names_the_role_and_what_it_would_take(client, world):
    client.force_login(world.people[VIEWER])
    page = text_of(client.post(reverse("monitor-toggle", args=[world.monitor.pk])))
    assert "You are <strong>a viewer</strong> in Acme." in page
    assert "may create, change, pause, run or delete monitors" in page


def _walk(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry


# Dashboard routes that are not about one team's things.
NOT_TEAM_PAGES = {
    "team-switch",
    "favicon",
    "capture",
    "invitation-accept",
    "monitor-feed",  # public: the token in the address is the credential
    "team-feed",
    "healthz",
    "metrics",
}


def test_every_dashboard_view_asks_for_a_role(db):
    """A new dashboard view cannot forget the role check: every route of the
    dashboard goes through team_view, which says what it needs."""
    unchecked = []
    for route, pattern in _walk(get_resolver().url_patterns):
        if route.startswith(("admin/", "v2/", "accounts/", "email/")):
            continue
        if pattern.name in NOT_TEAM_PAGES:
            continue
        if not hasattr(pattern.callback, "team_action"):
            unchecked.append(route)
    assert unchecked == []


# ---------------------------------------------------------------- what is shown


def test_a_viewer_sees_no_buttons_that_change_things(client, world):
    Channel.objects.create(team=world.team, name="Ops room", kind="webhook",
                           settings={"url": "https://hooks.example.com/x"})  # fmt: skip
    client.force_login(world.people[VIEWER])
    pages = [
        reverse("channels"),
        reverse("monitor-list"),
        world.monitor.get_absolute_url(),
        reverse("monitor-deliveries", args=[world.monitor.pk]),
        reverse("api-keys"),
        reverse("team-members"),
    ]
    for url in pages:
        page = text_of(client.get(url))
        for words in ("New monitor", ">Import<", ">Edit<", "Pause <span",
                      ">Pause</button>", ">Delete<", "Run now",
                      "Retry now", "Create key", "Revoke",
                      "Send invitation", "Withdraw", "Show the secret",
                      "Make a new secret", 'name="role"', "Make a new feed link",
                      "Turn feeds off", "Add a channel", "Send a test message",
                      "Edit<span"):  # fmt: skip
            assert words not in page, (url, words)
    assert world.monitor.name in text_of(client.get(reverse("monitor-list")))


def test_a_viewer_is_offered_no_form_but_signing_out_on_any_page_they_open(
    client, world
):
    Channel.objects.create(team=world.team, name="Ops room", kind="webhook",
                           settings={"url": "https://hooks.example.com/x"})  # fmt: skip
    client.force_login(world.people[VIEWER])
    pages = [
        reverse("monitor-list"), world.monitor.get_absolute_url(),
        reverse("monitor-deliveries", args=[world.monitor.pk]),
        world.check.get_absolute_url(), reverse("channels"), reverse("api-keys"),
        reverse("team-members"), reverse("team-history"), reverse("team-activity"),
    ]  # fmt: skip
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        forms = re.findall(r"<form[^>]*>", response.content.decode())
        posting = [form for form in forms if 'method="post"' in form.lower()]
        assert posting == [f'<form method="post" action="{reverse("logout")}">'], (
            url,
            posting,
        )


def test_an_editor_sees_monitor_buttons_but_not_team_management(client, world):
    client.force_login(world.people[EDITOR])
    detail = text_of(client.get(world.monitor.get_absolute_url()))
    assert (
        ">Edit<" in detail and "Run now" in detail and "Send a test message" in detail
    )
    team_page = text_of(client.get(reverse("team-members")))
    assert "Send invitation" not in team_page and "Show the secret" not in team_page
    assert "Create key" not in text_of(client.get(reverse("api-keys")))


def test_an_owner_sees_everything(client, world):
    client.force_login(world.people[OWNER])
    team_page = text_of(client.get(reverse("team-members")))
    assert "Send invitation" in team_page and "Withdraw" in team_page
    assert "newcomer@acme.test" in team_page  # the pending invitation
    assert "latecomer@acme.test" in team_page and "Invite again" in team_page
    assert "Create key" in text_of(client.get(reverse("api-keys")))


@pytest.mark.parametrize("role", [EDITOR, VIEWER])
def test_someone_who_cannot_revoke_keys_sees_no_empty_actions_column(
    client, world, role
):
    client.force_login(world.people[role])
    page = text_of(client.get(reverse("api-keys")))

    assert world.key.display_prefix in page  # the keys are listed
    assert "Actions" not in page and "Revoke" not in page


def test_an_owner_sees_the_actions_column_only_while_a_key_can_be_revoked(
    client, world
):
    client.force_login(world.people[OWNER])
    page = text_of(client.get(reverse("api-keys")))
    assert "Actions" in page and "Revoke" in page

    world.key.revoke()
    page = text_of(client.get(reverse("api-keys")))
    assert world.key.display_prefix in page
    assert "Actions" not in page


# ---------------------------------------------------------------- hook addresses

# Hook addresses whose path and query are their receivers' credentials, as
# Slack's and Discord's are: the monitor's own webhook and a team channel's.
HOOK = "https://hooks.example.com/services/T0ABC/B0DEF/xyzXYZ123?token=s3cret"
CHANNEL_HOOK = "https://hooks.example.com/api/webhooks/987654/TeamTok3n"
HOOK_SECRETS = ("T0ABC", "B0DEF", "xyzXYZ123", "s3cret", "987654", "TeamTok3n")


@pytest.fixture
def hooked(world) -> Channel:
    """The world's monitor posting to HOOK and to a team channel posting to
    CHANNEL_HOOK, each with deliveries, a failed attempt and the e-mail that
    tells the team a webhook was turned off; the team webhook channel."""
    monitor = world.monitor
    monitor.webhook = {"url": HOOK, "events": ["monitor.page"]}
    monitor.save(update_fields=["webhook"])
    own.sync(monitor)
    channel = Channel.objects.create(
        team=world.team, name="Ops hook", kind="webhook",
        settings={"url": CHANNEL_HOOK},
    )  # fmt: skip
    MonitorChannel.objects.create(monitor=monitor, channel=channel)
    sent = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK, channel=own.webhook_channel(monitor),
        monitor=monitor, check_run=world.check, event="monitor.page", url=HOOK,
        status=Delivery.Status.FAILED, attempts=1, last_error="Answered 500.",
    )  # fmt: skip
    DeliveryAttempt.objects.create(
        delivery=sent, number=1, started_at=timezone.now(), status_code=500,
        error="Answered 500.", response_body="no",
    )  # fmt: skip
    Delivery.objects.create(
        kind="webhook", channel=channel, monitor=monitor, event="monitor.page",
        check_run=world.check, status=Delivery.Status.FAILED, attempts=1,
        last_error="Answered 500.",
    )  # fmt: skip
    Delivery.objects.create(
        kind=Delivery.Kind.EMAIL, monitor=monitor, event="email.webhook_disabled",
        email="olive@acme.test", url=HOOK, status=Delivery.Status.DELIVERED,
    )  # fmt: skip
    return channel


def _pages_read_only(world: World) -> list[str]:
    """Every dashboard page that shows a webhook or its deliveries and where
    nobody can change the address."""
    return [
        reverse("monitor-list"), world.monitor.get_absolute_url(),
        world.check.get_absolute_url(),
        reverse("monitor-deliveries", args=[world.monitor.pk]),
        reverse("channels"), reverse("team-history"), reverse("team-activity"),
        reverse("team-members"),
    ]  # fmt: skip


@pytest.mark.parametrize("role", [OWNER, EDITOR, VIEWER])
def test_no_role_sees_a_hooks_secret_parts_where_it_cannot_be_changed(
    client, world, hooked, role
):
    client.force_login(world.people[role])

    for url in _pages_read_only(world):
        response = client.get(url)
        page = text_of(response)
        assert response.status_code == 200, url
        for secret in HOOK_SECRETS:
            assert secret not in page, (url, secret)
    deliveries = text_of(
        client.get(reverse("monitor-deliveries", args=[world.monitor.pk]))
    )
    assert "https://hooks.example.com/services/••••/••••/••••?token=••••" in (
        deliveries
    )
    # The e-mail saying a webhook was turned off went to a person.
    assert "olive@acme.test" in deliveries


@pytest.mark.parametrize("role", [OWNER, EDITOR])
def test_who_may_change_a_hook_sees_it_whole_in_its_form(client, world, hooked, role):
    client.force_login(world.people[role])

    monitor_form = text_of(client.get(reverse("monitor-edit", args=[world.monitor.pk])))
    channel_form = text_of(client.get(reverse("channel-edit", args=[hooked.pk])))

    assert f'value="{HOOK}"' in monitor_form
    assert f'value="{CHANNEL_HOOK}"' in channel_form


def test_a_viewer_gets_no_form_holding_a_hook(client, world, hooked):
    client.force_login(world.people[VIEWER])

    for url in (
        reverse("monitor-edit", args=[world.monitor.pk]),
        reverse("channel-edit", args=[hooked.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 403
        for secret in HOOK_SECRETS:
            assert secret not in text_of(response)


# ---------------------------------------------------------------- one owner


def test_the_last_owner_cannot_step_down_or_leave(client, world):
    owner = world.memberships[OWNER]
    client.force_login(world.people[OWNER])
    page = text_of(
        client.post(
            reverse("member-role", args=[owner.pk]), {"role": "viewer"}, follow=True
        )  # fmt: skip
    )
    assert "A team always keeps at least one owner" in page
    client.post(reverse("member-remove", args=[owner.pk]))
    owner.refresh_from_db()
    assert owner.role == OWNER
    with pytest.raises(LastOwnerError):
        owner.change_role(EDITOR)


def test_an_owner_may_step_down_once_someone_else_owns_the_team(client, world):
    client.force_login(world.people[OWNER])
    editor, owner = world.memberships[EDITOR], world.memberships[OWNER]
    made = client.post(
        reverse("member-role", args=[editor.pk]), {"role": "owner"}, follow=True
    )
    stepped = client.post(
        reverse("member-role", args=[owner.pk]),
        {"role": "viewer", "confirmed": "yes"},
        follow=True,
    )
    # In the words the activity log uses, not the role's capitalised label.
    assert "eddie is now an owner." in text_of(made)
    assert "You are now a viewer." in text_of(stepped)
    editor.refresh_from_db()
    owner.refresh_from_db()
    assert (editor.role, owner.role) == (OWNER, VIEWER)
    # Now a viewer: the team page no longer offers to manage anyone.
    assert "Send invitation" not in text_of(client.get(reverse("team-members")))


def test_the_admin_keeps_an_owner_too(admin_client, world):
    from monitors.admin.teams import KeepsAnOwner  # noqa: F401  (the formset in use)

    url = reverse("admin:monitors_team_change", args=[world.team.pk])
    form = admin_client.get(url).context["adminform"].form
    data = {"name": world.team.name, "slug": world.team.slug,
            "credit_allowance": ""}  # fmt: skip
    members = list(Membership.objects.filter(team=world.team).order_by("pk"))
    data |= {
        "membership_set-TOTAL_FORMS": str(len(members)),
        "membership_set-INITIAL_FORMS": str(len(members)),
        "membership_set-MIN_NUM_FORMS": "0",
        "membership_set-MAX_NUM_FORMS": "1000",
        "api_keys-TOTAL_FORMS": "1", "api_keys-INITIAL_FORMS": "1",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
        "api_keys-0-id": str(world.key.pk), "api_keys-0-team": str(world.team.pk),
    }  # fmt: skip
    for n, m in enumerate(members):
        data |= {
            f"membership_set-{n}-id": str(m.pk),
            f"membership_set-{n}-team": str(world.team.pk),
            f"membership_set-{n}-user": str(m.user_id),
            f"membership_set-{n}-role": "editor",
        }
    assert form is not None
    response = admin_client.post(url, data)
    assert response.status_code == 200  # the form again, with the error
    assert "A team always keeps at least one owner" in text_of(response)
    assert Membership.objects.get(pk=world.memberships[OWNER].pk).role == OWNER


# ---------------------------------------------------------------- migration


@pytest.mark.django_db(transaction=True)
def test_members_from_before_roles_become_owners():
    executor = MigrationExecutor(connection)
    before = [("monitors", "0009_import_runs")]
    after = [("monitors", "0010_roles_and_key_scopes")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    user = old.get_model("auth", "User").objects.create(username="ana")
    team = old.get_model("monitors", "Team").objects.create(name="Old", slug="old")
    old.get_model("monitors", "Membership").objects.create(
        team=team, user=user, role="member"
    )
    key = old.get_model("monitors", "ApiKey").objects.create(
        team=team, prefix="abc", key_hash="x"
    )

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    assert new.get_model("monitors", "Membership").objects.get().role == "owner"
    assert new.get_model("monitors", "ApiKey").objects.get(pk=key.pk).scope == "write"
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_no_mail_is_sent_by_refused_invitations(client, world):
    client.force_login(world.people[EDITOR])
    client.post(reverse("team-invite"), {"email": "x@acme.test", "role": "owner"})
    client.post(reverse("invitation-renew", args=[world.expired.pk]))
    assert mail.outbox == []


def test_a_viewer_is_told_no_check_has_run_where_others_see_run_now(client, world):
    fresh = make_monitor(world.team)
    client.force_login(world.people[VIEWER])

    page = text_of(client.get(fresh.get_absolute_url()))

    run_card = page.split('id="run-title"', 1)[1].split("</section>", 1)[0]
    assert "No check has run yet." in run_card


def test_a_viewer_finds_the_export_on_the_monitor_list(client, world):
    client.force_login(world.people[VIEWER])

    page = text_of(client.get(reverse("monitor-list")))

    assert f'href="{reverse("export")}"' in page
    assert "Export this team's monitors" in page
    exported = client.get(reverse("export"))
    assert exported.status_code == 200
    assert "https://hooks.example.com" not in exported.content.decode()


def test_a_viewer_is_not_told_to_add_a_channel_they_cannot_add(client, world):
    client.force_login(world.people[VIEWER])

    page = text_of(client.get(reverse("channels")))

    assert "No channels yet." in page
    assert "Add one" not in page
    assert "An editor or an owner adds them." in page
