"""The feed links in a real browser: shown on the monitor page and the Team
page, copied with the Copy button, replaced with *Make a new feed link* and
ended with *Turn feeds off*, on a phone as on a desktop."""

from __future__ import annotations

import pytest
from django.utils import timezone

from monitors.models import Monitor, Target
from tests.browser.people import sign_in
from tests.browser.test_layout_browser import PHONE, assert_no_sideways_scroll

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def monitor(team) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name="Pricing page", schedule_cron="*/30 * * * *"
    )
    monitor.refresh_next_run(timezone.now())
    monitor.save()
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://example.com/"])
    return monitor


def test_a_member_replaces_the_monitors_feed_link_and_turns_feeds_off(
    browser_page, member, team, monitor, screenshot, live_server, settings
):
    settings.PUBLIC_BASE_URL = live_server.url  # feed links start there
    page = browser_page
    sign_in(page)
    page.goto(monitor.get_absolute_url())
    link = page.get_by_label("Feed link of this monitor")
    old = link.input_value()
    assert old == monitor.feed_url
    assert page.request.get(old).status == 200
    screenshot(page, "feeds-monitor-page")

    page.get_by_role("button", name="Make a new feed link").click()
    page.get_by_text("A new feed link was made").wait_for()
    new = page.get_by_label("Feed link of this monitor").input_value()
    assert new != old
    assert page.request.get(old).status == 404
    assert page.request.get(new).status == 200

    page.set_viewport_size(PHONE)
    page.goto("/settings/team/")
    assert page.get_by_label("Feed link of the team").input_value() == team.feed_url
    assert_no_sideways_scroll(page, "the Team page")
    screenshot(page, "feeds-team-page-375")

    page.get_by_role("button", name="Turn feeds off").click()
    page.get_by_text("Feeds are off: every feed link").wait_for()
    assert page.request.get(new).status == 404
    assert page.request.get(team.feed_url).status == 404
    page.goto(monitor.get_absolute_url())
    assert page.get_by_text("Feeds are off for this team").is_visible()
    assert not page.problems.csp_violations(page)
    assert not page.problems.page_errors


def test_a_new_team_feed_link_is_said_beside_it_where_the_page_opens(
    browser_page, member, team
):
    page = browser_page
    sign_in(page)
    page.goto("/settings/team/")

    page.get_by_role("button", name="Make a new feed link").click()

    said = page.locator("#feeds").get_by_text("A new feed link was made")
    said.wait_for()
    box, height = said.bounding_box(), page.viewport_size["height"]
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, box
    assert page.get_by_text("A new feed link was made").count() == 1
