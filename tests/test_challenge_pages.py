"""A bot-protection challenge page answered in place of the page is the site
blocking the check: an error that says so, never the page's new content."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth import get_user_model

from checks.content.challenge import is_challenge
from checks.errors import ErrorKind, plain_error
from checks.models import PageResult
from monitors.models import Membership
from tests.test_runner import make_monitor, page_of, run_check

CLOUDFLARE = (
    b"<!DOCTYPE html><html lang='en-US'><head><title>Just a moment...</title>"
    b"<meta http-equiv='refresh' content='360'></head><body>"
    b"<script src='/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1'>"
    b"</script></body></html>"
)
DATADOME = (
    b"<html><head><title>example.com</title></head><body>"
    b"<iframe src='https://geo.captcha-delivery.com/captcha/?initialCid=x'>"
    b"</iframe></body></html>"
)
AWS_WAF = (
    b"<!DOCTYPE html><html><head><title></title></head><body>"
    b"<script src='https://example.token.awswaf.com/challenge.js'></script>"
    b"<noscript>JavaScript is disabled</noscript></body></html>"
)
ARTICLE = (
    b"<html><head><title>Just a moment...</title></head><body><main><p>How we "
    b"moved our site behind Cloudflare's /cdn-cgi/challenge-platform/ and what "
    b"a captcha-delivery.com iframe is.</p></main></body></html>"
)


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"),
    [
        (403, {}, CLOUDFLARE, True),
        (503, {}, CLOUDFLARE, True),
        (403, {}, DATADOME, True),
        (403, {"cf-mitigated": "challenge"}, b"", True),
        (200, {"cf-mitigated": "challenge"}, b"", True),
        # AWS WAF's challenge (202) and captcha (405) interstitials.
        (202, {"x-amzn-waf-action": "challenge"}, AWS_WAF, True),
        (405, {"x-amzn-waf-action": "captcha"}, AWS_WAF, True),
        # A page about challenges, served normally, is a page.
        (200, {}, ARTICLE, False),
        (200, {}, CLOUDFLARE, False),
        # An error without a challenge's marks is an error of its own.
        (503, {}, b"<html><body>Down for maintenance</body></html>", False),
        (403, {"cf-mitigated": "block"}, b"Forbidden", False),
    ],
)
def test_a_challenge_is_told_by_its_header_or_a_refusals_known_marks(
    status, headers, body, expected
):
    assert is_challenge(status, headers, body) is expected


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def test_a_challenge_in_place_of_a_watched_page_is_blocked_and_keeps_the_baseline(
    client, team, site
):
    url = site.html("/pricing", "Pricing", "<p>Basic plan: 10 € a month.</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/pricing", CLOUDFLARE, status=503)

    check = run_check(monitor)

    page = page_of(check, url)
    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == ErrorKind.CHALLENGE
    assert "bot-protection challenge" in page.error
    site.html("/pricing", "Pricing", "<p>Basic plan: 10 € a month.</p>")
    assert page_of(run_check(monitor), url).status == PageResult.Status.SAME
    user = get_user_model().objects.create_user("ann", password="pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
    client.force_login(user)
    shown = html.unescape(client.get(check.get_absolute_url()).content.decode())
    assert plain_error(page.error_kind, 503, page.error) in shown
    assert "The site blocked the check" in shown


def test_an_aws_waf_challenge_answered_as_accepted_is_not_taken_for_the_page(
    team, site
):
    url = site.html("/pricing", "Pricing", "<p>Basic plan: 10 € a month.</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page(
        "/pricing", AWS_WAF, status=202, headers={"x-amzn-waf-action": "challenge"}
    )

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == ErrorKind.CHALLENGE
    site.html("/pricing", "Pricing", "<p>Basic plan: 10 € a month.</p>")
    assert page_of(run_check(monitor), url).status == PageResult.Status.SAME
