"""API keys with a scope: a read key reads everything and changes nothing
(403 FORBIDDEN on every writing call); write keys (the default) do both.
Chosen in the dashboard, the admin and `manage.py createapikey --scope`."""

from __future__ import annotations

import html
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from firecrawl import Firecrawl
from firecrawl.v2.types import MonitorTarget
from firecrawl.v2.utils.error_handler import FirecrawlError
from rest_framework.test import APIClient

from checks.models import Check
from monitors.models import ApiKey, Membership, Monitor
from tests.test_dashboard_views import PASSWORD, make_check, make_monitor

PAGE = MonitorTarget(type="scrape", urls=["https://example.com/pricing"])
READ_ONLY = (
    "This API key can only read (scope read): it cannot create, change, run "
    "or delete anything. Use a key with the write scope."
)


def client_for(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def read_key(team) -> str:
    _, raw = ApiKey.issue(team, name="dashboards", scope=ApiKey.Scope.READ)
    return raw


@pytest.mark.django_db
def test_keys_can_write_unless_made_read_only(team):
    key, _ = ApiKey.issue(team)
    assert key.scope == ApiKey.Scope.WRITE and key.can_write


@pytest.mark.django_db
def test_a_read_key_reads_every_endpoint(team, read_key):
    monitor = make_monitor(team)
    check = make_check(monitor)
    api = client_for(read_key)
    for url in (
        "/v2/monitor",
        f"/v2/monitor/{monitor.pk}",
        f"/v2/monitor/{monitor.pk}/checks",
        f"/v2/monitor/{monitor.pk}/checks/{check.pk}",
    ):
        response = api.get(url)
        assert response.status_code == 200, url
        assert response.json()["success"] is True


@pytest.mark.django_db
def test_a_read_key_is_refused_every_writing_call_and_nothing_changes(
    team, read_key, scrape_monitor_body
):
    monitor = make_monitor(team)
    api = client_for(read_key)
    calls = [
        (api.post, "/v2/monitor", scrape_monitor_body),
        (api.patch, f"/v2/monitor/{monitor.pk}", {"status": "paused"}),
        (api.delete, f"/v2/monitor/{monitor.pk}", None),
        (api.post, f"/v2/monitor/{monitor.pk}/run", {}),
    ]
    for call, url, body in calls:
        response = call(url, body, format="json")
        assert response.status_code == 403, url
        assert response.json() == {
            "success": False,
            "error": READ_ONLY,
            "code": "FORBIDDEN",
        }
    monitor.refresh_from_db()
    assert Monitor.objects.count() == 1
    assert monitor.is_active and monitor.deleted_at is None
    assert Check.objects.count() == 0


@pytest.mark.django_db
def test_the_openapi_document_lists_the_403_on_writing_operations(client):
    paths = client.get("/v2/openapi.json").json()["paths"]
    assert "403" in paths["/v2/monitor"]["post"]["responses"]
    assert "403" in paths["/v2/monitor/{monitor_id}"]["patch"]["responses"]
    assert "403" in paths["/v2/monitor/{monitor_id}"]["delete"]["responses"]
    assert "403" in paths["/v2/monitor/{monitor_id}/run"]["post"]["responses"]
    assert "403" not in paths["/v2/monitor"]["get"]["responses"]


# ---------------------------------------------------------------- the SDK


@pytest.mark.django_db(transaction=True)
def test_the_official_sdk_reads_with_a_read_key_and_cannot_create(
    live_server, team, read_key
):
    monitor = make_monitor(team, name="Read me")
    sdk = Firecrawl(api_key=read_key, api_url=live_server.url, max_retries=1)

    listed = sdk.list_monitors()
    assert [m.name for m in listed] == ["Read me"]
    assert sdk.get_monitor(str(monitor.pk)).name == "Read me"

    with pytest.raises(FirecrawlError) as refused:
        sdk.create_monitor(
            name="Not allowed", schedule={"text": "every 30 minutes"}, targets=[PAGE]
        )
    assert refused.value.status_code == 403
    assert "can only read" in str(refused.value)
    assert Monitor.objects.count() == 1


# ---------------------------------------------------------------- choosing it


@pytest.mark.django_db
def test_createapikey_makes_a_read_key_when_asked(team):
    out, err = StringIO(), StringIO()
    call_command("createapikey", "--team", "acme", "--scope", "read", stdout=out,
                 stderr=err)  # fmt: skip
    raw = out.getvalue().strip().splitlines()[-1]
    assert ApiKey.objects.get().scope == ApiKey.Scope.READ
    assert "Created read only API key" in err.getvalue()
    assert client_for(raw).get("/v2/monitor").status_code == 200
    assert client_for(raw).post("/v2/monitor", {}, format="json").status_code == 403


@pytest.mark.django_db
def test_the_dashboard_makes_a_read_key_and_lists_scope_creator_and_last_use(
    client, team, django_user_model, read_key
):
    owner = django_user_model.objects.create_user("olive", "o@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    client.force_login(owner)
    response = client.post(reverse("api-keys"), {"name": "Grafana", "scope": "read"})
    assert response.status_code == 200
    made = ApiKey.objects.get(name="Grafana")
    assert (made.scope, made.created_by) == (ApiKey.Scope.READ, owner)

    client_for(read_key).get("/v2/monitor")  # "dashboards" is used once
    page = html.unescape(client.get(reverse("api-keys")).content.decode())
    grafana = next(r for r in page.split("<tr>") if "Grafana" in r)
    assert "Read only" in grafana and "by olive" in grafana and "Never" in grafana
    used = next(r for r in page.split("<tr>") if "dashboards" in r)
    assert "Read only" in used and "Never" not in used
    # Without a scope (an older form): a key that can write, as before.
    client.post(reverse("api-keys"), {"name": "Old form"})
    assert ApiKey.objects.get(name="Old form").scope == ApiKey.Scope.WRITE


@pytest.mark.django_db
def test_a_read_key_sees_credential_headers_masked_and_a_write_key_whole(
    team, read_key
):
    _, write_key = ApiKey.issue(team, name="deploys")
    body = {
        "name": "Behind a login",
        "schedule": {"cron": "*/30 * * * *"},
        "targets": [
            {
                "type": "scrape",
                "urls": ["https://example.com/account"],
                "scrapeOptions": {
                    "headers": {"Cookie": "session=s3cret", "Accept-Language": "de"}
                },
            }
        ],
        "webhook": {
            "url": "https://hooks.example.com/x",
            "headers": {"Authorization": "Bearer hook-s3cret", "X-Team": "ops"},
        },
    }
    created = client_for(write_key).post("/v2/monitor", body, format="json")
    assert created.status_code == 200
    monitor_id = created.json()["data"]["id"]

    for url in ("/v2/monitor", f"/v2/monitor/{monitor_id}"):
        answer = client_for(read_key).get(url)
        assert answer.status_code == 200
        assert "s3cret" not in answer.content.decode()
        data = answer.json()["data"]
        shown = data[0] if isinstance(data, list) else data
        assert shown["webhook"]["headers"] == {"Authorization": "••••", "X-Team": "ops"}
        assert shown["targets"][0]["scrapeOptions"]["headers"] == {
            "Cookie": "••••",
            "Accept-Language": "de",
        }

    whole = client_for(write_key).get(f"/v2/monitor/{monitor_id}").json()["data"]
    assert whole["webhook"]["headers"]["Authorization"] == "Bearer hook-s3cret"
    stored = Monitor.objects.get(pk=monitor_id)
    assert stored.webhook["headers"]["Authorization"] == "Bearer hook-s3cret"
