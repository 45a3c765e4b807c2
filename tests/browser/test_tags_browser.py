"""Tags and acting on many monitors in a real browser: tick three monitors
on the list, pause them at once; tick two and check them now; follow a tag's
chip to its monitors."""

from __future__ import annotations

import pytest
from django.utils import timezone

from checks.models import Check
from monitors.models import Monitor, Tag, Target, Team
from teams.models import Activity
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def make_monitor(team: Team, name: str, tags: list[str] = ()) -> Monitor:
    monitor = Monitor.objects.create(team=team, name=name, schedule_cron="0 * * * *")
    monitor.refresh_next_run(timezone.now())
    monitor.save()
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://a.test/"])
    monitor.tags.set(Tag.objects.named(team, tags))
    return monitor


def test_ticking_three_monitors_and_pausing_them(
    browser_page, member, team, screenshot
):
    page = browser_page
    ticked = [
        make_monitor(team, "Rival prices", ["Competitors"]),
        make_monitor(team, "Rival news", ["Competitors"]),
        make_monitor(team, "Black Friday deals", ["Black Friday"]),
    ]
    left = make_monitor(team, "Our own shop")
    sign_in(page)

    for monitor in ticked:
        page.get_by_label(f"Select {monitor.name}").check()
    screenshot(page, "tags-01-three-ticked")
    page.locator("#bulk").get_by_role("button", name="Pause", exact=True).click()
    page.get_by_text("3 monitors paused.").wait_for()

    for monitor in ticked:
        monitor.refresh_from_db()
        assert monitor.status == "paused"
        row = page.locator(f"#monitor-{monitor.pk}")
        assert row.locator(".badge").inner_text() == "Paused"
    left.refresh_from_db()
    assert left.is_active
    screenshot(page, "tags-02-three-paused")
    assert_clean(page)


def test_select_all_shown_and_a_tags_chip(browser_page, member, team, screenshot):
    page = browser_page
    make_monitor(team, "Rival prices", ["Competitors"])
    make_monitor(team, "Our own shop", ["Shop"])
    sign_in(page)

    page.locator(".tag", has_text="Competitors").first.click()
    page.wait_for_url("**/?tag=Competitors")
    assert page.locator("tbody tr").count() == 1
    assert page.locator("#id_tag").input_value() == "Competitors"

    page.get_by_label("Select all shown").check()
    assert page.get_by_label("Select Rival prices").is_checked()
    page.get_by_label("Select Rival prices").uncheck()
    assert not page.get_by_label("Select all shown").is_checked()
    screenshot(page, "tags-03-filtered-by-tag")
    assert_clean(page)


def test_ticking_two_monitors_and_checking_them_now(
    browser_page, member, team, screenshot
):
    page = browser_page
    ticked = [make_monitor(team, "Rival prices"), make_monitor(team, "Rival news")]
    paused = make_monitor(team, "Closed shop")
    Monitor.objects.filter(pk=paused.pk).pause()
    left = make_monitor(team, "Our own shop")
    sign_in(page)

    for monitor in [*ticked, paused]:
        page.get_by_label(f"Select {monitor.name}").check()
    page.locator("#bulk").get_by_role("button", name="Check now").click()
    page.get_by_text("Started a check of 2 monitors.").wait_for()

    outcome = page.locator("#bulk-outcome")
    assert "“Closed shop” is paused (resume it first)" in outcome.inner_text()
    started = Check.objects.filter(trigger=Check.Trigger.MANUAL)
    assert sorted(c.monitor_id for c in started) == sorted(m.pk for m in ticked)
    assert not Check.objects.filter(monitor__in=[paused, left]).exists()
    logged = Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN)
    assert sorted(e.monitor_id for e in logged) == sorted(m.pk for m in ticked)
    screenshot(page, "tags-04-two-checked-now")
    assert_clean(page)
