"""The dashboard in a real browser: sign in, create a monitor while inline
validation answers, pause and resume, run a check and watch it finish, read a
diff — and prove hostile page content never runs as script."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone
from playwright.sync_api import expect

from checks import runner
from checks.models import Check, PageResult
from monitors.models import ApiKey, Monitor, Target, Team
from tests.browser.people import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    # The pages under test are served on 127.0.0.1 by tests/sites.py.
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def make_monitor(
    team: Team, urls: list[str], name: str = "Pricing", **fields: Any
) -> Monitor:
    """A monitor every half hour in Berlin, with a scrape target of `urls`
    (none when empty: the caller adds its own)."""
    monitor = Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        schedule_timezone="Europe/Berlin",
        **fields,
    )
    monitor.refresh_next_run(timezone.now())
    monitor.save()
    if urls:
        Target.objects.create(monitor=monitor, type="scrape", urls=urls)
    return monitor


def run_check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return run_as_a_worker(check)


def run_as_a_worker(check: Check) -> Check:
    """runner.run in a thread of its own, as a worker would: this thread runs
    Playwright's event loop, and the runner drives one of its own.

    On in-memory SQLite the thread uses this thread's connection, as the live
    server's do: a connection of its own to the shared in-memory database
    makes a page's progress request fail with "database table is locked"
    whenever it reads the check while the runner writes it."""
    shared = [
        c for c in connections.all() if c.vendor == "sqlite" and c.is_in_memory_db()
    ]

    def work() -> Check:
        for conn in shared:
            connections[conn.alias] = conn
        try:
            return runner.run(check)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


def assert_clean(page) -> None:
    problems = page.problems
    assert problems.dialogs == []
    assert problems.csp_violations(page) == []
    assert problems.page_errors == []
    assert problems.console_errors == [], "\n".join(problems.console_errors)


def error_of(page, slot: str):
    return page.locator(f"[id='err-{slot}']")


# ---------------------------------------------------------------- tests


def test_create_a_monitor_with_inline_validation(
    browser_page, member, site, screenshot
):
    page = browser_page
    pricing = site.html("/pricing", "Pricing", "<h1>Plans</h1><p>Pro costs $19.</p>")
    sign_in(page)
    page.get_by_text("Nothing is being watched yet").wait_for()
    screenshot(page, "01-empty-list")

    page.get_by_role("link", name="New monitor").click()
    page.get_by_label("Name").fill("Competitor pricing")

    # A bad schedule: the error appears next to the field while typing.
    schedule = page.get_by_label("Schedule")
    schedule.fill("every banana")
    error_of(page, "schedule").get_by_text("We could not read this schedule").wait_for()
    assert schedule.get_attribute("aria-invalid") == "true"
    assert "err-schedule" in schedule.get_attribute("aria-describedby")
    preview = page.locator("#schedule-preview")
    expect(preview).to_have_text("✕ Not a schedule we can use yet.")

    # A web search without a goal.
    page.get_by_role("button", name="+ Web search").click()
    queries = page.locator(".target-search textarea[name$='-queries']")
    # Focus moves once the row has settled, a moment after it is shown.
    expect(queries).to_be_focused()
    queries.fill("acme pricing")
    error_of(page, "goal").get_by_text(
        "A web search needs a goal that says what you are looking for"
    ).wait_for()

    # Judging switched on without a goal.
    page.get_by_label("Yes, always — a goal is required").check()
    error_of(page, "judge").get_by_text(
        "Write a goal for the AI to judge changes against"
    ).wait_for()

    assert page.url.endswith("/monitors/new/")  # all of this before submitting
    assert not Monitor.objects.exists()
    screenshot(page, "02-form-inline-errors")

    # Fix everything; the errors go away as the fields are fixed. A bad time
    # zone is the zone's problem, not the (now good) phrase's.
    schedule.fill("every 30 minutes")
    zone = page.get_by_label("Time zone")
    zone.fill("Mars/Olympus")
    error_of(page, "schedule").get_by_text(
        "“Mars/Olympus” is not a time zone we know"
    ).wait_for()
    expect(zone).to_have_attribute("aria-invalid", "true")
    expect(schedule).not_to_have_attribute("aria-invalid", "true")
    zone.fill("Europe/Berlin")
    page.locator("#schedule-preview").get_by_text("Every 30 minutes").wait_for()
    expect(error_of(page, "schedule")).to_be_empty()
    expect(zone).not_to_have_attribute("aria-invalid", "true")
    page.locator(".target-search").get_by_role("button", name="Remove").click()
    page.get_by_label("Yes, whenever a goal is set").check()
    expect(error_of(page, "judge")).to_be_empty()
    expect(error_of(page, "goal")).to_be_empty()
    page.locator(".target-scrape textarea[name$='-urls']").fill(pricing)
    page.get_by_role("button", name="Create monitor").click()

    page.get_by_role("heading", name="Competitor pricing").wait_for()
    monitor = Monitor.objects.get()
    assert monitor.schedule_cron == "*/30 * * * *"
    assert monitor.targets.get().urls == [pricing]
    expect(page.locator("main")).to_contain_text("Every 30 minutes, Europe/Berlin")
    expect(page.locator("main")).not_to_contain_text("*/30")
    screenshot(page, "03-monitor-page")

    # Editing shows the schedule in the words it was typed in, not as cron.
    page.get_by_role("link", name="Edit").first.click()
    expect(page.get_by_label("Schedule")).to_have_value("Every 30 minutes")
    assert_clean(page)


def test_how_pages_are_loaded_is_chosen_and_checked_inline(
    browser_page, member, site, screenshot
):
    page = browser_page
    shop = site.html("/shop", "Shop", "<p>Starter costs $19.</p>")
    sign_in(page)
    page.get_by_role("link", name="New monitor").click()
    page.get_by_label("Name").fill("Shop app")
    page.locator(".target-scrape textarea[name$='-urls']").fill(shop)
    page.get_by_text("Advanced page options").click()
    page.get_by_label("Wait before reading (milliseconds)").fill("2000")

    # Never a browser, for a page that waits: refused beside the choice.
    page.get_by_label("Always a plain download", exact=False).check()
    error_of(page, "fetch_with").get_by_text("only a browser can do that").wait_for()
    screenshot(page, "fetch-with-refused")
    page.get_by_label("Always in a real browser", exact=False).check()
    expect(error_of(page, "fetch_with")).to_be_empty()
    page.get_by_label("Schedule").fill("every 30 minutes")
    page.get_by_role("button", name="Create monitor").click()

    page.get_by_role("heading", name="Shop app").wait_for()
    assert Monitor.objects.get().fetch_with == Monitor.FetchWith.BROWSER
    page.get_by_text("Always in a real browser").wait_for()
    assert_clean(page)


def test_adding_a_target_after_removing_the_last_one_clears_the_missing_target_error(
    browser_page, member
):
    page = browser_page
    sign_in(page)
    page.goto("/monitors/new/")
    page.locator(".target-scrape").get_by_role("button", name="Remove").click()
    missing = "Add at least one thing to watch"
    error_of(page, "targets").get_by_text(missing).wait_for()

    page.get_by_role("button", name="+ Website crawl").click()

    page.locator(".target-crawl").wait_for()
    expect(error_of(page, "targets")).to_be_empty()
    assert_clean(page)


def test_a_refused_save_focuses_the_summary_and_opens_the_folded_problem(
    browser_page, member, site, screenshot
):
    page = browser_page
    shop = site.html("/shop", "Shop", "<p>Starter costs $19.</p>")
    sign_in(page)
    page.get_by_role("link", name="New monitor").click()
    page.locator(".target-scrape textarea[name$='-urls']").fill(shop)
    page.get_by_label("Schedule").fill("every 30 minutes")
    page.get_by_text("Advanced page options").click()
    page.get_by_label("Give up after (milliseconds)").fill("10")
    page.get_by_text("Advanced page options").click()  # folded again

    page.get_by_role("button", name="Create monitor").click()

    page.get_by_text("Please fix 2 problems before saving").wait_for()
    assert page.evaluate("document.activeElement.id") == "error-summary"
    assert page.locator("details.more:has(input[name$='-timeout'])").evaluate(
        "section => section.open"
    )
    assert not Monitor.objects.exists()
    screenshot(page, "refused-save")


def test_the_failing_only_box_narrows_the_list_in_place(
    browser_page, member, team, screenshot
):
    page = browser_page
    down = make_monitor(team, ["https://example.com/pricing"], name="Down")
    Check.objects.create(monitor=down, trigger="manual", status="failed")
    fine = make_monitor(team, ["https://example.com/terms"], name="Fine")
    Check.objects.create(monitor=fine, trigger="manual", status="completed")
    sign_in(page)
    page.get_by_label("Failing only").check()
    # htmx swaps the results and keeps the filter in the address.
    page.wait_for_url(re.compile(r"failing=1"))
    expect(page.locator(".row-title")).to_have_text(["Down"])
    page.get_by_role("status").filter(has_text="1 monitor found.").wait_for(
        state="attached"
    )
    assert page.get_by_label("Failing only").is_checked()
    screenshot(page, "list-failing-only")
    Check.objects.create(monitor=down, trigger="manual", status="completed")
    page.reload()  # the address alone, without JavaScript's help, keeps it
    page.get_by_role("heading", name="Nothing is failing").wait_for()
    page.get_by_label("Failing only").uncheck()
    expect(page.locator(".row-title")).to_have_count(2)
    assert_clean(page)


def test_pause_and_resume_from_the_list(browser_page, member, team, screenshot):
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/pricing"])
    make_monitor(team, ["https://example.com/terms"], name="Terms of service")
    sign_in(page)
    row = page.locator(f"#monitor-{monitor.pk}")
    row.get_by_role("button", name="Pause").click()
    row.get_by_role("button", name="Resume").wait_for()
    assert row.locator(".badge").inner_text() == "Paused"
    # Focus stays on the button that was pressed, now saying "Resume".
    assert page.evaluate("document.activeElement.id") == f"toggle-{monitor.pk}"
    page.get_by_role("status").filter(has_text="“Pricing” paused.").wait_for(
        state="attached"
    )
    monitor.refresh_from_db()
    assert monitor.status == "paused" and monitor.next_run_at is None
    screenshot(page, "04-list-paused")

    row.get_by_role("button", name="Resume").click()
    row.get_by_role("button", name="Pause").wait_for()
    monitor.refresh_from_db()
    assert monitor.is_active and monitor.next_run_at is not None
    assert_clean(page)


def test_run_now_shows_progress_until_done_then_the_diff(
    browser_page, member, team, site, queued, screenshot
):
    page = browser_page
    urls = [
        site.html("/a", "Plans", "<h1>Plans</h1><p>Pro costs $19 a month.</p>"),
        site.html("/b", "About", "<p>We are a small team.</p>"),
        site.html("/c", "Contact", "<p>Write to us.</p>"),
    ]
    monitor = make_monitor(team, urls)
    first = run_check(monitor)
    assert first.summary["new"] == 3
    # Change one page; make the others slow so the check takes a few seconds.
    site.html(
        "/a",
        "Plans",
        "<h1>Plans</h1><p>Pro costs $24 a month.</p><p>New: Team plan.</p>",
    )
    site.html("/b", "About", "<p>We are a small team.</p>", delay=1.5)
    site.html("/c", "Contact", "<p>Write to us.</p>", delay=3.0)

    progress = []
    page.on(
        "response",
        lambda r: "/progress/" in r.url and progress.append((r.status, r.text())),
    )
    sign_in(page)
    page.goto(monitor.get_absolute_url())
    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    page.wait_for_timeout(1500)  # let it poll while queued
    assert len(queued) == 1
    check = Check.objects.get(pk=queued[0])
    # The worker's part, done here: the browser keeps polling meanwhile.
    run_as_a_worker(check)
    page.get_by_text("See the results").wait_for(timeout=15_000)
    page.wait_for_timeout(2500)  # polling must have stopped: no new requests

    statuses = [status for status, _ in progress]
    assert statuses[-1] == 286 and statuses.count(286) == 1
    assert any("Waiting for a worker" in body for _, body in progress)
    assert any(re.search(r"[12] of 3 pages done", body) for _, body in progress)
    assert page.locator("#run-status").get_by_text("1 changed").is_visible()
    # The history table and the chart reloaded themselves when it finished.
    page.locator("#check-history").get_by_text("Run by hand").first.wait_for()
    page.locator("#changes-chart").get_by_text("in 2 checks").wait_for()
    screenshot(page, "05-run-finished")

    page.get_by_role("link", name="See the results").click()
    page.get_by_role("heading", name="Pages").wait_for()
    page.get_by_role("link", name=re.compile("Changed")).click()
    page.wait_for_url(re.compile(r"status=changed"))
    assert page.locator("table.pages tbody tr").count() == 1
    screenshot(page, "06-check-page")

    page.get_by_role("link", name="See what changed").click()
    page.locator("#diff-region[data-layout='text'] ins.word-change").first.wait_for()
    page.get_by_role("link", name="Side by side").click()
    page.locator("table.diff.diff-split").wait_for()
    changed = PageResult.objects.get(check_run=check, status="changed")
    assert page.url.endswith(changed.get_absolute_url() + "?view=split")
    page.get_by_role("link", name="Next change →").click()
    page.locator("tr#change-1.is-current").wait_for()
    assert page.evaluate("document.activeElement.id") == "change-1"
    page.get_by_text("Change 1 of").wait_for()
    screenshot(page, "07-diff-side-by-side")

    page.get_by_role("link", name="One column").click()
    page.locator("table.diff.diff-inline").wait_for()
    assert page.url.endswith("?view=inline")
    expect(page.get_by_role("link", name="One column")).to_have_attribute(
        "aria-current", "true"
    )
    expect(page.get_by_role("link", name="Side by side")).not_to_have_attribute(
        "aria-current", "true"
    )
    screenshot(page, "08-diff-inline")
    assert_clean(page)


def test_a_check_page_open_while_it_runs_says_it_finished_in_its_heading_too(
    browser_page, member, team, site
):
    page = browser_page
    monitor = make_monitor(team, [site.html("/a", "Plans", "<p>Pro costs $19.</p>")])
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    sign_in(page)
    page.goto(check.get_absolute_url())
    head = page.locator(".page-head .badge")
    expect(head).to_have_text("Waiting to start")

    run_as_a_worker(check)

    page.locator("#page-results").get_by_role(
        "link", name="Plans", exact=True
    ).wait_for(timeout=15_000)
    expect(head).to_have_text("Completed")
    expect(page.locator("dl.facts")).to_contain_text("Took")
    assert_clean(page)


def test_the_visual_change_of_a_screenshot_is_shown_under_the_csp(
    browser_page, member, team, site, screenshot
):
    page = browser_page
    url = site.html("/a", "Plans", "<h1>Plans</h1><p>Pro costs $19 a month.</p>")
    monitor = make_monitor(team, [url])
    Target.objects.filter(monitor=monitor).update(
        scrape_options={"formats": ["markdown", "screenshot"]}
    )
    run_check(monitor)
    site.html(
        "/a",
        "Plans",
        '<h1>Plans</h1><p>Pro costs $24 a month.</p><p style="background: #fc0;'
        ' padding: 2rem">New: Team plan.</p>',
    )
    changed = PageResult.objects.get(check_run=run_check(monitor), status="changed")

    sign_in(page)
    page.goto(changed.get_absolute_url())
    figures = page.locator("figure.shot img")
    expect(figures).to_have_count(2)
    for index in range(2):
        figures.nth(index).scroll_into_view_if_needed()
        expect(figures.nth(index)).to_have_js_property("complete", True)
        assert figures.nth(index).evaluate("img => img.naturalWidth") > 0
    expect(page.locator(".visual-words")).to_contain_text("looks different")
    expect(page.locator("rect[data-changed-place]").first).to_be_attached()
    page.get_by_text(
        "Opened in a real browser, as this page's settings ask."
    ).wait_for()
    page.locator("[data-visual]").scroll_into_view_if_needed()
    screenshot(page, "10-visual-change")
    assert_clean(page)


XSS = (
    '&lt;script&gt;alert("title")&lt;/script&gt;'
    '&lt;img src=x onerror="window.__xss=1;alert(1)"&gt;'
)


def test_hostile_page_content_never_runs(browser_page, member, team, site, screenshot):
    page = browser_page
    body = (
        "<h1>Offers</h1>"
        f"<p>{XSS}</p>"
        '<p><img src=x onerror="alert(2)"><script>alert(3)</script></p>'
        '<p><a href="javascript:alert(4)">click</a> price $1</p>'
    )
    url = site.html("/evil", XSS, body)
    monitor = make_monitor(team, [url], name="Evil page")
    run_check(monitor)
    site.html("/evil", XSS, body.replace("$1", "$2") + f"<p>{XSS} again</p>")
    check = run_check(monitor)
    changed = PageResult.objects.get(check_run=check)
    assert changed.status == "changed"
    assert "<script>" in changed.metadata.get("title", "") or "<script>" in (
        changed.current_snapshot.text
    )

    sign_in(page)
    for path in (
        "/",
        monitor.get_absolute_url(),
        check.get_absolute_url(),
        changed.get_absolute_url(),
        changed.get_absolute_url() + "?view=inline",
    ):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        for details in page.locator("details").all():
            details.evaluate("el => el.open = true")
        page.wait_for_timeout(200)
        assert page.evaluate("window.__xss") is None, path
    page.get_by_role("link", name="Side by side").click()
    page.locator("table.diff.diff-split").wait_for()
    assert page.locator("td.diff-text", has_text="<script>").count() >= 1
    screenshot(page, "09-hostile-diff")
    assert_clean(page)


def test_phone_layout(browser_page, member, team, screenshot):
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    monitor = make_monitor(team, ["https://example.com/pricing"])
    monitor.last_check_summary = {
        "totalPages": 3, "same": 1, "changed": 1, "new": 0, "removed": 0, "error": 1,
    }  # fmt: skip
    monitor.save()
    sign_in(page)
    page.locator(f"#monitor-{monitor.pk}").wait_for()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, "the list scrolls sideways on a phone"
    screenshot(page, "10-phone-list")
    page.goto("/monitors/new/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "11-phone-form")

    # Keyboard: the skip link is the first stop and shows itself.
    page.goto("/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    assert_clean(page)


def test_api_key_is_shown_once_with_a_copy_button(
    browser_page, member, team, screenshot
):
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name (optional)").fill("Zapier")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").input_value()
    assert key.startswith("pw_")
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == key
    screenshot(page, "12-api-key-created")

    page.get_by_role("link", name="API keys").click()
    assert page.locator("#new-key").count() == 0  # never shown again
    page.get_by_role("link", name=re.compile("Revoke")).click()
    page.get_by_role("button", name="Revoke key").click()
    page.get_by_text("revoked.").wait_for()
    assert not ApiKey.objects.get(name="Zapier").is_active
    page.get_by_role("link", name="Team").click()
    page.get_by_role("cell", name="olive@example.com").wait_for()
    assert_clean(page)


def test_the_webhook_secret_is_shown_after_confirming_and_copied(
    browser_page, member, team, screenshot
):
    secret = team.ensure_webhook_secret()
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page)
    page.get_by_role("link", name="Team").click()
    assert secret not in page.content()  # masked on the team page
    page.get_by_text(team.masked_webhook_secret).wait_for()
    screenshot(page, "13-team-webhook-secret")

    page.get_by_role("link", name="Show the secret").click()
    page.get_by_role("heading", name="Show the webhook signing secret?").wait_for()
    assert secret not in page.content()
    page.get_by_role("button", name="Show secret").click()
    assert page.locator("#webhook-secret").input_value() == secret
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    screenshot(page, "14-webhook-secret-shown")

    page.get_by_role("link", name="Back to the team page").click()
    page.get_by_role("link", name="Make a new secret").click()
    page.get_by_role("button", name="Make a new secret").click()
    new = page.locator("#webhook-secret").input_value()
    team.refresh_from_db()
    assert new == team.webhook_secret != secret
    page.get_by_text("The previous secret also signs messages until").wait_for()
    screenshot(page, "15-webhook-secret-rotated")
    assert_clean(page)


def test_api_docs_render_from_our_own_files_under_the_csp(browser_page, screenshot):
    page = browser_page
    elsewhere: list[str] = []
    local = ("http://localhost", "http://127.0.0.1", "data:")

    def note(request) -> None:
        if not request.url.startswith(local):
            elsewhere.append(request.url)

    page.on("request", note)
    page.goto("/v2/docs")
    page.get_by_text("Pagewatch monitor API").first.wait_for()
    page.get_by_text("/v2/monitor/{monitor_id}").first.wait_for()
    screenshot(page, "20-api-docs", full_page=False)
    assert elsewhere == []  # no CDN, no web fonts: the page works offline
    assert_clean(page)


def test_a_button_whose_monitor_went_meanwhile_says_so_instead_of_doing_nothing(
    browser_page, member, team, queued, screenshot
):
    page = browser_page
    monitor = make_monitor(team, ["https://example.com/pricing"])
    sign_in(page)
    page.goto(monitor.get_absolute_url())
    # Someone else deletes it while this page is open.
    Monitor.objects.filter(pk=monitor.pk).update(deleted_at=timezone.now())

    page.get_by_role("button", name="Run now").click()

    problem = page.get_by_role("alert").filter(has_text="no longer here")
    expect(problem).to_be_visible()
    assert "Reload the page" in problem.inner_text()
    assert queued == []
    screenshot(page, "05-run-on-a-deleted-monitor", full_page=False)
