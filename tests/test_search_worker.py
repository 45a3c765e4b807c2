"""A search target through the official Python SDK (firecrawl-py) on a real
Celery worker, against a fake SearXNG, result pages and a scripted judge
model on 127.0.0.1. Needs PostgreSQL and Redis like test_worker_integration
(whose fixtures it uses); skips without them, except under CI."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from firecrawl import Firecrawl

from checks.models import SearchResultState
from tests.llm import FakeModel
from tests.searching import FakeSearxng, hit
from tests.sites import Site
from tests.test_worker_integration import (  # noqa: F401 - fixtures
    Worker,
    broker,
    database_url,
    redis_url,
    run_and_wait,
    summary_of,
    worker,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

GOAL = "Tell me when Acme announces a product launch"
LAUNCH = "<h1>Acme launches the Rocket</h1><p>Acme announced its launch today.</p>"
EARNINGS = "<h1>Acme earnings</h1><p>Quarterly results were flat.</p>"


@pytest.fixture
def sdk(live_server, api_key) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


@pytest.fixture
def searx(settings) -> Iterator[FakeSearxng]:
    with Site() as search_site:
        fake = FakeSearxng(search_site).configure(settings)
        yield fake
        fake.released.set()


@pytest.fixture
def model(settings) -> Iterator[FakeModel]:
    with Site() as llm_site:
        fake = FakeModel(llm_site).configure(settings, timeout=5)
        yield fake
        fake.hanging.set()


@pytest.fixture
def search_worker(searx, model, monkeypatch, request) -> Worker:
    """The worker, started with the search provider and the model set."""
    monkeypatch.setenv("SEARXNG_URL", searx.site.base_url)
    monkeypatch.setenv("SEARCH_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("LLM_BASE_URL", model.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "5")
    for name in ("SEARCH_PROVIDER", "BRAVE_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return request.getfixturevalue("worker")


def pages(detail: Any) -> dict[str, tuple[str, str | None]]:
    return {
        p.url: (p.status, (p.metadata or {}).get("searchStatus")) for p in detail.pages
    }


def search_result(detail: Any) -> dict[str, Any]:
    [result] = [r.model_dump(by_alias=True) for r in detail.target_results]
    return result


def test_a_search_target_alerts_new_matches_once_through_the_sdk(
    sdk, searx, search_worker
):
    with Site() as site:
        launch = site.html("/launch", "Launch", LAUNCH)
        earnings = site.html("/earnings", "Earnings", EARNINGS)
        stale = site.html("/old", "Old", LAUNCH)
        elsewhere = "https://news.example.com/acme-launch"  # cut: never fetched
        now = timezone.now()
        searx.results(
            "acme launch",
            hit(launch, "Acme launches the Rocket", "Launch news",
                published=now - timedelta(minutes=20)),
            hit(earnings, "Acme earnings", "Numbers"),
            hit(stale, "Old news", published=now - timedelta(hours=5)),
            hit(elsewhere, "Elsewhere"),
        )  # fmt: skip
        monitor = sdk.create_monitor(
            name="Acme launches",
            schedule={"cron": "0 3 * * *"},
            goal=GOAL,
            targets=[
                {
                    "type": "search",
                    "queries": ["acme launch"],
                    "searchWindow": "1h",
                    "maxResults": 10,
                    "excludeDomains": ["example.com"],
                }
            ],
        )
        assert getattr(monitor, "warning", None) is None

        # 1. The matching result alerts; the others are ignored or cut.
        first = run_and_wait(sdk, monitor.id, search_worker)
        assert first.status == "completed", first.error
        assert pages(first) == {launch: ("new", "alert"), earnings: ("same", "ignored")}
        alerted = next(p for p in first.pages if p.url == launch)
        assert alerted.judgment.meaningful is True
        assert alerted.judgment.reason == "The page reports it."
        assert alerted.metadata["queries"] == ["acme launch"]
        result = search_result(first)
        assert (result["matches"], result["resultCount"]) == (1, 2)
        assert (result["rawResultCount"], result["searchCompleted"]) == (4, True)
        assert first.actual_credits == 2 + 2  # search + two judged results

        # 2. The same results again: nothing alerts.
        second = run_and_wait(sdk, monitor.id, search_worker)
        assert pages(second) == {
            launch: ("same", "already_seen"),
            earnings: ("same", "ignored"),
        }
        assert summary_of(second)["new"] == 0

        # 3. A new result alerts once; a tracking variant of a seen one does not.
        fresh = site.html("/launch-2", "Launch 2", LAUNCH)
        variant = launch + "?utm_source=newsletter&utm_medium=email"
        searx.results(
            "acme launch", hit(variant, "Acme launches the Rocket"), hit(fresh, "New")
        )
        third = run_and_wait(sdk, monitor.id, search_worker)
        assert pages(third) == {
            variant: ("same", "already_seen"),
            fresh: ("new", "alert"),
        }
        fourth = run_and_wait(sdk, monitor.id, search_worker)
        assert summary_of(fourth)["new"] == 0

        # 4. A new goal re-judges a result when it turns up again.
        searx.results("acme launch", hit(earnings, "Acme earnings"))
        sdk.update_monitor(monitor.id, goal="Tell me about Acme's quarterly results")
        fifth = run_and_wait(sdk, monitor.id, search_worker)
        assert pages(fifth) == {earnings: ("new", "alert")}

        # 5. A provider that fails is a failed search with its reason, never
        # "same", and no page stands for it.
        searx.fail(500)
        sixth = run_and_wait(sdk, monitor.id, search_worker)
        assert sixth.status == "failed"  # its only target failed
        reason = (
            "The web search failed: “acme launch”: SearXNG answered HTTP 500 (boom)."
        )
        assert sixth.error == reason
        assert sixth.pages == []
        assert search_result(sixth)["searchCompleted"] is False
        assert search_result(sixth)["degradedReason"] == reason

        searx.recover().hang(3)
        seventh = run_and_wait(sdk, monitor.id, search_worker)
        assert seventh.status == "failed" and seventh.pages == []
        assert "Gave up on 127.0.0.1 after 1 s" in seventh.error

    assert SearchResultState.objects.filter(alerted_at__isnull=False).count() == 3
