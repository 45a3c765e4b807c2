"""Every `next=` the dashboard follows after an action (signing in, the
second factor, single sign-on, pausing from another page) leads only to a
page of this site: an address elsewhere, in any of the spellings browsers
read as elsewhere, sends the person to the start page instead."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone
from mozilla_django_oidc.views import get_next_url

from tests.test_dashboard_views import make_monitor
from tests.test_second_factor import ana, code_for, sign_in, turn_on  # noqa: F401

pytestmark = pytest.mark.django_db

ELSEWHERE = [
    "https://evil.example/",
    "//evil.example/",
    "///evil.example/",
    "/\\evil.example/",
    "\\\\evil.example/",
    "https:evil.example",
    "javascript:alert(1)",
    " https://evil.example/",
    "http://testserver@evil.example/",
]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def stays_here(location: str) -> bool:
    return (
        location.startswith("/")
        and not location.startswith("//")
        and "\\" not in location
        and "evil.example" not in location
    )


@pytest.mark.parametrize("wanted", ELSEWHERE)
def test_signing_in_never_leads_off_the_site(client, ana, wanted):  # noqa: F811
    response = client.post(
        reverse("login") + "?next=" + wanted.replace("&", "%26"),
        {"username": "ana", "password": "correct-horse-battery-staple"},
    )
    assert response.status_code == 302
    assert stays_here(response["Location"]), response["Location"]
    response = client.post(
        reverse("login"),
        {
            "username": "ana",
            "password": "correct-horse-battery-staple",
            "next": wanted,
        },
    )
    assert stays_here(response["Location"]), response["Location"]


def test_the_second_factor_never_leads_off_the_site(client, ana):  # noqa: F811
    sign_in(client)
    device, _ = turn_on(client)
    moment = timezone.now()
    for wanted in ELSEWHERE:
        client.post(reverse("logout"))
        sign_in(client)
        moment += timedelta(seconds=60)  # a code works once: the next one
        with time_machine.travel(moment):
            response = client.post(
                reverse("two-factor-verify"),
                {"code": code_for(device), "next": wanted},
            )
        assert response.status_code == 302, wanted
        assert response["Location"] == "/", wanted


@pytest.mark.parametrize("wanted", ELSEWHERE)
def test_single_sign_on_keeps_no_address_elsewhere_to_come_back_to(wanted):
    request = RequestFactory().get("/accounts/sso/", {"next": wanted})
    assert get_next_url(request, "next") is None


@pytest.mark.parametrize("wanted", ELSEWHERE)
def test_pausing_from_another_page_never_leads_off_the_site(
    client,
    ana,  # noqa: F811
    team,
    wanted,
):
    monitor = make_monitor(team)
    client.force_login(ana)
    response = client.post(
        reverse("monitor-toggle", args=[monitor.pk]),
        {"status": "paused", "next": wanted},
    )
    assert response.status_code == 302
    assert stays_here(response["Location"]), response["Location"]


def test_over_https_the_second_factor_never_leads_to_plain_http(client, ana):  # noqa: F811
    # As the sign-in page refuses it: the page after would load without TLS.
    sign_in(client)
    device, _ = turn_on(client)
    client.post(reverse("logout"))
    sign_in(client)
    with time_machine.travel(timezone.now() + timedelta(seconds=60)):
        response = client.post(
            reverse("two-factor-verify"),
            {"code": code_for(device), "next": "http://testserver/history/"},
            secure=True,
        )
    assert response.status_code == 302
    assert response["Location"] == "/"
