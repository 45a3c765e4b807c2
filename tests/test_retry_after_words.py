"""A site that answers 429 or 503 with Retry-After has said when it will
answer again: the page's error says so, in plain words and in the API."""

from __future__ import annotations

import html
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from django.contrib.auth import get_user_model

from checks.errors import ErrorKind, http_error_text, parse_retry_after, plain_error
from monitors.models import Membership
from tests.test_runner import make_monitor, page_of, run_check

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("code", "retry_after", "stored", "shown"),
    [
        (429, "120", "The page answered HTTP 429 and asked us to wait 2 minutes.",
         "The site said we asked too often (HTTP 429). It asked us to wait"
         " 2 minutes before asking again."),
        (503, format_datetime(NOW + timedelta(hours=3)),
         "The page answered HTTP 503 and asked us to wait 3 hours.",
         "The site had an internal problem (HTTP 503). It asked us to wait"
         " 3 hours before asking again."),
        (429, "1", "The page answered HTTP 429 and asked us to wait 1 second.",
         "The site said we asked too often (HTTP 429). It asked us to wait"
         " 1 second before asking again."),
        (429, "soon", "The page answered HTTP 429.",
         "The site said we asked too often (HTTP 429)."),
        (404, "120", "The page answered HTTP 404.",
         "The page was not found (HTTP 404)."),
    ],
)  # fmt: skip
def test_the_wait_a_site_asks_for_is_kept_and_said_in_words(
    code, retry_after, stored, shown
):
    text = http_error_text(code, retry_after, NOW)
    kind = ErrorKind.HTTP_5XX if code >= 500 else ErrorKind.HTTP_4XX

    assert text == stored
    assert plain_error(kind, code, text) == shown


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def test_a_check_of_a_page_answering_429_says_how_long_the_site_asked_to_wait(
    client, team, site
):
    url = site.page("/busy", "Slow down", status=429, headers={"Retry-After": "3600"})
    monitor = make_monitor(team, [url])

    check = run_check(monitor)

    page = page_of(check, url)
    assert page.error == "The page answered HTTP 429 and asked us to wait 1 hour."
    user = get_user_model().objects.create_user("ann", password="pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
    client.force_login(user)
    shown = html.unescape(client.get(check.get_absolute_url()).content.decode())
    assert "It asked us to wait 1 hour before asking again." in shown


@pytest.mark.parametrize(
    ("retry_after", "stored"),
    [
        ("99999999999999999999",
         "The page answered HTTP 503 and asked us to wait 365 days."),
        ("300000000000", "The page answered HTTP 503 and asked us to wait 365 days."),
        ("9" * 5000, "The page answered HTTP 503 and asked us to wait 365 days."),
        ("Fri, 31 Dec 9999 23:59:59 GMT",
         "The page answered HTTP 503 and asked us to wait 365 days."),
        ("²", "The page answered HTTP 503."),
        ("١٢٠", "The page answered HTTP 503."),
    ],
)  # fmt: skip
def test_a_wait_too_long_to_count_or_not_in_ascii_digits_is_no_internal_error(
    retry_after, stored
):
    # A site (or a webhook's receiver) chooses this header: a number past
    # what a timedelta holds, or one `now + wait` cannot reach, raised
    # OverflowError, and "²" (a digit to str.isdigit) a ValueError, so the
    # page became "an internal error" and the delivery failed the same way.
    assert http_error_text(503, retry_after, NOW) == stored
    wait = parse_retry_after(retry_after, NOW)
    assert wait is None or NOW + wait <= NOW + timedelta(days=365)
