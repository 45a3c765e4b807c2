"""The activity log: who did what, when and from where — written for actions
from the dashboard, the API, the admin, management commands and Pagewatch
itself; shown on the monitor page, the team's Activity page, the admin and
GET /v2/activity; never edited; kept per the team's setting."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from checks import dispatch, storage
from checks.notify.drain import disable_webhook
from checks.retention import purge_expired
from monitors.models import ApiKey, Membership, Monitor
from teams.activity import SYSTEM, record
from teams.models import Activity
from tests.test_dashboard_views import PASSWORD, make_monitor, scrape_form
from tests.test_second_factor import sign_in, turn_on

pytestmark = pytest.mark.django_db
Kind, Via = Activity.Kind, Activity.Via


def text_of(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)


@pytest.fixture
def ana(team, django_user_model):
    user = django_user_model.objects.create_user("ana", "ana@acme.test", PASSWORD)
    user.first_name = "Ana"
    user.save()
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def web(client, ana):
    client.force_login(ana)
    Activity.objects.all().delete()  # the sign-in's entry; tested on its own
    return client


def entries(**filters) -> list[tuple[str, str, str]]:
    """(kind, via, who) of the entries, oldest first."""
    return [
        (a.kind, a.via, a.actor_words)
        for a in Activity.objects.filter(**filters).order_by("id")
    ]


def test_dashboard_actions_on_a_monitor_are_recorded_with_who_and_what(web, team):
    web.post(reverse("monitor-create"), scrape_form(name="Prices"))
    monitor = Monitor.objects.get()
    edited = scrape_form(name="Prices (EU)", schedule="every hour")
    edited |= {"timezone": monitor.schedule_timezone}
    web.post(reverse("monitor-edit", args=[monitor.pk]), edited)
    web.post(reverse("monitor-toggle", args=[monitor.pk]), {"status": "paused"})
    web.post(reverse("monitor-toggle", args=[monitor.pk]), {"status": "active"})
    web.post(reverse("monitor-run", args=[monitor.pk]))
    page = re.sub(r"<[^>]+>", "", text_of(web.get(monitor.get_absolute_url())))
    web.post(reverse("monitor-delete", args=[monitor.pk]))

    assert entries() == [
        (Kind.MONITOR_CREATED, Via.DASHBOARD, "Ana"),
        (Kind.MONITOR_EDITED, Via.DASHBOARD, "Ana"),
        (Kind.MONITOR_PAUSED, Via.DASHBOARD, "Ana"),
        (Kind.MONITOR_RESUMED, Via.DASHBOARD, "Ana"),
        (Kind.MONITOR_RUN, Via.DASHBOARD, "Ana"),
        (Kind.MONITOR_DELETED, Via.DASHBOARD, "Ana"),
    ]
    edit = Activity.objects.get(kind=Kind.MONITOR_EDITED)
    assert edit.what_words == "Edited name and schedule"
    assert edit.monitor == monitor and edit.monitor_name == "Prices (EU)"
    assert "Paused by Ana, just now" in page
    assert "Run by Ana, just now" in page
    assert "Edited name and schedule by Ana, just now" in page


def test_api_calls_are_recorded_under_the_keys_name(team, scrape_monitor_body):
    key, raw = ApiKey.issue(team, name="CI")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    created = api.post("/v2/monitor", scrape_monitor_body, format="json").json()
    monitor_id = created["data"]["id"]
    api.patch(f"/v2/monitor/{monitor_id}", {"status": "paused"}, format="json")
    api.patch(f"/v2/monitor/{monitor_id}", {"name": "Renamed"}, format="json")
    api.patch(f"/v2/monitor/{monitor_id}", {"status": "active"}, format="json")
    api.post(f"/v2/monitor/{monitor_id}/run", {}, format="json")
    api.delete(f"/v2/monitor/{monitor_id}")

    who = "the API key “CI”"
    assert entries() == [
        (Kind.MONITOR_CREATED, Via.API, who),
        (Kind.MONITOR_PAUSED, Via.API, who),
        (Kind.MONITOR_EDITED, Via.API, who),
        (Kind.MONITOR_RESUMED, Via.API, who),
        (Kind.MONITOR_RUN, Via.API, who),
        (Kind.MONITOR_DELETED, Via.API, who),
    ]
    assert Activity.objects.filter(api_key=key).count() == 6
    assert Activity.objects.get(kind=Kind.MONITOR_EDITED).details == {
        "fields": ["name"]
    }


def test_admin_changes_are_recorded_as_the_administration(admin_client, team):
    monitor = make_monitor(team)
    changelist = reverse("admin:monitors_monitor_changelist")
    admin_client.post(
        changelist, {"action": "pause_selected", "_selected_action": [monitor.pk]}
    )
    admin_client.post(reverse("admin:monitors_apikey_add"),
                      {"team": team.pk, "name": "Ops", "scope": "read"})  # fmt: skip
    assert entries() == [
        (Kind.MONITOR_PAUSED, Via.ADMIN, "admin (administration)"),
        (Kind.KEY_CREATED, Via.ADMIN, "admin (administration)"),
    ]
    assert Activity.objects.first().what_words == "Created the read-only API key “Ops”"


def test_membership_changes_in_the_admin_are_recorded(
    admin_client, team, django_user_model
):
    mia = django_user_model.objects.create_user("mia", "mia@acme.test")
    bob = django_user_model.objects.create_user("bob", "bob@acme.test")
    owner = Membership.objects.create(team=team, user=bob, role="owner")
    url = reverse("admin:monitors_team_change", args=[team.pk])
    # feeds_enabled left unticked: turned off.
    data = {
        "name": team.name, "slug": team.slug, "credit_allowance": "",
        "membership_set-TOTAL_FORMS": "2", "membership_set-INITIAL_FORMS": "1",
        "membership_set-MIN_NUM_FORMS": "0", "membership_set-MAX_NUM_FORMS": "1000",
        "membership_set-0-id": str(owner.pk), "membership_set-0-team": str(team.pk),
        "membership_set-0-user": str(bob.pk), "membership_set-0-role": "owner",
        "membership_set-1-team": str(team.pk), "membership_set-1-user": str(mia.pk),
        "membership_set-1-role": "viewer",
        "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
    }  # fmt: skip
    response = admin_client.post(url, data)
    assert response.status_code == 302, text_of(response)[:2000]
    entry = Activity.objects.get(kind=Kind.MEMBER_JOINED)
    assert entry.via == Via.ADMIN and entry.details["member"] == "mia"
    assert entry.what_words == "Added mia as a viewer"


def test_a_management_command_and_pagewatch_itself_are_named(team):
    call_command("createapikey", "--team", "acme", "--name", "Deploy",
                 stdout=StringIO(), stderr=StringIO())  # fmt: skip
    monitor = make_monitor(team, webhook={"url": "https://hooks.example.com/x"})
    disable_webhook(monitor, "https://hooks.example.com/x", timezone.now())
    assert entries() == [
        (Kind.KEY_CREATED, Via.COMMAND, "a management command"),
        (Kind.WEBHOOK_DISABLED, Via.SYSTEM, "Pagewatch"),
    ]
    assert Activity.objects.first().sentence == (
        "Turned off its webhook: its receiver answered 410 Gone, by Pagewatch itself"
    )


def test_keys_members_roles_and_invitations_are_recorded(web, team, django_user_model):
    web.post(reverse("api-keys"), {"name": "Zapier", "scope": "write"})
    key = ApiKey.objects.get()
    web.post(reverse("api-key-revoke", args=[key.pk]))
    web.post(reverse("team-invite"), {"email": "sam@acme.test", "role": "viewer"})
    web.post(reverse("invitation-revoke", args=[team.invitations.get().pk]))
    mia = django_user_model.objects.create_user("mia", "mia@acme.test")
    membership = Membership.objects.create(team=team, user=mia, role="editor")
    web.post(reverse("member-role", args=[membership.pk]), {"role": "viewer"})
    web.post(reverse("member-remove", args=[membership.pk]))
    web.post(reverse("webhook-secret-rotate"))

    words = [a.what_words for a in Activity.objects.order_by("id")]
    assert words == [
        "Created the read and write API key “Zapier”",
        "Revoked the API key “Zapier”",
        "Invited sam@acme.test as a viewer",
        "Withdrew the invitation for sam@acme.test",
        "Made mia a viewer (was an editor)",
        "Removed mia from the team",
        "Replaced the webhook signing secret",
    ]


def test_sign_ins_and_failed_sign_ins_are_recorded_with_the_address(client, ana, team):
    login = reverse("login")
    client.post(login, {"username": "ana", "password": "wrong"},
                REMOTE_ADDR="203.0.113.9")  # fmt: skip
    client.post(login, {"username": "ana", "password": PASSWORD},
                REMOTE_ADDR="203.0.113.9")  # fmt: skip
    client.post(login, {"username": "nobody", "password": "x"})
    rows = list(Activity.objects.order_by("id"))
    assert [(a.kind, a.user, a.address) for a in rows] == [
        (Kind.SIGN_IN_FAILED, ana, "203.0.113.9"),
        (Kind.SIGNED_IN, ana, "203.0.113.9"),
    ]


# ---------------------------------------------------------------- the page


def test_the_activity_page_filters_by_person_monitor_and_kind(
    web, team, ana, django_user_model
):
    bob = django_user_model.objects.create_user("bob", "bob@acme.test")
    Membership.objects.create(team=team, user=bob, role="editor")
    first, second = make_monitor(team, name="First"), make_monitor(team, name="Second")
    from teams.activity import Actor

    record(Actor("dashboard", user=ana), team, Kind.MONITOR_PAUSED, first)
    record(Actor("dashboard", user=bob), team, Kind.MONITOR_RUN, second)
    record(SYSTEM, team, Kind.MONITOR_RESUMED, first)
    url = reverse("team-activity")

    def shown(**query) -> str:
        return text_of(web.get(url, query))

    everything = shown()
    assert "Paused" in everything and "Run by hand" in everything
    assert "Pagewatch itself" in everything
    by_bob = shown(person=bob.pk)
    assert "Run by hand" in by_bob and "Paused" not in by_bob
    of_first = shown(monitor=first.pk)
    assert "Paused" in of_first and "Run by hand" not in of_first
    runs = shown(kind=Kind.MONITOR_RUN)
    assert "Run by hand" in runs and "Resumed" not in runs
    assert web.get(url, {"monitor": "not-a-uuid"}).status_code == 200


def test_filtering_by_person_includes_what_they_did_through_their_api_keys(
    web, team, ana, django_user_model, scrape_monitor_body
):
    bob = django_user_model.objects.create_user("bob", "bob@acme.test")
    Membership.objects.create(team=team, user=bob, role="editor")
    _, bobs = ApiKey.issue(team, name="bob's CI", created_by=bob)
    _, anas = ApiKey.issue(team, name="ana's laptop", created_by=ana)
    for raw, name in ((bobs, "Made by Bob's key"), (anas, "Made by Ana's key")):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        body = scrape_monitor_body | {"name": name}
        assert api.post("/v2/monitor", body, format="json").status_code == 200

    by_bob = web.get(reverse("team-activity"), {"person": bob.pk})

    entries = list(by_bob.context["entries"])
    assert [(e.kind, e.key_name, e.monitor_name) for e in entries] == [
        (Kind.MONITOR_CREATED, "bob's CI", "Made by Bob's key")
    ]
    assert "the API key “bob's CI”" in text_of(by_bob)
    by_ana = web.get(reverse("team-activity"), {"person": ana.pk})
    named = {e.monitor_name for e in by_ana.context["entries"]}
    assert "Made by Ana's key" in named and "Made by Bob's key" not in named


def test_the_activity_page_pages_back_with_a_cursor(web, team, ana):
    monitor = make_monitor(team)
    for n in range(60):
        record(SYSTEM, team, Kind.MONITOR_EDITED, monitor, fields=[f"field{n}"])
    first = text_of(web.get(reverse("team-activity")))
    assert "Edited field59" in first and "Edited field10" in first
    assert "Edited field9<" not in first
    newest_shown = Activity.objects.order_by("-id")[49]
    assert f"?before={newest_shown.pk}" in first
    older = text_of(web.get(reverse("team-activity"), {"before": newest_shown.pk}))
    assert "Edited field9<" in older and "Edited field0<" in older
    assert "Edited field10<" not in older and "Older entries" not in older


def test_another_teams_monitor_and_entries_stay_hidden(web, team, other_team):
    theirs = make_monitor(other_team, name="Globex plans")
    record(SYSTEM, other_team, Kind.MONITOR_PAUSED, theirs)
    assert web.get(reverse("team-activity"), {"monitor": theirs.pk}).status_code == 404
    assert "Globex plans" not in text_of(web.get(reverse("team-activity")))


def test_entries_are_never_changed(team):
    entry = record(SYSTEM, team, Kind.MONITOR_PAUSED)
    entry.kind = Kind.MONITOR_RESUMED
    with pytest.raises(ValueError, match="never changed"):
        entry.save()


# ---------------------------------------------------------------- retention


def test_entries_are_kept_for_the_teams_days_then_purged(team, other_team):
    now = timezone.now()
    other_team.activity_retention_days = 30
    other_team.save()
    for which in (team, other_team):
        for age in (10, 100, 400):
            entry = record(SYSTEM, which, Kind.MONITOR_PAUSED)
            Activity.objects.filter(pk=entry.pk).update(at=now - timedelta(days=age))

    assert purge_expired(now).activity == 1 + 2
    left = sorted(
        (a.team.slug, (now - a.at).days)
        for a in Activity.objects.select_related("team")
    )
    assert left == [("acme", 10), ("acme", 100), ("globex", 10)]


def test_a_key_created_without_a_name_is_logged_as_having_none(web, team):
    web.post(reverse("api-keys"), {"name": "", "scope": "write"})
    key = ApiKey.objects.get(team=team)
    record(SYSTEM, team, Kind.KEY_REVOKED, name="")
    by_key = Activity.objects.create(
        team=team, kind=Kind.MONITOR_RUN, via=Via.API, key_name=""
    )

    log = text_of(web.get(reverse("team-activity")))

    assert key.name == ""
    assert "Created a read and write API key with no name" in log
    assert "Revoked an API key with no name" in log
    assert "“unnamed”" not in log
    assert by_key.actor_words == "an API key with no name"


def test_an_owner_sets_how_long_activity_is_kept(web, team):
    web.post(reverse("team-retention"), {"activity_retention_days": "30"})
    team.refresh_from_db()
    assert team.activity_retention_days == 30
    response = web.post(reverse("team-retention"), {"activity_retention_days": "0"})
    assert response.status_code == 400
    assert "Enter a number of days from 1 to 3650." in text_of(response)
    assert "Ensure this" not in text_of(response)
    team.refresh_from_db()
    assert team.activity_retention_days == 30


@pytest.mark.parametrize("typed", ["", "4000", "a month"])
def test_activity_days_out_of_range_are_refused_in_plain_words(web, team, typed):
    response = web.post(reverse("team-retention"), {"activity_retention_days": typed})

    assert response.status_code == 400
    assert "Enter a number of days from 1 to 3650." in text_of(response)
    team.refresh_from_db()
    assert team.activity_retention_days == 365


# ---------------------------------------------------------------- the API


def test_the_api_reads_the_log_with_a_read_key(team, other_team):
    monitor = make_monitor(team)
    for _ in range(3):
        record(SYSTEM, team, Kind.MONITOR_RUN, monitor)
    record(SYSTEM, team, Kind.KEY_CREATED, name="x")
    record(SYSTEM, other_team, Kind.MONITOR_RUN)
    _, raw = ApiKey.issue(team, name="reader", scope=ApiKey.Scope.READ)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    body = api.get("/v2/activity", {"limit": 2}).json()
    assert body["success"] is True and len(body["data"]) == 2
    newest = body["data"][0]
    assert newest["kind"] == "key.created"
    assert newest["actor"] == {"type": "system", "name": "Pagewatch"}
    rest = api.get("/v2/activity", {"before": body["nextBefore"]}).json()
    assert len(rest["data"]) == 2 and rest["nextBefore"] is None
    runs = api.get("/v2/activity", {"monitorId": str(monitor.pk)}).json()["data"]
    assert [e["kind"] for e in runs] == ["monitor.run"] * 3
    assert runs[0]["summary"] == "Run, by Pagewatch itself"
    bad = api.get("/v2/activity", {"kind": "nonsense"})
    assert bad.status_code == 400 and bad.json()["code"] == "BAD_REQUEST"
    assert api.get("/v2/activity", {"monitorId": "x"}).status_code == 400
    assert api.post("/v2/activity", {}, format="json").status_code == 403


def test_the_api_says_an_entry_made_by_a_management_command_was_one(team, ana):
    from teams.activity import Actor

    record(Actor.command(), team, Kind.KEY_CREATED, name="x")
    record(Actor.command(ana), team, Kind.KEY_CREATED, name="y")
    _, raw = ApiKey.issue(team, name="reader", scope=ApiKey.Scope.READ)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    by_ana, by_command = api.get("/v2/activity").json()["data"]
    assert by_command["via"] == "command"
    assert by_command["actor"] == {"type": "system", "name": "a management command"}
    assert by_command["summary"] == (
        "Created the read and write API key “x” by a management command"
    )
    # A command run for a person (bootstrap's admin) names them.
    assert by_ana["actor"] == {"type": "user", "name": "Ana"}


def test_the_openapi_document_describes_the_activity_log(client):
    operation = client.get("/v2/openapi.json").json()["paths"]["/v2/activity"]["get"]
    assert operation["operationId"] == "listActivity"
    names = {p["name"] for p in operation["parameters"]}
    assert {"limit", "before", "monitorId", "kind"} <= names


def test_the_first_start_records_its_admin_and_key_as_a_command(db):
    call_command("bootstrap", stdout=StringIO())

    assert entries() == [
        (Kind.MEMBER_JOINED, Via.COMMAND, "a management command"),
        (Kind.KEY_CREATED, Via.COMMAND, "a management command"),
    ]


def test_channels_added_changed_and_deleted_are_recorded(web, team):
    key, raw = ApiKey.issue(team, name="CI")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    body = {"name": "Ops", "kind": "webhook", "settings": {"url": "https://ex.com/h"}}
    channel_id = api.post("/v2/channels", body, format="json").json()["data"]["id"]
    api.patch(f"/v2/channels/{channel_id}", {"name": "Ops room"}, format="json")
    web.post(reverse("channel-delete", args=[channel_id]))

    assert entries() == [
        (Kind.CHANNEL_CREATED, Via.API, "the API key “CI”"),
        (Kind.CHANNEL_EDITED, Via.API, "the API key “CI”"),
        (Kind.CHANNEL_DELETED, Via.DASHBOARD, "Ana"),
    ]
    assert Activity.objects.order_by("id").last().what_words == (
        "Deleted the channel “Ops room”"
    )


def test_changing_which_channels_a_monitor_sends_to_is_recorded(web, team):
    from monitors.models import Channel

    ops = Channel.objects.create(
        team=team, name="Ops room", kind="webhook", settings={"url": "https://e/h"}
    )
    web.post(reverse("monitor-create"), scrape_form(name="Prices"))
    monitor = Monitor.objects.get()
    edited = scrape_form(name="Prices", channels=[str(ops.pk)])
    web.post(reverse("monitor-edit", args=[monitor.pk]), edited)

    assert list(monitor.channels.all()) == [ops]
    assert entries() == [
        (Kind.MONITOR_CREATED, Via.DASHBOARD, "Ana"),
        (Kind.MONITOR_EDITED, Via.DASHBOARD, "Ana"),
    ]
    assert Activity.objects.get(kind=Kind.MONITOR_EDITED).what_words == (
        "Edited channels"
    )


# ---------------------------------------------------------------- team settings


def words(**filters) -> list[str]:
    """what_words of the entries, oldest first."""
    return [a.what_words for a in Activity.objects.filter(**filters).order_by("id")]


def test_team_settings_changed_on_the_team_page_are_recorded_in_words(web, team):
    monitor = make_monitor(team)
    web.post(reverse("team-feeds-switch"), {"feeds": "off"})
    web.post(reverse("team-feeds-switch"), {"feeds": "off"})  # a double click
    web.post(reverse("team-feeds-switch"), {"feeds": "on"})
    web.post(reverse("team-feed-renew"))
    web.post(reverse("monitor-feed-renew", args=[monitor.pk]))
    web.post(reverse("team-retention"), {"activity_retention_days": "30"})
    web.post(reverse("team-retention"), {"activity_retention_days": "30"})
    web.post(reverse("team-second-factor"), {"required": "on"})

    assert entries() == [
        (Kind.TEAM_EDITED, Via.DASHBOARD, "Ana"),
        (Kind.TEAM_EDITED, Via.DASHBOARD, "Ana"),
        (Kind.FEED_RENEWED, Via.DASHBOARD, "Ana"),
        (Kind.FEED_RENEWED, Via.DASHBOARD, "Ana"),
        (Kind.TEAM_EDITED, Via.DASHBOARD, "Ana"),
        (Kind.TEAM_EDITED, Via.DASHBOARD, "Ana"),
    ]
    assert words() == [
        "Turned the team's feeds off: every feed link stopped working",
        "Turned the team's feeds on",
        "Replaced the team's feed link",
        "Replaced its feed link",
        "Kept the activity log for 30 days (was 365)",
        "Required a second factor of everyone who signs in with a password",
    ]
    assert Activity.objects.get(kind=Kind.FEED_RENEWED, monitor=monitor)
    team.refresh_from_db()
    assert team.require_second_factor and team.activity_retention_days == 30


def test_a_second_factor_made_each_persons_choice_again_is_recorded(client, ana, team):
    sign_in(client)
    turn_on(client)
    client.post(reverse("team-second-factor"), {"required": "on"})

    client.post(reverse("team-second-factor"), {})

    team.refresh_from_db()
    assert not team.require_second_factor
    assert words(kind=Kind.TEAM_EDITED) == [
        "Required a second factor of everyone who signs in with a password",
        "Made a second factor each person's choice",
    ]


def test_the_activity_page_says_team_settings_changed_and_filters_them(web, team):
    web.post(reverse("team-feeds-switch"), {"feeds": "off"})
    web.post(reverse("team-feed-renew"))

    page = text_of(web.get(reverse("team-activity"), {"kind": Kind.TEAM_EDITED}))

    assert "Turned the team's feeds off" in page
    assert "Replaced the team's feed link" not in page
    assert ">Team setting changed<" in page and ">Feed link replaced<" in page


def test_team_edits_in_the_admin_are_recorded_as_the_team_pages_are(admin_client, team):
    url = reverse("admin:monitors_team_change", args=[team.pk])
    # feeds_enabled left unticked: turned off.
    data = {
        "name": "Acme Europe", "slug": team.slug, "credit_allowance": "5000",
        "membership_set-TOTAL_FORMS": "0", "membership_set-INITIAL_FORMS": "0",
        "membership_set-MIN_NUM_FORMS": "0", "membership_set-MAX_NUM_FORMS": "1000",
        "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
    }  # fmt: skip
    response = admin_client.post(url, data)
    assert response.status_code == 302, text_of(response)[:2000]
    admin_client.post(url, data | {"credit_allowance": "", "feeds_enabled": "on"})

    admin = "admin (administration)"
    assert entries() == [(Kind.TEAM_EDITED, Via.ADMIN, admin)] * 5
    assert words() == [
        "Renamed the team “Acme Europe” (was “Acme”)",
        "Set the team's credits to 5,000 a month (was unlimited)",
        "Turned the team's feeds off: every feed link stopped working",
        "Made the team's credits unlimited (was 5,000 a month)",
        "Turned the team's feeds on",
    ]


def test_a_slug_changed_in_the_admin_is_recorded_with_the_old_one(admin_client, team):
    url = reverse("admin:monitors_team_change", args=[team.pk])
    data = {
        "name": team.name, "slug": "acme-europe", "feeds_enabled": "on",
        "membership_set-TOTAL_FORMS": "0", "membership_set-INITIAL_FORMS": "0",
        "membership_set-MIN_NUM_FORMS": "0", "membership_set-MAX_NUM_FORMS": "1000",
        "api_keys-TOTAL_FORMS": "0", "api_keys-INITIAL_FORMS": "0",
        "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
    }  # fmt: skip

    response = admin_client.post(url, data)

    assert response.status_code == 302, text_of(response)[:2000]
    team.refresh_from_db()
    assert team.slug == "acme-europe"
    assert entries() == [(Kind.TEAM_EDITED, Via.ADMIN, "admin (administration)")]
    assert Activity.objects.get().details == {
        "setting": "slug",
        "value": "acme-europe",
        "was": "acme",
    }
    assert words() == ["Changed the team's slug to “acme-europe” (was “acme”)"]


def test_the_api_names_whoever_followed_an_e_mail_link_by_its_address(team, ana):
    from django.test import RequestFactory

    from teams.activity import Actor

    monitor = make_monitor(team)
    request = RequestFactory().post("/", REMOTE_ADDR="203.0.113.9")
    record(
        Actor.email_link(request, "olive@example.com"),
        team,
        Kind.EMAIL_UNSUBSCRIBED,
        monitor,
        email="olive@example.com",
    )
    record(
        Actor.email_link(request, "ana@acme.test", user=ana),
        team,
        Kind.CHANNEL_LEFT,
        channel=1,
        name="Ops",
        email="ana@acme.test",
        nobody_left=True,
    )
    # A write key: a read key gets no one's address (tests/test_key_roles.py).
    _, raw = ApiKey.issue(team, name="server's")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    left, unsubscribed = api.get("/v2/activity").json()["data"]
    assert left["kind"] == "channel.left" and left["via"] == "email"
    assert left["actor"] == {"type": "email", "name": "ana@acme.test"}
    assert left["summary"] == (
        "ana@acme.test stopped the e-mails of channel “Ops”: nobody gets them now, "
        "with the link in an e-mail"
    )
    assert left["details"]["nobody_left"] is True
    assert unsubscribed["kind"] == "monitor.email_unsubscribed"
    assert unsubscribed["actor"] == {"type": "email", "name": "olive@example.com"}
    assert unsubscribed["monitorId"] == str(monitor.pk)
    assert unsubscribed["address"] == "203.0.113.9"
    assert unsubscribed["summary"] == (
        f"olive@example.com unsubscribed from the e-mails of monitor “{monitor.name}”, "
        "with the link in an e-mail"
    )
    kinds = api.get("/v2/activity", {"kind": "channel.left"}).json()["data"]
    assert [e["kind"] for e in kinds] == ["channel.left"]


@pytest.mark.parametrize("role", [Membership.Role.VIEWER, Membership.Role.EDITOR])
def test_only_owners_see_the_addresses_others_signed_in_and_acted_from(
    client, ana, team, django_user_model, role
):
    """Where someone signs in from is personal data and a lead for whoever
    wants their account: an owner, who manages the members, sees it; another
    member sees the log without it, except on their own entries."""
    vic = django_user_model.objects.create_user("vic", "vic@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=vic, role=role)
    login = reverse("login")
    client.post(login, {"username": "ana", "password": "wrong"},
                REMOTE_ADDR="203.0.113.9")  # fmt: skip
    client.post(login, {"username": "ana", "password": PASSWORD},
                REMOTE_ADDR="203.0.113.9")  # fmt: skip
    client.post(reverse("logout"))
    client.post(login, {"username": "vic", "password": PASSWORD},
                REMOTE_ADDR="198.51.100.7")  # fmt: skip

    as_member = text_of(client.get(reverse("team-activity")))
    client.force_login(ana)
    as_owner = text_of(client.get(reverse("team-activity")))

    assert as_member.count("Signed in") >= 2 and "Failed sign-in" in as_member
    assert "203.0.113.9" not in as_member
    assert "198.51.100.7" in as_member  # their own
    assert "203.0.113.9" in as_owner and "198.51.100.7" in as_owner


@pytest.mark.parametrize("via", ["dashboard", "api"])
def test_deleting_a_monitor_marks_its_teams_storage_figure_stale_and_keeps_it(
    via, web, api, team, django_capture_on_commit_callbacks
):
    monitor = make_monitor(team)
    measured = storage.measure_team(team.pk, timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        if via == "dashboard":
            web.post(reverse("monitor-delete", args=[monitor.pk]))
        else:
            api.delete(f"/v2/monitor/{monitor.pk}")

    monitor.refresh_from_db()
    assert monitor.deleted_at is not None
    kept = storage.measured_usage([team.pk])[team.pk]
    assert kept.total == measured.total
    assert kept.stale and kept.measured_at == measured.measured_at
