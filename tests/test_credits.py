"""estimatedCreditsPerMonth and unchangedPagesFree as the API reports them
(reference §8): per-run estimate × ceil(30 days / interval)."""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine

from checks import dispatch
from checks.models import Check
from checks.pipeline.outcome import UNAPPLIED_OPTIONS, not_applied
from monitors.models import Monitor, Target
from tests.test_api_not_applied import UNAPPLIED

pytestmark = pytest.mark.django_db

URL = "/v2/monitor"
RUNS_EVERY_30_MINUTES = 1440  # 30 days of half-hours
RUNS_HOURLY = 720
RUNS_DAILY = 30


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 5, 16, 15, 7, tzinfo=UTC), tick=False):
        yield


@pytest.fixture(autouse=True)
def llm_available(settings):
    """The formula as Firecrawl documents it, with a judge that can run; the
    tests at the end take the LLM away (issue #21.7)."""
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"


def scrape(*urls: str, **options: Any) -> dict[str, Any]:
    target: dict[str, Any] = {"type": "scrape", "urls": list(urls)}
    if options:
        target["scrapeOptions"] = options
    return target


def create(api, targets: list[dict], schedule: str = "every 30 minutes", **extra):
    payload = {
        "name": "Estimate",
        "schedule": {"text": schedule},
        "targets": copy.deepcopy(targets),
        **extra,
    }
    response = api.post(URL, payload, format="json")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_docs_example_one_url_every_30_minutes_with_a_goal_is_2880(api):
    data = create(api, [scrape("https://news.ycombinator.com")], goal="AI news")
    assert data["estimatedCreditsPerMonth"] == 2880


def test_docs_example_without_a_goal_is_1440(api):
    data = create(api, [scrape("https://news.ycombinator.com")])
    assert data["estimatedCreditsPerMonth"] == 1440


def test_goal_with_judging_switched_off_costs_no_judge_credits(api):
    data = create(api, [scrape("https://a.example/")], goal="x", judgeEnabled=False)
    assert data["estimatedCreditsPerMonth"] == 1440


def test_every_url_of_a_scrape_target_is_a_page(api):
    urls = [f"https://example.com/{i}" for i in range(3)]
    data = create(api, [scrape(*urls)], schedule="hourly", goal="x")
    assert data["estimatedCreditsPerMonth"] == 3 * 2 * RUNS_HOURLY


def test_crawl_target_is_estimated_at_its_page_limit(api):
    target = {
        "type": "crawl",
        "url": "https://example.com/",
        "crawlOptions": {"limit": 100},
    }
    plain = create(api, [target], schedule="hourly")
    judged = create(api, [target], schedule="hourly", goal="x")
    assert plain["estimatedCreditsPerMonth"] == 100 * RUNS_HOURLY
    assert judged["estimatedCreditsPerMonth"] == 200 * RUNS_HOURLY


def test_crawl_target_without_a_limit_is_estimated_at_10000_pages(api):
    target = {"type": "crawl", "url": "https://example.com/"}
    data = create(api, [target], schedule="daily")
    assert data["estimatedCreditsPerMonth"] == 10_000 * RUNS_DAILY


@pytest.mark.parametrize(
    ("max_results", "queries", "judge_enabled"),
    [(10, 1, True), (10, 3, True), (15, 1, True), (15, 2, False), (50, 12, True)],
)
def test_search_target_costs_two_per_ten_results_plus_one_per_judged_result(
    max_results, queries, judge_enabled
):
    target = Target(
        type=Target.Type.SEARCH,
        queries=[f"query {i}" for i in range(queries)],
        max_results=max_results,
    )
    per_run = math.ceil(max_results * queries / 10) * 2
    per_run += max_results if judge_enabled else 0
    assert target.estimated_credits(judging=judge_enabled) == per_run


def test_search_target_default_of_10_results_is_used_in_the_estimate():
    target = Target(type=Target.Type.SEARCH, queries=["a", "b"])
    assert target.estimated_credits(judging=True) == 4 + 10


def test_search_targets_count_in_the_monitors_estimate_once_they_run(api, settings):
    settings.SEARXNG_URL = "http://127.0.0.1:8888"
    search = {"type": "search", "queries": ["a", "b"]}
    data = create(api, [search, scrape("https://example.com/a")], goal="x")
    # Search: ceil(10 x 2 / 10) x 2 = 4, plus 10 judged; the page: 1 + 1 judged.
    assert data["estimatedCreditsPerMonth"] == (4 + 10 + 2) * RUNS_EVERY_30_MINUTES


def test_search_targets_not_run_for_want_of_a_provider_are_not_counted(api):
    search = {"type": "search", "queries": ["a", "b"]}
    data = create(api, [search, scrape("https://example.com/a")], goal="x")
    assert data["estimatedCreditsPerMonth"] == 2 * RUNS_EVERY_30_MINUTES


@pytest.mark.parametrize(
    ("options", "per_page"),
    [
        ({"formats": ["markdown"]}, 1),
        ({"formats": [{"type": "json", "prompt": "prices"}]}, 5),
        (
            {"formats": [{"type": "changeTracking", "modes": ["json"], "schema": {}}]},
            5,
        ),
        ({"formats": [{"type": "changeTracking", "modes": ["git-diff"]}]}, 1),
        # Firecrawl adds 4 for lockdown, a page served from its cache; here
        # the page is fetched live and lockdown listed as not applied.
        ({"formats": ["markdown"], "lockdown": True}, 1),
        ({"formats": [{"type": "json", "schema": {}}], "lockdown": True}, 5),
    ],
)
def test_format_add_ons_raise_the_price_per_page(api, options, per_page):
    urls = ["https://example.com/a", "https://example.com/b"]
    data = create(api, [scrape(*urls, **options)])
    assert data["estimatedCreditsPerMonth"] == 2 * per_page * RUNS_EVERY_30_MINUTES


@pytest.mark.parametrize("name", UNAPPLIED_OPTIONS)
def test_options_listed_as_not_applied_add_nothing_to_the_price(api, name):
    options = {"formats": ["markdown"], name: UNAPPLIED[name]}
    assert not_applied(options) == [name]

    data = create(api, [scrape("https://example.com/a", **options)])

    assert data["estimatedCreditsPerMonth"] == RUNS_EVERY_30_MINUTES


def test_targets_of_every_kind_add_up(api, settings):
    targets = [
        scrape("https://example.com/"),
        {"type": "crawl", "url": "https://example.com/", "crawlOptions": {"limit": 10}},
        {"type": "search", "queries": ["q"], "maxResults": 10},
    ]
    settings.BRAVE_API_KEY = "key"
    data = create(api, targets, schedule="hourly", goal="x")
    per_run = (1 + 1) + (10 + 10) + (2 + 10)
    assert data["estimatedCreditsPerMonth"] == per_run * RUNS_HOURLY


def test_estimate_follows_updates_to_targets_goal_and_schedule(api):
    monitor_id = create(api, [scrape("https://example.com/")])["id"]

    def patch(payload: dict) -> int:
        response = api.patch(f"{URL}/{monitor_id}", payload, format="json")
        assert response.status_code == 200, response.content
        return response.json()["data"]["estimatedCreditsPerMonth"]

    assert patch({"goal": "x"}) == 2 * RUNS_EVERY_30_MINUTES
    assert patch({"schedule": {"text": "hourly"}}) == 2 * RUNS_HOURLY
    urls = ["https://example.com/a", "https://example.com/b"]
    assert patch({"targets": [scrape(*urls)]}) == 4 * RUNS_HOURLY
    assert patch({"goal": None}) == 2 * RUNS_HOURLY


def test_list_and_get_report_the_same_estimate(api):
    created = create(api, [scrape("https://example.com/")], goal="x")
    listed = api.get(URL).json()["data"][0]
    fetched = api.get(f"{URL}/{created['id']}").json()["data"]
    assert listed["estimatedCreditsPerMonth"] == 2880
    assert fetched["estimatedCreditsPerMonth"] == 2880


# ------------------------------------------------------------------ unchangedPagesFree


@pytest.mark.parametrize(
    ("schedule", "free"),
    [
        ("every 5 minutes", False),
        ("every 30 minutes", False),
        ("hourly", True),
        ("every 2 hours", True),
        ("daily at 9am", True),
    ],
)
def test_unchanged_pages_are_free_from_a_60_minute_interval_by_default(
    api, schedule, free
):
    data = create(api, [scrape("https://example.com/")], schedule=schedule)
    assert data["unchangedPagesFree"] is free
    assert (
        Monitor.objects.get(pk=data["id"]).unchanged_pages_free(
            datetime(2026, 5, 16, 15, 7, tzinfo=UTC)
        )
        is free
    )


def test_unchanged_pages_free_threshold_comes_from_settings(api, settings):
    settings.UNCHANGED_PAGES_FREE_MIN_INTERVAL = 30
    at_threshold = create(api, [scrape("https://a.example/")], "every 30 minutes")
    below = create(api, [scrape("https://a.example/")], schedule="every 20 minutes")
    assert at_threshold["unchangedPagesFree"] is True
    assert below["unchangedPagesFree"] is False


def test_unchanged_pages_free_follows_a_schedule_change(api):
    monitor_id = create(api, [scrape("https://a.example/")], schedule="hourly")["id"]
    response = api.patch(
        f"{URL}/{monitor_id}", {"schedule": {"text": "every 15 minutes"}}, format="json"
    )
    assert response.json()["data"]["unchangedPagesFree"] is False


# --- a judge that cannot run is not counted (issue #21.7) -------------------------


def test_without_an_llm_a_goal_does_not_double_the_estimate(api, settings):
    settings.LLM_BASE_URL = ""
    data = create(api, [scrape("https://news.ycombinator.com")], goal="AI news")
    assert data["judgeEnabled"] is True
    assert data["estimatedCreditsPerMonth"] == 1440


def test_without_an_llm_search_results_are_not_counted_as_judged(settings):
    settings.LLM_BASE_URL = ""
    monitor = Monitor(goal="x", judge_enabled=True)
    target = Target(type=Target.Type.SEARCH, queries=["a"], max_results=10)
    assert target.estimated_credits(judging=monitor.credits_judged) == 2


def test_a_check_reserves_judge_credits_only_while_an_llm_is_configured(
    api, settings, monkeypatch
):
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)
    data = create(api, [scrape("https://a.example/", "https://b.example/")], goal="x")
    run = f"{URL}/{data['id']}/run"
    assert api.post(run, {}, format="json").json()["data"]["estimatedCredits"] == 4
    Check.objects.update(status=Check.Status.COMPLETED)
    settings.LLM_BASE_URL = ""
    assert api.post(run, {}, format="json").json()["data"]["estimatedCredits"] == 2


def test_without_an_llm_json_extraction_is_priced_as_a_plain_page_until_one_is_set(
    api, settings
):
    # The pages fail without being charged (formats.json is not applied), so
    # the estimate does not count the extraction either; read, not stored, it
    # counts it again as soon as a model is set up.
    settings.LLM_BASE_URL = ""
    extraction = {"formats": [{"type": "json", "prompt": "prices"}]}
    tracked = {"formats": [{"type": "changeTracking", "modes": ["json"], "schema": {}}]}
    data = create(
        api,
        [
            scrape("https://example.com/a", "https://example.com/b", **extraction),
            scrape("https://example.com/c", **tracked),
        ],
    )
    assert data["estimatedCreditsPerMonth"] == 3 * RUNS_EVERY_30_MINUTES

    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    fetched = api.get(f"{URL}/{data['id']}").json()["data"]
    assert fetched["estimatedCreditsPerMonth"] == 3 * 5 * RUNS_EVERY_30_MINUTES


def test_a_check_reserves_extraction_credits_only_while_an_llm_is_configured(
    api, settings, monkeypatch
):
    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)
    extraction = {"formats": [{"type": "json", "prompt": "prices"}]}
    data = create(
        api, [scrape("https://a.example/", "https://b.example/", **extraction)]
    )
    run = f"{URL}/{data['id']}/run"
    assert api.post(run, {}, format="json").json()["data"]["estimatedCredits"] == 10
    Check.objects.update(status=Check.Status.COMPLETED)
    settings.LLM_BASE_URL = ""
    assert api.post(run, {}, format="json").json()["data"]["estimatedCredits"] == 2
    assert sorted(Check.objects.values_list("estimated_credits", flat=True)) == [2, 10]
