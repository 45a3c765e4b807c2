"""Search targets run by checks.runner: a fake SearXNG and result pages on
127.0.0.1 (tests/searching.py, tests/sites.py) and a scripted
OpenAI-compatible model (tests/llm.py) as the judge."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from checks import runner
from checks.errors import ErrorKind
from checks.models import Check, PageResult, PageState, SearchResultState
from checks.search.stage import goal_version
from monitors.models import Monitor, Target, Team
from monitors.search_provider import NOT_CONFIGURED
from tests.llm import status
from tests.searching import LAUNCH, hit

pytestmark = pytest.mark.django_db

GOAL = "Tell me when Acme announces a product launch"

pytest_plugins = ["tests.searching"]


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def make_monitor(
    team: Team,
    queries: list[str],
    *,
    goal: str | None = GOAL,
    judge: bool | None = None,
    **target: Any,
) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name="Acme news",
        schedule_cron="*/30 * * * *",
        goal=goal,
        judge_enabled=bool(goal) if judge is None else judge,
    )
    target.setdefault("search_window", "24h")
    target.setdefault("max_results", 10)
    Target.objects.create(monitor=monitor, type="search", queries=queries, **target)
    return monitor


def run_check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return runner.run(check)


def pages_of(check: Check) -> dict[str, PageResult]:
    return {page.url: page for page in check.pages.all()}


def search_result(check: Check) -> dict[str, Any]:
    [result] = [r for r in check.target_results if r["type"] == "search"]
    return result


def statuses(check: Check) -> dict[str, tuple[str, str]]:
    return {
        url: (page.status, page.metadata.get("searchStatus"))
        for url, page in pages_of(check).items()
    }


# --- new results, once -----------------------------------------------------------


def test_the_first_check_alerts_on_matching_results_and_ignores_the_others(
    team, searx, model, news
):
    searx.results(
        "acme",
        hit(news["launch"], "Acme launches the Rocket", "Acme <b>launch</b> news"),
        hit(news["earnings"], "Acme earnings", "Numbers"),
    )
    monitor = make_monitor(team, ["acme"])

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED
    assert statuses(check) == {
        news["launch"]: ("new", "alert"),
        news["earnings"]: ("same", "ignored"),
    }
    launch = pages_of(check)[news["launch"]]
    assert launch.metadata["title"] == "Acme launches the Rocket"
    assert launch.metadata["snippet"] == "Acme launch news"
    assert launch.metadata["queries"] == ["acme"]
    assert launch.judgment == {
        "meaningful": True,
        "confidence": "high",
        "reason": "The page reports it.",
        "meaningfulChanges": [],
    }
    assert launch.verdict == PageResult.Verdict.MEANINGFUL
    assert launch.current_snapshot is not None  # the page's copy is kept
    assert pages_of(check)[news["earnings"]].verdict == PageResult.Verdict.NOISE
    result = search_result(check)
    assert result | {"targetId": None} == {
        "targetId": None,
        "type": "search",
        "provider": "searxng",
        "searchCompleted": True,
        "resultCount": 2,
        "rawResultCount": 2,
        "matches": 1,
        "summary": "1 match across 2 results.",
        "judgeDegraded": False,
        "degradedReason": None,
        "searchCredits": 2,
        "judgeCredits": 2,
        "resultsJudged": 2,
    }
    # Search credits per raw result, 1 per judged result; the pages are free.
    assert check.actual_credits == 2 + 2
    assert len(model.requests) == 2
    # A search result's baseline is its SearchResultState, not a PageState.
    assert not PageState.objects.filter(monitor=monitor).exists()
    alerted = SearchResultState.objects.get(url=news["launch"])
    assert alerted.status == SearchResultState.Status.ALERTED
    assert alerted.alert_check_id == check.pk


def test_the_second_check_with_the_same_results_alerts_nothing_and_fetches_nothing(
    team, searx, model, news, site
):
    searx.results("acme", hit(news["launch"], "Launch"), hit(news["earnings"], "E"))
    monitor = make_monitor(team, ["acme"])
    run_check(monitor)
    fetched, asked = len(site.requests), len(model.requests)

    second = run_check(monitor)

    assert second.status == Check.Status.COMPLETED
    assert statuses(second) == {
        news["launch"]: ("same", "already_seen"),
        news["earnings"]: ("same", "ignored"),
    }
    assert second.summary["new"] == 0 and second.summary["same"] == 2
    assert (len(site.requests), len(model.requests)) == (fetched, asked)
    assert search_result(second)["resultsJudged"] == 0
    assert second.actual_credits == 2  # the search only


def test_a_new_result_alerts_once(team, searx, model, news, site):
    searx.results("acme", hit(news["launch"], "Launch"))
    monitor = make_monitor(team, ["acme"])
    run_check(monitor)
    other = site.html("/launch-2", "Acme launches again", LAUNCH)
    searx.results("acme", hit(news["launch"], "Launch"), hit(other, "Again"))

    second = run_check(monitor)
    third = run_check(monitor)

    assert statuses(second)[other] == ("new", "alert")
    assert statuses(second)[news["launch"]] == ("same", "already_seen")
    assert statuses(third)[other] == ("same", "already_seen")
    assert third.summary["new"] == 0


def test_a_tracking_parameter_variant_of_a_seen_url_does_not_alert_again(
    team, searx, model, news
):
    searx.results("acme", hit(news["launch"], "Launch"))
    monitor = make_monitor(team, ["acme"])
    run_check(monitor)
    variant = news["launch"].replace("http://", "https://www.") + "/?utm_source=x"
    searx.results("acme", hit(variant, "Launch"))

    second = run_check(monitor)

    assert statuses(second) == {variant: ("same", "already_seen")}
    assert SearchResultState.objects.filter(monitor=monitor).count() == 1


def test_results_of_several_queries_are_merged_and_remember_which_found_them(
    team, searx, model, news
):
    searx.results("acme", hit(news["launch"], "Launch"), hit(news["earnings"], "E"))
    searx.results("acme rocket", hit(news["launch"] + "?utm_medium=rss", "Launch"))
    monitor = make_monitor(team, ["acme", "acme rocket"])

    check = run_check(monitor)

    assert pages_of(check)[news["launch"]].metadata["queries"] == [
        "acme",
        "acme rocket",
    ]
    assert check.summary["totalPages"] == 2
    result = search_result(check)
    assert (result["rawResultCount"], result["resultCount"]) == (3, 2)


def test_max_results_caps_the_merged_results_by_rank_across_queries(
    team, searx, model, site
):
    urls = {
        q: [site.html(f"/{q}-{i}", f"{q} {i}", LAUNCH) for i in range(3)]
        for q in ("a", "b")
    }
    for q, found in urls.items():
        searx.results(q, *(hit(url, url) for url in found))
    monitor = make_monitor(team, ["a", "b"], max_results=3)

    check = run_check(monitor)

    assert set(pages_of(check)) == {urls["a"][0], urls["b"][0], urls["a"][1]}
    # The provider was asked for 3 per query, and each answered all 3.
    assert search_result(check)["rawResultCount"] == 6
    assert searx.params(searx.requests[0])["time_range"] == "day"


def test_editing_the_goal_re_judges_a_resurfacing_result(team, searx, model, news):
    searx.results("acme", hit(news["earnings"], "Earnings"))
    monitor = make_monitor(team, ["acme"])
    assert statuses(run_check(monitor))[news["earnings"]] == ("same", "ignored")
    assert statuses(run_check(monitor))[news["earnings"]] == ("same", "ignored")
    asked = len(model.requests)

    Monitor.objects.filter(pk=monitor.pk).update(goal="Tell me about quarterly results")
    third = run_check(monitor)

    assert statuses(third)[news["earnings"]] == ("new", "alert")
    assert len(model.requests) == asked + 1
    state = SearchResultState.objects.get(monitor=monitor)
    assert state.goal_version == goal_version(
        Target.objects.get(monitor=monitor), "Tell me about quarterly results"
    )


def test_a_result_the_judge_is_unsure_of_is_watched_and_judged_again(
    team, searx, model, news
):
    searx.results("acme", hit(news["rumour"], "Gossip"))
    monitor = make_monitor(team, ["acme"])

    first = run_check(monitor)
    asked = len(model.requests)
    second = run_check(monitor)

    assert statuses(first)[news["rumour"]] == ("same", "watching")
    assert pages_of(first)[news["rumour"]].judgment["confidence"] == "low"
    assert statuses(second)[news["rumour"]] == ("same", "watching")
    assert len(model.requests) == asked + 1


# --- the rules: window and domains ----------------------------------------------


def test_the_search_window_is_enforced_on_the_publish_time(team, searx, model, site):
    now = timezone.now()
    fresh = site.html("/fresh", "Fresh", LAUNCH)
    stale = site.html("/stale", "Stale", LAUNCH)
    undated = site.html("/undated", "Undated", LAUNCH)
    searx.results(
        "acme",
        hit(fresh, "Fresh", published=now - timedelta(minutes=30)),
        hit(stale, "Stale", published=now - timedelta(hours=3)),
        hit(undated, "Undated"),
    )
    monitor = make_monitor(team, ["acme"], search_window="1h")

    check = run_check(monitor)

    assert set(pages_of(check)) == {fresh, undated}
    assert pages_of(check)[fresh].metadata["publishedAt"] is not None
    assert search_result(check)["rawResultCount"] == 3


def test_a_seven_day_window_asks_searxng_for_a_week(team, searx, model):
    monitor = make_monitor(team, ["acme"], search_window="7d")
    run_check(monitor)
    assert searx.params(searx.requests[0])["time_range"] == "week"
    assert searx.params(searx.requests[0])["format"] == "json"


def test_domain_filters_cut_what_they_should(team, searx):
    # Judging off: nothing is fetched, so the hosts need not exist.
    news_site = "https://news.example.com/acme-launch"
    www = "https://www.example.com/acme"
    spam = "https://spam.example.org/acme"
    searx.results("acme", hit(news_site, "N"), hit(www, "W"), hit(spam, "S"))
    only = make_monitor(team, ["acme"], goal=None, include_domains=["example.com"])
    never = make_monitor(team, ["acme"], goal=None, exclude_domains=["example.com"])

    assert set(pages_of(run_check(only))) == {news_site, www}
    assert set(pages_of(run_check(never))) == {spam}


# --- judging off, no model, degraded judging ---------------------------------------


def test_without_judging_every_new_result_alerts_with_low_confidence_unfetched(
    team, searx, news, site
):
    searx.results("acme", hit(news["launch"], "Launch"), hit(news["earnings"], "E"))
    monitor = make_monitor(team, ["acme"], goal=None, judge=False)

    first = run_check(monitor)
    second = run_check(monitor)

    assert statuses(first) == {
        news["launch"]: ("new", "alert"),
        news["earnings"]: ("new", "alert"),
    }
    page = pages_of(first)[news["launch"]]
    assert page.judgment["confidence"] == "low"
    assert page.judgment["reason"].startswith("Not judged: judging is off")
    assert page.verdict == PageResult.Verdict.NOT_JUDGED
    assert site.requests == []  # no page was fetched
    assert first.actual_credits == 2
    assert search_result(first)["resultsJudged"] == 0
    assert {s for s, _ in statuses(second).values()} == {"same"}


def test_with_a_goal_but_no_model_new_results_alert_as_not_judged(
    team, searx, news, settings
):
    settings.LLM_BASE_URL = ""
    searx.results("acme", hit(news["launch"], "Launch"))
    monitor = make_monitor(team, ["acme"])

    check = run_check(monitor)

    page = pages_of(check)[news["launch"]]
    assert (page.status, page.metadata["searchStatus"]) == ("new", "alert")
    assert "no AI model is configured" in page.judgment["reason"]


def test_a_judge_that_fails_makes_the_result_an_error_tried_again_next_time(
    team, searx, model, news
):
    searx.results("acme", hit(news["launch"], "Launch"))
    monitor = make_monitor(team, ["acme"])
    model.then(status(500), status(500), status(500))

    first = run_check(monitor)
    second = run_check(monitor)

    page = pages_of(first)[news["launch"]]
    assert (page.status, page.metadata["searchStatus"]) == ("error", "skipped")
    assert page.error_kind == ErrorKind.NOT_JUDGED
    assert page.error.startswith("This result could not be judged against the goal:")
    assert first.status == Check.Status.FAILED  # its only page failed
    result = search_result(first)
    assert result["judgeDegraded"] is True
    assert result["degradedReason"] == (
        "Results were found but none could be judged; results may be incomplete."
    )
    assert result["resultsJudged"] == 0 and first.actual_credits == 2
    assert statuses(second)[news["launch"]] == ("new", "alert")


def test_a_search_whose_only_result_could_not_be_judged_says_so_not_page_words(
    team, searx, model, news
):
    searx.results("acme", hit(news["launch"], "Launch"))
    model.then(status(500), status(500), status(500))

    check = run_check(make_monitor(team, ["acme"]))

    assert check.status == Check.Status.FAILED
    assert check.error == "The search result could not be judged against the goal."


def test_a_search_none_of_whose_results_could_be_judged_counts_them_as_results(
    team, searx, model, news
):
    searx.results(
        "acme", hit(news["launch"], "Launch"), hit(news["earnings"], "Earnings")
    )
    model.then(*[status(500)] * 6)

    check = run_check(make_monitor(team, ["acme"]))

    assert check.status == Check.Status.FAILED
    assert check.error == (
        "None of the 2 search results could be judged against the goal."
    )


def test_some_results_not_judged_are_counted_as_results_and_beside_pages_as_pages():
    only_results = {"error": 1, "totalPages": 3, "search": {"skipped": 1, "alert": 2}}

    assert Check.outcome(only_results, unjudged=1) == (
        Check.Status.PARTIAL,
        "1 of 3 search results could not be judged against the goal.",
    )
    # Its page could not be fetched: not judged, but still a search result.
    assert Check.outcome(only_results) == (
        Check.Status.PARTIAL,
        "1 of 3 search results could not be checked.",
    )


def test_beside_pages_a_result_not_judged_is_counted_as_a_result_not_a_page():
    one_page = {"error": 1, "totalPages": 4, "search": {"skipped": 1, "alert": 2}}
    a_page_failed = {
        "error": 3,
        "totalPages": 5,
        "search": {"skipped": 2, "alert": 1},
    }
    all_failed = {"error": 2, "totalPages": 2, "search": {"skipped": 1}}

    assert Check.outcome(one_page, unjudged=1) == (
        Check.Status.PARTIAL,
        "1 of 3 search results could not be judged against the goal.",
    )
    assert Check.outcome(a_page_failed, unjudged=2) == (
        Check.Status.PARTIAL,
        "1 of 2 pages could not be checked."
        " 2 of 3 search results could not be judged against the goal.",
    )
    assert Check.outcome(all_failed, unjudged=1) == (
        Check.Status.FAILED,
        "The page could not be checked."
        " The search result could not be judged against the goal.",
    )


def test_a_result_whose_page_fails_is_skipped_as_an_error(team, searx, model, site):
    gone = site.url("/gone")
    searx.results("acme", hit(gone, "Gone"))
    monitor = make_monitor(team, ["acme"])

    check = run_check(monitor)

    page = pages_of(check)[gone]
    assert (page.status, page.metadata["searchStatus"]) == ("error", "skipped")
    assert page.error == "The page answered HTTP 404."
    assert model.requests == []
    state = SearchResultState.objects.get(monitor=monitor)
    assert state.status == SearchResultState.Status.SKIPPED


# --- degraded, not empty -------------------------------------------------------------


@pytest.mark.parametrize(
    ("breaks", "reason"),
    [
        (lambda s: s.fail(500), "SearXNG answered HTTP 500 (boom)."),
        (lambda s: s.hang(3), "SearXNG could not be reached: Gave up on 127.0.0.1"),
        (
            lambda s: setattr(s, "unresponsive", [["google", "timeout"]]),
            "None of SearXNG's search engines gave results; these did not answer:"
            " google (timeout).",
        ),
        (
            lambda s: s.fail(403, "Forbidden"),
            "SearXNG refused to answer in JSON (HTTP 403)",
        ),
    ],
)
def test_a_failed_search_is_recorded_as_a_failed_search_with_its_reason_not_as_a_page(
    team, searx, model, news, breaks, reason
):
    searx.results("acme", hit(news["launch"], "Launch"))
    monitor = make_monitor(team, ["acme"])
    run_check(monitor)
    searx.results("acme")  # no results: only the failure can speak
    breaks(searx)

    check = run_check(monitor)

    # Its only target could not do its part: the check failed, and says why.
    assert check.status == Check.Status.FAILED
    assert check.error.startswith("The web search failed: “acme”: ")
    assert reason in check.error
    # No page stands for the search, at the provider's address or anywhere.
    assert not check.pages.exists()
    assert check.summary["totalPages"] == 0 and check.summary["error"] == 0
    result = search_result(check)
    assert result["searchCompleted"] is False
    assert result["degradedReason"].startswith("The web search failed: “acme”: ")
    assert reason in result["degradedReason"]
    assert reason in result["summary"]
    assert check.billing_status != Check.Billing.CONFIRMED


def test_one_failed_query_leaves_the_others_results_standing(team, searx, model, news):
    searx.results("acme", hit(news["launch"], "Launch"))
    monitor = make_monitor(team, ["acme", "broken"])
    searx.unresponsive = [["bing", "CAPTCHA"]]  # "broken" finds nothing

    check = run_check(monitor)

    assert statuses(check)[news["launch"]] == ("new", "alert")
    assert searx.site.base_url not in pages_of(check)
    assert check.pages.count() == 1
    # Partial: what was found stands, and the failed query is said.
    assert check.status == Check.Status.PARTIAL
    assert "“broken”: None of SearXNG's search engines" in check.error
    result = search_result(check)
    assert result["searchCompleted"] is False
    assert "“broken”: None of SearXNG's search engines" in result["degradedReason"]


def test_a_failed_search_beside_a_failed_page_fails_the_check_naming_both(
    team, searx, model, site
):
    searx.fail(500)
    monitor = make_monitor(team, ["acme"])
    Target.objects.create(
        monitor=monitor, type="scrape", urls=[site.url("/gone")], position=1
    )

    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert check.error.startswith("The web search failed: “acme”: SearXNG")
    assert check.error.endswith("The page could not be checked.")
    assert check.summary["totalPages"] == 1 and check.summary["error"] == 1


def test_a_search_that_finds_nothing_completes_with_no_matches(team, searx, model):
    searx.results("acme")

    check = run_check(make_monitor(team, ["acme"]))

    assert (check.status, check.error) == (Check.Status.COMPLETED, None)
    result = search_result(check)
    assert result["searchCompleted"] is True and result["degradedReason"] is None
    assert result["summary"] == "0 matches across 0 results."


def test_the_reasons_of_several_failed_queries_read_as_sentences(team, searx, model):
    searx.fail(500)
    check = run_check(make_monitor(team, ["acme", "rocket"]))
    reason = search_result(check)["degradedReason"]
    assert ".;" not in reason and ".;" not in search_result(check)["summary"]
    assert re.search(r"“acme”: .+\. “rocket”: .+\.$", reason), reason
    assert check.error == reason


# --- no provider ------------------------------------------------------------


def test_without_a_provider_the_target_is_not_run_and_says_which_setting_to_set(
    team, settings, site
):
    settings.SEARXNG_URL = settings.BRAVE_API_KEY = ""
    settings.TAVILY_API_KEY = settings.FIRECRAWL_API_KEY = ""
    settings.SEARCH_PROVIDER = ""
    monitor = make_monitor(team, ["acme"])
    url = site.html("/p", "P", "<p>x</p>")
    Target.objects.create(monitor=monitor, type="scrape", urls=[url], position=1)

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED
    result = search_result(check)
    assert result["skipped"] is True and result["reason"] == NOT_CONFIGURED
    assert "SEARXNG_URL" in result["reason"]
    # The page (judging counts only with a model): the search target, not
    # run, costs nothing.
    assert monitor.estimated_credits_per_run() == 1

    Target.objects.filter(monitor=monitor, type="scrape").delete()
    alone = run_check(monitor)
    assert alone.status == Check.Status.FAILED and alone.error == NOT_CONFIGURED


# --- the door ----------------------------------------------------------------------


def test_the_provider_host_may_be_private_but_result_pages_may_not(
    team, searx, model, news, settings
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    # A host name is judged by the address it resolves to, when fetched.
    launch = news["launch"].replace("127.0.0.1", "news.test")
    searx.results("acme", hit(launch, "Launch"))
    monitor = make_monitor(team, ["acme"])
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)

    def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    check = runner.run(check, resolver=resolver)

    page = pages_of(check)[launch]
    assert (page.status, page.metadata["searchStatus"]) == ("error", "skipped")
    assert page.error_kind == ErrorKind.BLOCKED_ADDRESS
    assert search_result(check)["searchCompleted"] is True


@pytest.mark.parametrize("judge", [False, True])
def test_results_at_a_literal_private_or_metadata_address_are_never_reported(
    team, searx, model, news, settings, judge
):
    # A crawl drops such links too: reported, they would alert (judging off)
    # or fail the check on every run as pages nobody may fetch (judging on).
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    metadata = "http://169.254.169.254/latest/meta-data/"
    searx.results(
        "acme",
        hit(metadata, "Metadata"),
        hit("http://10.0.0.1/acme", "Intranet"),
        hit("http://localhost:8000/admin/", "Admin"),
        hit("http://[::ffff:127.0.0.1]/", "Mapped loopback"),
        hit("https://news.example.com/acme-launch", "Public"),
    )
    monitor = make_monitor(team, ["acme"], judge=judge)

    check = run_check(monitor)

    # The public result is judged (its page cannot be fetched here) or alerts.
    assert set(pages_of(check)) == {"https://news.example.com/acme-launch"}
    assert not SearchResultState.objects.filter(url=metadata).exists()
    result = search_result(check)
    assert (result["resultCount"], result["rawResultCount"]) == (1, 5)


def test_a_result_whose_address_is_not_text_is_left_out_and_the_others_stand(
    team, searx
):
    # JSON can carry a lone surrogate ("\ud800"), which no URL encodes.
    searx.results(
        "acme",
        hit("https://example.com/\ud800", "Broken"),
        hit("https://example.com/fine", "Fine"),
    )
    check = run_check(make_monitor(team, ["acme"], goal=None))
    assert search_result(check)["searchCompleted"] is True
    assert set(pages_of(check)) == {"https://example.com/fine"}


def test_a_result_on_a_private_address_is_kept_when_private_targets_are_allowed(
    team, searx
):
    searx.results("acme", hit("http://10.0.0.1/acme", "Intranet"))
    check = run_check(make_monitor(team, ["acme"], goal=None))
    assert set(pages_of(check)) == {"http://10.0.0.1/acme"}
