"""POST /v2/monitor/{id}/run, GET /v2/monitor/{id}/checks[/{checkId}]."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from checks.models import Check, PageResult
from monitors.models import Monitor, Target, Team

pytestmark = pytest.mark.django_db

CHECK_KEYS = {
    "id", "monitorId", "status", "trigger", "scheduledFor", "startedAt",
    "finishedAt", "estimatedCredits", "reservedCredits", "actualCredits",
    "billingStatus", "summary", "targetResults", "notificationStatus", "error",
    "createdAt", "updatedAt",
}  # fmt: skip
PAGE_KEYS = {
    "id", "targetId", "url", "status", "previousScrapeId", "currentScrapeId",
    "statusCode", "error", "metadata", "diff", "snapshot", "judgment", "createdAt",
    "summary",  # Pagewatch extension: the summary format
}  # fmt: skip
ZERO_SUMMARY = {
    "totalPages": 0,
    "same": 0,
    "changed": 0,
    "new": 0,
    "removed": 0,
    "error": 0,
}


def make_monitor(team: Team, **fields) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing",
        schedule_cron="*/30 * * * *",
        next_run_at=timezone.now() + timedelta(minutes=30),
        **fields,
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://example.com/"])
    return monitor


@pytest.fixture
def monitor(team) -> Monitor:
    return make_monitor(team)


def make_check(monitor: Monitor, pages: int = 0, **fields) -> Check:
    fields.setdefault("trigger", Check.Trigger.MANUAL)
    fields.setdefault("status", Check.Status.COMPLETED)
    check = Check.objects.create(monitor=monitor, **fields)
    target_id = monitor.targets.get().pk
    for i in range(pages):
        PageResult.objects.create(
            check_run=check,
            target_id=target_id,
            url=f"https://example.com/{i:02d}",
            status=PageResult.Status.ERROR if i % 10 == 9 else PageResult.Status.SAME,
            metadata={"title": f"Page {i}", "creditsUsed": 1},
        )
    return check


def url(monitor: Monitor | str, suffix: str = "") -> str:
    monitor_id = monitor.pk if isinstance(monitor, Monitor) else monitor
    return f"/v2/monitor/{monitor_id}{suffix}"


# --- run -----------------------------------------------------------------------


def test_run_queues_a_manual_check(api, monitor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        response = api.post(url(monitor, "/run"), {}, format="json")

    assert response.status_code == 200
    body = response.json()
    check = Check.objects.get()
    assert body["success"] is True
    assert body["id"] == str(check.pk)
    data = body["data"]
    assert set(data) == CHECK_KEYS
    assert data["id"] == str(check.pk) and data["monitorId"] == str(monitor.pk)
    assert (data["status"], data["trigger"]) == ("queued", "manual")
    assert data["scheduledFor"] is None and data["finishedAt"] is None
    assert data["summary"] == ZERO_SUMMARY
    assert data["billingStatus"] == "not_applicable"
    assert data["estimatedCredits"] == 1
    assert Monitor.objects.get(pk=monitor.pk).current_check_id == check.pk
    assert len(enqueued) == 1


def test_run_accepts_the_sdks_origin_and_the_clis_empty_body(api, team):
    first, second = make_monitor(team), make_monitor(team)
    sdk = api.post(url(first, "/run"), {"origin": "python-sdk@4.52.1"}, format="json")
    cli = api.post(url(second, "/run"))
    assert (sdk.status_code, cli.status_code) == (200, 200)


@pytest.mark.parametrize("origin", [123, None, ["sdk"]])
def test_run_refuses_an_origin_that_is_not_text_as_create_does(api, monitor, origin):
    response = api.post(url(monitor, "/run"), {"origin": origin}, format="json")
    assert response.status_code == 400
    assert response.json()["details"][0]["path"] == ["origin"]
    assert not Check.objects.exists()


def test_run_rejects_unknown_body_keys(api, monitor):
    response = api.post(url(monitor, "/run"), {"force": True}, format="json")
    assert response.status_code == 400
    assert response.json()["details"][0]["path"] == ["force"]
    assert not Check.objects.exists()


def test_run_of_a_paused_monitor_is_409(api, team):
    paused = make_monitor(team, status=Monitor.Status.PAUSED)
    response = api.post(url(paused, "/run"), {}, format="json")
    assert response.status_code == 409
    assert response.json() == {
        "success": False,
        "error": "Monitor is paused. Resume it before running a check.",
        "code": "MONITOR_PAUSED",
    }
    assert not Check.objects.exists()


def test_run_while_a_check_is_running_is_409_with_its_id(api, monitor):
    running = make_check(monitor, status=Check.Status.RUNNING)
    response = api.post(url(monitor, "/run"), {}, format="json")
    assert response.status_code == 409
    assert response.json() == {
        "success": False,
        "error": "Monitor check is already running.",
        "code": "CHECK_ALREADY_RUNNING",
        "checkId": str(running.pk),
    }
    assert Check.objects.count() == 1


# A fixed check id (not uuid4()), so every pytest-xdist worker collects the
# same tests.
@pytest.mark.parametrize(
    "suffix", ["/run", "/checks", "/checks/7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"]
)
def test_other_teams_and_malformed_ids_get_monitor_not_found(
    other_api, api, monitor, suffix
):
    deleted = make_monitor(monitor.team, deleted_at=timezone.now())
    for client, monitor_id in (
        (other_api, monitor.pk),
        (api, "not-a-uuid"),
        (api, uuid.uuid4()),
        (api, deleted.pk),
    ):
        call = client.post if suffix == "/run" else client.get
        response = call(url(str(monitor_id), suffix))
        assert response.status_code == 404
        assert response.json() == {
            "success": False,
            "error": "Monitor not found",
            "code": "NOT_FOUND",
        }
    assert not Check.objects.exists()


def test_check_endpoints_need_an_api_key(monitor):
    anonymous = APIClient()
    assert anonymous.post(url(monitor, "/run")).status_code == 401
    assert anonymous.get(url(monitor, "/checks")).status_code == 401


# --- list ------------------------------------------------------------------------


def test_checks_are_listed_newest_first(api, monitor):
    now = timezone.now()
    ids = []
    for minutes in (30, 20, 10):
        check = make_check(monitor)
        Check.objects.filter(pk=check.pk).update(
            created_at=now - timedelta(minutes=minutes)
        )
        ids.append(str(check.pk))

    response = api.get(url(monitor, "/checks"))

    assert response.status_code == 200
    data = response.json()["data"]
    assert [c["id"] for c in data] == ids[::-1]
    assert set(data[0]) == CHECK_KEYS


def test_check_list_pages_with_limit_and_offset(api, monitor):
    for _ in range(5):
        make_check(monitor)
    everything = [c["id"] for c in api.get(url(monitor, "/checks")).json()["data"]]

    page = api.get(url(monitor, "/checks?limit=2&offset=2")).json()["data"]

    assert [c["id"] for c in page] == everything[2:4]


def test_check_list_filters_by_status(api, monitor):
    make_check(monitor, status=Check.Status.COMPLETED)
    failed = make_check(monitor, status=Check.Status.FAILED, error="Lost.")

    data = api.get(url(monitor, "/checks?status=failed")).json()["data"]

    assert [c["id"] for c in data] == [str(failed.pk)]
    assert data[0]["error"] == "Lost."


@pytest.mark.parametrize(
    "query", ["status=done", "limit=0", "limit=101", "offset=-1", "limit=x"]
)
def test_bad_list_parameters_are_400(api, monitor, query):
    response = api.get(url(monitor, f"/checks?{query}"))
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST"


def test_other_monitors_checks_are_not_listed(api, team, monitor):
    make_check(make_monitor(team))
    assert api.get(url(monitor, "/checks")).json()["data"] == []


# --- detail ------------------------------------------------------------------------


def test_check_detail_has_the_contract_shape(api, monitor):
    check = make_check(
        monitor,
        summary={"totalPages": 1, "same": 0, "changed": 1, "new": 0, "removed": 0,
                 "error": 0},
        actual_credits=1,
        target_results=[{"targetId": "t", "type": "scrape", "expectedJobs": []}],
    )  # fmt: skip
    page = PageResult.objects.create(
        check_run=check,
        target_id=monitor.targets.get().pk,
        url="https://example.com/",
        status=PageResult.Status.CHANGED,
        previous_scrape_id=uuid.uuid4(),
        current_scrape_id=uuid.uuid4(),
        status_code=200,
        metadata={"title": "Example", "creditsUsed": 1},
        diff={"text": "--- previous\n+++ current\n", "json": {"files": []}},
    )

    response = api.get(url(monitor, f"/checks/{check.pk}"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"success", "data"}  # no `next` on the last page
    data = body["data"]
    assert set(data) == CHECK_KEYS | {"pages"}
    assert data["actualCredits"] == 1 and data["summary"]["changed"] == 1
    assert data["targetResults"][0]["type"] == "scrape"
    [shown] = data["pages"]
    assert set(shown) == PAGE_KEYS
    assert shown["id"] == str(page.pk)
    assert shown["targetId"] == str(page.target_id)
    assert shown["currentScrapeId"] == str(page.current_scrape_id)
    assert shown["statusCode"] == 200
    assert shown["diff"] == page.diff
    assert shown["judgment"] is None and shown["snapshot"] is None
    assert shown["metadata"] == {"title": "Example", "creditsUsed": 1}


def test_check_detail_pages_with_an_absolute_next(api, monitor, settings):
    settings.PUBLIC_BASE_URL = "https://pagewatch.example"
    settings.PUBLIC_BASE_URL_SET = True
    check = make_check(monitor, pages=30)
    base = f"https://pagewatch.example/v2/monitor/{monitor.pk}/checks/{check.pk}"

    first = api.get(url(monitor, f"/checks/{check.pk}")).json()

    assert len(first["data"]["pages"]) == 25
    assert first["next"] == f"{base}?skip=25&limit=25"
    assert first["data"]["next"] == first["next"]
    second = api.get(first["next"]).json()
    assert [p["url"] for p in second["data"]["pages"]] == [
        f"https://example.com/{i:02d}" for i in range(25, 30)
    ]
    assert "next" not in second and "next" not in second["data"]


def test_check_detail_filters_pages_and_keeps_the_filter_in_next(api, monitor):
    check = make_check(monitor, pages=30)

    body = api.get(url(monitor, f"/checks/{check.pk}?status=error&limit=2")).json()

    assert [p["url"] for p in body["data"]["pages"]] == [
        "https://example.com/09",
        "https://example.com/19",
    ]
    assert body["next"].endswith("?skip=2&limit=2&status=error")
    last = api.get(body["next"]).json()
    assert [p["url"] for p in last["data"]["pages"]] == ["https://example.com/29"]
    assert "next" not in last


def test_next_starts_at_the_public_base_url_whatever_the_request_says(
    api, monitor, settings
):
    # Behind a proxy the request's own host and scheme are the proxy's view
    # (http, an inner name); the JS SDK follows `next` as given, key and all.
    settings.PUBLIC_BASE_URL = "https://pagewatch.example"
    settings.PUBLIC_BASE_URL_SET = True
    check = make_check(monitor, pages=3)
    path = url(monitor, f"/checks/{check.pk}?limit=1")
    expected = f"https://pagewatch.example{path.replace('limit=1', 'skip=1&limit=1')}"
    forwarded = {
        "HTTP_X_FORWARDED_HOST": "evil.example",
        "HTTP_X_FORWARDED_PROTO": "http",
    }

    assert api.get(path).json()["next"] == expected
    assert api.get(path, **forwarded).json()["next"] == expected
    settings.USE_X_FORWARDED_HOST = True
    settings.ALLOWED_HOSTS = ["testserver", "evil.example"]
    assert api.get(path, **forwarded).json()["next"] == expected


def test_next_follows_the_requests_host_while_no_public_base_url_is_set(
    api, monitor, settings
):
    # The default names this machine: a client elsewhere would send its key
    # to its own 127.0.0.1 and stop short.
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    settings.PUBLIC_BASE_URL_SET = False
    settings.ALLOWED_HOSTS = ["pw.lan"]
    check = make_check(monitor, pages=3)
    path = url(monitor, f"/checks/{check.pk}?limit=1")

    body = api.get(path, HTTP_HOST="pw.lan:8000").json()

    assert body["next"] == "http://pw.lan:8000" + path.replace(
        "limit=1", "skip=1&limit=1"
    )
    make_check(monitor)
    checks = api.get(url(monitor, "/checks?limit=1"), HTTP_HOST="pw.lan:8000")
    assert checks.json()["next"].startswith(f"http://pw.lan:8000{url(monitor, '')}")


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "skip=-1", "status=queued"])
def test_bad_detail_parameters_are_400(api, monitor, query):
    check = make_check(monitor)
    assert api.get(url(monitor, f"/checks/{check.pk}?{query}")).status_code == 400


def test_unknown_malformed_and_foreign_checks_are_check_not_found(api, team, monitor):
    foreign = make_check(make_monitor(team))
    for check_id in (uuid.uuid4(), "nope", foreign.pk):
        response = api.get(url(monitor, f"/checks/{check_id}"))
        assert response.status_code == 404
        assert response.json() == {
            "success": False,
            "error": "Check not found",
            "code": "NOT_FOUND",
        }


def test_another_teams_check_is_monitor_not_found(other_api, monitor):
    check = make_check(monitor)
    response = other_api.get(url(monitor, f"/checks/{check.pk}"))
    assert response.status_code == 404
    assert response.json()["error"] == "Monitor not found"


# --- the schema -----------------------------------------------------------------------


def test_the_openapi_document_describes_the_check_endpoints(client):
    schema = client.get("/v2/openapi.json").json()
    paths = schema["paths"]
    run = paths["/v2/monitor/{monitor_id}/run"]["post"]
    assert run["operationId"] == "runMonitor"
    assert {"200", "409", "404"} <= set(run["responses"])
    listing = paths["/v2/monitor/{monitor_id}/checks"]["get"]
    assert listing["operationId"] == "listMonitorChecks"
    detail = paths["/v2/monitor/{monitor_id}/checks/{check_id}"]["get"]
    assert detail["operationId"] == "getMonitorCheck"
    assert {p["name"] for p in detail["parameters"]} >= {"limit", "skip", "status"}
