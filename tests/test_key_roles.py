"""An API key acts as the person who made it does now: their current role in
the team, never more than the key's scope allows (a read key reads as a
viewer does). Someone made an editor or a viewer keeps the keys they made,
so what a key may read and do is decided at each request, not when it was
made. A key no person made (`manage.py createapikey`) acts by its scope."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from checks import dispatch
from monitors.models import ApiKey, Membership
from teams.activity import Actor, Via, record
from teams.models import Activity
from tests.test_dashboard_views import PASSWORD, make_monitor

pytestmark = pytest.mark.django_db
OWNER, EDITOR, VIEWER = (Membership.Role.OWNER, Membership.Role.EDITOR,
                         Membership.Role.VIEWER)  # fmt: skip
ANAS, VICS = "203.0.113.9", "198.51.100.7"


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def ana(team, django_user_model):
    user = django_user_model.objects.create_user("ana", "ana@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=user, role=OWNER)
    return user


@pytest.fixture
def vic(team, django_user_model):
    user = django_user_model.objects.create_user("vic", "vic@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=user, role=OWNER)
    return user


@pytest.fixture
def signed_in(team, ana, vic):
    """Ana and Vic each signed in once, from their own address."""
    record(Actor(Via.DASHBOARD, user=ana, address=ANAS), team, Activity.Kind.SIGNED_IN)
    record(Actor(Via.DASHBOARD, user=vic, address=VICS), team, Activity.Kind.SIGNED_IN)


def addresses(raw: str) -> dict[str, str | None]:
    """Each sign-in's address as GET /v2/activity gives it, by who signed in."""
    response = client_for(raw).get("/v2/activity", {"kind": "signin.succeeded"})
    assert response.status_code == 200, response.content
    entries = response.json()["data"]
    assert all("address" in entry for entry in entries)
    return {entry["actor"]["name"]: entry["address"] for entry in entries}


def set_role(user, team, role: str) -> None:
    Membership.objects.filter(team=team, user=user).update(role=role)


# ---------------------------------------------------------------- addresses


def test_an_owners_key_reads_everyones_address(team, ana, signed_in):
    _, raw = ApiKey.issue(team, name="ana's", created_by=ana)

    assert addresses(raw) == {"ana": ANAS, "vic": VICS}


@pytest.mark.parametrize("role", [EDITOR, VIEWER])
def test_another_members_key_reads_only_their_own_address(team, vic, signed_in, role):
    set_role(vic, team, role)
    scope = ApiKey.Scope.WRITE if role == EDITOR else ApiKey.Scope.READ
    _, raw = ApiKey.issue(team, name="vic's", created_by=vic, scope=scope)

    assert addresses(raw) == {"ana": None, "vic": VICS}


def test_an_owner_made_an_editor_keeps_their_key_but_not_the_others_addresses(
    client, team, ana, vic, signed_in
):
    _, raw = ApiKey.issue(team, name="vic's CI", created_by=vic)
    assert addresses(raw) == {"ana": ANAS, "vic": VICS}
    client.force_login(ana)

    membership = Membership.objects.get(team=team, user=vic)
    client.post(reverse("member-role", args=[membership.pk]),
                {"role": "editor", "confirmed": "yes"})  # fmt: skip

    assert Membership.objects.get(pk=membership.pk).role == EDITOR
    assert ApiKey.objects.get(name="vic's CI").is_active  # editors keep write keys
    assert addresses(raw) == {"ana": None, "vic": VICS}


def test_an_owner_made_a_viewer_keeps_their_read_key_but_not_the_others_addresses(
    client, team, ana, vic, signed_in
):
    _, raw = ApiKey.issue(team, name="vic's reports", created_by=vic,
                          scope=ApiKey.Scope.READ)  # fmt: skip
    client.force_login(ana)

    membership = Membership.objects.get(team=team, user=vic)
    client.post(reverse("member-role", args=[membership.pk]),
                {"role": "viewer", "confirmed": "yes"})  # fmt: skip

    assert Membership.objects.get(pk=membership.pk).role == VIEWER
    assert addresses(raw) == {"ana": None, "vic": VICS}


def test_an_owners_read_key_reads_as_a_viewer_does(team, ana, signed_in):
    """A read key is for reading what any member may read (dashboards,
    reports): as it shows no webhook's secret parts, it shows no one else's
    address."""
    _, raw = ApiKey.issue(team, name="ana's reports", created_by=ana,
                          scope=ApiKey.Scope.READ)  # fmt: skip

    assert addresses(raw) == {"ana": ANAS, "vic": None}


def test_a_key_no_person_made_reads_addresses_by_its_scope(team, signed_in):
    _, writes = ApiKey.issue(team, name="server's")
    _, reads = ApiKey.issue(team, name="server's reports", scope=ApiKey.Scope.READ)

    assert addresses(writes) == {"ana": ANAS, "vic": VICS}
    assert addresses(reads) == {"ana": None, "vic": None}


def test_the_openapi_document_says_who_gets_an_entrys_address(client):
    schema = client.get("/v2/openapi.json").json()["components"]["schemas"]
    address = schema["ActivityEntry"]["properties"]["address"]

    assert address["nullable"] is True
    assert "owner" in address["description"]
    assert "address" in schema["ActivityEntry"]["required"]


# ---------------------------------------------------------------- writing


def test_a_write_key_whose_maker_is_now_a_viewer_changes_nothing(
    team, vic, scrape_monitor_body
):
    """Making someone a viewer on the Team page, in the admin or through
    single sign-on revokes their write keys; a role changed any other way
    (the database, a script) must not leave one writing."""
    monitor = make_monitor(team)
    _, raw = ApiKey.issue(team, name="vic's CI", created_by=vic)
    set_role(vic, team, VIEWER)
    api = client_for(raw)

    created = api.post("/v2/monitor", scrape_monitor_body, format="json")
    paused = api.patch(f"/v2/monitor/{monitor.pk}", {"status": "paused"},
                       format="json")  # fmt: skip
    hook = {"name": "Ops", "kind": "webhook", "settings": {"url": "https://ex.com/h"}}
    channel = api.post("/v2/channels", hook, format="json")

    for response in (created, paused, channel):
        assert response.status_code == 403
        assert "viewer" in response.json()["error"]
    monitor.refresh_from_db()
    assert monitor.status != "paused"
    assert team.monitors.count() == 1 and not team.channels.exists()


def test_a_write_key_whose_maker_is_now_a_viewer_reads_hooks_as_a_viewer(team, vic):
    monitor = make_monitor(team)
    monitor.webhook = {"url": "https://hooks.example.com/services/T0/B0/s3cr3tToken"}
    monitor.save()
    _, raw = ApiKey.issue(team, name="vic's CI", created_by=vic)
    set_role(vic, team, VIEWER)
    api = client_for(raw)

    shown = api.get(f"/v2/monitor/{monitor.pk}").json()["data"]["webhook"]["url"]
    exported = api.get("/v2/export").json()

    assert "s3cr3tToken" not in shown
    assert "s3cr3tToken" not in str(exported)


def test_a_key_whose_maker_is_no_longer_in_the_team_is_refused(team, vic):
    """Leaving revokes a person's keys; a membership ended any other way
    must not leave them reading the team."""
    _, raw = ApiKey.issue(team, name="vic's", created_by=vic)
    Membership.objects.filter(team=team, user=vic).delete()

    assert client_for(raw).get("/v2/monitor").status_code == 401


CHANNEL_HOOK = "https://hooks.example.com/api/webhooks/987654/TeamTok3n"


@pytest.mark.parametrize("role", [EDITOR, VIEWER])
def test_a_webhook_channels_address_is_whole_only_for_a_key_that_may_change_it(
    team, vic, role
):
    """As a monitor's webhook, and as the dashboard shows a channel to a
    viewer: the host and the plain words of the path, not its tokens."""
    from monitors.models import Channel

    channel = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": CHANNEL_HOOK}
    )
    _, writes = ApiKey.issue(team, name="vic's CI", created_by=vic)
    _, reads = ApiKey.issue(team, name="vic's reports", created_by=vic,
                            scope=ApiKey.Scope.READ)  # fmt: skip
    set_role(vic, team, role)

    def urls(raw: str) -> list[str]:
        api = client_for(raw)
        listed = api.get("/v2/channels").json()["data"]
        one = api.get(f"/v2/channels/{channel.pk}").json()["data"]
        return [entry["settings"]["url"] for entry in [*listed, one]]

    for url in urls(reads) + ([] if role == EDITOR else urls(writes)):
        assert url.startswith("https://hooks.example.com/")
        assert "987654" not in url and "TeamTok3n" not in url
    if role == EDITOR:
        assert urls(writes) == [CHANNEL_HOOK, CHANNEL_HOOK]


def test_an_imports_report_gives_webhooks_in_shape_only_to_a_read_key(
    api, team, other_team, other_api, scrape_monitor_body
):
    """The report lists each monitor as created, its webhook included: read
    as GET /v2/monitor gives it (the dashboard shows imports only to who may
    edit)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    hook = {"url": "https://hooks.example.com/services/T0/B0/s3cr3tToken"}
    created = api.post("/v2/monitor", scrape_monitor_body | {"webhook": hook},
                       format="json")  # fmt: skip
    assert created.status_code == 200, created.content
    document = api.get("/v2/export").content
    assert b"s3cr3tToken" in document
    upload = SimpleUploadedFile("export.json", document)
    imported = other_api.post("/v2/import", {"source": "pagewatch", "file": upload,
                              "dryRun": False}, format="multipart")  # fmt: skip
    assert imported.status_code == 200, imported.content
    run_id = imported.json()["data"]["id"]
    _, reads = ApiKey.issue(other_team, name="reports", scope=ApiKey.Scope.READ)

    whole = other_api.get(f"/v2/import/{run_id}").json()["data"]["items"]
    shaped = client_for(reads).get(f"/v2/import/{run_id}").json()["data"]["items"]

    assert whole[0]["monitor"]["webhook"]["url"] == hook["url"]
    assert shaped[0]["monitor"]["webhook"]["url"].startswith(
        "https://hooks.example.com/"
    )
    assert "s3cr3tToken" not in str(shaped)


# ------------------------------------------------- what a member's keys did


@pytest.fixture
def no_broker(monkeypatch):
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)


def keys_calls(team, ana, vic) -> tuple[str, str]:
    """Vic (an editor) and Ana (an owner) each made a key and ran a monitor
    through it, Vic from his address, Ana from hers; Vic's raw key."""
    set_role(vic, team, EDITOR)
    _, vics = ApiKey.issue(team, name="vic's CI", created_by=vic)
    _, anas = ApiKey.issue(team, name="ana's CI", created_by=ana)
    for raw, address, name in ((vics, VICS, "Prices"), (anas, ANAS, "Stock")):
        monitor = make_monitor(team, name=name)
        response = client_for(raw).post(
            f"/v2/monitor/{monitor.pk}/run", {}, format="json", REMOTE_ADDR=address
        )
        assert response.status_code == 200, response.content
    return vics, ANAS


def by_key(entries: list[dict]) -> dict[str, str | None]:
    return {
        e["actor"]["name"]: e["address"]
        for e in entries
        if e["actor"]["type"] == "apiKey"
    }


def test_a_members_key_reads_the_address_of_its_own_calls(team, ana, vic, no_broker):
    """An entry made through a key names no person, so "their own entries"
    left out everything a member's keys did, and their key could not read
    where its own calls came from."""
    vics, _ = keys_calls(team, ana, vic)

    response = client_for(vics).get("/v2/activity", {"kind": "monitor.run"})

    assert by_key(response.json()["data"]) == {"vic's CI": VICS, "ana's CI": None}


def test_the_activity_page_shows_a_member_where_their_keys_called_from(
    client, team, ana, vic, no_broker
):
    keys_calls(team, ana, vic)
    client.force_login(vic)

    page = client.get(reverse("team-activity")).content.decode()

    assert VICS in page
    assert ANAS not in page


def test_another_members_key_does_not_make_its_calls_theirs(
    team, ana, vic, django_user_model, no_broker
):
    keys_calls(team, ana, vic)
    olive = django_user_model.objects.create_user("olive", "o@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=olive, role=EDITOR)
    _, olives = ApiKey.issue(team, name="olive's", created_by=olive)

    response = client_for(olives).get("/v2/activity", {"kind": "monitor.run"})

    assert by_key(response.json()["data"]) == {"vic's CI": None, "ana's CI": None}


def calls_through_keys(team, makers: list, count: int) -> None:
    """`count` entries made through keys of the given makers, in turn."""
    keys = [ApiKey.issue(team, name=m.username, created_by=m)[0] for m in makers]
    for n in range(count):
        record(Actor(Via.API, key=keys[n % len(keys)], address=VICS), team,
               Activity.Kind.MONITOR_RUN)  # fmt: skip


@pytest.mark.parametrize("where", ["page", "api"])
def test_the_log_costs_the_same_queries_for_30_key_entries_as_for_3(
    client, team, ana, vic, where, django_assert_max_num_queries
):
    set_role(vic, team, EDITOR)
    _, raw = ApiKey.issue(team, name="vic's reader", created_by=vic)
    api = client_for(raw)
    client.force_login(vic)

    def read() -> str:
        if where == "api":
            return api.get("/v2/activity", {"limit": 100}).content.decode()
        return client.get(reverse("team-activity")).content.decode()

    calls_through_keys(team, [ana, vic], 3)
    read()  # the session's and the key's first-use writes
    with CaptureQueriesContext(connection) as three:
        assert read().count(VICS) == 1  # vic's key's one call of three
    calls_through_keys(team, [ana, vic], 27)

    with django_assert_max_num_queries(len(three)):
        assert read().count(VICS) == 14


def queries_of_a_monitor_list(raw: str) -> int:
    client = client_for(raw)
    assert client.get("/v2/monitor").status_code == 200  # last use written
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/v2/monitor").status_code == 200
    return len(queries)


def test_a_key_reading_its_makers_role_costs_no_query_more_than_one_nobody_made(
    team, ana, django_user_model
):
    make_monitor(team)
    _, made_by_ana = ApiKey.issue(team, name="ana's", created_by=ana)
    _, made_by_nobody = ApiKey.issue(team, name="createapikey")
    staff = django_user_model.objects.create_user("root", "root@pw.test", PASSWORD)
    staff.is_staff = True
    staff.save()
    _, made_by_staff = ApiKey.issue(team, name="admin's", created_by=staff)

    baseline = queries_of_a_monitor_list(made_by_nobody)

    assert queries_of_a_monitor_list(made_by_ana) == baseline
    assert queries_of_a_monitor_list(made_by_staff) == baseline
