"""Keeping a copy in sync over /v2 (Pagewatch extensions the official SDKs
never send): a strong ETag on the monitor and check reads, If-None-Match
answered with 304, and `updatedSince` on the two lists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import requests
import time_machine
from django.utils import timezone
from firecrawl import Firecrawl
from rest_framework.test import APIClient

from checks import runner
from checks.models import Check, PageResult
from checks.pipeline import plan as planning
from monitors.models import ApiKey, Channel, Monitor, MonitorChannel, Tag, Target, Team

URL = "/v2/monitor"
NOW = datetime(2026, 5, 16, 15, 7, 30, 123456, tzinfo=UTC)


def make_monitor(team: Team, name: str = "Pricing") -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        next_run_at=timezone.now() + timedelta(minutes=30),
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://a.test/"])
    return monitor


def make_check(monitor: Monitor, status: str = Check.Status.COMPLETED) -> Check:
    return Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=status
    )


def stamp(monitor: Monitor, moment: datetime) -> None:
    Monitor.objects.filter(pk=monitor.pk).update(updated_at=moment)


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return sorted(m["name"] for m in response.json()["data"])


# ---------------------------------------------------------------- ETag, plain HTTP


@pytest.mark.django_db(transaction=True)
def test_a_repeated_read_with_the_etag_answers_304_and_200_after_an_edit(
    live_server, api_key, team
):
    monitor = make_monitor(team)
    address = f"{live_server.url}{URL}/{monitor.pk}"
    auth = {"Authorization": f"Bearer {api_key}"}

    first = requests.get(address, headers=auth, timeout=10)
    etag = first.headers["ETag"]
    assert first.status_code == 200
    assert etag.startswith('"') and etag.endswith('"')  # strong, not W/
    assert first.headers["Cache-Control"] == "no-store"

    again = requests.get(address, headers=auth | {"If-None-Match": etag}, timeout=10)
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["ETag"] == etag
    assert again.headers["Cache-Control"] == "no-store"

    patched = requests.patch(address, headers=auth, json={"name": "Prices"}, timeout=10)
    assert patched.status_code == 200

    after = requests.get(address, headers=auth | {"If-None-Match": etag}, timeout=10)
    assert after.status_code == 200
    assert after.json()["data"]["name"] == "Prices"
    assert after.headers["ETag"] != etag


@pytest.mark.django_db(transaction=True)
def test_the_sdk_reads_monitors_as_before_beside_the_new_headers(
    live_server, api_key, team
):
    monitor = make_monitor(team)
    sdk = Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)

    got = sdk.get_monitor(str(monitor.pk))
    listed = sdk.list_monitors(limit=10)

    assert got.id == str(monitor.pk)
    assert got.name == "Pricing"
    assert [m.id for m in listed] == [str(monitor.pk)]


# ---------------------------------------------------------------- ETag, every read


def test_each_read_answers_304_to_its_own_etag(api, team):
    monitor = make_monitor(team)
    check = make_check(monitor)
    for path in (
        URL,
        f"{URL}/{monitor.pk}",
        f"{URL}/{monitor.pk}/checks",
        f"{URL}/{monitor.pk}/checks/{check.pk}",
    ):
        first = api.get(path)
        assert first.status_code == 200, path
        etag = first["ETag"]
        again = api.get(path, HTTP_IF_NONE_MATCH=etag)
        assert again.status_code == 304, path
        assert again.content == b"", path
        assert again["Cache-Control"] == "no-store", path
        other = api.get(path, HTTP_IF_NONE_MATCH='"something-else"')
        assert other.status_code == 200, path


def test_if_none_match_takes_a_star_a_list_and_weak_etags(api, team):
    monitor = make_monitor(team)
    path = f"{URL}/{monitor.pk}"
    etag = api.get(path)["ETag"]
    for header in ("*", f'"old", {etag}', f"W/{etag}"):
        assert api.get(path, HTTP_IF_NONE_MATCH=header).status_code == 304, header
    assert api.get(path, HTTP_IF_NONE_MATCH=etag.strip('"')).status_code == 200


def test_a_check_finishing_changes_the_lists_etag_though_no_edit_was_made(api, team):
    monitor = make_monitor(team)
    etag = api.get(URL)["ETag"]

    Monitor.objects.filter(pk=monitor.pk).check_ended(
        monitor.pk, timezone.now(), {"totalPages": 1}
    )

    answer = api.get(URL, HTTP_IF_NONE_MATCH=etag)
    assert answer.status_code == 200
    assert answer["ETag"] != etag


def test_a_key_of_another_team_reads_another_etag_and_no_304_for_it(
    api, other_api, team, other_team
):
    make_monitor(team, "Ours")
    make_monitor(other_team, "Theirs")
    ours, theirs = api.get(URL), other_api.get(URL)
    assert ours["ETag"] != theirs["ETag"]
    assert api.get(URL, HTTP_IF_NONE_MATCH=theirs["ETag"]).status_code == 200


def test_another_key_of_the_same_team_reads_the_same_etag(api, team):
    monitor = make_monitor(team)
    check = make_check(monitor)
    _, raw = ApiKey.issue(team, name="sync script")
    second = APIClient()
    second.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for path in (
        URL,
        f"{URL}/{monitor.pk}",
        f"{URL}/{monitor.pk}/checks",
        f"{URL}/{monitor.pk}/checks/{check.pk}",
    ):
        etag = api.get(path)["ETag"]
        assert second.get(path)["ETag"] == etag, path
        assert second.get(path, HTTP_IF_NONE_MATCH=etag).status_code == 304, path


def test_a_check_with_screenshots_answers_304_while_its_links_stay_the_same(
    api, team, settings
):
    settings.CAPTURE_URL_TTL_SECONDS = 3600  # links signed per 15 minutes
    monitor = make_monitor(team)
    check = make_check(monitor)
    PageResult.objects.create(
        check_run=check,
        target_id=monitor.targets.get().id,
        url="https://a.test/",
        status=PageResult.Status.SAME,
        metadata={
            "screenshot": "ab" * 32,
            "actions": {"screenshots": ["cd" * 32], "pdfs": ["ef" * 32]},
        },
    )
    path = f"{URL}/{monitor.pk}/checks/{check.pk}"
    window = datetime(2026, 5, 16, 15, 0, tzinfo=UTC)

    with time_machine.travel(window + timedelta(seconds=1), tick=False):
        etag = api.get(path)["ETag"]
    with time_machine.travel(window + timedelta(minutes=14, seconds=59), tick=False):
        assert api.get(path, HTTP_IF_NONE_MATCH=etag).status_code == 304
    with time_machine.travel(window + timedelta(minutes=15), tick=False):
        fresh = api.get(path, HTTP_IF_NONE_MATCH=etag)
    assert fresh.status_code == 200
    assert fresh["ETag"] != etag


def test_writes_and_errors_carry_no_etag(api, team):
    monitor = make_monitor(team)
    assert "ETag" not in api.patch(f"{URL}/{monitor.pk}", {"name": "X"}, format="json")
    assert "ETag" not in api.get(f"{URL}/{monitor.pk}/checks/nope")
    assert "ETag" not in api.get(URL, {"limit": "0"})


# ---------------------------------------------------------------- updatedSince


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def test_updated_since_lists_only_monitors_changed_after_it(api, team, clock):
    before, exactly, after = (make_monitor(team, n) for n in ("Before", "At", "After"))
    stamp(before, NOW - timedelta(seconds=1))
    stamp(exactly, NOW)
    stamp(after, NOW + timedelta(microseconds=1))

    assert names(api.get(URL, {"updatedSince": "2026-05-16T15:07:30.123456Z"})) == [
        "After"
    ]
    # In another zone, and at the millisecond the answers show.
    assert names(api.get(URL, {"updatedSince": "2026-05-16T17:07:30.123+02:00"})) == [
        "After",
        "At",
    ]
    assert names(api.get(URL, {"updatedSince": ""})) == ["After", "At", "Before"]


def test_updated_since_sees_pausing_resuming_tags_and_checks(api, team, clock):
    edited, paused, tagged, checked, quiet = (
        make_monitor(team, n)
        for n in ("Edited", "Paused", "Tagged", "Checked", "Quiet")
    )
    since = "2026-05-16T15:07:30.123456Z"  # when they were made
    clock.shift(timedelta(minutes=1))

    api.patch(f"{URL}/{edited.pk}", {"goal": "Prices"}, format="json")
    api.patch(f"{URL}/{paused.pk}", {"status": "paused"}, format="json")
    Monitor.objects.filter(pk=tagged.pk).add_tag(Tag.objects.named(team, ["Sale"])[0])
    make_check(checked, Check.Status.QUEUED)

    assert names(api.get(URL, {"updatedSince": since})) == [
        "Checked",
        "Edited",
        "Paused",
        "Tagged",
    ]
    later = "2026-05-16T15:08:31Z"
    clock.shift(timedelta(minutes=1))
    api.patch(f"{URL}/{paused.pk}", {"status": "active"}, format="json")
    check = checked.checks.get()
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED, updated_at=timezone.now()
    )
    assert names(api.get(URL, {"updatedSince": later})) == ["Checked", "Paused"]
    assert quiet.name not in names(api.get(URL, {"updatedSince": since}))


def test_updated_since_lists_a_monitor_whose_mute_ended_after_it(api, team, clock):
    muted, quiet = make_monitor(team, "Muted"), make_monitor(team, "Quiet")
    ends = NOW + timedelta(minutes=10)
    api.patch(f"{URL}/{muted.pk}", {"mutedUntil": ends.isoformat()}, format="json")
    clock.shift(timedelta(minutes=1))
    since = "2026-05-16T15:08:30Z"  # a pass made after the mute, before its end
    first = api.get(URL, {"updatedSince": since})
    assert names(first) == []
    one = api.get(f"{URL}/{muted.pk}")

    clock.move_to(ends + timedelta(seconds=1))

    answer = api.get(URL, {"updatedSince": since})
    assert names(answer) == ["Muted"]
    assert answer.json()["data"][0]["mutedUntil"] is None
    assert answer["ETag"] != first["ETag"]
    assert api.get(f"{URL}/{muted.pk}")["ETag"] != one["ETag"]
    # Not again once a pass has seen it; nor a mute ending before the moment.
    assert names(api.get(URL, {"updatedSince": "2026-05-16T15:17:31Z"})) == []
    assert quiet.name not in names(api.get(URL, {"updatedSince": since}))


def test_a_monitor_whose_mute_ended_is_not_listed_again_after_its_updated_at(
    api, team, clock
):
    muted = make_monitor(team, "Muted")
    ends = datetime(2026, 5, 16, 15, 17, 30, tzinfo=UTC)
    api.patch(f"{URL}/{muted.pk}", {"mutedUntil": ends.isoformat()}, format="json")
    since = "2026-05-16T15:08:30Z"

    clock.move_to(ends + timedelta(minutes=1))
    seen = api.get(URL, {"updatedSince": since}).json()["data"]
    cursor = max(m["updatedAt"] for m in seen)
    again = api.get(URL, {"updatedSince": cursor})

    assert [m["name"] for m in seen] == ["Muted"]
    assert cursor == "2026-05-16T15:17:30.000Z"
    assert api.get(f"{URL}/{muted.pk}").json()["data"]["updatedAt"] == cursor
    assert names(again) == []


def test_updated_since_sees_a_deleted_channel_leave_its_monitors(api, team, clock):
    sending, quiet = make_monitor(team, "Sending"), make_monitor(team, "Quiet")
    channel = Channel.objects.create(
        team=team,
        name="Ops",
        kind="webhook",
        settings={"url": "https://hooks.example.com/in"},
        events=list(Channel.DEFAULT_EVENTS),
    )
    MonitorChannel.objects.create(monitor=sending, channel=channel)
    assert api.get(f"{URL}/{sending.pk}").json()["data"]["channels"] == [channel.pk]
    clock.shift(timedelta(minutes=1))

    assert api.delete(f"/v2/channels/{channel.pk}").status_code == 200

    answer = api.get(URL, {"updatedSince": "2026-05-16T15:08:00Z"})
    assert names(answer) == ["Sending"]
    assert answer.json()["data"][0]["channels"] == []
    assert quiet.name not in names(answer)


def test_planning_a_check_moves_its_updated_at(api, team, clock):
    monitor = make_monitor(team)
    check = make_check(monitor, Check.Status.QUEUED)
    assert runner.claim(check)
    clock.shift(timedelta(minutes=1))

    planning.plan(Check.objects.get(pk=check.pk))

    path = f"{URL}/{monitor.pk}/checks"
    answer = api.get(path, {"updatedSince": "2026-05-16T15:08:00Z"})
    assert answer.status_code == 200
    [listed] = answer.json()["data"]
    assert listed["id"] == str(check.pk)
    assert listed["targetResults"] is not None
    assert listed["updatedAt"] == "2026-05-16T15:08:30.123Z"


def test_updated_since_keeps_to_the_team_and_the_tag(api, team, other_team, clock):
    ours = make_monitor(team, "Ours")
    Monitor.objects.filter(pk=ours.pk).add_tag(Tag.objects.named(team, ["Sale"])[0])
    make_monitor(team, "Untagged")
    make_monitor(other_team, "Theirs")
    stamp(make_monitor(team, "Old"), NOW - timedelta(days=1))
    since = "2026-05-16T15:07:00Z"

    assert names(api.get(URL, {"updatedSince": since})) == ["Ours", "Untagged"]
    assert names(api.get(URL, {"updatedSince": since, "tag": "sale"})) == ["Ours"]


def test_the_next_page_keeps_updated_since(api, team, clock):
    for n in range(3):
        make_monitor(team, f"M{n}")
    old = make_monitor(team, "Old")
    stamp(old, NOW - timedelta(days=1))
    since = "2026-05-16T00:00:00Z"

    first = api.get(URL, {"updatedSince": since, "limit": 2}).json()
    assert "updatedSince=2026-05-16T00%3A00%3A00Z" in first["next"]
    second = api.get(first["next"]).json()
    seen = [m["name"] for m in first["data"] + second["data"]]
    assert sorted(seen) == ["M0", "M1", "M2"]
    assert "next" not in second


def test_a_plus_in_an_unencoded_offset_is_taken_as_a_plus(api, team, clock):
    make_monitor(team, "Now")
    stamp(make_monitor(team, "Old"), NOW - timedelta(days=1))
    # "+00:00" in a query string that was not encoded arrives as " 00:00".
    answer = api.get(f"{URL}?updatedSince=2026-05-16T15:07:00+00:00")
    assert names(answer) == ["Now"]


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "2026-05-16",
        "2026-05-16T15:07:30",
        "2026-13-01T00:00:00Z",
        "0001-01-01T00:00:00+05:00",
        "2026-05-16T15:07:30Z" + "0" * 500,
    ],
    ids=["words", "date only", "no zone", "month 13", "before year 1", "long"],
)
def test_a_bad_updated_since_is_a_400_naming_it(api, team, value):
    make_monitor(team)
    monitor = Monitor.objects.get()
    for path in (URL, f"{URL}/{monitor.pk}/checks"):
        answer = api.get(path, {"updatedSince": value})
        assert answer.status_code == 400, (path, value)
        body = answer.json()
        assert body["success"] is False
        assert body["code"] == "BAD_REQUEST"
        assert body["error"].startswith("updatedSince: ")
        assert "ISO 8601" in body["error"]
        assert body["details"][0]["path"] == ["updatedSince"]


def test_a_monitors_checks_since_a_moment_are_those_changed_after_it(api, team, clock):
    monitor = make_monitor(team)
    old, exactly, new = (make_check(monitor) for _ in range(3))
    Check.objects.filter(pk=old.pk).update(updated_at=NOW - timedelta(hours=1))
    Check.objects.filter(pk=exactly.pk).update(updated_at=NOW)
    Check.objects.filter(pk=new.pk).update(updated_at=NOW + timedelta(seconds=5))
    path = f"{URL}/{monitor.pk}/checks"

    answer = api.get(path, {"updatedSince": "2026-05-16T15:07:30.123456Z"})

    assert answer.status_code == 200
    assert [c["id"] for c in answer.json()["data"]] == [str(new.pk)]
    both = api.get(path, {"updatedSince": "2026-05-16T15:07:30Z", "limit": 1}).json()
    assert "updatedSince=" in both["next"]


def test_the_openapi_document_describes_etags_and_updated_since(client, db):
    document = client.get("/v2/openapi.json").json()
    for path in (
        "/v2/monitor",
        "/v2/monitor/{monitor_id}",
        "/v2/monitor/{monitor_id}/checks",
        "/v2/monitor/{monitor_id}/checks/{check_id}",
    ):
        operation = document["paths"][path]["get"]
        assert "304" in operation["responses"], path
        assert "ETag" in operation["responses"]["200"]["headers"], path
        params = {p["name"] for p in operation["parameters"]}
        assert "If-None-Match" in params, path
    for path in ("/v2/monitor", "/v2/monitor/{monitor_id}/checks"):
        params = {p["name"] for p in document["paths"][path]["get"]["parameters"]}
        assert "updatedSince" in params, path
