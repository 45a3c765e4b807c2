"""Where the browser's navigation goes, as a plain fetch would go: a crawl
page opened in real Chromium stops at a redirect out of the crawl without
loading it, and a page whose header names the wrong charset is read as the
plain path reads it.

Without Chromium these tests skip with a notice (CI=true: they fail)."""

from __future__ import annotations

import os

import pytest

from checks.models import Check
from monitors.models import Monitor, Target
from tests.sites import Site
from tests.test_browser_pages import CHROMIUM, from_browser
from tests.test_browser_safety import public_site
from tests.test_crawl import crawl_monitor, nav, paths, run_check

pytestmark = [pytest.mark.browser, pytest.mark.django_db]

__all__ = ["public_site"]  # a fixture


@pytest.fixture(autouse=True)
def chromium_present(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: install Debian's chromium to run browser tests"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    pytest.skip(reason)


def set_fetch_with(monitor: Monitor, how: str) -> Monitor:
    Monitor.objects.filter(pk=monitor.pk).update(fetch_with=how)
    return monitor


def statuses(check: Check) -> dict[str, str]:
    return {p.url.split("/", 3)[3]: p.status for p in check.pages.all()}


# --- Redirects out of a crawl ---------------------------------------------------------


@pytest.mark.parametrize("how", ["http", "browser"])
def test_a_crawl_page_that_redirects_out_of_the_crawl_is_not_loaded(team, site, how):
    with Site() as other:
        other.html("/x", "Elsewhere", "<p>another site</p>")
        site.html("/", "Home", nav("/away", "/private/", "/b"))
        site.redirect("/away", other.url("/x"))
        site.redirect("/private/", "/admin/")
        site.html("/admin/", "Admin", "<p>robots.txt keeps this out</p>")
        site.html("/b", "B", "<p>b</p>")
        site.page("/robots.txt", "User-agent: *\nDisallow: /admin/\n")
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
        set_fetch_with(monitor, how)

        check = run_check(monitor)

        assert other.requests == []
    assert site.requests_to("/admin/") == []
    assert [from_browser(r) for r in site.requests_to("/away")] == [how == "browser"]
    assert statuses(check) == {"": "new", "b": "new"}
    assert check.status == Check.Status.COMPLETED
    assert check.pages_total == check.pages_done == 2


@pytest.mark.parametrize("how", ["http", "browser"])
def test_a_crawl_link_that_redirects_in_a_loop_is_not_a_page(team, site, how):
    site.html("/", "Home", nav("/a", "/b"))
    site.redirect("/a", "/a2")
    site.redirect("/a2", "/a")
    site.html("/b", "B", "<p>b</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    set_fetch_with(monitor, how)

    check = run_check(monitor)

    assert statuses(check) == {"": "new", "b": "new"}
    # Five redirects followed, as a plain fetch follows, then given up.
    assert len(site.requests_to("/a")) + len(site.requests_to("/a2")) == 6


def test_a_crawl_page_in_the_browser_that_now_redirects_away_is_removed_once(
    team, site
):
    with Site() as other:
        other.html("/", "Elsewhere", "<p>another site</p>")
        site.html("/", "Home", nav("/old"))
        site.html("/old", "Old", "<p>old</p>")
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
        set_fetch_with(monitor, "browser")
        run_check(monitor)
        site.redirect("/old", other.url("/"), 301)

        moved, later = run_check(monitor), run_check(monitor)

        assert other.requests == []
    assert statuses(moved) == {"": "same", "old": "removed"}
    assert moved.pages.get(url=site.url("/old")).metadata["title"] == "Old"
    assert statuses(later) == {"": "same"}


def test_a_crawl_page_in_the_browser_follows_redirects_within_the_crawl(team, site):
    site.html("/", "Home", nav("/old"))
    site.redirect("/old", "/middle", 301)
    site.redirect("/middle", "/new")
    site.html("/new", "New", "<p>new</p>" + nav("/"))
    monitor = set_fetch_with(
        crawl_monitor(team, site.url("/"), sitemap="skip"), "browser"
    )

    check = run_check(monitor)

    assert statuses(check) == {"": "new", "new": "new"}
    assert [from_browser(r) for r in site.requests_to("/middle")] == [True]
    assert all(from_browser(r) for r in site.requests_to("/new"))


def test_a_crawl_page_in_the_browser_refreshing_out_of_the_crawl_is_not_loaded(
    team, site
):
    with Site() as other:
        other.html("/", "Elsewhere", "<p>another site</p>")
        refresh = f'<meta http-equiv="refresh" content="0; url={other.url("/")}">'
        site.html("/", "Home", nav("/moved", "/b"))
        site.page("/moved", f"<html><head>{refresh}</head><body></body></html>")
        site.html("/b", "B", "<p>b</p>")
        monitor = set_fetch_with(
            crawl_monitor(team, site.url("/"), sitemap="skip"), "browser"
        )

        check = run_check(monitor)

        assert other.requests == []
    assert paths(check) == {"", "b"}
    assert check.status == Check.Status.COMPLETED


def test_a_browser_crawl_pages_hops_carry_its_cookies_and_the_monitors_headers(
    team, site
):
    site.html("/", "Home", nav("/old"))
    site.handle(
        "/old", lambda request: (302, {"Location": "/new", "Set-Cookie": "seen=1"}, b"")
    )
    site.html("/new", "New", "<p>new</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    set_fetch_with(monitor, "browser")
    Target.objects.filter(monitor=monitor).update(
        scrape_options={"headers": {"X-Token": "secret"}}
    )

    check = run_check(monitor)

    assert statuses(check) == {"": "new", "new": "new"}
    [old] = site.requests_to("/old")
    assert old.header("X-Token") == "secret" and from_browser(old)
    # The hop, then /new as a page of its own (a fresh browser context).
    hop, page = site.requests_to("/new")
    assert hop.header("X-Token") == "secret" and from_browser(hop)
    assert hop.header("Cookie") == "seen=1" and page.header("Cookie") is None
    assert check.pages.get(url=site.url("/new")).metadata["url"] == site.url("/new")


def test_a_browser_crawl_page_past_the_byte_allowance_is_too_large(
    team, site, settings
):
    settings.BROWSER_MAX_BYTES = 50_000
    site.html("/", "Home", nav("/big"))
    site.html("/big", "Big", "<p>" + "x" * 200_000 + "</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    set_fetch_with(monitor, "browser")

    check = run_check(monitor)

    big = check.pages.get(url=site.url("/big"))
    assert big.status == "error" and big.error_kind == "too_large"


def test_a_browser_crawl_pages_hop_to_a_private_address_is_refused_by_the_proxy(
    team, public_site
):
    site = public_site
    start = f"http://site.test:{site.port}/"
    intranet = f"http://intranet.site.test:{site.port}/admin"
    site.html("/", "Home", nav("/jump"))
    site.redirect("/jump", intranet)
    site.html("/admin", "Admin", "<p>the intranet's admin</p>")
    local = {"site.test": ["127.0.0.1"], "intranet.site.test": ["10.0.0.5"]}

    def resolver(host: str, port: int) -> list[str]:
        return local[host]

    monitor = crawl_monitor(team, start, sitemap="skip", allowSubdomains=True)
    set_fetch_with(monitor, "browser")

    check = run_check(monitor, resolver=resolver)

    jump = check.pages.get(url=site.url("/jump").replace("127.0.0.1", "site.test"))
    assert (jump.status, jump.error_kind) == ("error", "blocked_address")
    assert jump.error == (
        "Blocked: 10.0.0.5 is a private address (intranet.site.test resolves to it)"
    )
    assert [from_browser(r) for r in site.requests_to("/jump")] == [True]
    assert site.requests_to("/admin") == []
