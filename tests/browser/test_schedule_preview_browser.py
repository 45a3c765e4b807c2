"""The schedule preview in real Chromium (issue #21.1): it follows the time
zone however the zone is entered — pasted, picked from the list or typed —
whatever the form's own validation requests are doing at the time, and while
an added target row is still on its way."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.people import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def new_monitor_form(browser_page, member, live_server):
    page = browser_page
    page.goto("/accounts/login/?next=/monitors/new/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/monitors/new/$"))
    # The browser's own zone would replace UTC in a new form (static/js/app.js).
    page.get_by_label("Time zone").fill("UTC")
    page.route("**/validate/", slow_validation)
    yield page
    # A held-back answer may still be pending when the test ends: its handler
    # would then answer a closed page and fail the teardown.
    page.unroute_all(behavior="ignoreErrors")


def first_control_of_new_row(page):
    """The address box of the target row added last."""
    row = page.locator("[data-target-row]").last
    return row.locator("textarea, input:not([type=hidden]), select").first


def slow_validation(route) -> None:
    """The form's inline validation answering the way a busy server does:
    in most of a second, so other requests pile up behind it."""
    response = route.fetch()
    time.sleep(0.7)
    route.fulfill(response=response)


def test_a_pasted_zone_updates_the_preview_when_the_field_is_left(
    new_monitor_form, screenshot
):
    page = new_monitor_form
    preview = page.locator("#schedule-preview")
    page.get_by_label("Schedule").press_sequentially("every 30 minutes")
    expect(preview).to_contain_text("UTC time")

    zone = page.get_by_label("Time zone")
    zone.select_text()
    page.keyboard.insert_text("Europe/Berlin")  # what a paste does: one input event
    zone.press("Tab")

    expect(preview).to_contain_text("Europe/Berlin time")
    expect(preview).to_contain_text("Every 30 minutes")
    screenshot(page, "schedule-preview-pasted-zone", full_page=False)


def test_a_zone_changed_right_after_the_schedule_still_gets_a_preview(
    new_monitor_form, screenshot
):
    page = new_monitor_form
    page.get_by_label("Schedule").fill("daily at 9:00")
    zone = page.get_by_label("Time zone")
    zone.fill("America/New_York")  # straight away, while validation is pending
    zone.press("Tab")

    preview = page.locator("#schedule-preview")
    expect(preview).to_contain_text("America/New_York time")
    expect(preview).to_contain_text("Daily at 09:00")
    expect(preview).not_to_contain_text("Type a schedule")
    screenshot(page, "schedule-preview-quick-zone", full_page=False)


def test_typing_in_the_schedule_while_an_added_target_is_on_its_way_stays_there(
    new_monitor_form,
):
    """A slow answer to "+ Pages" arrives while the person already types the
    schedule: the new row must not take the keyboard from them, or the rest
    of what they type lands in its address box and the preview never hears
    it."""
    page = new_monitor_form
    held = []
    page.route("**/target-row/**", lambda route: held.append(route))
    page.locator(".add-targets button").first.click()
    schedule = page.get_by_label("Schedule")
    schedule.click()
    page.keyboard.type("daily at")
    assert len(held) == 1, "the new row was not asked for"

    row = held.pop()
    row.fulfill(response=row.fetch())
    # Said once the row is in and settled, where it used to take the focus.
    expect(page.locator("#announcer")).to_have_text("Pages target added.")
    page.keyboard.type(" 9:00")

    expect(schedule).to_be_focused()
    expect(schedule).to_have_value("daily at 9:00")
    expect(first_control_of_new_row(page)).to_have_value("")
    preview = page.locator("#schedule-preview")
    expect(preview).to_contain_text("Daily at 09:00")
    expect(preview).to_contain_text("UTC time")


def test_a_target_added_from_its_button_takes_the_keyboard(new_monitor_form):
    page = new_monitor_form
    with page.expect_response(lambda r: "/target-row/" in r.url):
        page.locator(".add-targets button").first.click()

    expect(page.locator("#announcer")).to_have_text("Pages target added.")
    expect(first_control_of_new_row(page)).to_be_focused()
