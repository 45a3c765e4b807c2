"""Single sign-on in real Chromium against a real OpenID Connect provider
(oidc-provider-mock) on this machine: real redirects to the provider and
back, accounts made or linked by verified e-mail, teams and roles from a
claim, and password sign-in turned off."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from oidc_provider_mock import User, run_server_in_thread

from monitors.models import Membership
from teams import sso
from teams.models import Activity

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PEOPLE = [
    User(sub="sam", claims={"email": "sam@acme.test", "email_verified": True,
                            "given_name": "Sam", "groups": ["acme:editor"]}),
    User(sub="olive", claims={"email": "olive@example.com", "email_verified": True}),
    User(sub="mallory", claims={"email": "olive@example.com",
                                "email_verified": False}),
]  # fmt: skip


@pytest.fixture
def provider(settings) -> Iterator[str]:
    with run_server_in_thread(user_claims=PEOPLE) as server:
        issuer = f"http://localhost:{server.server_port}"
        settings.OIDC_ISSUER = issuer
        settings.OIDC_CLIENT_ID = "pagewatch"
        settings.OIDC_CLIENT_SECRET = "a-secret-the-provider-accepts"
        settings.OIDC_PROVIDER_NAME = "Acme ID"
        settings.OIDC_TEAMS_CLAIM = "groups"
        settings.PASSWORD_SIGNIN = False
        settings.AUTHENTICATION_BACKENDS = [
            *settings.AUTHENTICATION_BACKENDS,
            "teams.sso.Backend",
        ]
        sso._discovery.cache_clear()
        yield issuer
        sso._discovery.cache_clear()


def sign_in_as(page: Any, who: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.get_by_role("button", name=f"Authorize as {who}").click()


def test_a_new_person_signs_in_through_the_provider_and_joins_by_claim(
    chromium, browser_page, provider, team, member, screenshot
):
    page = browser_page
    page.goto("/accounts/login/")
    assert page.get_by_label("Password").count() == 0  # passwords are off
    screenshot(page, "sso-sign-in-page")
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.wait_for_url(re.compile(r"localhost:\d+/oauth2/authorize"))
    screenshot(page, "sso-provider")
    page.get_by_role("button", name="Authorize as sam").click()
    page.wait_for_url(re.compile(r"/$"))
    page.get_by_role("heading", name="Monitors").wait_for()
    screenshot(page, "sso-signed-in")

    sam = get_user_model().objects.get(email="sam@acme.test")
    assert sam.first_name == "Sam" and not sam.has_usable_password()
    assert Membership.objects.get(user=sam, team=team).role == "editor"
    assert Activity.objects.filter(user=sam, kind=Activity.Kind.SIGNED_IN).exists()
    assert page.get_by_role("link", name="New monitor").is_visible()  # an editor


def test_an_existing_account_is_linked_by_verified_email_only(
    chromium, browser_page, provider, team, member, screenshot
):
    page = browser_page
    sign_in_as(page, "mallory")  # claims olive's address, unverified
    page.wait_for_url(re.compile(r"/accounts/login/\?sso=failed"))
    page.get_by_text("Acme ID did not sign you in.").wait_for()
    screenshot(page, "sso-unverified-refused")
    assert get_user_model().objects.count() == 1

    sign_in_as(page, "olive")
    page.wait_for_url(re.compile(r"/$"))
    assert get_user_model().objects.count() == 1  # linked, not a second olive
    page.get_by_role("link", name="Team").click()
    assert page.get_by_text("You are an owner in this team.").is_visible()
