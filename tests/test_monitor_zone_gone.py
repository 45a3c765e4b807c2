"""A monitor whose time zone the tz database dropped (US/Pacific-New went in
2020, and any name after an upgrade of the server's tzdata): it keeps running
on UTC, and the dashboard, the API and the edit form say so."""

from __future__ import annotations

import html
import logging
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from checks.dispatch import dispatch_due_monitors
from checks.models import Check
from monitors.models import Membership, Monitor, Target

pytestmark = pytest.mark.django_db

SLOT = datetime(2026, 5, 6, 12, 0, tzinfo=UTC)
GONE = "US/Pacific-New"
SAID = (
    "Its time zone US/Pacific-New no longer exists; it runs on UTC until you "
    "pick another."
)


@pytest.fixture
def monitor(team) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="0 * * * *", next_run_at=SLOT
    )
    Target.objects.create(
        monitor=monitor, type="scrape", urls=["https://example.com/a"]
    )
    # Saved while the zone existed: written to the row, as no form takes it now.
    Monitor.objects.filter(pk=monitor.pk).update(schedule_timezone=GONE)
    monitor.refresh_from_db()
    return monitor


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("ana", "ana@acme.test", "pw-x")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def text_of(response) -> str:
    return " ".join(html.unescape(response.content.decode()).split())


def test_a_monitor_whose_zone_went_away_runs_on_utc_without_an_error_each_tick(
    monitor, caplog
):
    with caplog.at_level(logging.WARNING):
        created = dispatch_due_monitors(SLOT + timedelta(seconds=31))
        dispatch_due_monitors(SLOT + timedelta(seconds=41))

    assert created == 1
    assert Check.objects.get().scheduled_for == SLOT
    monitor.refresh_from_db()
    assert monitor.next_run_at == SLOT + timedelta(hours=1)
    assert monitor.schedule_timezone == GONE  # kept until someone picks another
    assert [r.getMessage() for r in caplog.records] == []


def test_its_page_and_its_row_in_the_list_say_it_runs_on_utc(web, monitor):
    with time_machine.travel(SLOT, tick=False):
        page = web.get(reverse("monitor-detail", kwargs={"pk": monitor.pk}))
        listing = web.get(reverse("monitor-list"))

    assert page.status_code == 200
    assert SAID in text_of(page)
    assert "(Wed 06 May 2026, 12:00 UTC)" in text_of(page)  # the clock it runs on
    assert listing.status_code == 200
    assert SAID in text_of(listing)


def test_the_api_warning_says_it_runs_on_utc(api, monitor):
    body = api.get(f"/v2/monitor/{monitor.pk}").json()

    assert GONE in body["data"]["warning"]
    assert "UTC" in body["data"]["warning"]


def test_the_edit_form_marks_the_zone_field_with_the_problem(web, monitor):
    page = web.get(reverse("monitor-edit", kwargs={"pk": monitor.pk}))

    assert page.status_code == 200
    zone_field = re.search(r'<input[^>]*id="id_timezone"[^>]*>', page.content.decode())
    assert zone_field is not None
    assert 'aria-invalid="true"' in zone_field.group()
    assert f'value="{GONE}"' in zone_field.group()  # shown as saved, to be changed
    errors = re.search(r'<div id="err-schedule"[^>]*>.*?</div>', text_of(page))
    assert errors is not None
    assert 'data-controls="id_timezone"' in errors.group()
    assert SAID in errors.group()
