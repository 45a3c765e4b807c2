"""The admin's monitor page in real Chromium: an administrator edits a
monitor with the dashboard's fields and rules, and reads its schedule in words
and its times in the monitor's zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from monitors.models import Monitor, Target
from tests.browser.people import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def administrator(django_user_model):
    return django_user_model.objects.create_superuser(
        "ada", "ada@example.com", PASSWORD
    )


def test_an_administrator_edits_a_monitor_and_a_wrong_zone_is_refused_in_words(
    browser_page, administrator, team, screenshot
):
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing page",
        schedule_cron="*/30 * * * *",
        schedule_timezone="Europe/Berlin",
        next_run_at=datetime.now(UTC) + timedelta(minutes=30),
    )
    Target.objects.create(
        monitor=monitor, type=Target.Type.SCRAPE, urls=["https://example.com/a"]
    )
    page = browser_page
    page.goto(f"/admin/monitors/monitor/{monitor.pk}/change/")
    if "/login/" in page.url:
        page.get_by_label(re.compile("User ?name", re.I)).fill("ada")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name=re.compile("Log in|Sign in")).click()
        page.goto(f"/admin/monitors/monitor/{monitor.pk}/change/")
    assert "Every 30 minutes (*/30 * * * *, Europe/Berlin)" in page.content()

    page.locator("#id_schedule").fill("0 9 * * 1-5")
    page.get_by_label("Time zone").fill("Berlin")
    target = page.get_by_role("group", name="Target 1: Pages")
    target.get_by_label("Page addresses").fill("https://example.com/b")
    page.get_by_role("button", name="Save", exact=True).click()

    page.get_by_text("did you mean Europe/Berlin?").wait_for()
    screenshot(page, "admin-monitor-refused")
    monitor.refresh_from_db()
    assert monitor.schedule_timezone == "Europe/Berlin"
    assert monitor.schedule_cron == "*/30 * * * *"

    page.get_by_label("Time zone").fill("Europe/Berlin")
    page.get_by_role("button", name="Save and continue editing").click()
    page.get_by_text("Every weekday at 09:00 (0 9 * * 1-5, Europe/Berlin)").wait_for()
    screenshot(page, "admin-monitor-saved")
    monitor.refresh_from_db()
    assert (monitor.schedule_cron, monitor.schedule_timezone) == (
        "0 9 * * 1-5",
        "Europe/Berlin",
    )
    assert monitor.targets.get().urls == ["https://example.com/b"]
    assert re.search(r"\d{2}:\d{2}:\d{2} CES?T", page.content())
    assert not page.problems.page_errors
    assert not page.problems.csp_violations(page)


def test_an_administrator_runs_a_monitor_and_retries_a_delivery_from_the_lists(
    browser_page, administrator, team, screenshot
):
    from checks.models import Check, Delivery, WebhookDelivery

    monitor = Monitor.objects.create(
        team=team,
        name="Pricing page",
        schedule_cron="*/30 * * * *",
        next_run_at=datetime.now(UTC) + timedelta(minutes=30),
    )
    Target.objects.create(
        monitor=monitor, type=Target.Type.SCRAPE, urls=["https://example.com/a"]
    )
    failed = WebhookDelivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        event="monitor.check.completed",
        url="https://hooks.example.com/in",
        body="{}",
        status=Delivery.Status.FAILED,
        attempts=5,
    )
    page = browser_page
    page.goto("/admin/monitors/monitor/")
    page.get_by_label(re.compile("User ?name", re.I)).fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name=re.compile("Log in|Sign in")).click()
    page.goto("/admin/monitors/monitor/")

    page.get_by_role("checkbox", name="Select this object for an action").check()
    page.get_by_label("Action:").select_option(
        label="Run a check of the selected monitors now"
    )
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Started a check of 1 monitor.").wait_for()
    screenshot(page, "admin-monitor-run-now")
    assert Check.objects.get(monitor=monitor).trigger == Check.Trigger.MANUAL

    page.goto("/admin/checks/webhookdelivery/")
    assert "Check finished" in page.locator("#result_list").inner_text()
    page.get_by_role("checkbox", name="Select this object for an action").check()
    page.get_by_label("Action:").select_option(
        label="Retry the selected deliveries now"
    )
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Retrying 1 delivery now.").wait_for()
    screenshot(page, "admin-delivery-retried")
    failed.refresh_from_db()
    assert failed.status == Delivery.Status.PENDING
    assert not page.problems.page_errors
    assert not page.problems.csp_violations(page)
