"""The HTML part of Pagewatch's e-mails as a phone's mail app shows it: real
Chromium, a window 375 pixels wide. A long monitor name, a long page address
or a long line of a diff wraps; none widens the message past the screen."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import transaction

from checks.models import Delivery
from checks.notify import emails, messages
from checks.notify.kinds import kind_for, team_email
from monitors.models import Channel, Membership
from tests.notifying import judged, make_monitor, markdown_diff

pytest_plugins = ["tests.notifying"]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 375, "height": 800}
NAME = "Prices of " + "Supercalifragilistic" * 12  # 250: a name can have 256
ADDRESS = "https://example.com/" + "a-long-path-without-a-break" * 8 + "?q=" + "x" * 150


def width_shown(chromium: Any, html: str, screenshot: Any, name: str) -> int:
    page = chromium.new_page(viewport=PHONE)
    page.set_content(html)
    screenshot(page, name)
    width = page.evaluate("document.documentElement.scrollWidth")
    page.close()
    return width


def long_change(team: Any, scenario: Any, monitor: Any) -> Any:
    pages = [
        (
            ADDRESS,
            "changed",
            {"judgment": judged(True), "diff": markdown_diff("$19" + "9" * 300)},
        ),
        ("https://example.com/n", "new"),
    ]
    with transaction.atomic():
        return scenario.run(monitor, pages)


@pytest.fixture
def mia(team: Any, django_user_model: Any) -> Any:
    user = django_user_model.objects.create_user("mia", "mia@acme.test")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


def test_a_change_e_mail_fits_a_phone_screen_however_long_its_words(
    chromium, team, mia, scenario, screenshot
):
    settings = {"enabled": True, "recipients": [mia.email], "includeDiffs": True}
    monitor = make_monitor(team, email=settings, name=NAME, goal="prices")
    long_change(team, scenario, monitor)

    [(html, _)] = emails.build(Delivery.objects.emails().get()).alternatives

    assert width_shown(chromium, html, screenshot, "email-change-375") <= 375


def test_a_team_e_mail_fits_a_phone_screen_however_long_its_words(
    chromium, team, mia, scenario, screenshot
):
    monitor = make_monitor(team, name=NAME, goal="prices")
    channel = Channel.objects.create(
        team=team,
        name="Pricing people",
        kind="team_email",
        settings=kind_for("team_email").clean_for(team, {"recipients": [mia.email]}),
    )
    check = long_change(team, scenario, monitor)
    message = messages.change(check, meaningful_only=False)
    assert message is not None

    html = team_email.build(channel, message, mia.email, (), uuid.uuid4()).alternatives[
        0
    ][0]

    assert width_shown(chromium, html, screenshot, "email-team-375") <= 375
