"""API keys: Bearer only, revocable at once, last use recorded, every API route
behind them unless it is on the explicit public list, per-key throttling
(security.md §3)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
import time_machine
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from monitors.api.auth import ApiKeyRateThrottle
from monitors.models import KEY_PREFIX, ApiKey, Monitor

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"
NOW = datetime(2026, 5, 16, 12, 0, tzinfo=UTC)
BODY = {
    "name": "Pricing page",
    "schedule": {"text": "hourly"},
    "targets": [{"type": "scrape", "urls": ["https://example.com/"]}],
}

# Routes under /v2/ that answer without an API key, and why.
PUBLIC_V2_ROUTES = {
    "v2/openapi.json",  # the API description
    "v2/docs",  # its rendering
    # Firecrawl's e-mail consent endpoints take the token in the body as the
    # credential (reference §3); listed so they may be added without a key.
    "v2/monitor/email/confirm",
    "v2/monitor/email/unsubscribe",
}


def client(authorization: str | None = None) -> APIClient:
    api = APIClient()
    if authorization is not None:
        api.credentials(HTTP_AUTHORIZATION=authorization)
    return api


def assert_unauthorized(response) -> dict:
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"] == "Bearer"
    payload = response.json()
    assert payload["success"] is False
    assert payload["code"] == "UNAUTHORIZED"
    assert payload["error"].startswith("Unauthorized")
    return payload


@pytest.fixture
def monitor_id(api) -> str:
    return api.post(URL, BODY, format="json").json()["data"]["id"]


# ------------------------------------------------------------------ rejected keys


def test_request_without_a_key_gets_401_naming_the_header(db):
    payload = assert_unauthorized(client().get(URL))
    assert "Authorization: Bearer" in payload["error"]


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer",
        "Bearer   ",
        "Basic dXNlcjpwYXNz",
        "Token pw_abc",
        "pw_abcdefghijklmnop",
        "Bearerpw_abc",
    ],
)
def test_malformed_authorization_header_gets_401(db, authorization):
    assert_unauthorized(client(authorization).get(URL))


@pytest.mark.parametrize(
    "raw",
    [
        "fc-0123456789abcdef",
        KEY_PREFIX + "doesnotexist0000000000000000000000000000",
        KEY_PREFIX,
        KEY_PREFIX + "x" * 300,
    ],
)
def test_unknown_key_gets_401_invalid_token(db, raw):
    payload = assert_unauthorized(client(f"Bearer {raw}").get(URL))
    assert payload["error"] == "Unauthorized: Invalid token"


def test_key_with_a_known_prefix_but_wrong_secret_gets_401(api_key):
    forged = api_key[: len(KEY_PREFIX) + 12] + "A" * (
        len(api_key) - len(KEY_PREFIX) - 12
    )
    assert forged != api_key
    assert_unauthorized(client(f"Bearer {forged}").get(URL))


def test_bearer_scheme_is_case_insensitive(api_key):
    assert client(f"bearer {api_key}").get(URL).status_code == 200


def test_key_in_the_query_string_is_ignored(api_key):
    assert_unauthorized(client().get(f"{URL}?api_key={api_key}"))


def test_revoked_key_gets_401_at_once(api, api_key, monitor_id):
    assert api.get(f"{URL}/{monitor_id}").status_code == 200
    ApiKey.objects.get(prefix=api_key[len(KEY_PREFIX) :][:12]).revoke()

    assert_unauthorized(api.get(f"{URL}/{monitor_id}"))
    assert_unauthorized(api.patch(f"{URL}/{monitor_id}", {"name": "x"}, format="json"))
    assert_unauthorized(api.delete(f"{URL}/{monitor_id}"))
    monitor = Monitor.objects.get(pk=monitor_id)
    assert (monitor.name, monitor.deleted_at) == ("Pricing page", None)


def test_revoking_one_key_leaves_the_teams_other_keys_working(team, api, api_key):
    _, second = ApiKey.issue(team, name="second")
    ApiKey.objects.get(prefix=api_key[len(KEY_PREFIX) :][:12]).revoke()
    assert client(f"Bearer {second}").get(URL).status_code == 200


def test_rejected_requests_write_nothing(db):
    response = client("Bearer pw_nope").post(URL, BODY, format="json")
    assert_unauthorized(response)
    assert Monitor.objects.count() == 0


# ------------------------------------------------------------------ keys at rest


def test_only_a_hash_of_the_key_is_stored(team):
    key, raw = ApiKey.issue(team)
    stored = ApiKey.objects.filter(pk=key.pk).values().get()
    assert raw not in {str(value) for value in stored.values()}
    assert stored["key_hash"] == ApiKey.hash_key(raw)
    assert raw.startswith(KEY_PREFIX) and len(raw) >= 40


def test_last_use_is_recorded_at_most_once_a_minute(api_key, api):
    key = ApiKey.objects.get(prefix=api_key[len(KEY_PREFIX) :][:12])
    assert key.last_used_at is None

    with time_machine.travel(NOW, tick=False) as clock:
        api.get(URL)
        key.refresh_from_db()
        assert key.last_used_at == NOW

        clock.shift(timedelta(seconds=59))
        api.get(URL)
        key.refresh_from_db()
        assert key.last_used_at == NOW

        clock.shift(timedelta(seconds=2))
        api.get(URL)
        key.refresh_from_db()
        assert key.last_used_at == NOW + timedelta(seconds=61)


def test_failed_attempts_do_not_count_as_use(api_key):
    key = ApiKey.objects.get(prefix=api_key[len(KEY_PREFIX) :][:12])
    key.revoke()
    client(f"Bearer {api_key}").get(URL)
    key.refresh_from_db()
    assert key.last_used_at is None


# ------------------------------------------------------------------ caching


def test_no_api_answer_may_be_stored_by_a_cache(api, monitor_id):
    answers = [
        api.get(URL),
        api.get(f"{URL}/{monitor_id}"),
        api.get(f"{URL}/{monitor_id}/checks"),
        api.post(URL, BODY, format="json"),
        api.patch(f"{URL}/{monitor_id}", {"name": "x"}, format="json"),
        api.get(f"{URL}/{uuid4()}"),
        api.get("/v2/nowhere"),
        client().get(URL),
    ]

    for answer in answers:
        assert answer["Cache-Control"] == "no-store", answer.wsgi_request.path


# ------------------------------------------------------------------ every route


def v2_routes() -> list[str]:
    """Every URL pattern under /v2/, with path converters filled in."""
    found: list[str] = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and route.startswith("v2/"):
                found.append(route)

    walk(get_resolver().url_patterns, "")
    return found


def test_route_walk_finds_the_monitor_routes():
    routes = v2_routes()
    assert "v2/monitor" in routes
    assert "v2/monitor/<str:monitor_id>" in routes


@pytest.mark.parametrize("route", [r for r in v2_routes() if r not in PUBLIC_V2_ROUTES])
@pytest.mark.parametrize("method", ["get", "post", "patch", "put", "delete"])
def test_every_v2_route_needs_an_api_key(db, team, route, method):
    Monitor.objects.create(team=team, name="m", schedule_cron="0 * * * *")
    path = "/" + re.sub(
        r"<(?:\w+:)?\w+>", "0190a0a0-0000-7000-8000-000000000001", route
    )
    for authorization in (None, "Bearer pw_wrong"):
        response = getattr(client(authorization), method)(path, {}, format="json")
        assert_unauthorized(response)
    assert Monitor.objects.get().name == "m"


@pytest.mark.parametrize("route", [r for r in v2_routes() if r not in PUBLIC_V2_ROUTES])
@pytest.mark.parametrize(
    "asking",
    [{"format": "xml"}, {"HTTP_ACCEPT": "application/xml"}],
    ids=["format", "accept"],
)
def test_a_caller_without_a_key_gets_401_whatever_form_it_asks_for(
    db, team, route, asking
):
    path = "/" + re.sub(
        r"<(?:\w+:)?\w+>", "0190a0a0-0000-7000-8000-000000000001", route
    )
    query = {"format": asking["format"]} if "format" in asking else {}
    headers = {k: v for k, v in asking.items() if k.startswith("HTTP_")}
    for authorization in (None, "Bearer pw_wrong"):
        response = client(authorization).get(path, query, **headers)
        assert_unauthorized(response)
        assert response.json() == client(authorization).get(path).json()


@pytest.mark.parametrize("route", sorted(PUBLIC_V2_ROUTES & set(v2_routes())))
def test_public_v2_routes_answer_without_a_key(db, route):
    response = client().get("/" + route)
    assert response.status_code != 401


# ------------------------------------------------------------------ throttling


@pytest.fixture
def two_a_minute(monkeypatch):
    from django.core.cache import cache

    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "2/min"})
    cache.clear()
    yield
    cache.clear()


def test_each_key_is_throttled_on_its_own_with_retry_after(
    api, other_api, two_a_minute
):
    with time_machine.travel(NOW, tick=False):
        assert api.get(URL).status_code == 200
        assert api.get(URL).status_code == 200
        limited = api.post(URL, BODY, format="json")
        assert other_api.get(URL).status_code == 200

    assert limited.status_code == 429
    assert limited["Retry-After"] == "60"
    assert limited.json() == {
        "success": False,
        "error": "Rate limit exceeded. Retry after 60 seconds.",
        "code": "RATE_LIMITED",
    }
    assert Monitor.objects.count() == 0

    with time_machine.travel(NOW + timedelta(seconds=61), tick=False):
        assert api.get(URL).status_code == 200


def test_a_key_does_not_inherit_the_count_of_a_rolled_back_one(team, two_a_minute):
    # A rolled-back key frees its row id on SQLite (this is what happens between
    # tests); the throttle must not mistake the next key for it.
    class Undo(Exception):
        pass

    with time_machine.travel(NOW, tick=False):
        with pytest.raises(Undo), transaction.atomic():
            _, old_raw = ApiKey.issue(team)
            for _ in range(2):
                assert client(f"Bearer {old_raw}").get(URL).status_code == 200
            raise Undo
        _, new_raw = ApiKey.issue(team)
        assert client(f"Bearer {new_raw}").get(URL).status_code == 200
