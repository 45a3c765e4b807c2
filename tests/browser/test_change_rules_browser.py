"""Which changes matter, in a real browser: the monitor form's section says
a broken pattern beside its field while typing, saves the rules, and the
monitor page says them in words."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from monitors.models import Monitor
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean, error_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def test_the_rules_are_checked_while_typing_saved_and_said_in_words(
    browser_page, member, site, screenshot
):
    page = browser_page
    shop = site.html("/lamp", "Lamp", "<p>Lamp: $30</p><p>Out of stock</p>")
    sign_in(page)
    page.get_by_role("link", name="New monitor").click()
    page.get_by_label("Name").fill("Lamp stock")
    page.locator(".target-scrape textarea[name$='-urls']").fill(shop)
    page.get_by_label("Schedule").fill("every 30 minutes")

    section = page.get_by_role("group", name="Which changes matter")
    section.get_by_label("Only lines added").check()
    words = section.get_by_label("Only when those lines contain (optional)")
    words.fill("Sale\n/[unclosed/")
    error_of(page, "change_containing").get_by_text(
        "“/[unclosed/”: This pattern is not valid"
    ).wait_for()
    expect(words).to_have_attribute("aria-invalid", "true")
    section.get_by_label(
        "Tell me when this text disappears from the page (optional)"
    ).fill("Out of stock")
    section.scroll_into_view_if_needed()
    screenshot(page, "change-rules-01-inline-error")
    assert not Monitor.objects.exists()

    words.fill("Sale")
    expect(error_of(page, "change_containing")).to_be_empty()
    page.get_by_role("button", name="Create monitor").click()

    page.get_by_role("heading", name="Lamp stock").wait_for()
    assert Monitor.objects.get().change_rules == {
        "lines": "added",
        "containing": ["Sale"],
        "appears": None,
        "disappears": "Out of stock",
    }
    said = page.locator("#change-rules")
    expect(said).to_contain_text("Only changes whose added lines contain “Sale” count.")
    expect(said).to_contain_text(
        "Only changes where “Out of stock” disappears from the page count."
    )
    said.scroll_into_view_if_needed()
    screenshot(page, "change-rules-02-monitor-page")
    assert_clean(page)
