"""Addresses that can never be fetched are refused when a monitor is saved
(issue #21.10): an IP literal the address policy forbids, or localhost, gets a
400 naming the URL at create and update instead of failing every check. Host
names are still judged when connecting (tests/test_fetch.py)."""

from __future__ import annotations

from typing import Any

import pytest

from monitors.dashboard.forms.monitor import MonitorForm
from monitors.models import Monitor
from tests.test_dashboard_forms import post

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"
METADATA = "http://169.254.169.254/latest/meta-data/"
PRIVATE = [
    "http://localhost:8000/",
    "http://app.localhost/",
    "http://127.0.0.1/admin",
    "http://10.1.2.3/",
    "http://192.168.0.1/",
    "http://[::1]/",
    "http://2130706433/",  # 127.0.0.1 written as one number
]
NEVER = [
    METADATA,
    "http://[::ffff:169.254.169.254]/",
    "http://0.0.0.0/",
    "http://192.0.2.10/",  # documentation range
]


def scrape(url: str) -> dict[str, Any]:
    target = {"type": "scrape", "urls": ["https://example.com/", url]}
    return {"name": "n", "schedule": {"text": "hourly"}, "targets": [target]}


def crawl(url: str) -> dict[str, Any]:
    body = scrape("https://example.com/b")
    body["targets"] = [{"type": "crawl", "url": url}]
    return body


def webhook(url: str) -> dict[str, Any]:
    return scrape("https://example.com/b") | {"webhook": {"url": url}}


PLACES = [scrape, crawl, webhook]


def assert_refused(api, body: dict[str, Any], url: str) -> str:
    response = api.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert f"Pagewatch can never connect to {url}: " in error
    assert Monitor.objects.count() == 0
    return error


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("url", PRIVATE + NEVER)
def test_an_address_that_can_never_be_fetched_is_refused_naming_the_url(
    api, place, url
):
    assert_refused(api, place(url), url)


def test_the_reason_comes_from_the_address_policy(api):
    error = assert_refused(api, scrape(METADATA), METADATA)
    assert error.endswith("169.254.169.254 is a cloud metadata address.")
    error = assert_refused(api, scrape("http://localhost/"), "http://localhost/")
    assert error.endswith(
        "localhost is a loopback address. For the administrator: set "
        "ALLOW_PRIVATE_NETWORK_TARGETS to allow private and local addresses."
    )  # the one setting that would let it through


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("url", PRIVATE)
def test_private_addresses_are_accepted_where_the_self_hoster_allows_them(
    api, settings, place, url
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    assert api.post(URL, place(url), format="json").status_code == 200


@pytest.mark.parametrize("url", NEVER)
def test_metadata_and_reserved_addresses_stay_refused_even_then(api, settings, url):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    assert_refused(api, scrape(url), url)


@pytest.mark.parametrize(
    "url", ["https://intranet.example/", "http://printer.corp/", "http://db/"]
)
def test_host_names_are_judged_when_fetched_not_when_saved(api, url):
    assert api.post(URL, scrape(url), format="json").status_code == 200


def test_an_update_is_refused_the_same_way(api):
    created = api.post(URL, scrape("https://example.com/b"), format="json").json()
    monitor_id = created["data"]["id"]
    response = api.patch(
        f"{URL}/{monitor_id}", {"webhook": {"url": METADATA}}, format="json"
    )
    assert response.status_code == 400
    assert METADATA in response.json()["error"]
    assert Monitor.objects.get().webhook is None


def test_the_form_shows_the_refusal_on_the_address_line():
    form = MonitorForm(post(**{"t0000aaaa-urls": f"https://example.com/\n{METADATA}"}))
    assert not form.is_valid()
    [message] = form.errors["t0000aaaa-urls"]
    assert METADATA in message and "cloud metadata address" in message
