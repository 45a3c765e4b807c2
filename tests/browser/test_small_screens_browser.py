"""Every page a staff member reaches, on a phone (390 × 844, touch, three
device pixels to a CSS pixel) and on a small laptop zoomed to 200 % (640 CSS
px wide), with a team as it looks after a while: many monitors with long
names and addresses, a channel named by its address, a long page rewritten.

No page is wider than the screen; every control a thumb taps is at least
24 × 24 px (WCAG 2.2, 2.5.8), links inside a sentence aside; no field is
small enough to make a phone zoom in when it is typed in; side by side, a
diff on a phone reads each line before above its line after."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from checks.content import compare_texts
from checks.models import Check, PageResult, Snapshot
from monitors.models import Channel, Monitor, Target
from teams.activity import Actor, record
from teams.models import Activity, Invitation, Membership
from tests.browser.people import sign_in
from tests.browser.test_accessibility_browser import dashboard  # noqa: F401
from tests.browser.test_dashboard_browser import make_monitor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
# A 1280 × 800 laptop screen at 200 %: half as many CSS pixels, each two wide.
ZOOMED = {"viewport": {"width": 640, "height": 400}, "device_scale_factor": 2}

LONG_URL = "https://shop.example.com/" + "category-" * 20 + "?q=" + "a" * 80
LONG_NAME = "Competitor" + "PricingPageWatch" * 5  # no spaces
# Named by its address, as people do: one long word.
CHANNEL_NAME = "https://hooks.slack.com/services/T0ACME/B0PRICING/" + "x" * 40


def long_rewritten_page(team) -> PageResult:
    """A long page whose every paragraph but the first was reworded, each
    ending in an address with no spaces, and a last line of 400 letters."""
    monitor = make_monitor(team, [], name="Handbook")
    target = Target.objects.create(monitor=monitor, type="scrape", urls=[LONG_URL])
    words = "The quick brown fox jumps over the lazy dog and keeps running. "
    before = "\n\n".join(
        ["Welcome to the handbook."]
        + [
            f"# Chapter {n}\n\n{words * (n % 5 + 1)}See {LONG_URL}{n}"
            for n in range(60)
        ]
        + ["x" * 400]
    )
    reworded = words.replace("fox", "cat")
    after = "\n\n".join(
        ["Welcome to the handbook."]
        + [
            f"# Section {n}\n\n{reworded * (n % 4 + 2)}Read {LONG_URL}{n}"
            for n in range(60)
        ]
        + ["y" * 400]
    )
    _, _, diff = compare_texts(before, after)
    now = timezone.now()
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.COMPLETED,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 1, "changed": 1},
    )
    return PageResult.objects.create(
        check_run=check,
        target_id=target.pk,
        url=LONG_URL,
        status=PageResult.Status.CHANGED,
        previous_snapshot=Snapshot.store(before),
        current_snapshot=Snapshot.store(after),
        diff=diff,
        metadata={"title": "Handbook"},
    )


@pytest.fixture
def pages(dashboard, team, member, django_user_model) -> dict[str, str]:  # noqa: F811
    """The dashboard's pages, by name, for a team with twenty monitors (long
    names, long addresses, a history strip of eight checks each), a channel
    named by its address, a pending invitation, a second member and a log."""
    now = timezone.now()
    statuses = [Check.Status.COMPLETED, Check.Status.FAILED, Check.Status.PARTIAL]
    for n in range(20):
        name = f"{LONG_NAME}{n}" if n % 2 else f"Monitor {n}, a longer name to read"
        monitor = make_monitor(team, [f"{LONG_URL}{n}"], name=name)
        for hour in range(8):
            Check.objects.create(
                monitor=monitor,
                trigger=Check.Trigger.SCHEDULED,
                status=statuses[hour % 3],
                started_at=now,
                finished_at=now,
                summary={"totalPages": 2, "changed": hour % 2, "same": 1},
            )
    channel = Channel.objects.create(
        team=team,
        name=CHANNEL_NAME,
        kind="webhook",
        settings={"url": LONG_URL},
        events=list(Channel.DEFAULT_EVENTS),
    )
    dashboard["pricing"].channels.add(channel)
    Invitation.issue(
        team, "someone.with.a.long.address@example-company.com", "viewer", member, now
    )
    noah = django_user_model.objects.create_user(
        "noah", "noah@example.com", first_name="Noah", last_name="Berg"
    )
    Membership.objects.create(team=team, user=noah, role=Membership.Role.VIEWER)
    for monitor in Monitor.objects.filter(team=team)[:5]:
        record(Actor.command(member), team, Activity.Kind.MONITOR_RUN, monitor)
    rewritten = long_rewritten_page(team).get_absolute_url()
    pricing = dashboard["pricing"]
    return {
        "monitor list": "/",
        "monitor": pricing.get_absolute_url(),
        "monitor with a long name": Monitor.objects.get(
            name=f"{LONG_NAME}1"
        ).get_absolute_url(),
        "check": dashboard["check"].get_absolute_url(),
        "changes as page text": rewritten,
        "changes side by side": rewritten + "?view=split",
        "changes in one column": rewritten + "?view=inline",
        "new monitor": "/monitors/new/",
        "edit monitor": f"/monitors/{pricing.pk}/edit/",
        "channels": "/channels/",
        "channel": f"/channels/{channel.pk}/",
        "team and invitations": "/settings/team/",
        "activity": "/activity/",
        "import": "/import/",
        "history": "/history/",
        "deliveries": f"/monitors/{pricing.pk}/deliveries/",
        "API keys": "/settings/api-keys/",
    }


@pytest.fixture
def screen(chromium, live_server, settings, request) -> Iterator[Any]:
    """A page in a browser of the size request.param gives."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    context = chromium.new_context(base_url=live_server.url, **request.param)
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def walk(page, pages: dict[str, str]) -> Iterator[str]:
    """Signs in (the sign-in page is the first visited), then opens each page
    with every folded section open, as someone reading all of it would."""
    page.goto("/accounts/login/")
    yield "sign-in"
    sign_in(page)
    for name, path in pages.items():
        assert page.goto(path).ok, name
        page.evaluate(
            "document.querySelectorAll('details').forEach(d => d.open = true)"
        )
        yield name


# The outermost elements, and bits of text, that reach past the screen's
# right edge: named when a page is too wide. Words for screen readers only are
# clipped to nothing, so they do not count.
_PAST_THE_EDGE = """(width) => {
  const shown = (el) => !el.closest('.visually-hidden');
  const past = (box) => box.right > width + 0.5;
  const found = [...document.querySelectorAll('body *')]
    .filter((el) => shown(el) && past(el.getBoundingClientRect()))
    .filter((el) => !past(el.parentElement.getBoundingClientRect()))
    .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : ''));
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    if (!node.textContent.trim() || !shown(node.parentElement)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    if (past(range.getBoundingClientRect())) {
      found.push(`“${node.textContent.trim().slice(0, 30)}” in ` +
                 node.parentElement.tagName.toLowerCase());
    }
  }
  return found.slice(0, 5);
}"""


@pytest.mark.parametrize(
    "screen", [PHONE, ZOOMED], ids=["phone", "zoomed"], indirect=True
)
def test_no_page_is_wider_than_a_phone_or_a_laptop_zoomed_to_200_percent(screen, pages):
    page = screen
    width = page.viewport_size["width"]
    too_wide = []
    for name in walk(page, pages):
        # A phone lays a page that is too wide out at its full width, then
        # shows it shrunk: the window's own width grows with it.
        wide = page.evaluate("document.scrollingElement.scrollWidth")
        if wide > width:
            too_wide.append(
                f"{name}: {wide} px, {page.evaluate(_PAST_THE_EDGE, width)}"
            )
    assert too_wide == []


# Every control shown that is smaller than 24 × 24 CSS px. A tick box or a
# round choice counts with its words, which take the tap too; a link inside a
# line of text is exempt (WCAG 2.5.8: "inline"), as is what no one can reach.
_SMALL_TARGETS = """() => {
  const controls = 'a[href], button, input, select, textarea, summary, [tabindex="0"]';
  const small = [];
  for (const el of document.querySelectorAll(controls)) {
    if (el.type === 'hidden') continue;
    if (el.closest('.visually-hidden, [aria-hidden="true"]')) continue;
    if (getComputedStyle(el).display === 'inline') continue;
    let box = el.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    if (el.labels && el.labels.length && ['checkbox', 'radio'].includes(el.type)) {
      const words = el.labels[0].getBoundingClientRect();
      box = {width: Math.max(box.right, words.right) - Math.min(box.left, words.left),
             height: Math.max(box.bottom, words.bottom) - Math.min(box.top, words.top)};
    }
    if (box.width < 24 || box.height < 24) {
      const words = el.textContent || el.getAttribute('aria-label') || el.type;
      small.push(`${el.tagName.toLowerCase()} “${words.trim().slice(0, 30)}” ` +
                 `${Math.round(box.width)} × ${Math.round(box.height)}`);
    }
  }
  return small;
}"""

# iOS Safari zooms the page in on a field whose text is smaller than 16 px,
# and leaves it zoomed in after.
_ZOOMING_FIELDS = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter((el) => el.offsetParent && !['checkbox', 'radio', 'hidden', 'range']
    .includes(el.type))
  .filter((el) => parseFloat(getComputedStyle(el).fontSize) < 16)
  .map((el) => `${el.id || el.name}: ${getComputedStyle(el).fontSize}`)"""


@pytest.mark.parametrize("screen", [PHONE], ids=["phone"], indirect=True)
def test_on_a_phone_every_control_is_big_enough_to_tap_and_no_field_zooms_in(
    screen, pages
):
    page = screen
    small, zooming = [], []
    for name in walk(page, pages):
        small += [f"{name}: {what}" for what in page.evaluate(_SMALL_TARGETS)]
        zooming += [f"{name}: {what}" for what in page.evaluate(_ZOOMING_FIELDS)]
    # The same control on every page (the header's) is named once.
    assert list(dict.fromkeys(small)) == []
    assert zooming == []


# The first changed row's cells as drawn: line before, line after.
_FIRST_CHANGE = """() => {
  const row = document.querySelector('#diff-region tr.diff-changed');
  const [before, after] = [...row.querySelectorAll('td.diff-text')]
    .map((cell) => cell.getBoundingClientRect())
    .map((box) => ({top: box.top, bottom: box.bottom, width: box.width}));
  const region = document.querySelector('.diff-scroll').getBoundingClientRect();
  return {before, after, width: region.width};
}"""


@pytest.mark.parametrize("screen", [PHONE], ids=["phone"], indirect=True)
def test_side_by_side_on_a_phone_shows_each_line_before_above_its_line_after(
    screen, member, team, screenshot
):
    rewritten = long_rewritten_page(team)
    page = screen
    sign_in(page)
    page.goto(rewritten.get_absolute_url() + "?view=split")
    screenshot(page, "small-screens-side-by-side-390", full_page=False)

    drawn = page.evaluate(_FIRST_CHANGE)
    before, after = drawn["before"], drawn["after"]
    assert before["bottom"] <= after["top"] + 0.5, "before and after side by side"
    # Each as wide as the box, less its line numbers: a readable line.
    assert before["width"] > drawn["width"] * 0.75
    assert after["width"] > drawn["width"] * 0.75
    # Lines that did not change are shown once, not once a side.
    unchanged = page.locator("#diff-region tr.diff-equal").first
    shown = unchanged.locator("td.diff-text:visible")
    assert shown.count() == 1
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390


# How wide the search box's example words are, and the room the box has.
_EXAMPLE_WORDS = """(input) => {
  const style = getComputedStyle(input);
  const pen = document.createElement('canvas').getContext('2d');
  pen.font = `${style.fontSize} ${style.fontFamily}`;
  const room = input.clientWidth - parseFloat(style.paddingLeft)
    - parseFloat(style.paddingRight);
  return {words: pen.measureText(input.placeholder).width, room};
}"""


@pytest.mark.parametrize("screen", [PHONE], ids=["phone"], indirect=True)
def test_on_a_phone_the_monitor_search_shows_its_example_words_whole(
    screen, member, team
):
    make_monitor(team, [LONG_URL])
    page = screen
    sign_in(page)

    box = page.get_by_label("Search")
    measured = box.evaluate(_EXAMPLE_WORDS)
    assert measured["words"] <= measured["room"], measured
