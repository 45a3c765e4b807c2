"""Every error the API can return carries a `code` (issue #21.3), and no
integer query parameter, however large or small, makes a 500 (issue #22.1).

Both walks start from the OpenAPI document, so an operation, an error status
or an integer parameter added later is walked too, or fails the test until it
is."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client
from django.test.utils import override_settings
from rest_framework.test import APIClient

from checks import dispatch
from checks.models import Check
from monitors.api.auth import ApiKeyAuthentication, ApiKeyRateThrottle
from monitors.models import ApiKey, ImportRun, Monitor

pytestmark = pytest.mark.django_db

MONITOR = {
    "name": "Pricing",
    "schedule": {"text": "hourly"},
    "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
}


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every operation in /v2/openapi.json. Run
    while tests are collected, outside Django's test set-up, hence the host."""
    with override_settings(ALLOWED_HOSTS=["testserver"]):
        schema = Client().get("/v2/openapi.json").json()
    return [
        (method, path, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]


@pytest.fixture
def world(api, monkeypatch) -> dict[str, str]:
    """A monitor with one finished check, and an import; ids to fill the paths
    with."""
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)
    monitor_id = api.post("/v2/monitor", MONITOR, format="json").json()["data"]["id"]
    check = Check.objects.create(
        monitor_id=monitor_id, trigger="manual", status="completed"
    )
    run = ImportRun.objects.create(
        team=Monitor.objects.get(pk=monitor_id).team, source="firecrawl"
    )
    channel = api.post(
        "/v2/channels",
        {"name": "Ops", "kind": "webhook", "settings": {"url": "https://e.com/h"}},
        format="json",
    ).json()["data"]
    return {
        "monitor_id": monitor_id,
        "check_id": str(check.pk),
        "import_id": str(run.pk),
        "channel_id": str(channel["id"]),
    }


def fill(path: str, ids: dict[str, str]) -> str:
    return path.format(**ids)


def call(client: APIClient, method: str, path: str, **kwargs: Any):
    return getattr(client, method)(path, **kwargs)


# --- how to make each documented error happen --------------------------------


def unauthorized(api, method, path, ids, settings):
    return call(APIClient(), method, fill(path, ids), data={}, format="json")


def rate_limited(api, method, path, ids, settings):
    ApiKeyRateThrottle.THROTTLE_RATES = {"api_key": "1/min"}
    call(api, "get", "/v2/monitor")
    return call(api, method, fill(path, ids), data={}, format="json")


def database_unreachable(api, method, path, ids, settings):
    def refuse(*args, **kwargs):
        raise OperationalError("connection failed: connection refused")

    with mock.patch.object(ApiKeyAuthentication, "_find", refuse):
        return call(api, method, fill(path, ids), data={}, format="json")


def not_found(api, method, path, ids, settings):
    which = next(
        (
            name
            for name in ("check_id", "import_id", "channel_id")
            if f"{{{name}}}" in path
        ),
        "monitor_id",
    )
    missing = ids | {which: str(uuid.uuid4())}
    return call(api, method, fill(path, missing), data={}, format="json")


def bad_request(api, method, path, ids, settings):
    if method == "get":
        return call(api, method, fill(path, ids) + "?limit=0")
    body = {"unknownKey": 1} if path.endswith("/run") else {"name": 42}
    return call(api, method, fill(path, ids), data=body, format="json")


def too_large(api, method, path, ids, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    body = dict(MONITOR, name="n" * 4000)
    return call(api, method, fill(path, ids), data=body, format="json")


def not_json(api, method, path, ids, settings):
    return call(api, method, fill(path, ids), data="name=x", content_type="text/plain")


def read_only_key(api, method, path, ids, settings):
    team = Monitor.objects.get(pk=ids["monitor_id"]).team
    _, raw = ApiKey.issue(team, scope=ApiKey.Scope.READ)
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return call(reader, method, fill(path, ids), data={}, format="json")


def conflict(api, method, path, ids, settings):
    Monitor.objects.filter(pk=ids["monitor_id"]).update(status="paused")
    return call(api, method, fill(path, ids), data={}, format="json")


RECIPES: dict[str, Callable[..., Any]] = {
    "400": bad_request,
    "401": unauthorized,
    "403": read_only_key,
    "404": not_found,
    "409": conflict,
    "413": too_large,
    "415": not_json,
    "429": rate_limited,
    "503": database_unreachable,
}


def documented_errors() -> list[tuple[str, str, str]]:
    return [
        (method, path, status)
        for method, path, operation in operations()
        for status in operation["responses"]
        # Errors only: a documented 304 (If-None-Match) has no body at all,
        # and tests/test_api_sync.py drives it.
        if status.startswith(("4", "5"))
    ]


def assert_error_envelope(response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["success"] is False
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body.get("code"), str) and body["code"], body
    return body


@pytest.fixture(autouse=True)
def restore_throttle_rates():
    saved = ApiKeyRateThrottle.THROTTLE_RATES
    yield
    ApiKeyRateThrottle.THROTTLE_RATES = saved


@pytest.mark.parametrize(("method", "path", "status"), documented_errors())
def test_every_documented_error_has_a_code(api, world, settings, method, path, status):
    assert status in RECIPES, f"no way to provoke {status} on {method} {path}"
    response = RECIPES[status](api, method, path, world, settings)
    assert_error_envelope(response, int(status))


def test_the_two_run_conflicts_have_codes_of_their_own(api, world):
    run = f"/v2/monitor/{world['monitor_id']}/run"
    Check.objects.filter(pk=world["check_id"]).update(status="running")
    body = assert_error_envelope(api.post(run, {}, format="json"), 409)
    assert (body["code"], body["checkId"]) == (
        "CHECK_ALREADY_RUNNING",
        world["check_id"],
    )
    Monitor.objects.filter(pk=world["monitor_id"]).update(status="paused")
    body = assert_error_envelope(api.post(run, {}, format="json"), 409)
    assert body["code"] == "MONITOR_PAUSED"


def test_a_missing_monitor_and_check_say_not_found(api, world):
    body = assert_error_envelope(api.get(f"/v2/monitor/{uuid.uuid4()}"), 404)
    assert body == {"success": False, "error": "Monitor not found", "code": "NOT_FOUND"}
    checks = f"/v2/monitor/{world['monitor_id']}/checks/not-a-uuid"
    assert assert_error_envelope(api.get(checks), 404)["error"] == "Check not found"


@pytest.mark.parametrize(
    ("make", "status", "code"),
    [
        (
            lambda api: api.put("/v2/monitor", {}, format="json"),
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (lambda api: api.options("/v2/monitor"), 405, "METHOD_NOT_ALLOWED"),
        (
            lambda api: api.get("/v2/monitor", HTTP_ACCEPT="text/html"),
            406,
            "NOT_ACCEPTABLE",
        ),
        (lambda api: api.get("/v2/nothing-here"), 404, "NOT_FOUND"),
        (
            lambda api: api.get("/v2/monitor", HTTP_HOST="evil.example"),
            400,
            "BAD_REQUEST",
        ),
        (
            lambda api: api.post(
                "/v2/monitor", "[" * 100_000, content_type="application/json"
            ),
            400,
            "BAD_REQUEST_INVALID_JSON",
        ),
        (
            lambda api: api.post(
                "/v2/monitor", "{nope", content_type="application/json"
            ),
            400,
            "BAD_REQUEST_INVALID_JSON",
        ),
        (
            lambda api: APIClient().get("/v2/monitor", HTTP_AUTHORIZATION="Basic eDp5"),
            401,
            "UNAUTHORIZED",
        ),
    ],
)
def test_errors_outside_the_documented_ones_have_codes_too(api, make, status, code):
    assert assert_error_envelope(make(api), status)["code"] == code


def test_an_unexpected_failure_has_a_code(api, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("monitors.api.views.with_relations", explode)
    body = assert_error_envelope(api.get("/v2/monitor"), 500)
    assert body == {
        "success": False,
        "error": "An unexpected error occurred.",
        "code": "UNKNOWN_ERROR",
    }


# --- integer query parameters (issue #22.1) ---------------------------------------

EXTREMES = [0, -1, 2**63, 10**30, "1" * 5000]


def integer_parameters() -> list[tuple[str, str]]:
    return [
        (path, parameter["name"])
        for method, path, operation in operations()
        if method == "get"
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query"
        and parameter.get("schema", {}).get("type") == "integer"
    ]


def test_the_walk_finds_every_paging_parameter():
    assert len(integer_parameters()) == 8  # limit and before of /v2/activity too
    assert (
        "/v2/monitor/{monitor_id}/checks/{check_id}",
        "skip",
    ) in integer_parameters()


@pytest.mark.parametrize(("path", "name"), integer_parameters())
@pytest.mark.parametrize("value", EXTREMES)
def test_no_integer_parameter_value_makes_a_500(api, world, path, name, value):
    response = api.get(fill(path, world), {name: str(value)})
    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        body = assert_error_envelope(response, 400)
        assert body["error"].startswith(f"{name}: Must be")
    else:
        assert response.json()["success"] is True


def test_a_huge_skip_or_offset_is_an_empty_page(api, world):
    detail = f"/v2/monitor/{world['monitor_id']}/checks/{world['check_id']}"
    response = api.get(detail, {"skip": "9" * 30})
    assert response.status_code == 200
    assert response.json()["data"]["pages"] == []
    assert "next" not in response.json()
    listing = api.get(f"/v2/monitor/{world['monitor_id']}/checks", {"offset": 2**63})
    assert listing.json() == {"success": True, "data": []}


@pytest.mark.parametrize("value", ["1.5", "ten", "0x10", "1_0", "٣"])
def test_a_parameter_that_is_not_a_whole_number_is_named(api, world, value):
    detail = f"/v2/monitor/{world['monitor_id']}/checks/{world['check_id']}"
    body = assert_error_envelope(api.get(detail, {"skip": value}), 400)
    assert body["error"] == "skip: Must be an integer."


def test_a_too_deeply_nested_body_logs_one_line_not_a_traceback(api, caplog):
    nested = "[" * 100_000 + "]" * 100_000
    with caplog.at_level(logging.INFO):
        response = api.post("/v2/monitor", nested, content_type="application/json")
    assert assert_error_envelope(response, 400)["code"] == "BAD_REQUEST_INVALID_JSON"
    assert all(record.exc_info is None for record in caplog.records)
    ours = [r for r in caplog.records if r.name == "monitors.api.errors"]
    assert [r.getMessage() for r in ours] == [
        "Request body nested too deeply: POST /v2/monitor"
    ]


def test_a_trailing_slash_reaches_the_same_endpoint_as_firecrawls_server_does(
    api_key, world
):
    # CSRF checks on, as a browser's would be: API keys, not cookies, guard it.
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    created = client.post("/v2/monitor/", MONITOR, format="json")
    assert created.status_code == 200
    new_id = created.json()["data"]["id"]
    assert Monitor.objects.filter(pk=new_id).exists()

    listed = client.get("/v2/monitor/").json()["data"]
    assert {m["id"] for m in listed} == {new_id, world["monitor_id"]}
    checks = client.get(f"/v2/monitor/{world['monitor_id']}/checks/").json()
    assert [c["id"] for c in checks["data"]] == [world["check_id"]]


def test_an_unknown_path_with_a_trailing_slash_is_the_apis_not_found(api):
    body = assert_error_envelope(api.get("/v2/nothing-here/"), 404)
    assert body["code"] == "NOT_FOUND"
    assert assert_error_envelope(api.get("/v2/monitor//"), 404)["code"] == "NOT_FOUND"


def test_a_rate_counter_evicted_between_add_and_incr_still_answers_and_counts(api):
    """Redis may drop the counter right after `add` (it has a time-to-live, so
    the volatile-* eviction policies take it first; or a FLUSHDB): Django's
    incr then raises ValueError, which was a 500 with a traceback."""
    cache = ApiKeyRateThrottle.cache
    evicted = []

    def add_then_evict(key: str, value: Any, timeout: Any = None) -> bool:
        evicted.append(key)
        return True  # as if added, and gone before the incr

    with mock.patch.object(cache, "add", add_then_evict):
        response = api.get("/v2/monitor")

    assert response.status_code == 200, response.content
    assert evicted and cache.get(evicted[0]) == 1


# --- OPTIONS and ?format= stay inside the API's answers --------------------------


def allowed(response) -> list[str]:
    return [method.strip() for method in response["Allow"].split(",")]


@pytest.mark.parametrize("path", dict.fromkeys(path for _, path, _ in operations()))
def test_options_is_refused_and_not_offered_in_allow(api, world, path):
    response = api.options(fill(path, world))

    body = assert_error_envelope(response, 405)
    assert body["code"] == "METHOD_NOT_ALLOWED"
    assert "GET" in allowed(response) or "POST" in allowed(response)
    assert "OPTIONS" not in allowed(response)


@pytest.mark.parametrize("path", ["/v2/openapi.json", "/v2/docs"])
def test_the_api_documents_do_not_offer_options_either(api, path):
    response = api.options(path)

    assert response.status_code == 405
    assert allowed(response) == ["GET", "HEAD"]


@pytest.mark.parametrize("path", ["/v2/openapi.json", "/v2/docs"])
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "options"])
def test_the_api_documents_refuse_other_methods_in_the_error_envelope(
    api, path, method
):
    response = getattr(api, method)(path)

    body = assert_error_envelope(response, 405)
    assert body == {
        "success": False,
        "error": f'Method "{method.upper()}" not allowed.',
        "code": "METHOD_NOT_ALLOWED",
    }


@pytest.mark.parametrize("path", ["/v2/openapi.json", "/v2/docs"])
def test_the_api_documents_refuse_a_format_in_the_error_envelope(api, path):
    response = api.get(path + "?format=xml")

    body = assert_error_envelope(response, 406)
    assert body == {
        "success": False,
        "error": "Unknown format 'xml': the API answers in JSON only.",
        "code": "NOT_ACCEPTABLE",
    }


def test_a_method_a_path_lacks_is_refused_without_offering_options(api):
    response = api.put("/v2/monitor", {}, format="json")

    assert assert_error_envelope(response, 405)["code"] == "METHOD_NOT_ALLOWED"
    assert response["Allow"] == "GET, POST, HEAD"


@pytest.mark.parametrize(
    "path", [path for method, path, _ in operations() if method == "get"]
)
def test_a_format_the_api_cannot_answer_in_is_not_acceptable(api, world, path):
    response = api.get(fill(path, world) + "?format=xml")

    body = assert_error_envelope(response, 406)
    assert body == {
        "success": False,
        "error": "Unknown format 'xml': the API answers in JSON only.",
        "code": "NOT_ACCEPTABLE",
    }


def test_format_json_answers_as_without_it(api, world):
    plain = api.get("/v2/monitor")
    asked = api.get("/v2/monitor?format=json")

    assert asked.status_code == 200
    assert asked.json() == plain.json()
