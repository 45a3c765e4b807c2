"""POST /v2/import, GET /v2/import/{id} and GET /v2/export: files, remote
sources (a fake changedetection.io API on 127.0.0.1, and a second Pagewatch
speaking /v2/monitor as the "Firecrawl" source), and the round trip of an
export into an empty team."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from firecrawl import Firecrawl
from rest_framework.test import APIClient

from checks.models import PageState
from monitors.models import ApiKey, ImportRun, Monitor, Team
from monitors.moving import importing
from tests.moving import PRICING_UUID, backup_zip, fixture
from tests.sites import Request, Site

URL = "/v2/import"


def upload(api: APIClient, source: str, data: bytes, name: str, **fields: Any):
    body = {"source": source, "file": SimpleUploadedFile(name, data)} | fields
    return api.post(URL, body, format="multipart")


# --- files ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_upload_is_a_dry_run_unless_told_otherwise(api, team):
    response = upload(api, "changedetection", backup_zip(), "backup.zip")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["dryRun"] is True
    items = {i["ref"]: i for i in data["items"]}
    pricing = items[PRICING_UUID]
    assert pricing["imported"] is True
    assert pricing["monitor"]["targets"][0]["scrapeOptions"]["includeTags"] == [
        "#prices"
    ]
    assert pricing["baselines"] == 1
    assert any("XPath" in note for note in pricing["notes"])
    assert sum(1 for i in data["items"] if not i["imported"]) == 2
    assert not Monitor.objects.exists()


@pytest.mark.django_db
def test_an_upload_with_an_absurd_interval_is_previewed_not_a_server_error(api, team):
    watching = {
        "w": {
            "url": "https://a.example.com/",
            "time_between_check_use_default": False,
            "time_between_check": {"weeks": "1e308", "days": "1e308"},
        }
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    response = upload(api, "changedetection", data, "url-watches.json")
    assert response.status_code == 200, response.content
    [item] = response.json()["data"]["items"]
    assert item["imported"] is True
    weekday = item["monitor"]["schedule"]["cron"].split()[4]
    assert weekday.isdigit()  # once a week
    assert any("checked every week" in note for note in item["notes"])


@pytest.mark.django_db
def test_an_import_creates_the_monitors_and_reports_each_item(api, team):
    response = upload(api, "urlwatch", fixture("urls.yaml"), "urls.yaml", dryRun=False)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["status"] == "done" and data["created"] == 3
    results = {i["ref"]: i["result"] for i in data["items"]}
    assert results == {
        "job 1": "created",
        "job 2": "created",
        "job 3": "not imported",
        "job 4": "created",
        "job 5": "not imported",
    }
    created = {i["monitorId"] for i in data["items"] if i["monitorId"]}
    assert created == {str(pk) for pk in Monitor.objects.values_list("pk", flat=True)}
    assert all(m.team == team for m in Monitor.objects.all())


@pytest.mark.django_db
def test_an_imported_monitor_with_a_nul_character_is_not_imported(api, team):
    # PostgreSQL cannot keep U+0000 in jsonb; an option kept as given in an
    # export file reached it and the whole import ended in a 500.
    monitor = {
        "name": "Prices",
        "schedule": {"cron": "0 * * * *", "timezone": "UTC"},
        "targets": [
            {
                "type": "scrape",
                "urls": ["https://example.com/"],
                "scrapeOptions": {"note": "a\x00b"},
            }
        ],
    }
    export = {"format": "pagewatch-export", "monitors": [monitor]}
    data = json.dumps(export).encode()
    response = upload(api, "pagewatch", data, "export.json", dryRun=False)
    assert response.status_code == 200, response.content
    [item] = response.json()["data"]["items"]
    assert item["imported"] is False
    assert item["reason"].startswith("A page's settings: ")
    assert "Null characters are not allowed" in item["reason"]
    assert not Monitor.objects.exists()


@pytest.mark.django_db
def test_duplicates_are_skipped_unless_included(api, team):
    upload(api, "csv", fixture("addresses.txt"), "a.txt", dryRun=False)
    again = upload(api, "csv", fixture("addresses.txt"), "a.txt", dryRun=False)
    assert again.json()["data"]["duplicates"] == 2
    assert Monitor.objects.count() == 2
    forced = upload(
        api, "csv", fixture("addresses.txt"), "a.txt", dryRun=False,
        includeDuplicates=True,
    )  # fmt: skip
    assert forced.json()["data"]["created"] == 2
    assert Monitor.objects.count() == 4


@pytest.mark.django_db
def test_a_large_import_answers_202_and_its_progress_is_readable(
    api, other_api, team, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(importing, "INLINE_MAX", 1)
    monkeypatch.setattr(importing.current_app, "send_task", lambda *a, **k: None)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api, "changedetection", backup_zip(), "b.zip", dryRun="false")
    assert response.status_code == 202, response.content
    run_id = response.json()["data"]["id"]
    progress = api.get(f"{URL}/{run_id}").json()["data"]
    assert progress["status"] == "queued" and progress["done"] == 0
    from monitors.tasks import import_monitors_task

    import_monitors_task(run_id)
    done = api.get(f"{URL}/{run_id}").json()["data"]
    assert done["status"] == "done" and done["created"] == 2
    assert other_api.get(f"{URL}/{run_id}").status_code == 404
    assert api.get(f"{URL}/not-a-uuid").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("source", "data", "words"),
    [
        ("distill", b'{"data": [', "not valid JSON"),
        ("urlwatch", b"url: [unclosed\n", "not YAML urlwatch could read"),
        ("urlwatch", b"!!python/object/apply:os.system ['id']\n", "not YAML"),
        ("changedetection", b"hello", "not a zip archive"),
        ("pagewatch", b'{"format": "other"}', "not a Pagewatch export"),
    ],
)
def test_unreadable_files_are_a_400_saying_why(api, source, data, words):
    response = upload(api, source, data, "f")
    assert response.status_code == 400
    body = response.json()
    assert body["success"] is False and body["code"] == "BAD_REQUEST"
    assert words in body["error"]


@pytest.mark.django_db
def test_a_file_over_the_cap_is_a_413(api, settings):
    settings.IMPORT_MAX_BYTES = 64 * 1024
    response = upload(api, "csv", b"https://a.example/\n" * 5000, "big.txt")
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.django_db
def test_a_200_mb_upload_is_refused_before_its_body_is_read(api):
    response = api.generic(
        "POST",
        URL,
        b"x",
        content_type="multipart/form-data; boundary=b",
        CONTENT_LENGTH=str(200 * 1024 * 1024),
    )
    assert response.status_code == 413
    assert "IMPORT_MAX_BYTES" in response.json()["error"]


@pytest.mark.django_db
def test_a_request_naming_no_file_and_no_address_is_a_400(api):
    response = api.post(URL, {"source": "changedetection"}, format="json")
    assert response.status_code == 400
    assert "multipart field `file`" in response.json()["error"]
    unknown = api.post(URL, {"source": "nagios", "url": "x"}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["details"][0]["path"] == ["source"]


# --- a fake changedetection.io API --------------------------------------------------

CD_KEY = "cd-secret-key"
WATCH = {
    "url": "https://shop.example.com/pricing",
    "title": "Pricing",
    "tags": ["t1"],
    "paused": False,
    "time_between_check_use_default": False,
    "time_between_check": {"hours": 2},
    "include_filters": ["#prices"],
    "notification_urls": ["discord://x/y"],
    "last_changed": 1700000000,
}


def _changedetection(site: Site) -> None:
    def answer(body: Any):
        def handler(request: Request) -> tuple[int, dict[str, str], bytes]:
            if request.header("x-api-key") != CD_KEY:
                return 403, {}, b'{"message": "Invalid access - API key invalid."}'
            if isinstance(body, str):
                return 200, {"content-type": "text/plain"}, body.encode()
            return 200, {"content-type": "application/json"}, json.dumps(body).encode()

        return handler

    site.handle("/api/v1/watch", answer({"w1": {"url": WATCH["url"]}}))
    site.handle("/api/v1/watch/w1", answer(WATCH))
    site.handle("/api/v1/tags", answer({"t1": {"title": "Shop"}}))
    site.handle("/api/v1/watch/w1/history/latest", answer("Basic plan 12 EUR\n"))


@pytest.mark.django_db
def test_a_changedetection_api_is_read_with_its_key(api, team, site, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    _changedetection(site)
    body = {
        "source": "changedetection",
        "url": site.base_url,
        "apiKey": CD_KEY,
        "dryRun": False,
    }
    response = api.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    (item,) = response.json()["data"]["items"]
    assert item["result"] == "created" and item["name"] == "Pricing"
    assert item["channels"] == ["Discord (imported)"]
    monitor = Monitor.objects.get(team=team)
    assert [c.name for c in monitor.channels.all()] == ["Discord (imported)"]
    # Every 2 hours there, at a minute and hour of its own here.
    assert monitor.schedule_cron == "36 1-23/2 * * *"
    assert monitor.run_interval_minutes == 2 * 60
    state = PageState.objects.get(monitor=monitor)
    assert state.snapshot.text == "Basic plan 12 EUR\n"
    assert all(r.header("x-api-key") == CD_KEY for r in site.requests)


@pytest.mark.django_db
def test_a_wrong_changedetection_key_is_a_400_saying_so(api, site, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    _changedetection(site)
    body = {"source": "changedetection", "url": site.base_url, "apiKey": "nope"}
    response = api.post(URL, body, format="json")
    assert response.status_code == 400
    assert "refused the key" in response.json()["error"]
    assert not Monitor.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "address",
    ["http://169.254.169.254", "http://127.0.0.1:9", "ftp://example.com", "nope"],
)
def test_remote_sources_go_through_the_address_policy(api, address):
    body = {"source": "firecrawl", "url": address, "apiKey": "k"}
    response = api.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST"


# --- export, and another Pagewatch as the Firecrawl source -------------------------

RICH = {
    "name": "Everything",
    "schedule": {"cron": "*/15 * * * *", "timezone": "Europe/Berlin"},
    "targets": [
        {
            "type": "scrape",
            "urls": ["https://shop.example.com/a", "https://shop.example.com/b"],
            "scrapeOptions": {
                "includeTags": ["main"],
                "headers": {"X-Team": "blue", "Authorization": "Bearer s3cret"},
            },
        },
        {
            "type": "crawl",
            "url": "https://docs.example.com/",
            "crawlOptions": {"limit": 20},
        },
        {"type": "search", "queries": ["pagewatch release"], "maxResults": 5},
    ],
    "goal": "New plans or price changes",
    "judgeEnabled": True,
    "ignoreLines": ["Updated", r"/^\d+ views$/"],
    "changeRules": {"lines": "removed", "containing": ["Pro"], "appears": "Sale"},
    "fetchWith": "http",
    "webhook": {
        "url": "https://hooks.example.com/pw",
        "headers": {"X-Hook-Token": "t0ken", "X-Env": "prod"},
        "metadata": {"team": "web"},
        "events": ["monitor.check.completed"],
    },
    "notification": {"email": {"enabled": True, "recipients": ["ops@example.com"]}},
    "retentionDays": 90,
}
PLAIN = {
    "name": "Plain",
    "schedule": {"cron": "0 9 * * 1-5", "timezone": "UTC"},
    "targets": [{"type": "scrape", "urls": ["https://blog.example.com/"]}],
}
FIELDS = (
    "name",
    "status",
    "schedule_cron",
    "schedule_timezone",
    "goal",
    "judge_enabled",
    "ignore_lines",
    "change_rules",
    "fetch_with",
    "notification",
    "retention_days",
)
TARGET_FIELDS = (
    "position",
    "type",
    "urls",
    "url",
    "crawl_options",
    "scrape_options",
    "queries",
    "search_window",
    "max_results",
    "include_domains",
    "exclude_domains",
)


def _seed(api: APIClient) -> None:
    for body in (RICH, PLAIN):
        response = api.post("/v2/monitor", body, format="json")
        assert response.status_code == 200, response.content
    plain = Monitor.objects.get(name="Plain")
    api.patch(f"/v2/monitor/{plain.pk}", {"status": "paused"}, format="json")


def _same_monitors(source: Team, copy: Team, *, secrets_kept: bool) -> None:
    originals = {m.name: m for m in Monitor.objects.for_team(source)}
    copies = {m.name: m for m in Monitor.objects.for_team(copy)}
    assert originals.keys() == copies.keys()
    for name, original in originals.items():
        made = copies[name]
        for field in FIELDS:
            assert getattr(made, field) == getattr(original, field), (name, field)
        webhook = original.webhook
        if webhook and not secrets_kept:
            webhook = webhook | {"headers": {"X-Env": "prod"}}
        assert made.webhook == webhook, name
        pairs = zip(original.targets.all(), made.targets.all(), strict=True)
        for before, after in pairs:
            for field in TARGET_FIELDS:
                wanted = getattr(before, field)
                redacted = not secrets_kept and field == "scrape_options"
                if redacted and wanted.get("headers"):
                    wanted = wanted | {"headers": {"X-Team": "blue"}}
                assert getattr(after, field) == wanted, (name, field)


@pytest.mark.django_db
def test_an_export_leaves_secrets_out_and_says_which(api, team):
    _seed(api)
    response = api.get("/v2/export")
    assert response.status_code == 200
    document = response.json()["data"]
    assert document["format"] == "pagewatch-export"
    assert document["team"] == {"name": "Acme", "slug": "acme"}
    assert [m["name"] for m in document["monitors"]] == ["Everything", "Plain"]
    text = json.dumps(document)
    assert "s3cret" not in text and "t0ken" not in text
    assert team.ensure_webhook_secret() not in text
    assert document["redacted"] == [
        "monitors[0].targets[0].scrapeOptions.headers.Authorization",
        "monitors[0].webhook.headers.X-Hook-Token",
    ]


@pytest.mark.django_db
def test_an_export_imported_into_an_empty_team_recreates_the_same_monitors(
    api, other_api, team, other_team
):
    _seed(api)
    document = api.get("/v2/export").content
    response = upload(other_api, "pagewatch", document, "export.json", dryRun=False)
    assert response.status_code == 200, response.content
    assert response.json()["data"]["created"] == 2
    _same_monitors(team, other_team, secrets_kept=False)


@pytest.mark.django_db(transaction=True)
def test_another_pagewatch_is_the_firecrawl_source(live_server, settings):
    """The second Pagewatch is the live server; its monitors are made with the
    official SDK, read back through /v2/monitor and recreated here."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    there = Team.objects.create(name="There", slug="there")
    here = Team.objects.create(name="Here", slug="here")
    _, there_key = ApiKey.issue(there)
    _, here_key = ApiKey.issue(here)
    there_api = APIClient()
    there_api.credentials(HTTP_AUTHORIZATION=f"Bearer {there_key}")
    _seed(there_api)
    sdk = Firecrawl(api_key=there_key, api_url=live_server.url, max_retries=1)
    assert {m.name for m in sdk.list_monitors()} == {"Everything", "Plain"}
    here_api = APIClient()
    here_api.credentials(HTTP_AUTHORIZATION=f"Bearer {here_key}")
    body = {
        "source": "firecrawl",
        "url": live_server.url,
        "apiKey": there_key,
        "dryRun": False,
    }
    response = here_api.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["data"]["created"] == 2
    _same_monitors(there, here, secrets_kept=True)
    assert ImportRun.objects.get(team=here).status == ImportRun.Status.DONE


@pytest.mark.django_db
def test_the_import_and_export_endpoints_are_in_the_openapi_document():
    document = APIClient().get("/v2/openapi.json").json()
    operations = {
        ("/v2/import", "post"): {"200", "202", "400", "401", "413", "415", "429"},
        ("/v2/import/{import_id}", "get"): {"200", "401", "404", "429"},
        ("/v2/export", "get"): {"200", "401", "429"},
    }
    for (path, method), codes in operations.items():
        operation = document["paths"][path][method]
        assert codes <= set(operation["responses"]), path
        assert (
            operation["security"] == document["paths"]["/v2/monitor"]["get"]["security"]
        )
    body = document["paths"]["/v2/import"]["post"]["requestBody"]["content"]
    assert {"application/json", "multipart/form-data"} <= set(body)


def test_every_field_of_an_import_item_is_in_the_openapi_document():
    from monitors.moving import Planned
    from monitors.moving.importing import Outcome

    document = APIClient().get("/v2/openapi.json").json()
    described = set(document["components"]["schemas"]["ImportItem"]["properties"])
    item = Planned(ref="r", label="A", urls=[], payload=None)
    assert set(Outcome(item, "not imported").as_dict()) == described


@pytest.mark.django_db
def test_an_api_import_is_logged_as_made_by_the_key_that_sent_it(api, team):
    from teams.models import Activity

    addresses = b"https://a.test/one\n"
    response = upload(api, "csv", addresses, "list.txt", dryRun=False)

    assert response.status_code == 200, response.content
    entry = Activity.objects.get(team=team, kind=Activity.Kind.MONITOR_CREATED)
    assert entry.api_key == ApiKey.objects.get(team=team, name="tests")
    assert entry.sentence == "Imported from a list of addresses by the API key “tests”"


@pytest.mark.django_db
def test_a_failed_dashboard_preview_reads_as_a_snake_case_status(api, team):
    run = ImportRun.objects.create(
        team=team, source="csv", status=ImportRun.Status.PREPARING
    )
    run.fail_preview("The preview could not be made.", run.created_at)
    answer = api.get(f"{URL}/{run.pk}").json()["data"]
    # Every other status on the wire is one word or snake_case.
    assert answer["status"] == "preview_failed"


# --- a service read while the request waits: bounded --------------------------------


@pytest.mark.django_db
def test_a_service_with_more_watches_than_a_request_reads_is_a_400_asking_no_more(
    api, team, site, settings, monkeypatch
):
    from monitors.moving import remote
    from tests.test_moving_remote_preview import _many_watches

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    monkeypatch.setattr(remote, "REQUEST_MAX_WATCHES", 20)
    _many_watches(site, 21)
    body = {"source": "changedetection", "url": site.base_url, "apiKey": CD_KEY}

    response = api.post(URL, body, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["error"] == (
        "changedetection.io holds 21 watches, more than the 20 Pagewatch reads "
        "while a request waits. Import them on the dashboard's Import page, "
        "which reads them in the background, or send a file of its watches "
        "instead."
    )
    # Only its list was asked for: none of its watches.
    assert [r.path for r in site.requests] == ["/api/v1/watch"]
    assert not ImportRun.objects.exists() and not Monitor.objects.exists()


@pytest.mark.django_db
def test_a_service_too_slow_for_a_request_is_a_400_within_the_request_budget(
    api, team, site, settings, monkeypatch
):
    from monitors.moving import remote
    from tests.test_moving_remote_preview import _many_watches

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    monkeypatch.setattr(remote, "REQUEST_BUDGET_SECONDS", 0)
    _many_watches(site, 5)
    body = {"source": "changedetection", "url": site.base_url, "apiKey": CD_KEY}

    response = api.post(URL, body, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(
        "changedetection.io answered too slowly: 0 of 5 watches were read in 0 "
        "seconds, the longest a request waits."
    )


@pytest.mark.django_db
def test_a_service_slow_to_answer_one_watch_is_a_400_within_the_request_budget(
    api, team, site, settings, monkeypatch
):
    from monitors.moving import remote
    from tests.test_moving_remote_preview import _many_watches

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    # Two seconds to read in: one answer alone may no longer take its own 30.
    monkeypatch.setattr(remote, "REQUEST_BUDGET_SECONDS", 2)
    _many_watches(site, 3)
    answered = threading.Event()

    def holds_its_answer(request: Request) -> tuple[int, dict[str, str], bytes]:
        # Answers once the request is over (or after 10 s, which without the
        # budget is well before a whole answer's time runs out).
        answered.wait(10)
        watch = {"url": "https://site1.example.com/", "title": "Site 1"}
        return 200, {"content-type": "application/json"}, json.dumps(watch).encode()

    site.handle("/api/v1/watch/w1", holds_its_answer)
    body = {"source": "changedetection", "url": site.base_url, "apiKey": CD_KEY}

    try:
        response = api.post(URL, body, format="json")
    finally:
        answered.set()

    assert response.status_code == 400, response.content
    assert response.json()["error"] == (
        "changedetection.io answered too slowly: 2 of 3 watches were read in 2 "
        "seconds, the longest a request waits. Import them on the dashboard's "
        "Import page, which reads them in the background, or send a file of its "
        "watches instead."
    )
    assert site.requests_to("/api/v1/watch/w1")
    assert not ImportRun.objects.exists() and not Monitor.objects.exists()
