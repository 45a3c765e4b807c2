"""A page that is only a <meta http-equiv="refresh"> is followed like an HTTP
redirect (checks.fetch.refresh): same limit, same address policy, the page it
leads to recorded, the final URL reported. Real checks of 127.0.0.1 pages."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from checks.errors import plain_error
from checks.fetch import afetch
from checks.fetch.refresh import refresh_location
from checks.models import PageResult
from tests.sites import Site
from tests.test_runner import make_monitor, page_of, run_check

pytestmark = pytest.mark.django_db

CONTENT = "<h1>Plans</h1><p>Starter costs $19 a month.</p>"


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def refresh_page(site: Site, path: str, to: str, delay: str = "0", text: str = ""):
    return site.page(
        path,
        "<!doctype html><html><head><title>Moved</title>"
        f'<meta http-equiv="refresh" content="{delay}; url={to}"></head>'
        f"<body><p>Redirecting… {text}</p></body></html>",
    )


def test_a_refresh_only_page_is_recorded_as_the_page_it_leads_to(team, site):
    old = refresh_page(site, "/old-pricing", "/pricing")
    new = site.html("/pricing", "Pricing", CONTENT)

    check = run_check(make_monitor(team, [old]))

    page = page_of(check, old)
    assert page.status == PageResult.Status.NEW, page.error
    assert "Starter costs $19 a month." in page.current_snapshot.text
    assert "Redirecting" not in page.current_snapshot.text
    assert page.metadata["sourceURL"] == old
    assert page.metadata["url"] == new  # as an HTTP redirect's final URL is
    assert page.metadata["title"] == "Pricing"
    assert len(site.requests_to("/pricing")) == 1


def test_a_refresh_counts_in_the_same_redirect_limit_as_http_redirects(team, site):
    # Three HTTP redirects, then refreshes: five hops in all reach the page.
    site.redirect("/r1", "/r2")
    site.redirect("/r2", "/r3")
    site.redirect("/r3", "/m1")
    refresh_page(site, "/m1", "/m2")
    refresh_page(site, "/m2", "/pricing")
    site.html("/pricing", "Pricing", CONTENT)
    refresh_page(site, "/m0", "/r1")  # one hop more: six

    check = run_check(make_monitor(team, [site.url("/r1"), site.url("/m0")]))

    assert page_of(check, site.url("/r1")).status == PageResult.Status.NEW
    too_far = page_of(check, site.url("/m0"))
    assert too_far.error_kind == "too_many_redirects"
    assert site.requests_to("/pricing") and len(site.requests_to("/m1")) == 2


def test_a_refresh_loop_stops_at_the_limit_with_a_plain_error(team, site):
    loop = refresh_page(site, "/a", "/b")
    refresh_page(site, "/b", "/a")

    check = run_check(make_monitor(team, [loop]))

    page = page_of(check, loop)
    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "too_many_redirects"
    assert page.error == "Stopped after 5 redirects"
    words = plain_error(page.error_kind, page.status_code, page.error)
    assert words == (
        "The page kept redirecting to other addresses. (Stopped after 5 redirects)"
    )
    assert len(site.requests) == 6  # the page and five hops, then no more


def test_a_refresh_to_the_metadata_address_is_refused_as_a_redirect_is(team, site):
    metadata = "http://169.254.169.254/latest/meta-data/"
    refreshing = refresh_page(site, "/refresh", metadata)
    redirecting = site.redirect("/redirect", metadata)

    check = run_check(make_monitor(team, [refreshing, redirecting]))

    by_refresh, by_redirect = page_of(check, refreshing), page_of(check, redirecting)
    assert by_refresh.status == PageResult.Status.ERROR
    assert by_refresh.error_kind == "blocked_address"
    assert (by_refresh.error_kind, by_refresh.error) == (
        by_redirect.error_kind,
        by_redirect.error,
    )
    assert "cloud metadata address" in by_refresh.error


def test_a_page_with_text_of_its_own_or_a_slow_refresh_is_kept(team, site):
    words = "A full article about our prices, reloaded every so often. " * 5
    wordy = refresh_page(site, "/news", "/pricing", text=words)
    slow = refresh_page(site, "/slow", "/pricing", delay="30")
    site.html("/pricing", "Pricing", CONTENT)

    check = run_check(make_monitor(team, [wordy, slow]))

    assert "A full article" in page_of(check, wordy).current_snapshot.text
    assert page_of(check, wordy).metadata["url"] == wordy
    assert page_of(check, slow).metadata["url"] == slow
    assert site.requests_to("/pricing") == []


def test_a_page_that_reloads_itself_or_leaves_the_web_is_kept(team, site):
    reloading = refresh_page(site, "/status", "/status#top", delay="5")
    scripted = refresh_page(site, "/js", "javascript:alert(1)")

    check = run_check(make_monitor(team, [reloading, scripted]))

    for url in (reloading, scripted):
        page = page_of(check, url)
        assert page.status == PageResult.Status.NEW, page.error
        assert page.metadata["url"] == url
        assert "Redirecting" in page.current_snapshot.text
    assert len(site.requests_to("/status")) == 1


def test_other_outbound_requests_do_not_follow_a_refresh(site):
    # Webhooks, the judge, robots.txt and sitemaps read answers, not pages.
    old = refresh_page(site, "/old", "/new")
    site.html("/new", "New", CONTENT)

    fetched = asyncio.run(afetch(old))

    assert fetched.final_url == old and site.requests_to("/new") == []


def test_a_refresh_header_on_an_empty_page_is_followed_like_the_tag(team, site):
    old = site.page("/go", "", headers={"Refresh": "0; url=/pricing"})
    new = site.html("/pricing", "Pricing", CONTENT)

    check = run_check(make_monitor(team, [old]))

    page = page_of(check, old)
    assert page.status == PageResult.Status.NEW, page.error
    assert "Starter costs $19 a month." in page.current_snapshot.text
    assert page.metadata["url"] == new


def test_a_refresh_header_on_a_page_with_text_of_its_own_keeps_the_page(team, site):
    article = "<p>" + "Our prices went up this spring. " * 20 + "</p>"
    old = site.html("/news", "News", article, headers={"Refresh": "5; url=/pricing"})
    site.html("/pricing", "Pricing", CONTENT)

    check = run_check(make_monitor(team, [old]))

    page = page_of(check, old)
    assert "Our prices went up" in page.current_snapshot.text
    assert not site.requests_to("/pricing")


def _only(tag: str) -> bytes:
    return f"<!doctype html><html><head>{tag}</head><body>Moved</body></html>".encode()


@pytest.mark.parametrize(
    "tag",
    [
        '<META HTTP-EQUIV="Refresh" CONTENT="0; URL=/pricing">',
        "<meta Http-Equiv = ' REFRESH ' content='0;url=/pricing'>",
        '<meta http-equiv=refresh content="0,/pricing">',
    ],
)
def test_the_tag_is_found_in_any_case_and_spacing(tag):
    page = httpx.URL("https://example.com/old")
    headers = httpx.Headers({"content-type": "text/html"})

    assert refresh_location(page, 200, headers, _only(tag)) == "/pricing"


def test_an_attribute_that_only_ends_in_equiv_is_no_refresh():
    page = httpx.URL("https://example.com/old")
    headers = httpx.Headers({"content-type": "text/html"})
    tag = '<meta data-equiv="refresh" content="0; url=/pricing">'

    assert refresh_location(page, 200, headers, _only(tag)) is None
