"""Formats named by a string that Firecrawl reads as their object: its server
turns every string format into {"type": <string>} before validating, and
firecrawl-py's format type lists "changeTracking" (and "change_tracking")
among the string formats, so the string must mean what the object means."""

from __future__ import annotations

from typing import Any

import pytest
from firecrawl import Firecrawl
from firecrawl.v2.types import MonitorTarget, ScrapeOptions
from rest_framework.test import APIClient

from monitors.models import Monitor, Target

URL = "/v2/monitor"


def body(formats: list[Any]) -> dict[str, Any]:
    return {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [
            {
                "type": "scrape",
                "urls": ["https://example.com/pricing"],
                "scrapeOptions": {"formats": formats},
            }
        ],
    }


@pytest.fixture
def sdk(live_server, api_key) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


@pytest.mark.django_db(transaction=True)
def test_change_tracking_as_the_python_sdk_names_it_is_stored_as_its_object(sdk):
    # firecrawl-py 4.55 sends a monitor target's typed ScrapeOptions by its
    # Python names, the format string included.
    options = ScrapeOptions(formats=["markdown", "change_tracking"])
    target = MonitorTarget(
        type="scrape", urls=["https://example.com/"], scrape_options=options
    )

    monitor = sdk.create_monitor(
        name="Pricing page", schedule={"text": "every 30 minutes"}, targets=[target]
    )

    stored = Target.objects.get(monitor_id=monitor.id).scrape_options["formats"]
    assert stored == ["markdown", {"type": "changeTracking"}]
    assert monitor.targets[0]["scrapeOptions"]["formats"] == stored


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["changeTracking", "change_tracking"])
def test_change_tracking_as_a_string_means_its_object(api: APIClient, name):
    response = api.post(URL, body(["markdown", name]), format="json")

    assert response.status_code == 200, response.content
    stored = Target.objects.get().scrape_options
    assert stored == {"formats": ["markdown", {"type": "changeTracking"}]}


@pytest.mark.django_db
def test_json_as_a_bare_string_says_what_the_format_needs(api: APIClient):
    response = api.post(URL, body(["json"]), format="json")

    assert response.status_code == 400
    payload = response.json()
    assert payload["error"] == (
        "targets[0].scrapeOptions.formats[0]: A json format needs a schema or a prompt."
    )
    assert Monitor.objects.count() == 0
