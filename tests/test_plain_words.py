"""Words that do not contradict themselves: what the monitor page says of AI
judging, one message for a schedule that cannot be used, a plain answer for
something that is not an address, and the time zone a city name meant."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from monitors.schedule import ScheduleError, normalize_timezone, timezone_hint
from monitors.url_rule import url_syntax_error
from tests.test_history import make_monitor

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(client, team, django_user_model):
    from monitors.models import Membership

    user = django_user_model.objects.create_user("olive", "o@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def test_judging_asked_for_without_a_model_does_not_read_on(web, team, settings):
    settings.LLM_BASE_URL = ""
    monitor = make_monitor(
        team, goal="Tell me when the price changes", judge_enabled=True
    )

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())

    assert "no AI model is set up on this server" in page
    assert "<dd>On</dd>" not in page


def test_a_schedule_that_cannot_be_used_is_explained_once(web):
    response = web.post(
        reverse("monitor-create"),
        {"name": "Prices", "schedule": "every banana", "timezone": "UTC",
         "url": "https://example.com/"},
    )  # fmt: skip
    page = html.unescape(response.content.decode())

    assert "We could not read this schedule" in page
    assert "Not a schedule we can use yet." not in page


def test_words_instead_of_an_address_are_named_as_such():
    assert url_syntax_error("not a url") == (
        "“not a url” is not a web address: it should look like https://example.com/page."
    )
    assert "spaces" in (url_syntax_error("https://example.com/a b") or "")


def test_a_city_alone_suggests_its_time_zone():
    with pytest.raises(ScheduleError) as caught:
        normalize_timezone("Berlin")

    assert caught.value.values["hint"] == "did you mean Europe/Berlin? Otherwise "
    assert timezone_hint("new york") == "did you mean America/New_York? Otherwise "
    assert timezone_hint("Atlantis") == ""


def test_the_form_suggests_the_zone_a_city_meant(web):
    response = web.post(
        reverse("monitor-create"),
        {"name": "Prices", "schedule": "every 30 minutes", "timezone": "Berlin",
         "url": "https://example.com/"},
    )  # fmt: skip
    page = html.unescape(response.content.decode())

    assert "“Berlin” is not a time zone we know: did you mean Europe/Berlin?" in page
