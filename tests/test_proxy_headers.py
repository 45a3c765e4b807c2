"""Behind a TLS-terminating proxy: X-Forwarded-Proto and -Host are believed
only when the operator says so (TRUST_PROXY_HEADERS, which sets the two
settings below), and links in e-mails never come from a request's host."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from monitors.models import Membership
from tests.browser.people import PASSWORD
from tests.resets import worker_sends

pytestmark = pytest.mark.django_db

FROM_THE_PROXY = {
    "HTTP_HOST": "10.0.0.5:8000",
    "HTTP_X_FORWARDED_HOST": "watch.example",
    "HTTP_X_FORWARDED_PROTO": "https",
}


@pytest.fixture
def trusted_proxy(settings) -> None:
    """What TRUST_PROXY_HEADERS=true sets (config.settings)."""
    settings.USE_X_FORWARDED_HOST = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["watch.example", "10.0.0.5"]
    settings.SECURE_HSTS_SECONDS = 31536000


@pytest.fixture
def olive(team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


def test_a_trusted_proxy_s_https_makes_requests_secure_and_sends_hsts(trusted_proxy):
    response = Client().get(reverse("login"), **FROM_THE_PROXY)
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000"


def test_forwarded_headers_are_not_believed_unless_trusted(settings):
    settings.ALLOWED_HOSTS = ["10.0.0.5"]
    settings.SECURE_HSTS_SECONDS = 31536000
    response = Client().get(reverse("login"), **FROM_THE_PROXY)
    assert response.status_code == 200
    assert "Strict-Transport-Security" not in response


def test_a_form_posted_over_the_proxy_s_https_passes_the_origin_check(
    trusted_proxy, olive
):
    browser = Client(enforce_csrf_checks=True)
    browser.get(reverse("login"), **FROM_THE_PROXY)
    response = browser.post(
        reverse("login"),
        {
            "username": "olive",
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"].value,
        },
        HTTP_ORIGIN="https://watch.example",
        **FROM_THE_PROXY,
    )
    assert response.status_code == 302
    assert response.wsgi_request.user == olive


def test_a_form_posted_from_another_origin_is_refused(trusted_proxy, olive):
    browser = Client(enforce_csrf_checks=True)
    browser.get(reverse("login"), **FROM_THE_PROXY)
    response = browser.post(
        reverse("login"),
        {
            "username": "olive",
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"].value,
        },
        HTTP_ORIGIN="https://evil.example",
        **FROM_THE_PROXY,
    )
    assert response.status_code == 403
    assert not response.wsgi_request.user.is_authenticated


@pytest.mark.parametrize("trusted", [True, False])
def test_a_forged_host_never_reaches_a_password_reset_link(
    settings, olive, queued_resets, mailoutbox, trusted
):
    settings.PUBLIC_BASE_URL = "https://watch.example"
    # An operator who allowed any host, and a client that names its own.
    settings.ALLOWED_HOSTS = ["*"]
    settings.USE_X_FORWARDED_HOST = trusted
    Client().post(
        reverse("password_reset"),
        {"email": "olive@acme.test"},
        HTTP_HOST="evil.example",
        HTTP_X_FORWARDED_HOST="evil.example",
    )
    [message] = worker_sends(queued_resets)
    links = re.findall(r"https?://\S+", message.body)
    assert links and all(link.startswith("https://watch.example/") for link in links)
    assert "evil.example" not in message.body
