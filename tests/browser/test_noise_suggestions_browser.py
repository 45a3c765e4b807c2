"""Suggested lines to ignore, in a real Chromium: after a few checks of a page
whose footer clock ticks, the monitor's page offers to ignore that line, and
the button adds the entry it showed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections

from checks import runner
from checks.ignore_suggestions import CHECKS_LOOKED_AT
from checks.models import Check
from monitors.models import Monitor, Target
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ENTRY = r"/^\s*Last updated: \d+:\d+ UTC\s*$/"


def serve(site, minute: int) -> str:
    footer = f"<footer><p>Last updated: 01:{minute:02} UTC</p></footer>"
    return site.html("/news", "News", "<h1>News</h1><p>Nothing new.</p>" + footer)


def checks_of_a_ticking_footer(live_server, site, monitor: Monitor) -> None:
    """Real checks, run as a worker runs them: in a thread of their own, since
    the runner's event loop cannot run beside Playwright's in this one, on the
    database connection the live server shares."""

    def run_them() -> None:
        for alias, shared in live_server.thread.connections_override.items():
            connections[alias] = shared
        for minute in range(CHECKS_LOOKED_AT + 1):
            serve(site, minute)
            runner.run(Check.objects.create(monitor=monitor, trigger="manual"))

    with ThreadPoolExecutor(1) as worker:
        worker.submit(run_them).result()


def test_ignoring_a_ticking_footer_from_the_monitor_page(
    browser_page, live_server, member, team, site, settings, screenshot
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    monitor = Monitor.objects.create(team=team, name="News", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[serve(site, 0)])
    checks_of_a_ticking_footer(live_server, site, monitor)
    page = browser_page
    sign_in(page)

    page.goto(monitor.get_absolute_url())
    card = page.locator("#noise-suggestions")
    assert "Last updated: 01:03 UTC" in card.inner_text()
    assert card.locator("code").all_inner_texts() == [ENTRY]
    screenshot(page, "noise-suggestions-offered")
    card.get_by_role("button", name="Ignore these lines").click()

    page.wait_for_url(f"**{monitor.get_absolute_url()}")
    said = page.get_by_text("Those lines are ignored from the next check on.")
    assert said.is_visible()
    assert page.locator("#noise-suggestions").count() == 0
    ignored = page.locator("dt:has-text('Lines ignored') + dd code")
    assert ignored.all_inner_texts() == [ENTRY]
    screenshot(page, "noise-suggestions-ignored")
    monitor.refresh_from_db()
    assert monitor.ignore_lines == [ENTRY]
    assert_clean(page)
