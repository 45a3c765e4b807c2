"""Progress, times, diffs and the history view as a person sees them in a real
Chromium: no "0 of 0 pages", no "No checks yet" under a queued check, two
checks 33 s apart told apart, line numbers that leave the width to the text,
Markdown tables shown as tables, and a history readable without JavaScript."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from checks.content import compare_texts
from checks.models import Check, PageResult, Snapshot
from monitors.models import Monitor
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean, make_monitor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def finished_check(monitor: Monitor, when: datetime, **summary: int) -> Check:
    counts = {"totalPages": 0, "same": 0, "changed": 0, "new": 0, "removed": 0}
    counts |= {"error": 0, **summary}
    counts["totalPages"] = sum(v for k, v in counts.items() if k != "totalPages")
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=when,
        status=Check.Status.PARTIAL if counts["error"] else Check.Status.COMPLETED,
        started_at=when,
        finished_at=when + timedelta(seconds=2),
        summary=counts,
    )
    Check.objects.filter(pk=check.pk).update(created_at=when)
    check.created_at = when
    return check


def changed_page(check: Check, before: str, after: str, url: str, title: str):
    _, _, diff = compare_texts(before, after)
    return PageResult.objects.create(
        check_run=check,
        target_id=check.monitor.targets.first().pk,
        url=url,
        status=PageResult.Status.CHANGED,
        previous_snapshot=Snapshot.store(before),
        current_snapshot=Snapshot.store(after),
        diff=diff,
        metadata={"title": title},
    )


# ---------------------------------------------------------------- #21.8


def test_a_starting_check_never_reads_0_of_0_and_history_shows_it_queued(
    browser_page, member, team, queued, screenshot
):
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/a"])
    progress: list[str] = []
    page.on("response", lambda r: "/progress/" in r.url and progress.append(r.text()))
    sign_in(page)
    page.goto(monitor.get_absolute_url())
    history = page.locator("#check-history")
    history.get_by_text("No checks yet").wait_for()

    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    # The history lists the queued check at once instead of "No checks yet".
    history.get_by_text("Waiting to start").wait_for()
    assert "No checks yet" not in history.inner_text()
    check = Check.objects.get(pk=queued[0])

    # Claimed by a worker, pages not planned yet: "Starting", never "0 of 0".
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.RUNNING, started_at=timezone.now()
    )
    page.locator("#run-status").get_by_text("Starting the check…").wait_for()
    screenshot(page, "21-8-starting")
    Check.objects.filter(pk=check.pk).update(pages_total=3, pages_done=1)
    page.get_by_text("1 of 3 pages done").wait_for()

    page.goto("/")
    row = page.locator(f"#monitor-{monitor.pk}")
    assert "First check under way" in row.inner_text()
    assert "No checks yet" not in row.inner_text()
    assert progress and not any("0 of 0" in body for body in progress)
    assert_clean(page)


def test_two_checks_in_one_minute_show_their_seconds_and_the_full_time_on_hover(
    browser_page, member, team, screenshot
):
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/a"])  # Europe/Berlin
    start = datetime(2026, 11, 20, 10, 30, 5, tzinfo=UTC)
    for offset in (0, 33, 30 * 60 + 10):
        finished_check(monitor, start + timedelta(seconds=offset), same=1)
    sign_in(page)
    page.goto(monitor.get_absolute_url())
    cells = page.locator("#check-history td[data-label='Started'] time")
    assert cells.all_inner_texts() == [
        "Fri 20 Nov 2026, 12:00 CET",
        "Fri 20 Nov 2026, 11:30:38 CET",
        "Fri 20 Nov 2026, 11:30:05 CET",
    ]
    assert cells.first.get_attribute("title") == "Fri 20 Nov 2026, 12:00:15 CET"
    cells.nth(1).hover()
    screenshot(page, "21-8-seconds")
    assert_clean(page)


# ---------------------------------------------------------------- #21.9

TERMS = "\n\n".join(f"Clause {n} of the terms stays as it is." for n in range(1, 31))
TABLE = "| Plan | Price |\n|---|---:|\n| Pro | {pro} |\n| Team | $49 |"


def test_diff_gutters_are_narrow_and_markdown_tables_read_as_tables(
    browser_page, member, team, screenshot
):
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/terms"])
    before = f"# Terms\n\n{TERMS}\n\n{TABLE.format(pro='$19')}\n\n<script>x</script>"
    after = f"# Terms\n\n{TERMS}\n\n{TABLE.format(pro='$24')}\n\n<script>x</script>"
    check = finished_check(monitor, timezone.now(), changed=1)
    result = changed_page(check, before, after, "https://example.com/terms", "Terms")
    sign_in(page)
    page.goto(result.get_absolute_url() + "?view=split")
    table = page.locator("table.diff.diff-split")
    table.wait_for()
    # The first row is "N unchanged lines" across all columns: the widths
    # must not come from it.
    assert "unchanged lines" in table.locator("tr").first.inner_text()
    widths = page.evaluate(
        """() => {
          const t = document.querySelector('table.diff.diff-split');
          const row = t.querySelector('tr.diff-changed');
          const [ln, text] = row.querySelectorAll('td');
          return [t.getBoundingClientRect().width, ln.getBoundingClientRect().width,
                  text.getBoundingClientRect().width];
        }"""
    )
    whole, gutter, text = widths
    assert gutter < whole * 0.08, widths
    assert text > whole * 0.4, widths
    screenshot(page, "21-9-diff-split")

    page.get_by_role("link", name="One column").click()
    page.locator("table.diff.diff-inline").wait_for()
    inline = page.evaluate(
        """() => {
          const t = document.querySelector('table.diff.diff-inline');
          const cell = t.querySelector('tr.diff-changed td.diff-text');
          return [t.getBoundingClientRect().width, cell.getBoundingClientRect().width];
        }"""
    )
    assert inline[1] > inline[0] * 0.8, inline

    text_view = page.locator(".snapshot-text").last
    price = text_view.locator("table td.align-right").first
    assert price.inner_text() == "$24"
    assert text_view.locator("th").all_inner_texts() == ["Plan", "Price"]
    assert "|---" not in text_view.inner_text()
    assert "<script>x</script>" in text_view.inner_text()  # shown, never run
    for region in page.locator(".snapshot-text").all():
        region.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.locator(".snapshots").scroll_into_view_if_needed()
    screenshot(page, "21-9-text-view", full_page=False)
    assert_clean(page)


# ---------------------------------------------------------------- #21.13


def _history_data(team):
    pricing = make_monitor(team, ["https://example.com/pricing"], name="Pricing")
    news = make_monitor(team, ["https://example.com/news"], name="News")
    start = timezone.now() - timedelta(hours=12)
    checks = []
    for n in range(12):
        errors = 1 if n == 7 else 0
        changed = n % 3 == 0
        check = finished_check(
            pricing,
            start + timedelta(hours=n),
            changed=int(changed),
            same=1 - int(changed) - errors if not changed else 0,
            error=errors,
        )
        if changed:
            changed_page(
                check,
                f"Pro costs ${n}.",
                f"Pro costs ${n + 1}.",
                "https://example.com/pricing",
                f"Pricing at {n}",
            )
        checks.append(check)
    Check.objects.filter(pk=checks[4].pk).update(
        status=Check.Status.FAILED, summary={}, error="Stopped."
    )
    latest = finished_check(news, timezone.now() - timedelta(minutes=5), changed=1)
    page = changed_page(
        latest, "Old headline", "New headline", "https://example.com/news", "Headlines"
    )
    return pricing, page


def test_history_feed_and_chart_link_to_the_diffs(
    browser_page, member, team, screenshot
):
    page = browser_page
    pricing, newest = _history_data(team)
    sign_in(page)
    page.get_by_role("navigation", name="Main").get_by_role(
        "link", name="History"
    ).click()
    page.wait_for_url(re.compile(r"/history/$"))
    items = page.locator("li.feed-item")
    assert items.count() == 5  # the news change and four pricing changes
    assert "News" in items.first.inner_text()  # newest first
    assert "Pricing at 9" in items.nth(1).inner_text()
    screenshot(page, "21-13-feed")
    items.first.get_by_role("link", name="Headlines").click()
    page.wait_for_url(re.compile(re.escape(newest.get_absolute_url()) + "$"))
    page.locator("#diff-region[data-layout='text']").wait_for()

    page.goto(pricing.get_absolute_url())
    chart = page.locator("svg.check-chart")
    bars = chart.locator("a.bar")
    assert bars.count() == 12
    assert chart.locator("rect.bar-changed").count() == 4
    assert chart.locator("rect.bar-errors").count() == 1
    assert chart.locator("text.marker-failed").count() == 1
    title = bars.nth(9).locator("title").text_content()
    assert re.search(r"\d\d:\d\d:\d\d CET: 1 page changed, 0 failed pages$", title), (
        title
    )
    chart.scroll_into_view_if_needed()
    bars.nth(9).hover()
    screenshot(page, "21-13-chart", full_page=False)
    bars.nth(9).click()
    page.wait_for_url(re.compile(r"/checks/"))
    assert_clean(page)


def test_history_reads_without_javascript(
    chromium, live_server, member, team, screenshot
):
    pricing, _ = _history_data(team)
    context = chromium.new_context(
        base_url=live_server.url,
        java_script_enabled=False,
        viewport={"width": 1280, "height": 900},
    )
    page = context.new_page()
    sign_in(page)
    page.goto(f"/history/?monitor={pricing.pk}")
    assert page.locator("li.feed-item").count() == 4
    assert page.locator("svg.check-chart a.bar").count() == 12
    page.locator("details.chart-table summary").click()
    assert page.locator("details.chart-table tbody tr").count() == 12
    screenshot(page, "21-13-no-javascript")
    context.close()
