"""One rule for the headers a user gives, in scrapeOptions.headers and
webhook.headers alike (issue #22.2): a name that is not an HTTP token or a
value HTTP cannot carry is refused at create and update with a 400 naming the
header, instead of failing every fetch or every delivery later."""

from __future__ import annotations

from typing import Any

import pytest

from monitors.dashboard.forms.monitor import MonitorForm
from monitors.models import Monitor
from tests.test_dashboard_forms import post

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"
BAD_NAMES = ["X-A\r\nInjected: yes", "X-C: d", "", "X-é", "X A", "X-A\n"]
BAD_VALUES = ["été", "a\r\nb", "zero\0byte", "snow☃"]


def with_scrape_headers(headers: dict[str, str]) -> dict[str, Any]:
    target = {
        "type": "scrape",
        "urls": ["https://example.com/"],
        "scrapeOptions": {"headers": headers},
    }
    return {"name": "n", "schedule": {"text": "hourly"}, "targets": [target]}


def with_webhook_headers(headers: dict[str, str]) -> dict[str, Any]:
    body = with_scrape_headers({})
    body["webhook"] = {"url": "https://hooks.example/", "headers": headers}
    return body


PLACES = [with_scrape_headers, with_webhook_headers]


def refused_because(api, body: dict[str, Any]) -> str:
    response = api.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert Monitor.objects.count() == 0
    return response.json()["error"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_header_name_that_is_no_http_token_is_refused_by_name(api, place, name):
    error = refused_because(api, place({name: "1"}))
    assert f"{name!r} is not a valid header name" in error


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("value", BAD_VALUES)
def test_a_header_value_http_cannot_carry_is_refused_naming_the_header(
    api, place, value
):
    error = refused_because(api, place({"X-Team": value}))
    assert "headers.X-Team: " in error


@pytest.mark.parametrize("place", PLACES)
def test_plain_ascii_headers_with_spaces_and_tabs_are_stored(api, place):
    headers = {"Accept-Language": "de-DE, en;q=0.5", "X-Token": "a\tb ~!"}
    response = api.post(URL, place(headers), format="json")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    stored = (data["webhook"] or {}).get("headers") or data["targets"][0][
        "scrapeOptions"
    ]["headers"]
    assert stored == headers


def test_only_webhooks_reserve_the_headers_pagewatch_signs_with(api):
    assert refused_because(api, with_webhook_headers({"Webhook-Id": "x"}))
    response = api.post(URL, with_scrape_headers({"Webhook-Id": "x"}), format="json")
    assert response.status_code == 200


def test_an_update_follows_the_same_rule(api):
    created = api.post(URL, with_scrape_headers({}), format="json").json()["data"]
    target = created["targets"][0] | {"scrapeOptions": {"headers": {"X-A": "été"}}}
    response = api.patch(f"{URL}/{created['id']}", {"targets": [target]}, format="json")
    assert response.status_code == 400
    assert "'X-A'" in response.json()["error"]
    assert Monitor.objects.get().targets.get().scrape_options == {"headers": {}}


def test_the_form_refuses_an_unsendable_value_on_its_field():
    form = MonitorForm(
        post(
            webhook_url="https://hooks.example/",
            webhook_headers="X-Team: été",
            **{"t0000aaaa-headers": "X-Lang: für"},
        )
    )
    assert not form.is_valid()
    assert "“X-Team”" in form.errors["webhook_headers"][0]
    assert "“X-Lang”" in form.errors["t0000aaaa-headers"][0]
