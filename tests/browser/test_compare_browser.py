"""Comparing a page with an older version in a real Chromium: chosen from the
"Compare with" list by keyboard, the address then carries the choice."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from checks.models import PageResult
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import make_monitor
from tests.browser.test_history_browser import changed_page, finished_check

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_choosing_an_older_version_shows_the_changes_since_it(
    browser_page, member, team
):
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/pricing"])
    url = "https://example.com/pricing"
    now = timezone.now()
    old = changed_page(
        finished_check(monitor, now - timedelta(days=14), changed=1),
        "Pro costs $15 a month.",
        "Pro costs $19 a month.",
        url,
        "Pricing",
    )
    changed_page(
        finished_check(monitor, now - timedelta(days=7), changed=1),
        "Pro costs $19 a month.",
        "Pro costs $21 a month.",
        url,
        "Pricing",
    )
    latest = changed_page(
        finished_check(monitor, now, changed=1),
        "Pro costs $21 a month.",
        "Pro costs $24 a month.",
        url,
        "Pricing",
    )
    for result in (old, latest):  # pages are stamped when their check ran
        PageResult.objects.filter(pk=result.pk).update(
            created_at=result.check_run.created_at
        )
    sign_in(page)
    page.goto(latest.get_absolute_url() + "?view=split")

    choice = page.get_by_label("Compare with")
    choice.focus()
    option = choice.locator(f'option[value="{old.pk}"]')
    assert option.inner_text().startswith("the version of ")
    choice.select_option(value=str(old.pk))
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the Compare button

    page.wait_for_url(re.compile(rf"compare={old.pk}"), wait_until="domcontentloaded")
    heading = page.get_by_role("heading", name=re.compile("Changes since the version"))
    heading.wait_for()
    region = page.locator("#compare-region")
    assert "19" in region.locator("del").first.inner_text()
    assert "24" in region.locator("ins").first.inner_text()
    assert page.get_by_label("Compare with").input_value() == str(old.pk)

    # On a phone the choice wraps instead of widening the page.
    page.set_viewport_size({"width": 360, "height": 740})
    page.reload()
    page.get_by_label("Compare with").wait_for()
    wider = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert wider <= 0
