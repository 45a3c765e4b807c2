"""Input found by driving the API as a hostile client would, each of which once
answered 500 or was quietly turned into something else: a 400 in the
contract's envelope naming the field, or the 404 every unknown id gets, and
nothing stored."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from monitors.models import Channel, Monitor, Target

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"


def body(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
        **overrides,
    }


def send(api: APIClient, method: str, url: str, text: str):
    """`text` as the body, byte for byte: json.dumps cannot write 1e999."""
    return getattr(api, method)(url, data=text, content_type="application/json")


def assert_rejected(response, field: str) -> dict[str, Any]:
    assert response.status_code == 400, response.content
    payload = response.json()
    assert payload["success"] is False
    assert payload["code"] == "BAD_REQUEST"
    assert field in payload["error"], payload["error"]
    assert payload["details"] and field.split("[")[0] in str(payload["details"])
    return payload


# ------------------------------------------------ numbers JSON cannot hold

# Python's JSON parser reads a number too large for a double as infinity;
# typed fields refuse it, but scrapeOptions and crawlOptions keep unknown
# keys as given, and no database (nor JSON answer) can hold infinity.
HUGE_NUMBERS = [
    (
        {"type": "scrape", "urls": ["https://example.com/"],
         "scrapeOptions": {"vendorHint": "@HUGE@"}},
        "targets[0].scrapeOptions.vendorHint",
    ),
    (
        {"type": "scrape", "urls": ["https://example.com/"],
         "scrapeOptions": {"extra": {"levels": [1, "-@HUGE@"]}}},
        "targets[0].scrapeOptions.extra.levels[1]",
    ),
    (
        {"type": "scrape", "urls": ["https://example.com/"],
         "scrapeOptions": {"formats": [{"type": "json", "schema": {
             "type": "object", "properties": {"n": {"maximum": "@HUGE@"}}}}]}},
        "targets[0].scrapeOptions.formats[0].schema.properties.n.maximum",
    ),
    (
        {"type": "crawl", "url": "https://example.com/",
         "crawlOptions": {"vendorHint": "@HUGE@"}},
        "targets[0].crawlOptions.vendorHint",
    ),
]  # fmt: skip


def with_huge_number(payload: dict[str, Any]) -> str:
    return (
        json.dumps(payload).replace('"@HUGE@"', "1e999").replace('"-@HUGE@"', "-1e999")
    )


@pytest.mark.parametrize("target,field", HUGE_NUMBERS)
def test_a_number_too_large_to_store_in_passed_through_options_is_a_400_naming_it(
    api, target, field
):
    response = send(api, "post", URL, with_huge_number(body(targets=[target])))

    payload = assert_rejected(response, field)
    assert "too large" in payload["error"]
    assert Monitor.objects.count() == 0
    assert Target.objects.count() == 0


def test_a_number_too_large_to_store_in_an_update_changes_nothing(api):
    created = api.post(URL, body(), format="json").json()["data"]
    target = {
        "id": created["targets"][0]["id"],
        "type": "scrape",
        "urls": ["https://example.com/other"],
        "scrapeOptions": {"vendorHint": "@HUGE@"},
    }

    response = send(
        api,
        "patch",
        f"{URL}/{created['id']}",
        with_huge_number({"name": "Renamed", "targets": [target]}),
    )

    assert_rejected(response, "targets[0].scrapeOptions.vendorHint")
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.name == "Pricing page"
    assert monitor.targets.get().urls == ["https://example.com/pricing"]


# ------------------------------------------------ target ids


@pytest.mark.parametrize("given", [5, True, 0])
def test_a_target_id_given_as_a_number_or_boolean_is_refused_not_made_a_uuid(
    api, given
):
    target = {"id": given, "type": "scrape", "urls": ["https://example.com/"]}

    response = api.post(URL, body(targets=[target]), format="json")

    assert_rejected(response, "targets[0].id")
    assert Monitor.objects.count() == 0
    assert Target.objects.count() == 0


def test_a_target_id_given_as_a_number_in_an_update_keeps_the_targets(api):
    created = api.post(URL, body(), format="json").json()["data"]
    target = {"id": 1, "type": "scrape", "urls": ["https://example.com/other"]}

    response = api.patch(f"{URL}/{created['id']}", {"targets": [target]}, format="json")

    assert_rejected(response, "targets[0].id")
    kept = Target.objects.get(monitor_id=created["id"])
    assert str(kept.pk) == created["targets"][0]["id"]
    assert kept.urls == ["https://example.com/pricing"]


def test_a_target_id_as_a_uuid_string_is_still_kept(api):
    chosen = str(uuid.uuid4())
    target = {"id": chosen, "type": "scrape", "urls": ["https://example.com/"]}

    response = api.post(URL, body(targets=[target]), format="json")

    assert response.status_code == 200, response.content
    assert response.json()["data"]["targets"][0]["id"] == chosen
    assert Target.objects.filter(pk=chosen).exists()


# ------------------------------------------------ channel ids in paths


def _in_digits(zero: str) -> Any:
    """Spell a number with the ten digits starting at `zero` ("٠", "０")."""
    return lambda pk: "".join(chr(ord(zero) + int(d)) for d in str(pk))


@pytest.mark.parametrize(
    "spell",
    [lambda pk: "²", lambda pk: "⁵", _in_digits("٠"), _in_digits("０")],
    ids=["superscript-two", "superscript-five", "arabic-indic", "full-width"],
)
@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_a_channel_id_of_digits_other_than_0_to_9_is_not_found(
    api, team, method, spell
):
    # int() refuses "²" although str.isdigit() takes it; "١٢" and "１２" are
    # read as 12 by int(), which must not reach channel 12 either.
    channel = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": "https://a.example/"}
    )

    response = getattr(api, method)(
        f"/v2/channels/{spell(channel.pk)}", {"name": "Renamed"}, format="json"
    )

    assert response.status_code == 404, response.content
    assert response.json() == {
        "success": False,
        "error": "Channel not found",
        "code": "NOT_FOUND",
    }
    assert Channel.objects.filter(pk=channel.pk, name="Ops").exists()


# ------------------------------------------------ an import's remote key


@pytest.mark.parametrize("source", ["changedetection", "firecrawl"])
@pytest.mark.parametrize("key", ["clé-secrète", "\U00031383", "key\r\nX-Evil: 1"])
def test_an_import_key_no_request_header_can_carry_is_a_400_naming_it(
    api, source, key, monkeypatch
):
    # The key travels in a request header (x-api-key, Authorization): one
    # that cannot be encoded there must be refused before anything is asked.
    from monitors.moving import remote

    asked: list[str] = []
    monkeypatch.setattr(
        remote.Reading, "aget", lambda self, url, headers: asked.append(url)
    )

    response = api.post(
        "/v2/import",
        {"source": source, "url": "https://watches.example/", "apiKey": key},
        format="json",
    )

    assert_rejected(response, "apiKey")
    assert asked == []
    assert Monitor.objects.count() == 0


# ------------------------------------------------ a body that is not JSON


@pytest.mark.parametrize(
    "content_type,said",
    [
        (None, "this request had no Content-Type"),
        ("text/plain", 'this request had Content-Type "text/plain"'),
        ("application/x-www-form-urlencoded",
         'this request had Content-Type "application/x-www-form-urlencoded"'),
    ],
)  # fmt: skip
def test_a_body_sent_as_anything_but_json_is_told_which_header_to_send(
    api, content_type, said
):
    # DRF's own words were 'Unsupported media type "" in request.'.
    response = api.generic(
        "POST", URL, json.dumps(body()), content_type=content_type or ""
    )

    assert response.status_code == 415, response.content
    assert response.json() == {
        "success": False,
        "error": "Send the request body as JSON, with the header Content-Type: "
        f"application/json ({said}).",
        "code": "UNSUPPORTED_MEDIA_TYPE",
    }
    assert Monitor.objects.count() == 0


def test_the_import_names_both_bodies_it_reads(api):
    response = api.generic("POST", "/v2/import", "x", content_type="text/csv")

    assert response.status_code == 415, response.content
    assert response.json()["error"] == (
        "Send the request body as JSON, with the header Content-Type: "
        "application/json, or as multipart/form-data "
        '(this request had Content-Type "text/csv").'
    )


# ------------------------------------------------ two creates naming one target id


@pytest.mark.django_db(transaction=True)
def test_two_creates_naming_the_same_new_target_id_at_once_both_succeed(
    api_key, monkeypatch
):
    # A client that retries a create while the first is still running sends
    # the same target id twice. Each request finds the id free, then both
    # insert it: the second must get a fresh id, not an IntegrityError (500).
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises every writer anyway")
    chosen = str(uuid.uuid4())
    barrier = threading.Barrier(2, timeout=20)
    create = Target.objects.create

    def create_together(**fields: Any) -> Target:
        if str(fields.get("id")) == chosen:
            barrier.wait()  # both found the id free; now both insert it
        return create(**fields)

    monkeypatch.setattr(Target.objects, "create", create_together)
    target = {"id": chosen, "type": "scrape", "urls": ["https://example.com/"]}
    answers: list[Any] = []

    def post() -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
        try:
            answers.append(client.post(URL, body(targets=[target]), format="json"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert [a.status_code for a in answers] == [200, 200], [a.content for a in answers]
    ids = sorted(a.json()["data"]["targets"][0]["id"] for a in answers)
    assert chosen in ids and len(set(ids)) == 2
    assert Monitor.objects.count() == 2
    assert Target.objects.count() == 2


# ------------------------------------------------ an update racing a delete


def test_an_update_that_lands_after_a_delete_does_not_bring_the_monitor_back(
    api, monkeypatch
):
    # PATCH reads the monitor, validates, then saves it whole: a DELETE that
    # commits in between was overwritten (deleted_at back to null), and the
    # deleted monitor came back, scheduled again.
    from django.utils import timezone

    from monitors.api import views

    created = api.post(URL, body(), format="json").json()["data"]
    update = views.update_monitor

    def deleted_meanwhile(monitor, data, now, **kwargs):
        Monitor.objects.get(pk=monitor.pk).soft_delete(timezone.now())
        return update(monitor, data, now, **kwargs)

    monkeypatch.setattr(views, "update_monitor", deleted_meanwhile)

    response = api.patch(f"{URL}/{created['id']}", {"name": "Late"}, format="json")

    assert response.status_code == 404, response.content
    assert response.json()["error"] == "Monitor not found"
    monitor = Monitor.objects.get(pk=created["id"])
    assert monitor.deleted_at is not None
    assert monitor.next_run_at is None
    assert monitor.name == "Pricing page"
    assert api.get(f"{URL}/{created['id']}").status_code == 404
