"""Shared fixtures: personas (a team with a key, another team with its own key)
and an API client per persona. Larger fixtures live next to the tests that use them."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from monitors.models import ApiKey, Team


@pytest.fixture
def team(db) -> Team:
    return Team.objects.create(name="Acme", slug="acme")


@pytest.fixture
def other_team(db) -> Team:
    return Team.objects.create(name="Globex", slug="globex")


@pytest.fixture
def api_key(team) -> str:
    _, raw = ApiKey.issue(team, name="tests")
    return raw


@pytest.fixture
def other_api_key(other_team) -> str:
    _, raw = ApiKey.issue(other_team, name="tests")
    return raw


@pytest.fixture
def api(api_key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    return client


@pytest.fixture
def other_api(other_api_key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {other_api_key}")
    return client


@pytest.fixture
def scrape_monitor_body() -> dict:
    return {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
    }
