"""Muting a monitor's notifications in a real browser: choose how long on
its page, read until when, unmute."""

from __future__ import annotations

import pytest

from monitors.models import Monitor
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean
from tests.browser.test_tags_browser import make_monitor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_muting_a_monitor_for_a_week_and_unmuting_it(
    browser_page, member, team, screenshot
):
    page = browser_page
    monitor = make_monitor(team, "Rival prices")
    sign_in(page)

    page.goto(monitor.get_absolute_url())
    screenshot(page, "muting-00-the-choice", full_page=False)
    page.get_by_label("Mute notifications").select_option(label="For a week")
    page.locator(".mute-form").get_by_role("button", name="Mute").click()
    page.get_by_text("Notifications muted until", exact=False).first.wait_for()
    screenshot(page, "muting-01-muted-for-a-week")

    monitor.refresh_from_db()
    assert monitor.mute_ends_at is not None
    assert page.locator("[data-muted]").count() == 1
    assert_clean(page)

    page.locator("[data-muted]").get_by_role("button", name="Unmute").click()
    page.get_by_label("Mute notifications").wait_for()
    assert Monitor.objects.get(pk=monitor.pk).muted_until is None
    assert page.locator("[data-muted]").count() == 0
    assert_clean(page)
