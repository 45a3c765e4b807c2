"""What a screen reader, a keyboard or a touch screen gets of the dashboard
beyond what a mouse hovers: every time counted from now ("3 hours ago") also
says its full time, in the zone of the page (the monitor's, else the team's);
a refused form's page says "Error:" in its title; each "see the check" link of
the Notifications page says which message it is about."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from checks.models import Check, Delivery, DeliveryAttempt
from monitors.models import ApiKey, Membership
from tests.notifying import make_monitor, webhook_config

pytestmark = pytest.mark.django_db

# Monday 2 March 2026, 12:00 UTC: 21:00 in Tokyo, 13:00 in Berlin.
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
TIME = re.compile(r"<time [^>]*>(.*?)</time>", re.S)
HIDDEN = re.compile(r'<span class="visually-hidden">(.*?)</span>', re.S)


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("ana", "ana@acme.test", "pw-x")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


def page_of(client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status
    return response.content.decode()


def times_said(page: str) -> list[str]:
    """What a screen reader reads of each <time>: its words, hidden ones too."""
    return [
        " ".join(html.unescape(re.sub(r"<[^>]+>", "", inner)).split())
        for inner in TIME.findall(page)
    ]


def title_of(page: str) -> str:
    return html.unescape(re.search(r"<title>(.*?)</title>", page, re.S)[1])


@pytest.fixture
def deliveries(team, clock):
    monitor = make_monitor(team, webhook=webhook_config("https://hooks.example/x"))
    monitor.schedule_timezone = "Asia/Tokyo"
    monitor.save(update_fields=["schedule_timezone"])
    check = Check.objects.create(
        monitor=monitor, trigger="manual", status="completed", started_at=NOW
    )
    made = []
    for hours, event in ((3, "monitor.page"), (2, "monitor.check.completed")):
        delivery = Delivery.objects.create(
            kind=Delivery.Kind.WEBHOOK,
            monitor=monitor,
            check_run=check,
            event=event,
            url="https://hooks.example/x",
            body="{}",
            attempts=1,
            status=Delivery.Status.PENDING,
            next_attempt_at=NOW + timedelta(minutes=5),
        )
        Delivery.objects.filter(pk=delivery.pk).update(
            created_at=NOW - timedelta(hours=hours)
        )
        DeliveryAttempt.objects.create(
            delivery=delivery,
            number=1,
            started_at=NOW - timedelta(hours=hours),
            success=False,
            status_code=502,
            duration_ms=40,
        )
        made.append(delivery)
    return monitor, check


def test_every_time_of_the_notifications_says_its_full_time_in_the_monitors_zone(
    client, owner, deliveries
):
    monitor, _ = deliveries
    client.force_login(owner)

    page = page_of(client, reverse("monitor-deliveries", args=[monitor.pk]))

    said = times_said(page)
    # Newest first: created, next try and the one attempt of each message.
    assert "next try" in page
    assert "in 5 minutes (Mon 02 Mar 2026, 21:05 JST)" in said
    assert "2 hours ago (Mon 02 Mar 2026, 19:00 JST)" in said
    assert "3 hours ago (Mon 02 Mar 2026, 18:00 JST)" in said
    assert len(said) == 6
    assert all(re.search(r"\(\w{3} \d\d \w{3} 2026, \d\d:\d\d JST\)$", s) for s in said)
    # Sighted users see the time as before: the full one is hidden and hovered.
    assert all(
        HIDDEN.search(inner) and "visually-hidden" in inner
        for inner in TIME.findall(page)
    )
    assert 'title="Mon 02 Mar 2026, 19:00 JST"' in page


def test_each_see_the_check_link_says_which_message_it_is_about(
    client, owner, deliveries
):
    monitor, check = deliveries
    client.force_login(owner)

    page = page_of(client, reverse("monitor-deliveries", args=[monitor.pk]))

    links = re.findall(
        rf'<a href="{re.escape(check.get_absolute_url())}">(.*?)</a>', page, re.S
    )
    names = [" ".join(html.unescape(re.sub(r"<[^>]+>", "", a)).split()) for a in links]
    hook = "to https://hooks.example/x"
    assert names == [
        f"see the check behind the “Check finished” message of 2 hours ago {hook}",
        f"see the check behind the “Each page's result” message of 3 hours ago {hook}",
    ]
    hidden = r'see the check<span class="visually-hidden">'
    assert all(re.match(hidden, link) for link in links)


def test_a_checks_start_says_its_full_time_in_the_monitors_zone(
    client, owner, deliveries
):
    _, check = deliveries
    client.force_login(owner)
    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        page = page_of(client, check.get_absolute_url())

    assert "2 hours ago (Mon 02 Mar 2026, 21:00 JST)" in times_said(page)


def test_a_revoked_keys_time_says_its_full_time_on_the_teams_clock(
    client, owner, team, clock
):
    team.time_zone = "Europe/Berlin"
    team.save(update_fields=["time_zone"])
    key, _ = ApiKey.issue(team, name="old")
    ApiKey.objects.filter(pk=key.pk).update(
        revoked_at=NOW - timedelta(days=2), created_at=NOW - timedelta(days=3)
    )
    client.force_login(owner)

    page = page_of(client, reverse("api-keys"))

    said = times_said(page)
    assert "2 days ago (Sat 28 Feb 2026, 13:00 CET)" in said
    assert "3 days ago (Fri 27 Feb 2026, 13:00 CET)" in said


def test_a_refused_form_says_error_first_in_the_pages_title(client, owner, team, clock):
    client.force_login(owner)
    assert title_of(page_of(client, reverse("team-members"))) == "Team · Pagewatch"

    refused = client.post(reverse("team-time-zone"), {"time_zone": "Berlin"})

    assert refused.status_code == 400
    assert title_of(refused.content.decode()) == "Error: Team · Pagewatch"


def test_a_refused_sign_in_and_a_refused_channel_say_error_in_their_title(
    client, owner, team
):
    failed = client.post(
        reverse("login"), {"username": "ana", "password": "not the password"}
    )
    assert title_of(failed.content.decode()) == "Error: Sign in · Pagewatch"
    assert title_of(page_of(client, reverse("login"))) == "Sign in · Pagewatch"

    client.force_login(owner)
    refused = client.post(reverse("channel-create"), {"kind": "apprise", "name": ""})
    assert refused.status_code == 400
    assert title_of(refused.content.decode()).startswith("Error: ")


def test_a_refused_import_says_error_in_its_title(client, owner, settings):
    settings.IMPORT_MAX_BYTES = 1024
    client.force_login(owner)
    assert title_of(page_of(client, "/import/")) == "Import monitors · Pagewatch"

    refused = client.post(
        "/import/",
        {"source": "csv", "file": SimpleUploadedFile("a.txt", b"x" * 200_000)},
    )

    assert refused.status_code == 413
    assert title_of(refused.content.decode()) == "Error: Import monitors · Pagewatch"
