"""Numbers are JSON numbers and booleans are JSON booleans, everywhere in a
monitor body (issue #21.12): Firecrawl's schema rejects "30" for a number and
"true" for a boolean, and so do we, with a 400 naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from rest_framework import serializers

from checks.targets.options import CrawlOptionsSerializer, ScrapeOptionsSerializer
from monitors.models import Monitor

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"
NOT_NUMBERS = ["30", "1e3", True]
NOT_BOOLEANS = ["true", 1, "yes"]


def body(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
    }
    base.update(copy.deepcopy(overrides))
    return base


def scrape_options(**options: Any) -> dict[str, Any]:
    target = {"type": "scrape", "urls": ["https://example.com/"]}
    return body(targets=[target | {"scrapeOptions": options}])


def crawl_options(**options: Any) -> dict[str, Any]:
    target = {"type": "crawl", "url": "https://example.com/"}
    return body(targets=[target | {"crawlOptions": options}])


def search(**fields: Any) -> dict[str, Any]:
    target = {"type": "search", "queries": ["pagewatch"], **fields}
    return body(targets=[target], goal="New releases")


def email(**fields: Any) -> dict[str, Any]:
    return body(notification={"email": fields})


def typed_option_fields(serializer: serializers.Serializer, kind: type) -> list[str]:
    return [name for name, f in serializer.fields.items() if isinstance(f, kind)]


# (a body with the value at the field, the field's name in the error)
NUMBER_FIELDS = [
    (lambda v: body(retentionDays=v), "retentionDays"),
    (lambda v: search(maxResults=v), "maxResults"),
    *[
        (lambda v, n=name: scrape_options(**{n: v}), name)
        for name in typed_option_fields(
            ScrapeOptionsSerializer(), serializers.IntegerField
        )
    ],
    *[
        (lambda v, n=name: crawl_options(**{n: v}), name)
        for name in typed_option_fields(
            CrawlOptionsSerializer(), serializers.IntegerField
        )
        + typed_option_fields(CrawlOptionsSerializer(), serializers.FloatField)
    ],
]
BOOLEAN_FIELDS = [
    (lambda v: body(judgeEnabled=v, goal="Prices"), "judgeEnabled"),
    (lambda v: email(enabled=v), "enabled"),
    (lambda v: email(includeDiffs=v), "includeDiffs"),
    *[
        (lambda v, n=name: scrape_options(**{n: v}), name)
        for name in typed_option_fields(
            ScrapeOptionsSerializer(), serializers.BooleanField
        )
    ],
    *[
        (lambda v, n=name: crawl_options(**{n: v}), name)
        for name in typed_option_fields(
            CrawlOptionsSerializer(), serializers.BooleanField
        )
    ],
]


def assert_refused(api, payload: dict[str, Any], field: str) -> None:
    response = api.post(URL, payload, format="json")
    assert response.status_code == 400, (field, response.content)
    assert field in response.json()["error"]
    assert Monitor.objects.count() == 0


def test_the_walk_covers_the_options_and_the_fields_the_issue_names():
    numbers = {field for _, field in NUMBER_FIELDS}
    booleans = {field for _, field in BOOLEAN_FIELDS}
    assert {"retentionDays", "maxResults", "limit", "timeout", "delay"} <= numbers
    assert {"judgeEnabled", "includeDiffs", "mobile", "allowSubdomains"} <= booleans


@pytest.mark.parametrize(("make", "field"), NUMBER_FIELDS)
@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_a_number_field_refuses_anything_but_a_json_number(api, make, field, value):
    assert_refused(api, make(value), field)


@pytest.mark.parametrize(("make", "field"), BOOLEAN_FIELDS)
@pytest.mark.parametrize("value", NOT_BOOLEANS)
def test_a_boolean_field_refuses_anything_but_true_or_false(api, make, field, value):
    assert_refused(api, make(value), field)


def test_a_number_written_with_a_zero_fraction_is_that_whole_number(api):
    response = api.post(URL, body(retentionDays=30.0), format="json")
    assert response.status_code == 200, response.content
    assert Monitor.objects.get().retention_days == 30
    assert response.json()["data"]["retentionDays"] == 30


def test_a_fraction_is_not_a_whole_number(api):
    assert_refused(api, body(retentionDays=30.5), "retentionDays")


def test_a_patch_is_as_strict_as_a_create(api):
    created = api.post(URL, body(), format="json").json()["data"]
    response = api.patch(
        f"{URL}/{created['id']}", {"retentionDays": "7"}, format="json"
    )
    assert response.status_code == 400
    assert "retentionDays" in response.json()["error"]
    assert Monitor.objects.get().retention_days == 30
