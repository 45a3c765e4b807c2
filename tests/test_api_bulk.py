"""POST /v2/monitor/bulk: the monitor list's actions on many monitors (pause,
resume, add or remove a tag, delete) through the API, with the dashboard's
rules: the same workflow, roles, team scoping and activity entries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from monitors import rules
from monitors.bulk import IDS_MAX
from monitors.models import ApiKey, Membership, Monitor, Tag
from monitors.models.monitors import MUTED_FOREVER
from teams.models import Activity
from tests.test_api_sync import make_monitor

pytestmark = pytest.mark.django_db

URL = "/v2/monitor/bulk"


def bulk(client: APIClient, action: str, monitors, **fields):
    ids = [str(m.pk) if isinstance(m, Monitor) else m for m in monitors]
    return client.post(URL, {"action": action, "ids": ids, **fields}, format="json")


def data(response) -> dict:
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["success"] is True
    return body["data"]


def entries(kind: str) -> list[Activity]:
    return list(Activity.objects.filter(kind=kind).order_by("pk"))


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_pausing_many_pauses_each_and_logs_each_as_the_key(api, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(3)]
    untouched = make_monitor(team, "Other")
    Monitor.objects.filter(pk=ticked[0].pk).pause()

    answer = data(bulk(api, "pause", ticked))

    assert answer["action"] == "pause"
    assert answer["changed"] == [str(m.pk) for m in ticked[1:]]
    assert answer["unchanged"] == [str(ticked[0].pk)]
    assert answer["notFound"] == []
    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.status == Monitor.Status.PAUSED
        assert monitor.next_run_at is None
    untouched.refresh_from_db()
    assert untouched.is_active
    logged = entries(Activity.Kind.MONITOR_PAUSED)
    assert sorted(e.monitor_id for e in logged) == sorted(m.pk for m in ticked[1:])
    assert {(e.via, e.key_name) for e in logged} == {(Activity.Via.API, "tests")}


def test_resuming_many_gives_each_its_next_run(api, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    Monitor.objects.filter(pk__in=[m.pk for m in ticked]).pause()

    answer = data(bulk(api, "resume", ticked))

    assert sorted(answer["changed"]) == sorted(str(m.pk) for m in ticked)
    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.is_active
        assert monitor.next_run_at is not None
    assert len(entries(Activity.Kind.MONITOR_RESUMED)) == 2


def test_adding_and_removing_a_tag_on_many(api, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    already = make_monitor(team, "Already")
    Monitor.objects.filter(pk=already.pk).add_tag(
        Tag.objects.named(team, ["Competitors"])[0]
    )
    before = {m.pk: m.updated_at for m in Monitor.objects.all()}

    added = data(bulk(api, "addTag", [*ticked, already], tag=" Competitors "))

    assert added["changed"] == [str(m.pk) for m in ticked]
    assert added["unchanged"] == [str(already.pk)]
    for monitor in [*ticked, already]:
        assert monitor.tag_names == ["Competitors"]
    assert all(Monitor.objects.get(pk=m.pk).updated_at > before[m.pk] for m in ticked)
    edited = entries(Activity.Kind.MONITOR_EDITED)
    assert sorted(e.monitor_id for e in edited) == sorted(m.pk for m in ticked)
    assert all(e.details == {"fields": ["tags"]} for e in edited)

    removed = data(bulk(api, "removeTag", [ticked[0], already], tag="COMPETITORS"))

    assert sorted(removed["changed"]) == sorted([str(ticked[0].pk), str(already.pk)])
    assert Monitor.objects.get(pk=ticked[0].pk).tag_names == []
    assert Monitor.objects.get(pk=ticked[1].pk).tag_names == ["Competitors"]
    assert len(entries(Activity.Kind.MONITOR_EDITED)) == 4


def test_adding_a_tag_skips_monitors_with_the_most_tags_and_says_which(api, team):
    full = make_monitor(team, "Full")
    for n in range(rules.MONITOR_TAGS_MAX):
        Monitor.objects.filter(pk=full.pk).add_tag(
            Tag.objects.named(team, [f"T{n}"])[0]
        )
    roomy = make_monitor(team, "Roomy")

    answer = data(bulk(api, "addTag", [full, roomy], tag="Sale"))

    assert answer["changed"] == [str(roomy.pk)]
    assert answer["tooManyTags"] == [str(full.pk)]
    assert "Sale" not in Monitor.objects.get(pk=full.pk).tag_names


def test_removing_a_tag_nobody_has_changes_nothing(api, team):
    monitor = make_monitor(team)
    answer = data(bulk(api, "removeTag", [monitor], tag="Nowhere"))
    assert answer["changed"] == []
    assert answer["unchanged"] == [str(monitor.pk)]
    assert not Tag.objects.filter(name="Nowhere").exists()


def test_deleting_many_deletes_them_at_once_and_logs_each(api, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    kept = make_monitor(team, "Kept")

    answer = data(bulk(api, "delete", ticked))

    assert sorted(answer["changed"]) == sorted(str(m.pk) for m in ticked)
    assert all(Monitor.objects.get(pk=m.pk).deleted_at is not None for m in ticked)
    assert Monitor.objects.get(pk=kept.pk).deleted_at is None
    assert api.get(f"/v2/monitor/{ticked[0].pk}").status_code == 404
    logged = entries(Activity.Kind.MONITOR_DELETED)
    assert sorted(e.monitor_id for e in logged) == sorted(m.pk for m in ticked)
    # How a sync learns of deletions: the activity log names them.
    listed = api.get("/v2/activity", {"kind": "monitor.deleted"}).json()["data"]
    assert sorted(e["monitorId"] for e in listed) == sorted(str(m.pk) for m in ticked)


def test_another_teams_unknown_and_deleted_ids_are_not_found(api, team, other_team):
    ours = make_monitor(team, "Ours")
    gone = make_monitor(team, "Gone")
    gone.soft_delete(timezone.now())
    theirs = make_monitor(other_team, "Theirs")
    unknown = str(uuid.uuid4())

    answer = data(bulk(api, "pause", [ours, theirs, gone, unknown]))

    assert answer["changed"] == [str(ours.pk)]
    assert answer["notFound"] == [str(theirs.pk), str(gone.pk), unknown]
    theirs.refresh_from_db()
    assert theirs.is_active
    for action, extra in (("addTag", {"tag": "Mine"}), ("delete", {})):
        answer = data(bulk(api, action, [theirs], **extra))
        assert answer["notFound"] == [str(theirs.pk)]
        assert answer["changed"] == []
    theirs.refresh_from_db()
    assert theirs.deleted_at is None
    assert theirs.tag_names == []
    assert not Tag.objects.filter(team=other_team).exists()
    assert not Activity.objects.filter(monitor=theirs).exists()


def test_the_same_id_twice_counts_once(api, team):
    monitor = make_monitor(team)
    answer = data(bulk(api, "pause", [monitor, monitor]))
    assert answer["changed"] == [str(monitor.pk)]
    assert len(entries(Activity.Kind.MONITOR_PAUSED)) == 1


@pytest.mark.parametrize("role", ["viewer", "read key"])
def test_viewers_and_read_keys_are_refused(team, django_user_model, role):
    monitor = make_monitor(team)
    if role == "viewer":
        user = django_user_model.objects.create_user("vera", "vera@acme.test", "x")
        Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
        _, raw = ApiKey.issue(team, name="vera's", created_by=user)
    else:
        _, raw = ApiKey.issue(team, name="reader", scope=ApiKey.Scope.READ)

    for action in ("pause", "delete"):
        answer = bulk(client_for(raw), action, [monitor])
        assert answer.status_code == 403
        assert answer.json()["code"] == "FORBIDDEN"
    monitor.refresh_from_db()
    assert monitor.is_active and monitor.deleted_at is None
    assert not Activity.objects.filter(monitor=monitor).exists()


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"action": "pause", "ids": []}, "ids"),
        ({"action": "pause"}, "ids"),
        ({"action": "pause", "ids": ["not-an-id"]}, "ids[0]"),
        ({"action": "pause", "ids": [str(uuid.uuid4())] * (IDS_MAX + 1)}, "ids"),
        ({"action": "archive", "ids": [str(uuid.uuid4())]}, "action"),
        ({"action": "addTag", "ids": [str(uuid.uuid4())]}, "tag"),
        ({"action": "addTag", "ids": [str(uuid.uuid4())], "tag": "  "}, "tag"),
        (
            {
                "action": "addTag",
                "ids": [str(uuid.uuid4())],
                "tag": "x" * (rules.TAG_NAME_MAX + 1),
            },
            "tag",
        ),
        ({"action": "pause", "ids": [str(uuid.uuid4())], "tag": "Sale"}, "tag"),
        ({"action": "pause", "ids": [str(uuid.uuid4())], "colour": "red"}, ""),
        ({"action": "mute", "ids": [str(uuid.uuid4())]}, "mutedUntil"),
        (
            {"action": "mute", "ids": [str(uuid.uuid4())], "mutedUntil": None},
            "mutedUntil",
        ),
        (
            {
                "action": "mute",
                "ids": [str(uuid.uuid4())],
                "mutedUntil": "2020-01-01T00:00:00Z",
            },
            "mutedUntil",
        ),
        (
            {"action": "mute", "ids": [str(uuid.uuid4())], "mutedUntil": "tuesday"},
            "mutedUntil",
        ),
        (
            {
                "action": "unmute",
                "ids": [str(uuid.uuid4())],
                "mutedUntil": "2099-01-01T00:00:00Z",
            },
            "mutedUntil",
        ),
    ],
    ids=[
        "no ids",
        "ids missing",
        "malformed id",
        "too many ids",
        "unknown action",
        "tag missing",
        "blank tag",
        "tag too long",
        "tag on pause",
        "unknown key",
        "mute without its end",
        "mute until null",
        "mute that has ended",
        "mute until no moment",
        "mutedUntil on unmute",
    ],
)
def test_bad_bodies_are_a_400_naming_the_field(api, team, body, where):
    monitor = make_monitor(team)
    answer = api.post(URL, body, format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()
    assert error["code"] == "BAD_REQUEST"
    if where:
        assert error["error"].startswith(f"{where}: "), error
    monitor.refresh_from_db()
    assert monitor.is_active and monitor.tag_names == []


def test_the_sdks_origin_is_taken(api, team):
    monitor = make_monitor(team)
    answer = bulk(api, "pause", [monitor], origin="python-sdk@4.55.0")
    assert data(answer)["changed"] == [str(monitor.pk)]


def test_the_openapi_document_describes_the_bulk_actions(client, db):
    document = client.get("/v2/openapi.json").json()
    operation = document["paths"]["/v2/monitor/bulk"]["post"]
    assert operation["operationId"] == "bulkMonitors"
    assert {"200", "400", "403"} <= set(operation["responses"])
    schema = document["components"]["schemas"]["BulkMonitorsRequest"]
    action = schema["properties"]["action"]["allOf"][0]["$ref"].split("/")[-1]
    assert set(document["components"]["schemas"][action]["enum"]) == {
        "pause",
        "resume",
        "addTag",
        "removeTag",
        "delete",
        "mute",
        "unmute",
        "run",
    }
    assert schema["properties"]["ids"]["maxItems"] == IDS_MAX
    assert schema["properties"]["mutedUntil"]["format"] == "date-time"


NOW = datetime(2026, 5, 16, 15, 7, 30, tzinfo=UTC)


def test_muting_many_until_a_moment_mutes_each_and_logs_each_as_the_dashboard_does(
    api, team
):
    ticked = [make_monitor(team, f"M{n}") for n in range(3)]
    untouched = make_monitor(team, "Other")
    until = datetime(2026, 5, 16, 16, 0, tzinfo=UTC)
    Monitor.objects.filter(pk=ticked[0].pk).mute(until, NOW)

    with time_machine.travel(NOW, tick=False):
        answer = data(bulk(api, "mute", ticked, mutedUntil="2026-05-16T18:00:00+02:00"))

    assert answer["action"] == "mute"
    assert answer["changed"] == [str(m.pk) for m in ticked[1:]]
    assert answer["unchanged"] == [str(ticked[0].pk)]
    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.muted_until == until
    untouched.refresh_from_db()
    assert untouched.muted_until is None
    logged = Activity.objects.filter(details__muted_until__isnull=False)
    assert sorted(e.monitor_id for e in logged) == sorted(m.pk for m in ticked[1:])
    assert {e.what_words for e in logged} == {
        "Muted notifications until Sat 16 May 16:00 (UTC)"
    }
    assert {(e.via, e.key_name) for e in logged} == {(Activity.Via.API, "tests")}


def test_muting_many_until_unmuted_takes_the_far_future_moment(api, team):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]

    answer = data(bulk(api, "mute", ticked, mutedUntil="9999-12-31T23:59:59Z"))

    assert sorted(answer["changed"]) == sorted(str(m.pk) for m in ticked)
    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.muted_until == MUTED_FOREVER
    assert {
        e.what_words for e in Activity.objects.filter(kind=Activity.Kind.MONITOR_EDITED)
    } == {"Muted notifications until further notice"}


def test_unmuting_many_ends_the_mutes_still_running_and_logs_those(api, team):
    muted, ended, never = (make_monitor(team, f"M{n}") for n in range(3))
    Monitor.objects.filter(pk=muted.pk).mute(MUTED_FOREVER, NOW)
    Monitor.objects.filter(pk=ended.pk).mute(NOW - timedelta(hours=1), NOW)

    with time_machine.travel(NOW, tick=False):
        answer = data(bulk(api, "unmute", [muted, ended, never]))

    assert answer["changed"] == [str(muted.pk)]
    assert answer["unchanged"] == [str(ended.pk), str(never.pk)]
    muted.refresh_from_db()
    assert muted.muted_until is None
    logged = Activity.objects.filter(details__unmuted=True)
    assert [(e.monitor_id, e.what_words) for e in logged] == [
        (muted.pk, "Unmuted notifications")
    ]
