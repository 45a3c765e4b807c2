"""Long unbroken text — a monitor name, an API key name, an address with no
spaces — wraps instead of pushing the page sideways, on a phone and on a
desktop; and a phone's stacked cards keep each label beside its own value."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from checks.models import Check, Delivery, DeliveryAttempt
from monitors.models import ApiKey, Monitor, Target
from teams.activity import Actor, record
from teams.models import Activity
from tests.browser.people import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 900}
LONG_NAME = "Competitor" + "PricingPageWatch" * 7 + "X" * 10  # 132, no spaces
LONG_KEY_NAME = "Zapier" + "k" * 94  # the longest name a key may have
LONG_URL = "https://shop.example.com/" + "category-" * 20 + "?q=" + "a" * 80


@pytest.fixture
def monitor(team) -> Monitor:
    assert len(LONG_NAME) == 132
    monitor = Monitor.objects.create(
        team=team,
        name=LONG_NAME,
        schedule_cron="*/30 * * * *",
        schedule_timezone="Europe/Berlin",
        webhook={"url": LONG_URL, "headers": {}, "metadata": {}, "events": []},
    )
    monitor.refresh_next_run(timezone.now())
    monitor.save()
    Target.objects.create(monitor=monitor, type="scrape", urls=[LONG_URL])
    return monitor


@pytest.fixture
def deliveries(monitor) -> list[Delivery]:
    """One row of each kind the deliveries page shows: a changed page, a
    check that keeps failing and waits for its next try, a sent e-mail."""
    now = timezone.now()
    check = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.COMPLETED
    )
    page_body = json.dumps({"data": [{"url": LONG_URL, "status": "changed"}]})
    rows = [
        Delivery.objects.create(
            kind=Delivery.Kind.WEBHOOK,
            monitor=monitor,
            check_run=check,
            event="monitor.page",
            url=LONG_URL,
            body=page_body,
            attempts=1,
            status=Delivery.Status.DELIVERED,
        ),
        Delivery.objects.create(
            kind=Delivery.Kind.WEBHOOK,
            monitor=monitor,
            check_run=check,
            event="monitor.check.completed",
            url=LONG_URL,
            body="{}",
            attempts=1,
            status=Delivery.Status.PENDING,
            next_attempt_at=now + timedelta(minutes=5),
            last_status_code=501,
            last_error="Answered 501.",
        ),
        Delivery.objects.create(
            kind=Delivery.Kind.EMAIL,
            monitor=monitor,
            check_run=check,
            event="email.notification",
            email="olive@example.com",
            attempts=1,
            status=Delivery.Status.DELIVERED,
        ),
    ]
    DeliveryAttempt.objects.create(
        delivery=rows[1],
        number=1,
        started_at=now,
        status_code=501,
        error="Answered 501.",
        response_body="Not Implemented " * 20,
    )
    return rows


# The outermost elements that reach past the window's right edge, to name
# the culprit when a page scrolls sideways.
_TOO_WIDE = """
() => [...document.querySelectorAll('body *')]
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 0.5)
  .filter(el => !el.parentElement.closest('*') ||
    el.parentElement.getBoundingClientRect().right <= window.innerWidth + 0.5)
  .slice(0, 5)
  .map(el => el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''))
"""


def assert_no_sideways_scroll(page, what: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    assert width <= inner, (
        f"{what} is {width} px wide in a {inner} px window: {page.evaluate(_TOO_WIDE)}"
    )


# For every stacked cell of the phone layout: the box of its label (the
# ::before text, measured where the cell's padding leaves it) and the boxes of
# everything the cell shows. They must not overlap.
_CELL_BOXES = """
(table) => [...table.querySelectorAll('td')].filter(td => td.offsetParent).map(td => {
  const cell = td.getBoundingClientRect();
  const style = getComputedStyle(td);
  const label = getComputedStyle(td, '::before');
  const labelBox = {
    left: cell.left + parseFloat(style.paddingLeft) + parseFloat(label.marginLeft),
    top: cell.top + parseFloat(style.paddingTop),
    width: parseFloat(label.width),
    height: parseFloat(label.height) || 1,
  };
  const items = [];
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || !node.parentElement.offsetParent) continue;
    // Words for screen readers only are clipped to nothing: not shown.
    if (node.parentElement.closest('.visually-hidden')) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      items.push({text: node.textContent.trim().slice(0, 40),
                  left: r.left, top: r.top, width: r.width, height: r.height});
    }
  }
  for (const el of td.querySelectorAll('.badge, button, summary')) {
    const r = el.getBoundingClientRect();
    items.push({text: el.textContent.trim().slice(0, 40), badge: el.matches('.badge'),
                left: r.left, top: r.top, width: r.width, height: r.height});
  }
  return {label: td.dataset.label, labelBox, cell: {left: cell.left, right: cell.right},
          items};
})
"""


def overlaps(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["left"] + b["width"]
        and b["left"] < a["left"] + a["width"]
        and a["top"] < b["top"] + b["height"]
        and b["top"] < a["top"] + a["height"]
    )


def assert_labels_beside_values(page, table_selector: str) -> None:
    cells = page.locator(table_selector).evaluate(_CELL_BOXES)
    assert cells, f"no stacked cells in {table_selector}"
    for cell in cells:
        label = cell["labelBox"]
        assert label["width"] > 0, f"the {cell['label']} label is not shown"
        for item in cell["items"]:
            where = f"{item['text']!r} in the {cell['label']} cell"
            assert not overlaps(label, item), f"{where} lies under its label"
            assert item["left"] >= label["left"] + label["width"], (
                f"{where} starts in the label column"
            )
            assert item["left"] + item["width"] <= cell["cell"]["right"] + 0.5, (
                f"{where} runs past the card's edge"
            )
            if item.get("badge"):  # a line or two of words, not a blob
                assert item["height"] < 50, f"{where}: the badge is stretched"


PAGES = {
    "list": lambda monitor: "/",
    "monitor": lambda monitor: monitor.get_absolute_url(),
    "keys": lambda monitor: "/settings/api-keys/",
    "deliveries": lambda monitor: f"/monitors/{monitor.pk}/deliveries/",
}


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_long_names_and_addresses_wrap_instead_of_widening_the_page(
    browser_page, member, team, monitor, deliveries, viewport, screenshot
):
    ApiKey.issue(team, name=LONG_KEY_NAME, created_by=member)
    page = browser_page
    page.set_viewport_size(viewport)
    sign_in(page)
    for name, path in PAGES.items():
        assert page.goto(path(monitor)).ok
        screenshot(page, f"layout-{name}-{viewport['width']}")
        assert_no_sideways_scroll(page, f"the {name} page")
    # Every column of the key list stays on screen, Revoke included.
    page.goto("/settings/api-keys/")
    revoke = page.get_by_role("link", name=re.compile("Revoke")).bounding_box()
    assert revoke["x"] + revoke["width"] <= viewport["width"]
    page.goto("/")
    row = page.locator("tbody tr").first
    pause = row.get_by_role("button", name=re.compile("Pause")).bounding_box()
    assert pause["x"] + pause["width"] <= viewport["width"]


def test_phone_cards_keep_each_label_beside_its_value(
    browser_page, member, team, monitor, deliveries, screenshot
):
    Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.PARTIAL,
        summary={"totalPages": 2, "changed": 1, "error": 1},
    )
    page = browser_page
    page.set_viewport_size(PHONE)
    sign_in(page)
    page.goto(f"/monitors/{monitor.pk}/deliveries/")
    page.locator("table.deliveries details summary").first.click()
    screenshot(page, "layout-deliveries-cards-375")
    assert_labels_beside_values(page, "table.deliveries")

    page.goto(monitor.get_absolute_url())
    screenshot(page, "layout-monitor-cards-375")
    assert_labels_beside_values(page, "table.checks")
    heading_badge = page.locator(".page-head h1 .badge").bounding_box()
    assert heading_badge["width"] < 120, "the status badge stretches across the page"


# The lines each text of the elements' shows, by text.
_LINES_OF = """
(cells) => cells.map(cell => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  return [cell.textContent.trim(), tops.size];
})
"""


def test_a_long_monitor_name_in_the_activity_log_leaves_peoples_names_whole(
    browser_page, member, team, monitor, screenshot
):
    record(Actor.command(member), team, Activity.Kind.MONITOR_RUN, monitor)
    page = browser_page
    sign_in(page)
    page.goto("/activity/")
    screenshot(page, "layout-activity-1280")

    who = page.locator("td[data-label='Who']").evaluate_all(_LINES_OF)

    assert who and all(text == "olive" for text, _ in who)
    assert all(lines == 1 for _, lines in who), who
    assert_no_sideways_scroll(page, "the activity page")


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_each_tick_box_of_the_monitor_form_sits_beside_its_words(
    browser_page, member, screenshot, viewport
):
    page = browser_page
    page.set_viewport_size(viewport)
    sign_in(page)
    page.goto("/monitors/new/")
    screenshot(page, f"layout-form-check-boxes-{viewport['width']}")

    boxes = page.locator(".field.check > input[type=checkbox]")
    assert boxes.count() >= 3
    for i in range(boxes.count()):
        box = boxes.nth(i)
        words = page.locator(f"label[for='{box.get_attribute('id')}']")
        tick, label = box.bounding_box(), words.bounding_box()
        what = words.inner_text()
        # Beside it, on its first line: not wrapped to a line of its own.
        assert label["x"] > tick["x"] + tick["width"], what
        assert label["y"] < tick["y"] + tick["height"], what
        # Words that read as a line, not a column of letters beside the help.
        assert label["width"] >= min(200, len(what) * 5), what


def test_on_a_phone_no_choice_of_the_monitor_form_shrinks_beside_long_words(
    browser_page, member
):
    page = browser_page
    page.set_viewport_size(PHONE)
    sign_in(page)
    page.goto("/monitors/new/")
    page.get_by_role("button", name="+ Web search").click()
    page.locator(".target-search").wait_for()

    choices = page.locator("main input[type=radio], main input[type=checkbox]")
    sizes = {
        choices.nth(i).evaluate("(el) => el.labels[0].textContent.trim()"): (
            choices.nth(i).bounding_box()["width"]
        )
        for i in range(choices.count())
        if choices.nth(i).is_visible()
    }
    full = page.evaluate(
        "parseFloat(getComputedStyle(document.documentElement).fontSize) * 1.15"
    )
    shrunk = {words: width for words, width in sizes.items() if width < full - 0.5}
    assert len(sizes) >= 10
    assert shrunk == {}


def test_on_a_phone_a_long_count_of_the_last_check_stays_inside_its_card(
    browser_page, member, team, monitor, screenshot
):
    now = timezone.now()
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.RUNNING,
        started_at=now - timedelta(minutes=1),
    )
    # Finished as a worker finishes it: the changed page judged unimportant.
    check.pages.create(
        target_id=monitor.targets.get().pk,
        url=LONG_URL,
        status="changed",
        verdict="noise",
    )
    check.finish(now)
    page = browser_page
    page.set_viewport_size(PHONE)
    sign_in(page)

    page.goto("/")
    page.get_by_text("1 change, judged unimportant").wait_for()
    screenshot(page, "layout-list-noise-375")
    assert_labels_beside_values(page, "table.monitors")
