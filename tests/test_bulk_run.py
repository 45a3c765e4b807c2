"""Check now on many monitors: the list's bulk "Check now" and
POST /v2/monitor/bulk's "run", through the single "Run now"'s workflow
(monitors.running): the same refusals, the same check rows, the same
activity entries, and words that say which were left alone and why."""

from __future__ import annotations

import pytest
from django.urls import reverse

from checks.models import Check
from monitors.models import Monitor
from teams.models import Activity
from tests.test_api_bulk import bulk as api_bulk
from tests.test_api_bulk import data
from tests.test_tags import bulk as web_bulk
from tests.test_tags import make_monitor, viewer_web, web  # noqa: F401

pytestmark = pytest.mark.django_db


def running_check(monitor: Monitor) -> Check:
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.RUNNING,
        estimated_credits=1,
    )
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return check


def said(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


# ---------------------------------------------------------------- the API


def test_running_many_starts_a_manual_check_of_each_and_logs_each_as_the_key(
    api, team, django_capture_on_commit_callbacks
):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    untouched = make_monitor(team, "Other")

    with django_capture_on_commit_callbacks(execute=False) as sent:
        answer = data(api_bulk(api, "run", ticked))

    assert answer["action"] == "run"
    assert answer["changed"] == [str(m.pk) for m in ticked]
    assert answer["unchanged"] == []
    checks = {c.monitor_id: c for c in Check.objects.all()}
    assert set(checks) == {m.pk for m in ticked}
    for monitor in ticked:
        check = checks[monitor.pk]
        assert (check.trigger, check.status) == (
            Check.Trigger.MANUAL,
            Check.Status.QUEUED,
        )
        monitor.refresh_from_db()
        assert monitor.current_check_id == check.pk
        assert answer["checks"][str(monitor.pk)] == str(check.pk)
    assert len(sent) == 2  # each goes to a worker once committed
    assert not Check.objects.filter(monitor=untouched).exists()
    logged = Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN)
    assert sorted(e.monitor_id for e in logged) == sorted(m.pk for m in ticked)
    assert {(e.via, e.key_name) for e in logged} == {(Activity.Via.API, "tests")}


def test_running_many_leaves_paused_and_running_ones_alone_and_says_why(api, team):
    fine = make_monitor(team, "Fine")
    paused = make_monitor(team, "Paused")
    Monitor.objects.filter(pk=paused.pk).pause()
    busy = make_monitor(team, "Busy")
    already = running_check(busy)

    answer = data(api_bulk(api, "run", [paused, fine, busy]))

    assert answer["changed"] == [str(fine.pk)]
    assert answer["unchanged"] == [str(paused.pk), str(busy.pk)]
    assert answer["paused"] == [str(paused.pk)]
    assert answer["alreadyRunning"] == [str(busy.pk)]
    assert list(answer["checks"]) == [str(fine.pk)]
    assert not Check.objects.filter(monitor=paused).exists()
    assert list(Check.objects.filter(monitor=busy)) == [already]
    logged = Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN)
    assert [e.monitor_id for e in logged] == [fine.pk]


def test_the_other_bulk_actions_answer_without_the_run_lists(api, team):
    monitor = make_monitor(team)

    answer = data(api_bulk(api, "pause", [monitor]))

    assert "paused" not in answer
    assert "checks" not in answer


def test_the_openapi_document_names_run_among_the_bulk_actions(client):
    document = client.get("/v2/openapi.json").json()
    schemas = document["components"]["schemas"]
    action = schemas["BulkMonitorsRequest"]["properties"]["action"]
    assert "run" in schemas[action["allOf"][0]["$ref"].split("/")[-1]]["enum"]
    outcome = schemas["BulkMonitorsOutcome"]["properties"]
    assert {"paused", "alreadyRunning", "checks"} <= set(outcome)


# ---------------------------------------------------------------- the dashboard


def test_check_now_on_the_list_starts_checks_and_says_who_was_left_alone(
    web,  # noqa: F811
    team,
):
    ticked = [make_monitor(team, f"M{n}") for n in range(2)]
    paused = make_monitor(team, "Quiet shop")
    Monitor.objects.filter(pk=paused.pk).pause()
    busy = make_monitor(team, "Busy blog")
    running_check(busy)

    response = web_bulk(web, "run", [*ticked, paused, busy])

    assert response.status_code == 302
    started = Check.objects.filter(trigger=Check.Trigger.MANUAL)
    assert sorted(c.monitor_id for c in started) == sorted(m.pk for m in ticked)
    logged = Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN)
    assert sorted(e.monitor_id for e in logged) == sorted(m.pk for m in ticked)
    assert {(e.via, e.user_name) for e in logged} == {(Activity.Via.DASHBOARD, "olive")}
    page = web.get(response.url)
    assert said(page) == [
        "Started a check of 2 monitors.",
        "Left alone: “Quiet shop” is paused (resume it first); "
        "“Busy blog” is already running a check.",
    ]


def test_the_list_offers_check_now_to_editors(web, team):  # noqa: F811
    make_monitor(team)

    page = web.get(reverse("monitor-list")).content.decode()

    assert 'name="action" value="run"' in page
    assert "Check now" in page


def test_viewers_cannot_start_checks_of_many(viewer_web, team):  # noqa: F811
    monitor = make_monitor(team)

    response = web_bulk(viewer_web, "run", [monitor])

    assert response.status_code == 403
    assert not Check.objects.exists()


def test_a_key_near_its_limit_cannot_start_a_check_of_many_in_one_call(
    api, team, monkeypatch
):
    from django.core.cache import cache

    from monitors.api.auth import ApiKeyRateThrottle

    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "5/min"})
    cache.clear()
    ticked = [make_monitor(team, f"M{n}") for n in range(5)]
    assert api.get("/v2/monitor").status_code == 200

    answer = api_bulk(api, "run", ticked)
    cache.clear()

    assert answer.status_code == 429
    assert answer.json()["error"].startswith("Rate limit exceeded. Retry after")
    assert not Check.objects.exists()
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN).exists()


def test_a_refused_bulk_run_leaves_the_key_its_remaining_requests(
    api, team, monkeypatch
):
    from django.core.cache import cache

    from monitors.api.auth import ApiKeyRateThrottle

    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "5/min"})
    cache.clear()
    ticked = [make_monitor(team, f"M{n}") for n in range(5)]
    assert api.get("/v2/monitor").status_code == 200

    refused = api_bulk(api, "run", ticked)
    reads = [api.get("/v2/monitor").status_code for _ in range(3)]
    cache.clear()

    assert refused.status_code == 429
    assert reads == [200, 200, 200]  # 1 + 3 of 5: the refused run took nothing


def test_the_lists_check_now_takes_no_more_monitors_than_the_api(web, team):  # noqa: F811
    from monitors.bulk import IDS_MAX

    ticked = [make_monitor(team, f"M{n:03}") for n in range(IDS_MAX + 1)]

    answer = web.post(
        reverse("monitor-bulk"),
        {"action": "run", "monitor": [str(m.pk) for m in ticked]},
        follow=True,
    )

    assert f"Tick at most {IDS_MAX} monitors at a time." in said(answer)
    assert not Check.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_stops_part_way_is_answered_with_those_started(
    api, team, monkeypatch
):
    from checks import dispatch

    first, second, third = (make_monitor(team, f"M{n}") for n in range(3))
    sent = []

    def broker_stops_after_one(ids):
        sent.append(ids)
        return len(ids) if len(sent) == 1 else 0

    monkeypatch.setattr(dispatch, "_send", broker_stops_after_one)

    answer = api_bulk(api, "run", [first, second, third])

    assert answer.status_code == 200, answer.content
    body = data(answer)
    assert body["changed"] == [str(first.pk)]
    assert body["queueUnavailable"] == [str(second.pk), str(third.pk)]
    assert body["unchanged"] == [str(second.pk), str(third.pk)]
    assert list(Check.objects.values_list("monitor_id", flat=True)) == [first.pk]
    logged = Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN)
    assert list(logged.values_list("monitor_id", flat=True)) == [first.pk]


def test_a_database_error_on_one_monitor_leaves_it_alone_and_starts_the_rest(
    web,  # noqa: F811
    team,
    monkeypatch,
):
    from django.db import DatabaseError

    from monitors import running

    ok, broken = make_monitor(team, "Alpha"), make_monitor(team, "Beta")
    real = running.queue_manual_check

    def fails_on_beta(monitor):
        if monitor.pk == broken.pk:
            raise DatabaseError("could not serialize access")
        return real(monitor)

    monkeypatch.setattr(running, "queue_manual_check", fails_on_beta)

    answer = web_bulk(web, "run", [ok, broken])

    assert said(web.get(answer.url)) == [
        "Started a check of 1 monitor.",
        "Could not be started: “Beta”. Please try again in a moment.",
    ]
    assert list(Check.objects.values_list("monitor_id", flat=True)) == [ok.pk]
    logged = Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN)
    assert list(logged.values_list("monitor_id", flat=True)) == [ok.pk]
