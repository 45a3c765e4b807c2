"""/v2/openapi.json describes the API truthfully: schemathesis generates requests
from it and checks every answer against it; /v2/docs renders it."""

from __future__ import annotations

import re
import uuid

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from monitors.models import Monitor, Target, Team
from monitors.moving import remote
from monitors.moving.base import ImportRefused

EXAMPLES_PER_OPERATION = 30
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


@pytest.fixture
def openapi_document(db) -> dict:
    response = APIClient().get("/v2/openapi.json")
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def api_schema(db):
    """The schema, served and exercised through the real WSGI application."""
    from config.wsgi import application

    # Like Django's test client: a finished request must not close the
    # connection that holds the test's transaction (it would on PostgreSQL).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/v2/openapi.json", application)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def seeded_monitor(team: Team) -> str:
    monitor = Monitor.objects.create(
        team=team,
        name="Seed",
        schedule_cron="*/30 * * * *",
        goal="Price changes",
        judge_enabled=True,
        webhook={
            "url": "https://hooks.example.com/x",
            "headers": {},
            "metadata": {},
            "events": ["monitor.page", "monitor.check.completed"],
        },
        notification={
            "email": {"enabled": True, "recipients": [], "includeDiffs": False}
        },
    )
    Target.objects.create(
        monitor=monitor, type="scrape", urls=["https://example.com/"], position=0
    )
    return str(monitor.pk)


async def _unreachable(reading: object, url: str, headers: object) -> tuple[int, bytes]:
    raise ImportRefused(f"Could not read {url[:200]}: unreachable in tests.")


# schemathesis.pytest.from_fixture() cannot run under pytest 9 (it sets the
# removed Node._nodeid), so each operation is driven through its Hypothesis
# strategy here, with the same checks.
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_answer_matches_the_openapi_description(
    api_schema, api_key, team, mode, monkeypatch
):
    # POST /v2/import with a generated address would look it up: no network
    # here, every remote source answers as an unreachable one does.
    monkeypatch.setattr(remote.Reading, "aget", _unreachable)
    headers = {"Authorization": f"Bearer {api_key}"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 5

    for operation in operations:

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def exchange(case) -> None:
            # Random UUIDs only ever meet a 404; point most positive cases at a
            # real monitor so the 200 shapes are checked as well.
            ids = case.path_parameters or {}
            if (
                mode is GenerationMode.POSITIVE
                and "monitor_id" in ids
                and str(ids["monitor_id"])[-1:] not in ("0", "1", "2", "3")
            ):
                ids["monitor_id"] = seeded_monitor(team)
            case.call_and_validate(headers=headers, checks=CHECKS)

        exchange()


RICH_MONITOR = {
    "name": "Everything at once",
    "schedule": {
        "text": "every 15 minutes starting at :07",
        "timezone": "Europe/Berlin",
    },
    "goal": "Tell me about price changes",
    "retentionDays": 365,
    "targets": [
        {
            "type": "scrape",
            "urls": ["https://example.com/pricing"],
            "scrapeOptions": {
                "formats": ["markdown", {"type": "json", "prompt": "prices"}],
                "onlyMainContent": True,
                "futureOption": {"kept": True},
            },
        },
        {
            "type": "crawl",
            "url": "https://example.com/blog",
            "crawlOptions": {"limit": 20, "includePaths": ["^/blog/"]},
        },
        {
            "type": "search",
            "queries": ["pagewatch"],
            "searchWindow": "7d",
            "includeDomains": ["example.com"],
        },
    ],
    "webhook": {
        "url": "https://hooks.example.com/pw",
        "headers": {"Authorization": "Bearer s3cret"},
        "metadata": {"env": "test"},
        "events": ["monitor.page"],
    },
    "notification": {
        "email": {
            "enabled": True,
            "recipients": ["a@example.com"],
            "includeDiffs": True,
        }
    },
    "origin": "python-sdk@4.52.1",
}


def test_known_good_exchanges_match_the_openapi_description(api_schema, api_key):
    # Generated bodies rarely pass every rule; these succeed for certain.
    headers = {"Authorization": f"Bearer {api_key}"}
    monitors = api_schema["/v2/monitor"]
    monitor = api_schema["/v2/monitor/{monitor_id}"]

    created = monitors["POST"].Case(body=RICH_MONITOR, media_type="application/json")
    response = created.call_and_validate(headers=headers, checks=CHECKS)
    assert response.status_code == 200
    monitor_id = response.json()["data"]["id"]
    ids = {"monitor_id": monitor_id}

    exchanges = [
        monitors["GET"].Case(query={"limit": 1, "offset": 0}),
        monitor["GET"].Case(path_parameters=ids),
        # Refused: the search target still needs the goal (a documented 400).
        monitor["PATCH"].Case(
            path_parameters=ids,
            body={"status": "paused", "webhook": None, "goal": None},
            media_type="application/json",
        ),
        monitor["PATCH"].Case(
            path_parameters=ids,
            body={"goal": "", "judgeEnabled": False, "notification": None},
            media_type="application/json",
        ),
        monitor["DELETE"].Case(path_parameters=ids),
        monitor["GET"].Case(path_parameters=ids),
    ]
    statuses = [
        case.call_and_validate(headers=headers, checks=CHECKS).status_code
        for case in exchanges
    ]
    assert statuses == [200, 200, 400, 200, 200, 404]


def test_error_answers_match_the_openapi_description(api_schema, api_key):
    monitors = api_schema["/v2/monitor"]
    good = {"Authorization": f"Bearer {api_key}"}
    cases = [
        (monitors["GET"].Case(query={"limit": 0}), good, 400),
        (monitors["GET"].Case(), {"Authorization": "Bearer pw_nope"}, 401),
        (
            monitors["POST"].Case(body={"name": "x"}, media_type="application/json"),
            good,
            400,
        ),
        (
            api_schema["/v2/monitor/{monitor_id}"]["GET"].Case(
                path_parameters={"monitor_id": str(uuid.uuid4())}
            ),
            good,
            404,
        ),
    ]
    for case, headers, status in cases:
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        assert response.status_code == status


# ------------------------------------------------------------------ the document


def test_openapi_document_is_served_without_a_key(openapi_document):
    assert openapi_document["openapi"].startswith("3.")
    assert {
        "/v2/monitor",
        "/v2/monitor/{monitor_id}",
    } <= openapi_document["paths"].keys()


def test_openapi_declares_the_bearer_scheme_on_every_operation(openapi_document):
    schemes = openapi_document["components"]["securitySchemes"]
    [(name, scheme)] = [(n, s) for n, s in schemes.items() if s.get("scheme")]
    assert scheme["type"] == "http"
    assert scheme["scheme"] == "bearer"
    for path, operations in openapi_document["paths"].items():
        for method, operation in operations.items():
            assert operation["security"] == [{name: []}], (method, path)


def test_openapi_documents_the_envelopes_and_errors(openapi_document):
    monitor = openapi_document["paths"]["/v2/monitor"]
    detail = openapi_document["paths"]["/v2/monitor/{monitor_id}"]
    # 503: the database or the task queue unreachable, on every operation.
    expected = {
        # 304: If-None-Match named the answer's ETag (a Pagewatch extension).
        ("get", "/v2/monitor"): {"200", "304", "400", "401", "429", "503"},
        # 403: a read-only key asked to change something.
        ("post", "/v2/monitor"): {
            "200",
            "400",
            "401",
            "403",
            "413",
            "415",
            "429",
            "503",
        },
        ("get", "/v2/monitor/{id}"): {"200", "304", "401", "404", "429", "503"},
        ("patch", "/v2/monitor/{id}"): {
            "200",
            "400",
            "401",
            "403",
            "404",
            "413",
            "415",
            "429",
            "503",
        },
        ("delete", "/v2/monitor/{id}"): {"200", "401", "403", "404", "429", "503"},
    }
    operations = {
        ("get", "/v2/monitor"): monitor["get"],
        ("post", "/v2/monitor"): monitor["post"],
        ("get", "/v2/monitor/{id}"): detail["get"],
        ("patch", "/v2/monitor/{id}"): detail["patch"],
        ("delete", "/v2/monitor/{id}"): detail["delete"],
    }
    components = openapi_document["components"]["schemas"]

    def schema_of(response: dict) -> dict:
        ref = response["content"]["application/json"]["schema"]["$ref"]
        return components[ref.rsplit("/", 1)[1]]

    for key, operation in operations.items():
        responses = operation["responses"]
        assert set(responses) == expected[key], key
        assert "success" in schema_of(responses["200"])["properties"]
        for status, response in responses.items():
            if status == "304":
                assert "content" not in response, key
            elif status != "200":
                error = schema_of(response)
                assert {"success", "error"} <= set(error["required"])
                assert {"code", "details"} <= error["properties"].keys()
        assert "Retry-After" in responses["429"]["headers"]
        assert "Retry-After" in responses["503"]["headers"]
        assert "WWW-Authenticate" in responses["401"]["headers"]
    for envelope in ("MonitorResponse", "MonitorListResponse"):
        assert {"success", "data"} <= set(components[envelope]["required"])


def test_openapi_documents_the_paging_ranges(openapi_document):
    parameters = {
        p["name"]: p["schema"]
        for p in openapi_document["paths"]["/v2/monitor"]["get"]["parameters"]
    }
    assert parameters["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 25,
    }
    assert parameters["offset"] == {"type": "integer", "minimum": 0, "default": 0}


def test_openapi_documents_the_input_limits(openapi_document):
    components = openapi_document["components"]["schemas"]
    create = components["MonitorWriteRequest"]
    assert set(create["required"]) == {"name", "schedule", "targets"}
    assert create["properties"]["name"]["maxLength"] == 256
    assert create["properties"]["goal"]["maxLength"] == 2000
    assert create["properties"]["targets"]["minItems"] == 1
    assert create["properties"]["targets"]["maxItems"] == 50
    retention = create["properties"]["retentionDays"]
    assert (retention["minimum"], retention["maximum"]) == (1, 365)
    search = components["SearchTargetRequest"]["properties"]
    assert search["queries"]["maxItems"] == 12
    assert search["queries"]["items"]["maxLength"] == 256
    assert (search["maxResults"]["minimum"], search["maxResults"]["maximum"]) == (1, 50)
    assert search["maxResults"]["default"] == 10
    recipients = components["EmailNotificationRequest"]["properties"]["recipients"]
    assert recipients["maxItems"] == 25
    update = components["PatchedMonitorUpdateRequest"]
    assert "required" not in update
    assert "status" in update["properties"]


def test_openapi_maps_each_target_type_to_its_shape(openapi_document):
    target = openapi_document["components"]["schemas"]["MonitorTarget"]
    assert target["discriminator"]["mapping"] == {
        "scrape": "#/components/schemas/ScrapeTarget",
        "crawl": "#/components/schemas/CrawlTarget",
        "search": "#/components/schemas/SearchTarget",
    }


def test_api_docs_page_renders(db):
    response = APIClient().get("/v2/docs")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "swagger-ui" in html
    # Every script and stylesheet is ours (static files), none inline.
    sources = re.findall(r'<(?:script|link)[^>]* (?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith(("/static/", "/v2/docs")) for s in sources)
    assert "<style" not in html and re.search(r"<script>", html) is None
    script = APIClient().get("/v2/docs", {"script": ""})
    assert script.status_code == 200
    assert "/v2/openapi.json" in script.content.decode()


def test_openapi_documents_the_paging_ranges_of_a_checks_pages(openapi_document):
    """schemathesis sent ?limit=-445750767 to the check detail, which the
    document allowed and the server refused with a 400."""
    operation = openapi_document["paths"]["/v2/monitor/{monitor_id}/checks/{check_id}"]
    parameters = {p["name"]: p["schema"] for p in operation["get"]["parameters"]}
    assert parameters["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 25,
    }
    assert parameters["skip"] == {"type": "integer", "minimum": 0, "default": 0}


def test_openapi_says_which_request_bodies_refuse_unknown_keys(openapi_document):
    """schemathesis sent {"": []} to run now, a body the document allowed (it
    said nothing of other keys) and the server refused with a 400."""
    components = openapi_document["components"]["schemas"]
    strict = [
        "MonitorWriteRequest",
        "PatchedMonitorUpdateRequest",
        "RunRequestRequest",
        "ScheduleRequest",
        "WebhookRequest",
        "NotificationRequest",
        "EmailNotificationRequest",
        "ScrapeTargetRequest",
        "CrawlTargetRequest",
        "SearchTargetRequest",
        "ChannelInputRequest",
        "PatchedChannelInputRequest",
    ]
    for name in strict:
        assert components[name]["additionalProperties"] is False, name
    # Keys taken and ignored (the SDKs' origin, Firecrawl's dropped search
    # keys) are listed, so the document still allows what the server takes.
    assert "origin" in components["ChannelInputRequest"]["properties"]
    legacy = components["SearchTargetRequest"]["properties"]
    assert {"depth", "alertMode", "recheckAfter", "scrapeOptions"} <= legacy.keys()
    assert legacy["depth"]["deprecated"] is True
    # Firecrawl's catch-alls stay open: an option of theirs is kept as given.
    for name in ("ScrapeOptionsRequest", "CrawlOptionsRequest"):
        assert components[name].get("additionalProperties") is not False, name
    # Options also taken under their Python names cannot list every spelling.
    assert components["ProfileRequest"].get("additionalProperties") is not False


@pytest.mark.django_db
def test_keys_the_document_lists_as_ignored_are_taken(api, team):
    channel = api.post(
        "/v2/channels",
        {
            "name": "Ops hook",
            "kind": "webhook",
            "settings": {"url": "https://hooks.example.com/ops"},
            "origin": "js-sdk@4.42.0",
        },
        format="json",
    )
    assert channel.status_code == 200, channel.json()
    monitor = api.post(
        "/v2/monitor",
        {
            "name": "News",
            "schedule": {"text": "hourly"},
            "judgeEnabled": False,
            "targets": [{"type": "search", "queries": ["pagewatch"], "depth": "deep"}],
        },
        format="json",
    )
    assert monitor.status_code == 200, monitor.json()
    assert "depth" not in monitor.json()["data"]["targets"][0]


def test_openapi_documents_what_run_now_refuses_of_its_body(openapi_document):
    responses = openapi_document["paths"]["/v2/monitor/{monitor_id}/run"]["post"][
        "responses"
    ]
    assert {"413", "415"} <= responses.keys()


def test_openapi_descriptions_are_for_integrators_not_notes_on_the_code(
    openapi_document,
):
    """drf-spectacular publishes a serializer's docstring, a mixin's included,
    as its component's description: the document told integrators about
    `partial=True`, `context["team"]` and which SDK version once misbehaved."""
    code_words = (
        "partial=True",
        "context[",
        "Serializer",
        "snake_case",
        "(4.52)",
        "monitors.",
    )
    for name, schema in openapi_document["components"]["schemas"].items():
        description = schema.get("description", "")
        assert not any(word in description for word in code_words), (name, description)
        assert "Reject keys the object does not define" not in description, name
    # A view's docstring is its operation's description, the base class's too:
    # every operation said "DRF's APIView with the caller judged before...".
    for path, operations in openapi_document["paths"].items():
        for method, operation in operations.items():
            description = operation.get("description", "")
            assert "APIView" not in description, (method, path)
            # ...and is said in a few words on the docs page instead.
            assert operation.get("summary") or description, (method, path)


def test_openapi_says_a_schedule_takes_cron_or_text_not_both(openapi_document):
    """schemathesis sent a schedule with both, which the document allowed and
    the server refused ("Schedule must include either cron or text, not both.")."""
    schedule = openapi_document["components"]["schemas"]["ScheduleRequest"]
    assert "`cron` or `text`, not both" in schedule["description"]
    assert "Default UTC" in schedule["properties"]["timezone"]["description"]
