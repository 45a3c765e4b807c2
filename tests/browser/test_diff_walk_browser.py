"""A change as staff read it, in a real Chromium at 1280 and 390 px: pages
served on 127.0.0.1 and checked for real, then the change opened from the
dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from checks.models import PageResult
from tests.browser.conftest import PageProblems
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean, make_monitor, run_check

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {
    "1280": {"width": 1280, "height": 900},
    "390": {"width": 390, "height": 844},
}


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    # The pages under test are served on 127.0.0.1 by tests/sites.py.
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def paragraphs(count: int) -> str:
    return "".join(
        f"<p>Paragraph {i} says something ordinary about product line {i}.</p>"
        for i in range(1, count + 1)
    )


@pytest.fixture
def long_page(team, site) -> PageResult:
    """A page of 400 paragraphs, checked, then edited in two of them."""
    url = site.html("/handbook", "Handbook", paragraphs(400))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    edited = (
        paragraphs(400)
        .replace("product line 50.", "product line fifty.")
        .replace("about product line 350.", "about product range 350.")
    )
    site.html("/handbook", "Handbook", edited)
    return PageResult.objects.get(check_run=run_check(monitor), url=url)


@pytest.fixture(params=VIEWPORTS)
def screen(chromium, live_server, member, settings, request) -> Iterator[Any]:
    """Olive signed in, at a laptop's width or a phone's."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    context = chromium.new_context(
        base_url=live_server.url, viewport=VIEWPORTS[request.param]
    )
    page = context.new_page()
    page.problems = PageProblems()
    page.problems.attach(page)
    page.width = request.param
    sign_in(page)
    yield page
    context.close()


def visible_in(page, selector: str, box: str) -> bool:
    """Whether the element is inside the scrolling box's visible part and the
    window's."""
    return page.evaluate(
        """([selector, box]) => {
          const r = document.querySelector(selector).getBoundingClientRect();
          const b = document.querySelector(box).getBoundingClientRect();
          return r.top >= b.top && r.bottom <= b.bottom
            && r.top >= 0 && r.bottom <= window.innerHeight;
        }""",
        [selector, box],
    )


def test_in_the_page_text_of_a_long_page_next_change_brings_each_edit_into_view(
    screen, long_page, screenshot
):
    page = screen
    page.goto(long_page.get_absolute_url())
    page.locator("#diff-region[data-layout='text']").wait_for()
    nav = page.get_by_role("navigation", name="Changes")
    assert nav.get_by_text("2 changes").is_visible()
    assert not visible_in(page, "#change-1", ".marked-text")

    nav.get_by_role("link", name="Next change →").click()

    page.locator("#change-1.is-current").wait_for()
    assert page.evaluate("document.activeElement.id") == "change-1"
    assert visible_in(page, "#change-1", ".marked-text")
    assert "fifty" in page.locator("#change-1").inner_text()
    nav.get_by_text("Change 1 of 2").wait_for()
    nav.get_by_role("link", name="Next change →").click()
    page.locator("#change-2.is-current").wait_for()
    assert visible_in(page, "#change-2", ".marked-text")
    assert page.locator(".is-current").count() == 1
    # Both buttons on one row, within the screen, a phone's too.
    back = nav.get_by_role("link", name="← Previous change").bounding_box()
    on = nav.get_by_role("link", name="Next change →").bounding_box()
    assert back["y"] == on["y"]
    assert on["x"] + on["width"] <= page.viewport_size["width"]
    screenshot(page, f"diff-walk-text-next-change-{page.width}", full_page=False)
    assert_clean(page)


HEBREW_BEFORE = "<p>Opening hours</p><p>המחיר הוא 19 שקלים לחודש.</p>"
HEBREW_AFTER = "<p>Opening hours</p><p>המחיר הוא 24 שקלים לחודש.</p>"


def reads_from(page, selector: str) -> str:
    """Which side of its box a short line of text sits against (a diff
    line's "+" or "-" sign, not part of its text, beside it): the right
    means it is laid out right to left."""
    return page.evaluate(
        """(selector) => {
          const el = document.querySelector(selector);
          const range = document.createRange();
          range.selectNodeContents(el);
          const text = range.getBoundingClientRect();
          const box = el.getBoundingClientRect();
          const style = getComputedStyle(el);
          const left = box.left + parseFloat(style.paddingLeft);
          const right = box.right - parseFloat(style.paddingRight);
          return right - text.right < text.left - left ? "right" : "left";
        }""",
        selector,
    )


def test_a_hebrew_line_reads_right_to_left_in_every_view_and_english_left_to_right(
    screen, team, site, screenshot
):
    url = site.html("/he", "Prices", HEBREW_BEFORE)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/he", "Prices", HEBREW_AFTER)
    result = PageResult.objects.get(check_run=run_check(monitor), url=url)
    page = screen

    page.goto(result.get_absolute_url())
    text = ".marked-text"
    assert reads_from(page, f"{text} p:nth-of-type(2)") == "right"
    assert reads_from(page, f"{text} p:nth-of-type(1)") == "left"
    page.goto(result.get_absolute_url() + "?view=inline")
    assert reads_from(page, "table.diff tr.diff-ins td.diff-text") == "right"
    assert reads_from(page, "table.diff tr.diff-equal td.diff-text") == "left"
    screenshot(page, f"diff-walk-hebrew-{page.width}", full_page=False)
    assert_clean(page)


def test_a_paragraph_moved_down_the_page_is_labelled_moved_at_both_ends(
    screen, team, site, screenshot
):
    sections = [
        f"<p>Section {i} talks about topic {i} at length.</p>" for i in range(1, 13)
    ]
    url = site.html("/moved", "Guide", "".join(sections))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/moved", "Guide", "".join([sections[0], *sections[2:], sections[1]]))
    result = PageResult.objects.get(check_run=run_check(monitor), url=url)
    page = screen

    page.goto(result.get_absolute_url() + "?view=inline")

    labels = page.locator("table.diff .diff-moved")
    assert labels.all_inner_texts() == [
        "Moved down to line 23",
        "Moved here from line 3",
    ]
    width = page.viewport_size["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(page, f"diff-walk-moved-{page.width}", full_page=False)
    assert_clean(page)
