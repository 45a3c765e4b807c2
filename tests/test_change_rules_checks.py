"""A monitor's change rules decide which changes matter without the AI: run by
checks.runner against pages on 127.0.0.1, with the scripted model
(tests/llm.py) standing by to prove it is not asked about what the rules set
aside."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from checks import runner
from checks.content import ChangeRules, set_aside_reason
from checks.models import Check, PageResult, Snapshot
from monitors.models import Monitor, Target, Team
from tests import test_history
from tests.llm import PLANS as LLM_PLANS
from tests.llm import PLANS_SCHEMA
from tests.sites import Site

pytest_plugins = ["tests.llm"]
pytestmark = pytest.mark.django_db

web = test_history.web

GOAL = "Tell me when a plan's price changes"
PLANS = "<h1>Plans</h1><p>Starter: $19</p><p>Pro: $49</p><p>Team: $99</p>"


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def make_monitor(
    team: Team, url: str, change_rules: dict[str, Any], *, goal: str | None = GOAL
) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing",
        schedule_cron="*/30 * * * *",
        goal=goal,
        judge_enabled=bool(goal),
        change_rules=change_rules,
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    return monitor


def run_check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    return runner.run(check)


def changed(
    team: Team, site: Site, before: str, after: str, rules: dict[str, Any], **kw: Any
) -> PageResult:
    """The second check's page of a monitor whose page goes from `before` to
    `after`."""
    url = site.html("/pricing", "Pricing", before)
    monitor = make_monitor(team, url, rules, **kw)
    run_check(monitor)
    site.html("/pricing", "Pricing", after)
    return run_check(monitor).pages.get()


def test_a_removed_only_change_is_noise_under_added_only_and_the_model_is_not_asked(
    team, site, model
):
    page = changed(
        team, site, PLANS, PLANS.replace("<p>Team: $99</p>", ""), {"lines": "added"}
    )

    assert page.status == PageResult.Status.CHANGED
    assert page.verdict == PageResult.Verdict.NOISE
    assert page.is_meaningful is False and page.counts_as_meaningful is False
    assert page.judgment == {
        "meaningful": False,
        "confidence": "high",
        "reason": "Only lines were removed; this monitor tells of added lines only.",
        "meaningfulChanges": [],
    }
    assert page.metadata["judgedBy"] == "rules"
    assert page.metadata["creditsUsed"] == 1  # the fetch; no judging
    assert model.requests == []
    check = page.check_run
    assert (check.noise, check.changes_not_unimportant) == (1, 0)


def test_an_added_line_passes_added_only_and_goes_on_to_the_judge(team, site, model):
    page = changed(
        team, site, PLANS, PLANS + "<p>Enterprise: $499</p>", {"lines": "added"}
    )

    assert page.verdict == PageResult.Verdict.MEANINGFUL
    assert "judgedBy" not in page.metadata
    assert len(model.requests) == 1


def test_without_a_goal_a_change_the_rules_let_through_counts_as_meaningful(
    team, site, model
):
    page = changed(
        team,
        site,
        PLANS,
        PLANS.replace("$49", "$59"),
        {"lines": "any", "containing": ["pro"]},
        goal=None,
    )

    assert page.status == PageResult.Status.CHANGED
    assert (page.verdict, page.judgment) == ("", None)
    assert page.counts_as_meaningful is True
    assert model.requests == []


def test_a_change_whose_lines_hold_none_of_the_words_is_set_aside(team, site, model):
    rules = {"lines": "any", "containing": ["enterprise", "/Team: \\$1\\d\\d/"]}

    starter = changed(team, site, PLANS, PLANS.replace("$19", "$29"), rules)
    team_price = changed(team, site, PLANS, PLANS.replace("$99", "$129"), rules)

    assert starter.verdict == PageResult.Verdict.NOISE
    assert starter.judgment["reason"] == (
        "None of the added or removed lines contains any of “enterprise”, "
        "“/Team: \\$1\\d\\d/”; this monitor tells only of changes that do."
    )
    assert team_price.verdict == PageResult.Verdict.MEANINGFUL
    assert len(model.requests) == 1  # the Team price alone was judged


def test_words_are_looked_for_in_the_chosen_lines_only(team, site, model):
    # "Pro" is in the removed line only: the added one says "Premium".
    page = changed(
        team,
        site,
        PLANS,
        PLANS.replace("Pro: $49", "Premium: $49"),
        {"lines": "added", "containing": ["pro"]},
        goal=None,
    )

    assert page.verdict == PageResult.Verdict.NOISE
    assert "added lines" in page.judgment["reason"]


def test_out_of_stock_disappearing_is_told_and_other_changes_are_not(team, site, model):
    stocked = "<h1>Lamp</h1><p>Price: $30</p><p>In stock</p>"
    sold_out = "<h1>Lamp</h1><p>Price: $30</p><p>Out of stock</p>"
    url = site.html("/lamp", "Lamp", sold_out)
    monitor = make_monitor(team, url, {"disappears": "out of stock"}, goal=None)
    run_check(monitor)

    site.html("/lamp", "Lamp", sold_out.replace("$30", "$25"))
    price_only = run_check(monitor).pages.get()
    site.html("/lamp", "Lamp", stocked.replace("$30", "$25"))
    back_in_stock = run_check(monitor).pages.get()

    assert price_only.verdict == PageResult.Verdict.NOISE
    assert price_only.judgment["reason"] == (
        "“out of stock” did not disappear (it is still on the page); this "
        "monitor tells only when that happens."
    )
    assert price_only.check_run.changes_not_unimportant == 0
    assert back_in_stock.status == PageResult.Status.CHANGED
    assert back_in_stock.verdict == "" and back_in_stock.counts_as_meaningful
    assert model.requests == []


def test_a_text_appearing_is_told_even_where_the_diff_does_not_show_it_all(
    team, site, model
):
    # "Tickets on sale" is on the page already, far from the change: it
    # did not appear, though an added line holds it.
    filler = "".join(f"<p>Line {n}</p>" for n in range(20))
    before = f"<p>Tickets on sale</p>{filler}<p>Gig: soon</p>"
    after = f"<p>Tickets on sale</p>{filler}<p>Gig: Tickets on sale now</p>"

    page = changed(team, site, before, after, {"appears": "tickets on sale"}, goal=None)

    assert page.verdict == PageResult.Verdict.NOISE
    assert "was on the page already" in page.judgment["reason"]


def test_a_page_fetched_again_without_a_change_is_not_touched_by_the_rules(
    team, site, model
):
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = make_monitor(team, url, {"lines": "added"})
    run_check(monitor)

    page = run_check(monitor).pages.get()

    assert page.status == PageResult.Status.SAME
    assert page.judgment is None and "judgedBy" not in page.metadata


def words_of(response) -> str:
    """A page's text as read: tags out, spaces made one."""
    text = re.sub(r"<[^>]+>", "", response.content.decode())
    return re.sub(r"\s+", " ", html.unescape(text))


def test_the_dashboard_says_the_rules_set_a_change_aside_not_the_ai(
    web, team, site, model
):
    page = changed(
        team, site, PLANS, PLANS.replace("<p>Team: $99</p>", ""), {"lines": "added"}
    )
    monitor = page.check_run.monitor

    diff = words_of(web.get(page.get_absolute_url()))
    check = words_of(web.get(page.check_run.get_absolute_url()))
    shown = words_of(web.get(monitor.get_absolute_url()))

    assert (
        "Set aside by this monitor's rules: Only lines were removed; this monitor "
        "tells of added lines only." in diff
    )
    assert "The AI judge is" not in diff and "Judged not important" not in diff
    assert "Set aside by the rules" in check
    assert "Only changes with added lines count." in shown


def test_in_json_mode_a_text_change_with_the_same_fields_is_no_change_to_set_aside(
    team, site, model
):
    url = site.html("/pricing", "Pricing", LLM_PLANS)
    monitor = make_monitor(team, url, {"lines": "removed"})
    Target.objects.filter(monitor=monitor).update(
        scrape_options={"formats": [{"type": "json", "schema": PLANS_SCHEMA}]}
    )
    run_check(monitor)
    site.html("/pricing", "Pricing", LLM_PLANS + "<p>Now with dark mode.</p>")

    page = run_check(monitor).pages.get()

    assert page.status == PageResult.Status.SAME
    assert (page.verdict, page.judgment) == ("", None)
    assert "judgedBy" not in page.metadata


@pytest.mark.parametrize(
    ("rules", "diff", "texts", "reason"),
    [
        ({"lines": "removed"}, "@@ -1,0 +1,1 @@\n+New", None, "Only lines were added"),
        ({"lines": "added"}, "@@ -1,1 +1,1 @@\n-\n+ ", None, "No line was added"),
        ({"lines": "added"}, "@@ -1,1 +1,1 @@\n-Old\n+New", None, None),
        ({"appears": "x"}, "@@ -1,1 +1,1 @@\n-a\n+x", None, None),
        ({"appears": "x", "disappears": "y"}, "", ("y", "x\ny"), None),
        ({"appears": "x", "disappears": "y"}, "", ("a", "b"), "one of them happens"),
    ],
)
def test_the_rules_read_a_changed_line_as_removed_and_added(rules, diff, texts, reason):
    found = set_aside_reason(ChangeRules.of(rules), diff, texts)

    assert (found is None) if reason is None else (reason in found)


WIDE = [f"/[\\p{{L}}\\p{{N}}]{{1,{250 - n}}}/" for n in range(20)]


def test_words_too_large_to_search_together_are_searched_one_by_one():
    rules = ChangeRules.of({"containing": [*WIDE, "/^Pro/"]})

    assert set_aside_reason(rules, "@@ -1,1 +1,1 @@\n-!!\n+Pro: $59") is None
    assert "contains any of" in set_aside_reason(rules, "@@ -1,0 +1,1 @@\n+!! ?")


def test_a_text_is_looked_for_line_by_line_in_the_whole_text():
    rules = ChangeRules.of({"appears": "/^Pro: \\$59$/", "disappears": "/19.*49/"})
    before = "Starter: $19\nPro: $49"
    after = "Starter: $19\nPro: $59"

    assert set_aside_reason(rules, "", (before, after)) is None
    assert "did not appear" in set_aside_reason(rules, "", (after, after))


def test_rules_that_fail_let_the_change_through_and_say_so_in_the_log(
    team, site, model, monkeypatch, caplog
):
    def fails(*args: Any) -> str:
        raise ValueError("pattern too large")

    monkeypatch.setattr("checks.pipeline.judge.set_aside_reason", fails)

    page = changed(
        team, site, PLANS, PLANS.replace("$49", "$59"), {"lines": "added"}, goal=None
    )

    assert page.status == PageResult.Status.CHANGED
    assert (page.verdict, page.counts_as_meaningful) == ("", True)
    assert "change rules failed" in caplog.text


def test_with_an_unreadable_baseline_the_rules_let_the_change_through(
    team, site, model
):
    url = site.html("/pricing", "Pricing", PLANS + "<p>Out of stock</p>")
    monitor = make_monitor(team, url, {"disappears": "Out of stock"}, goal=None)
    run_check(monitor)
    Snapshot.objects.update(data=b"damaged")
    after = PLANS.replace("$49", "$59") + "<p>Out of stock</p>"
    site.html("/pricing", "Pricing", after)

    page = run_check(monitor).pages.get()

    assert page.status == PageResult.Status.CHANGED
    assert (page.verdict, page.counts_as_meaningful) == ("", True)
    assert "judgedBy" not in page.metadata


def test_messages_say_the_rules_set_a_change_aside_not_a_judge(team, site, model):
    from datetime import UTC, datetime, timedelta

    from checks.notify.digests import _changes
    from checks.notify.kinds.slack import _digest_entry
    from checks.notify.messages import _render
    from checks.notify.reports import change_report
    from monitors.models import Channel, MonitorChannel

    page = changed(
        team, site, PLANS, PLANS.replace("<p>Team: $99</p>", ""), {"lines": "added"}
    )
    channel = Channel.objects.create(
        team=team, name="Everything", kind="pigeon", events=["change"]
    )
    MonitorChannel.objects.create(monitor=page.check_run.monitor, channel=channel)
    now = datetime.now(UTC)

    report = change_report(page.check_run)
    entries = _changes(channel, now - timedelta(hours=1), now + timedelta(hours=1))
    since = now.isoformat()
    digest = _render({"type": "channel.digest", "since": since, "monitors": entries})

    assert report.pages[0].label == "changed (set aside by this monitor's rules)"
    assert report.counts_line() == "1 set aside by this monitor's rules"
    assert f"{page.url} (set aside by this monitor's rules)" in digest
    assert "(set aside by this monitor's rules)" in json.dumps(
        _digest_entry(entries[0])
    )


def test_in_json_mode_the_rules_never_set_aside_a_change_of_the_fields(
    team, site, model
):
    url = site.html("/pricing", "Pricing", LLM_PLANS)
    monitor = make_monitor(team, url, {"containing": ["enterprise"]}, goal=None)
    Target.objects.filter(monitor=monitor).update(
        scrape_options={"formats": [{"type": "json", "schema": PLANS_SCHEMA}]}
    )
    run_check(monitor)
    site.html("/pricing", "Pricing", LLM_PLANS.replace("$49", "$59"))

    page = run_check(monitor).pages.get()

    assert page.status == PageResult.Status.CHANGED
    assert page.diff["json"]
    assert (page.verdict, page.judgment) == ("", None)
    assert page.counts_as_meaningful is True
    assert "judgedBy" not in page.metadata
