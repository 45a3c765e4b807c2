"""What the AI model's calls used (checks.models.AIUse), shown to the team and
bounded by LLM_MONTHLY_TOKENS_PER_TEAM, through real checks (checks.runner)
against pages on 127.0.0.1 and the scripted OpenAI-compatible model
(tests/llm.py), which reports the tokens of tests.llm.USAGE."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from checks import runner
from checks.ai import allowance
from checks.ai.client import Use
from checks.models import AIUse, Check, PageResult
from checks.pipeline import batch
from monitors.models import Membership, Monitor, Target, Team
from tests.llm import PLANS, PLANS_SCHEMA, USAGE, FakeModel, sensible
from tests.sites import Site

pytest_plugins = ["tests.searching"]  # its `model` is tests.llm's
pytestmark = pytest.mark.django_db

GOAL = "Tell me when a plan's price changes"
JSON_AND_SUMMARY = [
    {"type": "json", "schema": PLANS_SCHEMA, "prompt": "The plans"},
    "summary",
]
NOVEMBER = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DECEMBER = datetime(2026, 12, 1, 0, 30, tzinfo=UTC)


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def make_monitor(
    team: Team, url: str, *, name: str = "Pricing", formats: Any = None
) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name=name, schedule_cron="*/30 * * * *", goal=GOAL,
        judge_enabled=True,
    )  # fmt: skip
    options = {"formats": formats} if formats else {}
    Target.objects.create(
        monitor=monitor, type="scrape", urls=[url], scrape_options=options
    )
    return monitor


def run_check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    return runner.run(check)


def price_change(site: Site, monitor: Monitor, price: str) -> Check:
    site.html("/pricing", "Pricing", PLANS.replace("$49", price))
    return run_check(monitor)


def used(**where: Any) -> dict[str, tuple[int, int, int, int]]:
    """(requests, prompt tokens, completion tokens, unmeasured) by kind."""
    return {
        kind: (row["requests"], row["prompt"], row["completion"], row["unmeasured"])
        for kind, row in AIUse.objects.filter(**where).by_kind().items()
    }


# --- recorded ------------------------------------------------------------------------


def test_each_kind_of_call_records_the_tokens_its_answers_reported(team, site, model):
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = make_monitor(team, url, formats=JSON_AND_SUMMARY)

    first = run_check(monitor)
    second = price_change(site, monitor, "$59")

    assert second.pages.get().verdict == PageResult.Verdict.MEANINGFUL
    extraction, summary, judgment = (
        USAGE["extraction"],
        USAGE["summary"],
        USAGE["judgment"],
    )
    # The first check: the new page read and summarised; the second: again,
    # and its changed plans judged.
    assert used(check_run=first) == {
        "extraction": (1, *extraction, 0),
        "summary": (1, *summary, 0),
    }
    assert used(check_run=second) == {
        "extraction": (1, *extraction, 0),
        "summary": (1, *summary, 0),
        "judgment": (1, *judgment, 0),
    }
    assert set(AIUse.objects.values_list("team", "monitor")) == {(team.pk, monitor.pk)}
    assert len(model.requests) == 5


def test_a_search_results_relevance_calls_are_recorded(team, searx, model, news):
    from tests.searching import hit

    searx.results(
        "acme", hit(news["launch"], "Acme launches"), hit(news["earnings"], "Money")
    )
    monitor = Monitor.objects.create(
        team=team, name="Acme news", schedule_cron="*/30 * * * *",
        goal="Tell me when Acme announces a product launch", judge_enabled=True,
    )  # fmt: skip
    Target.objects.create(
        monitor=monitor, type="search", queries=["acme"], search_window="24h",
        max_results=10,
    )  # fmt: skip

    check = run_check(monitor)

    assert used(check_run=check) == {
        "relevance": (2, 2 * USAGE["relevance"][0], 2 * USAGE["relevance"][1], 0)
    }


def test_answers_without_usage_are_counted_as_requests_of_unknown_tokens(
    team, site, model
):
    model.omit_usage = True
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = make_monitor(team, url)
    run_check(monitor)

    check = price_change(site, monitor, "$59")

    assert check.pages.get().verdict == PageResult.Verdict.MEANINGFUL
    assert used(check_run=check) == {"judgment": (1, 0, 0, 1)}


# --- bounded -------------------------------------------------------------------------


def allowance_reached(settings, team: Team, site: Site, model: FakeModel) -> Monitor:
    """A team whose first judged change uses its whole month's allowance."""
    settings.LLM_MONTHLY_TOKENS_PER_TEAM = sum(USAGE["judgment"])
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = make_monitor(team, url)
    run_check(monitor)
    judged = price_change(site, monitor, "$59").pages.get()
    assert judged.verdict == PageResult.Verdict.MEANINGFUL
    assert len(model.requests) == 1
    return monitor


@time_machine.travel(NOVEMBER)
def test_a_team_past_its_allowance_gets_changes_not_judged_and_no_calls(
    settings, team, site, model
):
    monitor = allowance_reached(settings, team, site, model)

    page = price_change(site, monitor, "$69").pages.get()

    assert page.status == PageResult.Status.CHANGED
    assert page.verdict == PageResult.Verdict.NOT_JUDGED
    assert page.judgment == {
        "meaningful": True,
        "confidence": "low",
        "reason": "Not judged: this team's AI allowance for November is used up; "
        "it renews on 1 December.",
        "meaningfulChanges": [],
    }
    assert len(model.requests) == 1  # the model was not asked again


@time_machine.travel(NOVEMBER)
def test_past_the_allowance_json_extraction_pages_are_errors_naming_it(
    settings, team, site, model
):
    monitor = allowance_reached(settings, team, site, model)
    target = monitor.targets.get()
    target.scrape_options = {"formats": JSON_AND_SUMMARY}
    target.save()

    page = price_change(site, monitor, "$79").pages.get()

    assert page.status == PageResult.Status.ERROR
    assert page.error == (
        "JSON extraction was not done: this team's AI allowance for November is "
        "used up; it renews on 1 December."
    )
    assert len(model.requests) == 1


@time_machine.travel(NOVEMBER)
def test_past_the_allowance_search_results_alert_not_judged_without_calls(
    settings, team, site, model, searx, news
):
    from tests.searching import hit

    allowance_reached(settings, team, site, model)
    searx.results("acme", hit(news["launch"], "Acme launches"))
    monitor = Monitor.objects.create(
        team=team, name="Acme news", schedule_cron="*/30 * * * *",
        goal="Tell me when Acme announces a product launch", judge_enabled=True,
    )  # fmt: skip
    Target.objects.create(
        monitor=monitor, type="search", queries=["acme"], search_window="24h",
        max_results=10,
    )  # fmt: skip

    page = run_check(monitor).pages.get()

    assert (page.status, page.metadata["searchStatus"]) == ("new", "alert")
    assert page.verdict == PageResult.Verdict.NOT_JUDGED
    assert page.judgment["reason"] == (
        "Not judged: this team's AI allowance for November is used up; it renews "
        "on 1 December, so every new result is reported."
    )
    assert len(model.requests) == 1


def test_another_team_is_not_held_by_one_teams_allowance(
    settings, team, other_team, site, model
):
    allowance_reached(settings, team, site, model)
    theirs = make_monitor(other_team, site.html("/theirs", "Theirs", PLANS))
    run_check(theirs)
    site.html("/theirs", "Theirs", PLANS.replace("$19", "$29"))

    page = run_check(theirs).pages.get()

    assert page.verdict == PageResult.Verdict.MEANINGFUL
    assert len(model.requests) == 2


def test_the_model_is_asked_again_when_the_next_month_begins(
    settings, team, site, model
):
    with time_machine.travel(NOVEMBER):
        monitor = allowance_reached(settings, team, site, model)
        held = price_change(site, monitor, "$69").pages.get()
    with time_machine.travel(DECEMBER):
        page = price_change(site, monitor, "$89").pages.get()

    assert held.verdict == PageResult.Verdict.NOT_JUDGED
    assert page.verdict == PageResult.Verdict.MEANINGFUL
    assert len(model.requests) == 2


# --- shown ---------------------------------------------------------------------------


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def words_of(response: Any) -> str:
    """The page's text: inline tags taken out, other tags and runs of white
    space made one space."""
    assert response.status_code == 200
    text = re.sub(
        r"</?(strong|em|span|a|time|code)\b[^>]*>", "", response.content.decode()
    )
    text = re.sub(r"<[^>]+>", " ", text)
    return " ".join(html.unescape(text).split())


def judged_twice(team: Team, site: Site, name: str = "Pricing") -> Monitor:
    """A monitor whose page changed once: one judged change (150 tokens)."""
    url = site.html(f"/{name}", name, PLANS)
    monitor = make_monitor(team, url, name=name)
    run_check(monitor)
    site.html(f"/{name}", name, PLANS.replace("$49", "$59"))
    run_check(monitor)
    return monitor


@time_machine.travel(NOVEMBER)
def test_the_team_page_says_this_months_use_and_the_monitors_that_used_most(
    web, team, site, model, settings
):
    settings.LLM_MONTHLY_TOKENS_PER_TEAM = 100_000
    judged_twice(team, site, "Pricing")
    monitor = make_monitor(team, site.html("/docs", "Docs", PLANS), name="Docs")
    target = monitor.targets.get()
    target.scrape_options = {"formats": JSON_AND_SUMMARY}
    target.save()
    run_check(monitor)  # one extraction (240 tokens) and one summary (170)
    AIUse.objects.create(
        team=team,
        monitor=monitor,
        kind="summary",
        requests=9,
        unmeasured=9,
        created_at=datetime(2026, 10, 31, 23, 0, tzinfo=UTC),
    )  # fmt: skip  -- October's: not this month's

    text = words_of(web.get(reverse("team-members")))

    assert "This month (November): 3 requests to the AI model, 560 tokens." in text
    assert (
        "This team may use about 100 thousand tokens a month; about 99 thousand "
        "are left, and it renews on 1 December." in text
    )
    assert (
        "Monitors that used the most Docs: 2 requests to the AI model, 410 tokens "
        "Pricing: 1 request to the AI model, 150 tokens" in text
    )


@time_machine.travel(NOVEMBER)
def test_the_team_page_and_the_monitor_page_say_when_the_allowance_is_used_up(
    web, team, site, model, settings
):
    monitor = allowance_reached(settings, team, site, model)

    team_text = words_of(web.get(reverse("team-members")))
    monitor_text = words_of(web.get(reverse("monitor-detail", args=[monitor.pk])))

    assert (
        "This team's AI allowance for November (150 tokens) is used up: changes "
        "are reported without being judged, and pages that read data with the AI "
        "model show an error, until it renews on 1 December." in team_text
    )
    assert "AI use this month 1 request to the AI model, 150 tokens." in monitor_text
    assert (
        "Changes are reported without being judged: this team's AI allowance for "
        "November is used up; it renews on 1 December." in monitor_text
    )


@time_machine.travel(NOVEMBER)
def test_a_monitor_that_asks_the_model_nothing_is_not_said_to_be_held(
    web, team, site, model, settings
):
    allowance_reached(settings, team, site, model)
    plain = Monitor.objects.create(
        team=team, name="Plain", schedule_cron="*/30 * * * *", judge_enabled=False
    )
    Target.objects.create(monitor=plain, type="scrape", urls=[site.url("/pricing")])

    text = words_of(web.get(reverse("monitor-detail", args=[plain.pk])))

    assert "AI use this month No requests to the AI model." in text
    assert "without being judged" not in text


def test_requests_answered_without_usage_are_shown_as_of_unknown_tokens(
    web, team, site, model
):
    model.omit_usage = True
    monitor = judged_twice(team, site)

    text = words_of(web.get(reverse("monitor-detail", args=[monitor.pk])))

    assert (
        "1 request to the AI model; the model did not say how many tokens they used"
        in text
    )


def test_the_admin_lists_each_teams_use_this_month(
    admin_client, team, other_team, site, model
):
    judged_twice(team, site)

    listing = words_of(admin_client.get(reverse("admin:monitors_team_changelist")))
    page = words_of(
        admin_client.get(reverse("admin:monitors_team_change", args=[team.pk]))
    )

    assert "1 request to the AI model, 150 tokens" in listing
    assert "No requests to the AI model" in listing  # the other team
    assert "AI use this month: 1 request to the AI model, 150 tokens" in page


@time_machine.travel(NOVEMBER)
def test_the_api_monitor_warning_names_the_used_up_allowance(
    api, team, site, model, settings
):
    monitor = allowance_reached(settings, team, site, model)

    listed = api.get("/v2/monitor").json()["data"]
    one = api.get(f"/v2/monitor/{monitor.pk}").json()["data"]

    warning = (
        "This team's AI allowance for November is used up; it renews on 1 December: "
        "until then changes are reported as not judged and JSON extraction pages "
        "are errors."
    )
    assert [m["warning"] for m in listed] == [warning]
    assert one["warning"] == warning


@time_machine.travel(NOVEMBER)
def test_the_api_asks_the_allowance_once_for_a_page_of_monitors(
    api, team, site, model, settings, django_assert_max_num_queries
):
    allowance_reached(settings, team, site, model)
    for name in ("Docs", "Blog"):
        make_monitor(team, site.html(f"/{name}", name, PLANS), name=name)
    quiet = Monitor.objects.create(
        team=team, name="Quiet", schedule_cron="*/30 * * * *", judge_enabled=False
    )  # asks the model nothing: no warning

    with django_assert_max_num_queries(9) as queries:
        listed = api.get("/v2/monitor").json()["data"]

    warnings = {m["name"]: m["warning"] for m in listed}
    assert warnings.pop(quiet.name) is None
    assert len(set(warnings.values())) == 1 and len(warnings) == 3
    assert sum("checks_aiuse" in q["sql"] for q in queries.captured_queries) == 1


def test_metrics_count_ai_tokens_and_requests_by_kind(
    client, settings, redis_server, team, site, model
):
    settings.METRICS_TOKEN = "m" * 40
    model.omit_usage = False
    judged_twice(team, site)
    model.omit_usage = True
    monitor = make_monitor(team, site.html("/docs", "Docs", PLANS), name="Docs")
    monitor.targets.update(scrape_options={"formats": ["summary"]})
    run_check(monitor)

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer " + "m" * 40)
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }

    def sample(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert sample("pagewatch_ai_tokens_total", kind="judgment", part="prompt") == 120
    assert sample("pagewatch_ai_tokens_total", kind="judgment", part="completion") == 30
    assert sample("pagewatch_ai_tokens_total", kind="relevance", part="prompt") == 0
    assert (
        sample("pagewatch_ai_requests_total", kind="judgment", tokens="reported") == 1
    )
    assert (
        sample("pagewatch_ai_requests_total", kind="summary", tokens="unreported") == 1
    )
    assert sample("pagewatch_ai_requests_total", kind="summary", tokens="reported") == 0


# --- recorded by batches -------------------------------------------------------------


def test_two_batches_of_one_check_add_up_in_one_row(team):
    monitor = Monitor.objects.create(team=team, name="Pricing", schedule_cron="@daily")
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)

    AIUse.objects.record(check, {"judgment": Use(1, 10, 5, 0)})
    AIUse.objects.record(check, {"judgment": Use(2, 100, 50, 1)})

    assert used(check_run=check) == {"judgment": (3, 110, 55, 1)}
    assert AIUse.objects.filter(check_run=check).count() == 1


def test_a_crawl_running_past_month_end_counts_later_tokens_in_the_new_month(team):
    monitor = Monitor.objects.create(team=team, name="Pricing", schedule_cron="@daily")
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)

    with time_machine.travel(datetime(2026, 11, 30, 23, 50, tzinfo=UTC)):
        AIUse.objects.record(check, {"judgment": Use(1, 10, 5, 0)})
    with time_machine.travel(datetime(2026, 12, 1, 0, 10, tzinfo=UTC)):
        AIUse.objects.record(check, {"judgment": Use(1, 100, 50, 0)})

    december = AIUse.objects.filter(team=team).this_month(DECEMBER)
    assert december.tokens() == 150
    assert AIUse.objects.filter(check_run=check).count() == 2


def test_a_check_ended_while_the_model_answers_keeps_the_tokens_already_answered(
    team, site, model, monkeypatch
):
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = make_monitor(team, url, formats=JSON_AND_SUMMARY)
    model.then(sensible, model.hang())  # the extraction answers, the summary hangs
    monkeypatch.setattr(batch, "HEARTBEAT_SECONDS", 0.05)
    beat = batch.heartbeat

    def sweeper_ends_the_check_while_the_summary_hangs(check, one):
        if len(model.requests) == 2:
            Check.objects.filter(pk=check.pk).update(status=Check.Status.FAILED)
        beat(check, one)

    monkeypatch.setattr(
        batch, "heartbeat", sweeper_ends_the_check_while_the_summary_hangs
    )

    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert not check.pages.exists()
    assert used(check_run=check) == {"extraction": (1, *USAGE["extraction"], 0)}


@pytest.mark.parametrize(
    ("number", "said"),
    [
        (9_999, "9,999"),
        (10_400, "about 10 thousand"),
        (999_400, "about 999 thousand"),
        (999_600, "about 1 million"),
        (1_450_000, "about 1.4 million"),
    ],
)
def test_a_count_is_rounded_before_its_unit_is_chosen(number, said):
    assert allowance.about(number) == said
