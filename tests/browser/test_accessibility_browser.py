"""The dashboard as people who use a keyboard, a screen reader or a phone meet
it, in a real Chromium: axe-core finds nothing on any page, a check started
from the keyboard keeps the keyboard's place and is announced once per stage,
focus rings are whole, field borders and chart bars stand out, and every form
error points at its field.

axe-core is pinned in tests/js/package.json and installed with the JS SDK
(`npm ci --prefix tests/js`, which `make test` runs). Without it the axe test
skips with the reason, except under CI=true, where it fails."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from checks.content import compare_texts
from checks.models import (
    Check,
    Delivery,
    DeliveryAttempt,
    PageResult,
    SearchResultState,
    Snapshot,
)
from monitors.models import ApiKey, Channel, Monitor, Target
from teams.models import Invitation
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import make_monitor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture
def dashboard(team, member) -> dict:
    """A team's dashboard as it looks after a while: pages, a crawl and a web
    search watched; a check with a changed, a new, a removed and a failed page
    (the change judged against the goal); webhook deliveries, one that failed;
    a paused monitor; an API key."""
    now = timezone.now()
    pricing = make_monitor(
        team,
        [],
        name="Competitor pricing",
        goal="Tell me when the price of the Pro plan changes",
        judge_enabled=True,
        webhook={
            "url": "https://hooks.example.com/pagewatch",
            "headers": {},
            "metadata": {},
            "events": [],
        },
    )
    pages = Target.objects.create(
        monitor=pricing,
        type="scrape",
        urls=["https://example.com/pricing", "https://example.com/terms"],
    )
    blog = make_monitor(team, [], name="Blog")
    crawl = Target.objects.create(
        monitor=blog, type="crawl", url="https://example.com/blog", crawl_options={}
    )
    news = make_monitor(
        team, [], name="News about Acme", goal="Acme launches a product"
    )
    search = Target.objects.create(
        monitor=news, type="search", queries=["acme launch"], search_window="7d"
    )
    paused = make_monitor(team, [], name="Old landing page")
    paused.status = Monitor.Status.PAUSED
    paused.next_run_at = None
    paused.save()
    Target.objects.create(monitor=paused, type="scrape", urls=["https://example.com/"])

    for hours in (3, 2, 1):
        when = now - timedelta(hours=hours)
        check = Check.objects.create(
            monitor=pricing,
            trigger=Check.Trigger.SCHEDULED,
            status=Check.Status.PARTIAL,
            started_at=when,
            finished_at=when + timedelta(seconds=3),
            summary={"totalPages": 4, "same": 0, "changed": 1, "new": 1}
            | {"removed": 1, "error": 1},
        )
    before = "# Pricing\n\nPro costs $19 a month.\n\nTeam costs $49 a month."
    after = "# Pricing\n\nPro costs $24 a month.\n\nTeam costs $49 a month."
    _, _, diff = compare_texts(before, after)
    changed = PageResult.objects.create(
        check_run=check,
        target_id=pages.pk,
        url="https://example.com/pricing",
        status=PageResult.Status.CHANGED,
        previous_snapshot=Snapshot.store(before),
        current_snapshot=Snapshot.store(after),
        diff=diff,
        metadata={"title": "Pricing"},
        verdict=PageResult.Verdict.MEANINGFUL,
        judgment={
            "meaningful": True,
            "confidence": "high",
            "reason": "The Pro plan costs more.",
            "meaningfulChanges": [{"before": "$19", "after": "$24"}],
        },
    )
    new = PageResult.objects.create(
        check_run=check,
        target_id=pages.pk,
        url="https://example.com/terms",
        status=PageResult.Status.NEW,
        current_snapshot=Snapshot.store("# Terms\n\nBe kind."),
        metadata={"title": "Terms"},
    )
    for status, url in (("removed", "/old"), ("error", "/broken")):
        PageResult.objects.create(
            check_run=check,
            target_id=pages.pk,
            url=f"https://example.com{url}",
            status=status,
            status_code=500 if status == "error" else None,
            error="Answered 500." if status == "error" else None,
        )
    Check.objects.create(
        monitor=blog,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.COMPLETED,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 0},
    )
    found = Check.objects.create(
        monitor=news,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.COMPLETED,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 1, "new": 1},
    )
    reason = "The web search failed: “acme launch”: SearXNG answered HTTP 500 (boom)."
    search_failed = Check.objects.create(
        monitor=news,
        trigger=Check.Trigger.SCHEDULED,
        status=Check.Status.FAILED,
        error=reason,
        started_at=now,
        finished_at=now,
        summary={"totalPages": 0},
        target_results=[
            {"targetId": str(search.pk), "type": "search", "searchCompleted": False}
            | {"resultCount": 0, "matches": 0, "degradedReason": reason}
        ],
    )
    launch = "https://news.example.com/acme-launch"
    PageResult.objects.create(
        check_run=found,
        target_id=search.pk,
        url=launch,
        status=PageResult.Status.NEW,
        current_snapshot=Snapshot.store("Acme launches the Rocket"),
        metadata={"title": "Acme launches the Rocket", "searchStatus": "alerted"}
        | {"snippet": "Big news", "queries": ["acme launch"]},
    )
    SearchResultState.objects.create(
        monitor=news,
        target_id=search.pk,
        key="a" * 64,
        url=launch,
        title="Acme launches the Rocket",
        queries=["acme launch"],
        status=SearchResultState.Status.ALERTED,
        first_seen_at=now,
        last_seen_at=now,
        alerted_at=now,
    )
    failed = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=check,
        event="monitor.check.completed",
        url="https://hooks.example.com/pagewatch",
        body="{}",
        attempts=1,
        status=Delivery.Status.FAILED,
        last_status_code=500,
        last_error="Answered 500.",
    )
    DeliveryAttempt.objects.create(
        delivery=failed,
        number=1,
        started_at=now,
        status_code=500,
        error="Answered 500.",
        response_body="Internal Server Error",
    )
    Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=check,
        event="monitor.page",
        url="https://hooks.example.com/pagewatch",
        body=json.dumps({"data": [{"url": changed.url, "status": "changed"}]}),
        attempts=1,
        status=Delivery.Status.DELIVERED,
    )
    ApiKey.issue(team, name="Zapier", created_by=member)
    return {
        "pricing": pricing,
        "blog": blog,
        "crawl": crawl,
        "news": news,
        "check": check,
        "found": found,
        "search_failed": search_failed,
        "changed": changed,
        "new": new,
    }


def _require_axe() -> Path:
    script = AXE / "axe.min.js"
    if script.exists():
        return script
    reason = (
        "axe-core is not installed in tests/js/node_modules; "
        "run `npm ci --prefix tests/js` (make test does it when npm exists)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    pytest.skip(reason)


# Folded sections are opened first, so what they hold is checked too.
_RUN_AXE = """async () => {
  document.querySelectorAll('details').forEach((section) => { section.open = true; });
  const found = await axe.run(document, {resultTypes: ['violations', 'incomplete']});
  const where = (node) => `    ${node.target.join(' ')}  ${node.html.slice(0, 120)}`;
  const say = (result) => `${result.id} (${result.impact}): ${result.help}\\n` +
    result.nodes.map(where).join('\\n');
  return {
    violations: found.violations.map(say),
    // axe cannot judge the contrast of symbols (✓, →) and one-digit chart
    // ticks; every other undecided rule needs a person, so it fails here.
    undecided: found.incomplete.filter((r) => r.id !== 'color-contrast').map(say),
  };
}"""


def axe_problems(page, what: str) -> list[str]:
    found = page.evaluate(_RUN_AXE)
    return [f"{what}: {line}" for line in found["violations"] + found["undecided"]]


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_no_dashboard_page_breaks_an_axe_rule(
    browser_page, dashboard, viewport, screenshot
):
    axe = _require_axe()
    page = browser_page
    # An init script, as the Content-Security-Policy refuses injected <script> tags.
    page.context.add_init_script(path=str(axe))
    page.set_viewport_size(viewport)
    problems: list[str] = []

    page.goto("/accounts/login/")
    problems += axe_problems(page, "sign-in")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("did not match").wait_for()
    problems += axe_problems(page, "sign-in that failed")
    sign_in(page)

    pricing, news = dashboard["pricing"], dashboard["news"]
    pages = {
        "monitor list": "/",
        "new monitor": "/monitors/new/",
        "edit monitor": f"/monitors/{pricing.pk}/edit/",
        "monitor of pages": pricing.get_absolute_url(),
        "monitor of a crawl": dashboard["blog"].get_absolute_url(),
        "monitor of a web search": news.get_absolute_url(),
        "check": dashboard["check"].get_absolute_url(),
        "check of a web search": dashboard["found"].get_absolute_url(),
        "check whose web search failed": dashboard["search_failed"].get_absolute_url(),
        "what changed": dashboard["changed"].get_absolute_url(),
        "what changed, inline": dashboard["changed"].get_absolute_url()
        + "?view=inline",
        "a new page": dashboard["new"].get_absolute_url(),
        "history": "/history/",
        "history of a monitor": f"/history/?monitor={pricing.pk}",
        "deliveries": f"/monitors/{pricing.pk}/deliveries/",
        "web search results": f"/monitors/{news.pk}/results/?show=all",
        "pages of a crawl": f"/monitors/{dashboard['blog'].pk}/sites/"
        f"{dashboard['crawl'].pk}/",
        "API keys": "/settings/api-keys/",
        "team": "/settings/team/",
        "delete a monitor": f"/monitors/{pricing.pk}/delete/",
        "change password": "/accounts/password_change/",
    }
    for what, path in pages.items():
        assert page.goto(path).ok, what
        problems += axe_problems(page, what)

    page.goto("/monitors/new/")
    page.get_by_role("button", name="Create monitor").click()
    page.locator("#error-summary").wait_for()
    screenshot(page, f"a11y-form-errors-{viewport['width']}")
    problems += axe_problems(page, "new monitor with errors")

    assert problems == [], "\n".join(problems)


# Where the focus ring of the focused element reaches, and the box of the
# nearest ancestor that clips what overflows it (else the page).
_FOCUS_RING = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  const outline = parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset);
  const reach = Math.max(0, outline);
  const box = el.getBoundingClientRect();
  let clip = el.parentElement;
  while (clip && getComputedStyle(clip).overflow === 'visible') {
    clip = clip.parentElement;
  }
  const page = {left: 0, top: 0, right: window.innerWidth,
                bottom: document.documentElement.scrollHeight};
  const edge = clip ? clip.getBoundingClientRect() : page;
  return {
    outline: style.outlineStyle, reach,
    ring: {left: box.left - reach, right: box.right + reach,
           top: box.top - reach, bottom: box.bottom + reach},
    clip: {left: edge.left, right: edge.right, top: edge.top, bottom: edge.bottom},
  };
}"""


def assert_whole_focus_ring(page, what: str) -> None:
    ring = page.evaluate(_FOCUS_RING)
    assert ring["outline"] != "none", f"{what} shows no focus ring"
    inside = ring["ring"]
    edge = ring["clip"]
    assert (
        inside["left"] >= edge["left"] - 0.5
        and inside["right"] <= edge["right"] + 0.5
        and inside["top"] >= edge["top"] - 0.5
        and inside["bottom"] <= edge["bottom"] + 0.5
    ), f"{what}: its focus ring {inside} is cut off at {edge}"


def test_the_diff_layout_switch_and_the_current_change_show_their_whole_focus_ring(
    browser_page, dashboard, screenshot
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["changed"].get_absolute_url() + "?view=split")
    for layout in ("Page text", "Side by side", "One column"):
        page.keyboard.press("Tab")
        while page.evaluate("document.activeElement.textContent.trim()") != layout:
            page.keyboard.press("Tab")
        assert_whole_focus_ring(page, f"the “{layout}” switch")
    screenshot(page, "a11y-layout-switch-focus", full_page=False)
    page.keyboard.press("Enter")
    page.locator("#diff-region[data-layout='inline']").wait_for()

    page.get_by_role("link", name="Next change →").focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "change-1"
    assert_whole_focus_ring(page, "the change the keyboard moved to")


# The contrast ratio of WCAG 2 between two computed colours.
_CONTRAST = """([one, two]) => {
  const rgb = (color) => color.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (color) => {
    const [r, g, b] = rgb(color).map((c) => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [lum(one), lum(two)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""


def contrast(page, one: str, two: str) -> float:
    return page.evaluate(_CONTRAST, [one, two])


def backdrop(locator) -> str:
    """The colour behind an element: its nearest ancestor's that has one."""
    return locator.evaluate(
        """(el) => {
          for (let p = el.parentElement; p; p = p.parentElement) {
            const bg = getComputedStyle(p).backgroundColor;
            if (bg !== 'rgba(0, 0, 0, 0)') return bg;
          }
          return 'rgb(255, 255, 255)';
        }"""
    )


def test_field_borders_and_chart_bars_stand_out_three_to_one_from_their_background(
    browser_page, dashboard
):
    """WCAG 1.4.11: the edge of a text box is all that shows where to type,
    and the bars are the chart."""
    page = browser_page
    sign_in(page)
    page.goto("/monitors/new/")
    for field in ("#id_name", "textarea[name$='-urls']", "#id_schedule"):
        box = page.locator(field).first
        border = box.evaluate("(el) => getComputedStyle(el).borderTopColor")
        ratio = contrast(page, border, backdrop(box))
        assert ratio >= 3, f"the border of {field} stands out only {ratio:.2f}:1"

    page.goto(f"/history/?monitor={dashboard['pricing'].pk}")
    for swatch in ("bar-changed", "bar-errors", "bar-none"):
        fill = page.locator(f".legend .swatch.{swatch}").evaluate(
            "(el) => getComputedStyle(el).backgroundColor"
        )
        chart = page.locator(".check-chart")
        ratio = contrast(page, fill, backdrop(chart))
        assert ratio >= 3, f"{swatch} stands out only {ratio:.2f}:1 from the chart"


# Everything the page's live region says, and every redraw of the run status.
_LISTEN = """() => {
  window.__said = [];
  window.__redrawn = 0;
  window.__polls = 0;
  new MutationObserver(() => {
    const words = document.getElementById('announcer').textContent.trim();
    if (words) window.__said.push(words);
  }).observe(document.getElementById('announcer'), {childList: true, subtree: true});
  new MutationObserver((changes) => { window.__redrawn += changes.length; })
    .observe(document.querySelector('section.run'), {childList: true, subtree: true});
  document.addEventListener('htmx:afterRequest', (event) => {
    if (event.detail.pathInfo.requestPath.includes('/progress/')) window.__polls += 1;
  });
}"""


def polls_answered(page, more: int) -> None:
    """Wait until the run status has been polled `more` more times."""
    now = page.evaluate("window.__polls")
    page.wait_for_function("(count) => window.__polls >= count", arg=now + more)


def focus_in_run_section(page) -> bool:
    return page.evaluate(
        "document.activeElement.closest('section.run') !== null"
        " && document.activeElement !== document.body"
    )


def test_run_now_from_the_keyboard_keeps_focus_in_the_run_section_until_the_end(
    browser_page, dashboard, queued, screenshot
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["pricing"].get_absolute_url())
    page.locator("#run-now").focus()
    page.keyboard.press("Enter")
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    assert focus_in_run_section(page), "Run now left the keyboard at the top"
    screenshot(page, "a11y-run-now-focus", full_page=False)

    check = Check.objects.get(pk=queued[0])
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        summary={"totalPages": 2, "same": 2},
    )
    page.get_by_text("See the results").wait_for()
    assert focus_in_run_section(page)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "See the results"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "run-now"


def test_a_running_check_is_read_out_once_per_stage_and_not_redrawn_at_every_poll(
    browser_page, dashboard, queued
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["pricing"].get_absolute_url())
    page.evaluate(_LISTEN)
    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    redrawn = page.evaluate("window.__redrawn")
    polls_answered(page, 2)
    assert page.evaluate("window.__redrawn") == redrawn, "redrawn with nothing new"

    check = Check.objects.get(pk=queued[0])
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.RUNNING,
        started_at=timezone.now(),
        pages_total=3,
        pages_done=1,
    )
    page.get_by_text("1 of 3 pages done").wait_for()
    Check.objects.filter(pk=check.pk).update(pages_done=2)
    page.get_by_text("2 of 3 pages done").wait_for()
    polls_answered(page, 2)
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED,
        pages_done=3,
        finished_at=timezone.now(),
        summary={"totalPages": 3, "same": 2, "changed": 1},
    )
    page.get_by_text("See the results").wait_for()
    page.wait_for_function("() => window.__said.length >= 3")
    assert page.evaluate("window.__said") == [
        "Waiting for a worker to start the check…",
        "Checking pages…",
        "Completed, 1 changed, 2 unchanged",
    ]


def described_by(field) -> str:
    """The words a screen reader adds to a field: its aria-describedby."""
    return field.evaluate(
        """(el) => (el.getAttribute('aria-describedby') || '').split(' ')
          .map((id) => document.getElementById(id))
          .filter(Boolean).map((words) => words.textContent.trim()).join(' ')"""
    )


def test_a_failed_sign_in_and_a_refused_key_name_mark_their_fields_invalid(
    browser_page, member
):
    page = browser_page
    page.goto("/accounts/login/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("did not match").wait_for()
    for label in ("User name", "Password"):
        field = page.get_by_label(label)
        assert field.get_attribute("aria-invalid") == "true", label
        assert "did not match" in described_by(field), label

    sign_in(page)
    page.goto("/settings/api-keys/")
    name = page.get_by_label("Name (optional)")
    assert name.get_attribute("aria-invalid") is None
    # Longer than a key's name may be: the browser's own limit taken off, as
    # a pasted name in an older browser would get past it.
    name.evaluate("(el) => el.removeAttribute('maxlength')")
    name.fill("k" * 101)
    page.get_by_role("button", name="Create key").click()
    page.locator("#err-key-name p").wait_for()
    name = page.get_by_label("Name (optional)")
    assert name.get_attribute("aria-invalid") == "true"
    assert "at most 100 characters" in described_by(name)


def test_long_copies_of_a_page_can_be_scrolled_from_the_keyboard(
    browser_page, dashboard
):
    axe = _require_axe()
    page = browser_page
    page.context.add_init_script(path=str(axe))
    sign_in(page)
    page.goto(dashboard["changed"].get_absolute_url())
    # A long page's copies overflow their boxes; the sample page is short, so
    # its copies are made as long as a real page's before axe looks.
    page.evaluate(
        """() => document.querySelectorAll('.snapshot-text, .snapshot-raw')
             .forEach((box) => {
               box.textContent = 'A line of the page\\n'.repeat(400);
             })"""
    )
    problems = axe_problems(page, "what changed, long copies")
    assert problems == [], "\n".join(problems)
    first = page.locator(".snapshot-text").first
    first.focus()
    page.keyboard.press("PageDown")
    # Chromium animates a scroll from the keyboard, so the box moves over a few
    # frames after the key: wait for it to have moved (this times out if it never does).
    page.wait_for_function("(box) => box.scrollTop > 0", arg=first.element_handle())
    assert first.evaluate("(box) => box.scrollTop") > 0


def focused_id(page) -> str:
    return page.evaluate("document.activeElement.id")


def test_a_refused_channel_is_read_out_first_and_its_error_belongs_to_its_field(
    browser_page, member, team
):
    page = browser_page
    page.context.add_init_script(path=str(_require_axe()))
    sign_in(page)
    page.goto("/channels/new/?kind=webhook")
    page.get_by_label("Name").fill("Ops room")
    page.get_by_label("URL").fill("ftp://hooks.example.com/pagewatch")
    page.get_by_role("button", name="Save channel").click()

    summary = page.locator("#error-summary")
    summary.get_by_text("Please fix the fields marked below").wait_for()
    # The keyboard starts at the refusal, which names the field and leads to it.
    assert focused_id(page) == "error-summary"
    summary.get_by_role("link", name="URL: Only http:// and https://").click()
    assert focused_id(page) == "setting-url"
    address = page.get_by_label("URL")
    assert address.get_attribute("aria-invalid") == "true"
    assert "Only http:// and https:// URLs are allowed" in described_by(address)
    assert axe_problems(page, "refused channel") == []
    assert not Channel.objects.filter(team=team).exists()


def test_a_refused_invitation_puts_the_keyboard_on_the_address_and_reads_why(
    browser_page, member, team
):
    page = browser_page
    sign_in(page)
    page.set_viewport_size(PHONE)  # the form is far below the top of the page
    page.goto("/settings/team/")
    page.get_by_label("E-mail address").fill("olive at example")
    page.get_by_role("button", name="Send invitation").click()
    page.locator("#err-invite-email p").wait_for()

    address = page.get_by_label("E-mail address")
    assert focused_id(page) == address.get_attribute("id")
    assert "valid email address" in described_by(address)
    assert address.evaluate(
        "(el) => { const box = el.getBoundingClientRect();"
        " return box.top >= 0 && box.bottom <= window.innerHeight; }"
    ), "the refused field is out of sight"
    assert not Invitation.objects.filter(team=team).exists()


def test_each_retry_button_and_attempt_list_of_the_notifications_says_which_it_is(
    browser_page, dashboard
):
    pricing = dashboard["pricing"]
    earlier = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=dashboard["check"],
        event="monitor.page",
        url="https://hooks.example.com/pagewatch",
        body="{}",
        attempts=2,
        status=Delivery.Status.FAILED,
        last_status_code=502,
        last_error="Answered 502.",
    )
    Delivery.objects.filter(pk=earlier.pk).update(
        created_at=timezone.now() - timedelta(hours=3)
    )
    page = browser_page
    sign_in(page)
    page.goto(f"/monitors/{pricing.pk}/deliveries/")

    retries = page.get_by_role("button", name="Retry now")
    names = [" ".join(name.split()) for name in retries.all_text_contents()]
    hook = "to https://hooks.example.com/pagewatch"
    assert names == [
        f"Retry now the “Check finished” message of just now {hook}",
        f"Retry now the “Each page's result” message of 3 hours ago {hook}",
    ]
    # The list of its attempts opens on more than a bare number.
    attempts = page.locator("details:has(ol.attempts) > summary")
    assert " ".join(attempts.text_content().split()) == (
        "1 attempt to send the “Check finished” message of just now"
    )


def test_each_see_the_check_link_says_which_message_and_each_time_its_full_time(
    browser_page, dashboard
):
    pricing = dashboard["pricing"]
    Monitor.objects.filter(pk=pricing.pk).update(schedule_timezone="Asia/Tokyo")
    earlier = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=pricing,
        check_run=dashboard["check"],
        event="monitor.page",
        url="https://hooks.example.com/pagewatch",
        body="{}",
        status=Delivery.Status.DELIVERED,
    )
    Delivery.objects.filter(pk=earlier.pk).update(
        created_at=timezone.now() - timedelta(hours=3)
    )
    page = browser_page
    sign_in(page)
    page.goto(f"/monitors/{pricing.pk}/deliveries/")

    links = page.get_by_role("link", name="see the check")
    hook = "to https://hooks.example.com/pagewatch"
    names = [" ".join(name.split()) for name in links.all_text_contents()]
    assert len(names) > 2 and len(set(names)) == len(names)
    assert names[-1] == (
        f"see the check behind the “Each page's result” message of 3 hours ago {hook}"
    )
    # What a screen reader reads of a time: its words and its full time, in
    # the monitor's zone; the screen shows only the words, as before.
    created = page.locator("td[data-label=Created] time").last
    assert re.fullmatch(
        r"3 hours ago \(\w{3} \d\d \w{3} \d{4}, \d\d:\d\d JST\)",
        created.text_content(),
    )
    full = created.locator(".visually-hidden").bounding_box()
    assert full["width"] <= 1 and full["height"] <= 1
    assert created.get_attribute("title") in created.text_content()


def test_the_links_to_each_pages_change_name_the_page_they_open(
    browser_page, dashboard
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["check"].get_absolute_url())

    changed = page.get_by_role("link", name="See what changed on Pricing", exact=True)
    new = page.get_by_role("link", name="First copy of this page (Terms)", exact=True)
    assert changed.get_attribute("href") == dashboard["changed"].get_absolute_url()
    assert new.get_attribute("href") == dashboard["new"].get_absolute_url()


def test_an_error_found_while_typing_is_read_out_once_and_not_again_when_fixed(
    browser_page, member
):
    page = browser_page
    sign_in(page)
    page.goto("/monitors/new/")
    announcer = page.locator("#announcer")
    schedule = page.get_by_label("Schedule")

    schedule.fill("every banana")
    expect(announcer).to_have_text(re.compile(r"^We could not read this schedule"))
    # More of the same mistake: the error is unchanged, so it is not said again.
    page.evaluate("document.getElementById('announcer').textContent = ''")
    with page.expect_response(lambda r: r.request.method == "POST"):
        schedule.press_sequentially(" split")
    page.locator("#err-schedule p").wait_for()
    page.wait_for_timeout(300)  # past the announcer's own short delay
    expect(announcer).to_have_text("")

    with page.expect_response(lambda r: r.request.method == "POST"):
        schedule.fill("every 30 minutes")
    expect(page.locator("#err-schedule")).to_be_empty()
    page.wait_for_timeout(300)
    expect(announcer).to_have_text("")


def test_a_new_api_key_has_the_keyboard_as_the_page_opens(browser_page, member):
    page = browser_page
    sign_in(page)
    page.goto("/settings/api-keys/")
    page.get_by_label("Name (optional)").fill("Zapier")
    page.get_by_role("button", name="Create key").click()
    page.locator("#new-key").wait_for()

    # A screen reader starts at the key, named, rather than at the page's top.
    assert focused_id(page) == "new-key"
    assert page.get_by_label("New API key").input_value().startswith("pw_")


def test_each_problem_of_a_refused_channel_leads_from_the_summary_to_its_field(
    browser_page, member, team
):
    page = browser_page
    sign_in(page)
    page.goto("/channels/new/?kind=webhook")
    page.get_by_label("Name").fill("Ops room")
    page.get_by_label("URL").fill("https://hooks.example.com/pagewatch")
    failing = page.get_by_label("A monitor is failing after")
    # Past the browser's own limit, as an older browser would let it be sent.
    failing.evaluate("(el) => el.removeAttribute('min')")
    failing.fill("0")
    page.get_by_role("button", name="Save channel").click()

    summary = page.locator("#error-summary")
    summary.get_by_role("link", name="Enter a number of failed checks").click()
    assert focused_id(page) == "channel-failing-after"
    failing = page.get_by_label("A monitor is failing after")
    assert failing.get_attribute("aria-invalid") == "true"
    assert "from 1 to 100" in described_by(failing)
    assert not Channel.objects.filter(team=team).exists()


def test_a_check_ending_while_the_keyboard_is_in_the_check_history_keeps_its_place(
    browser_page, dashboard, queued
):
    page = browser_page
    sign_in(page)
    page.goto(dashboard["pricing"].get_absolute_url())
    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    rows = page.locator("#check-history table.checks tbody tr")
    expect(rows).to_have_count(4)  # redrawn as the check started
    # The keyboard goes on down the page while the check runs.
    chip = page.get_by_role("link", name="Meaningful changes only")
    chip.focus()
    before = chip.element_handle()

    check = Check.objects.get(pk=queued[0])
    Check.objects.filter(pk=check.pk).update(
        status=Check.Status.COMPLETED,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        summary={"totalPages": 2, "same": 2},
    )
    # The check history is redrawn with the check's outcome.
    page.wait_for_function("(chip) => !chip.isConnected", arg=before)

    assert page.evaluate("document.activeElement.textContent") == (
        "Meaningful changes only"
    ), "the keyboard fell back to the top of the page"
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "All checks"
