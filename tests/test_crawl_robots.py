"""robots.txt as RFC 9309 reads it, in real crawls of 127.0.0.1 sites: the
first 500 KiB of a large file, a byte-order mark, 4xx (allow all), 5xx and an
unreachable server (disallow all, and the crawl says why), redirects."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import reverse

from checks.crawl.discovery import ROBOTS_MAX_BYTES
from checks.fetch import transport
from checks.models import Check
from monitors.models import Membership
from tests.sites import Site, refused_url
from tests.test_crawl import (
    build_site,
    crawl_monitor,
    crawl_result,
    paths,
    run_check,
)

pytestmark = pytest.mark.django_db

ALL_PAGES = {"", "blog/", "blog/post-0", "docs/", "docs/a", "docs/b", "about"}
ALL_PAGES |= {"admin/", "admin/secret"}


@pytest.fixture(autouse=True)
def private_targets(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def robots(site: Site, text: str | bytes, **options: Any) -> None:
    site.page("/robots.txt", text, content_type="text/plain", **options)


def crawl(team, site: Site) -> Check:
    return run_check(crawl_monitor(team, site.url("/"), sitemap="skip"))


def words(body: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "o@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def last_check_cell(web) -> str:
    page = web.get(reverse("monitor-list")).content.decode()
    return re.search(r'data-label="Last check">(.*?)</td>', page, re.S)[1]


# --- What the file says ------------------------------------------------------------


def test_a_robots_txt_larger_than_the_cap_is_obeyed_in_its_first_500_kib(team, site):
    build_site(site, posts=1)
    padding = "# nothing to see here, only a very long comment line\n"
    head = "User-agent: *\nDisallow: /admin/\n"
    tail = "Disallow: /about\n"  # past the first 512 KiB: not read
    body = head + padding * (ROBOTS_MAX_BYTES // len(padding) + 100) + tail
    assert len(body) > ROBOTS_MAX_BYTES
    robots(site, body)

    check = crawl(team, site)

    assert check.status == Check.Status.COMPLETED, check.error
    assert paths(check) == ALL_PAGES - {"admin/", "admin/secret"}
    assert site.requests_to("/admin/") == []


def test_a_byte_order_mark_does_not_hide_the_rules(team, site):
    build_site(site, posts=1)
    robots(site, b"\xef\xbb\xbfUser-agent: *\nDisallow: /admin/\n")

    check = crawl(team, site)

    assert paths(check) == ALL_PAGES - {"admin/", "admin/secret"}
    assert site.requests_to("/admin/") == []


def test_a_start_page_robots_txt_disallows_is_not_fetched_and_the_crawl_says_why(
    team, site
):
    build_site(site, posts=1)
    robots(site, "User-agent: *\nDisallow: /\n")

    check = crawl(team, site)

    assert check.pages.count() == 0
    assert [r.path for r in site.requests] == ["/robots.txt"]
    reason = crawl_result(check)["truncatedReason"]
    assert reason == (
        "No page was crawled, because the site's robots.txt disallows the start page."
    )


def test_the_monitor_list_and_the_check_say_robots_txt_kept_the_start_page_out(
    team, site, web
):
    build_site(site, posts=1)
    robots(site, "User-agent: *\nDisallow: /\n")

    check = crawl(team, site)

    reason = crawl_result(check)["truncatedReason"]
    cell = last_check_cell(web)
    # Failed, in the same words as the check's, still a link to the check.
    assert words(cell) == f"Check failed {reason}"
    assert f'<a href="{check.get_absolute_url()}"' in cell
    shown = words(web.get(check.get_absolute_url()).content.decode())
    # Said once, as what went wrong: not again as why the crawl is incomplete.
    assert f"What went wrong: {reason}" in shown
    assert shown.count(reason) == 1 and "Incomplete" not in shown


# --- What the answer says ------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 404, 410])
def test_a_robots_txt_the_server_says_is_unavailable_allows_everything(
    team, site, status
):
    build_site(site, posts=1)
    robots(site, "User-agent: *\nDisallow: /\n", status=status)

    check = crawl(team, site)

    assert check.status == Check.Status.COMPLETED, check.error
    assert paths(check) == ALL_PAGES
    assert crawl_result(check)["truncated"] is False


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_robots_txt_the_server_fails_to_give_keeps_the_whole_site_out(
    team, site, status, client, django_user_model
):
    build_site(site, posts=1)
    robots(site, "User-agent: *\nAllow: /\n", status=status)

    check = crawl(team, site)

    assert check.pages.count() == 0
    assert [r.path for r in site.requests] == ["/robots.txt"]
    result = crawl_result(check)
    assert result["truncated"] is True and result["removedProcessed"] is False
    reason = result["truncatedReason"]
    assert f"robots.txt could not be read (the server answered {status}: " in reason
    assert reason.startswith("No page was crawled")
    # The check's page says it in the same words.
    user = django_user_model.objects.create_user("olive", "o@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    shown = words(client.get(check.get_absolute_url()).content.decode())
    assert f"What went wrong: {reason}" in shown and shown.count(reason) == 1


def test_a_server_that_cannot_be_reached_is_not_crawled_and_the_crawl_says_why(team):
    monitor = crawl_monitor(team, refused_url("/"), sitemap="skip")

    check = run_check(monitor)

    assert check.pages.count() == 0
    reason = crawl_result(check)["truncatedReason"]
    assert reason == (
        "No page was crawled, because the site could not be reached "
        "(Connection refused by 127.0.0.1)."
    )


@pytest.mark.parametrize("status", [503, 429])
def test_the_monitor_list_says_a_failing_robots_txt_kept_the_site_out(
    team, site, web, status
):
    build_site(site, posts=1)
    robots(site, "User-agent: *\nAllow: /\n", status=status)

    check = crawl(team, site)

    reason = crawl_result(check)["truncatedReason"]
    assert reason.startswith("No page was crawled")
    assert words(last_check_cell(web)) == f"Check failed {reason}"


def test_the_monitor_list_says_an_unreachable_server_kept_the_site_out(team, web):
    check = run_check(crawl_monitor(team, refused_url("/"), sitemap="skip"))

    reason = crawl_result(check)["truncatedReason"]
    assert "the site could not be reached" in reason
    assert words(last_check_cell(web)) == f"Check failed {reason}"


def test_another_sites_failing_robots_txt_keeps_that_site_out(team, site):
    with Site() as other:
        robots(other, "", status=503)
        other.html("/", "Other", "<p>other</p>")
        site.html("/", "Home", f'<a href="{other.url("/")}">other</a>')
        robots(site, "")
        monitor = crawl_monitor(team, site.url("/"), allowExternalLinks=True)

        check = run_check(monitor)

        assert {p.url for p in check.pages.all()} == {site.url("/")}
        assert [r.path for r in other.requests] == ["/robots.txt"]


# --- Redirects -------------------------------------------------------------------


def test_robots_txt_redirects_are_followed_five_hops_even_to_another_site(team, site):
    build_site(site, posts=1)
    with Site() as other:
        robots(other, "User-agent: *\nDisallow: /admin/\n")
        site.redirect("/robots.txt", "/hop1")
        for n in range(1, 4):
            site.redirect(f"/hop{n}", f"/hop{n + 1}", status=301)
        site.redirect("/hop4", other.url("/robots.txt"), status=308)

        check = crawl(team, site)

        assert paths(check) == ALL_PAGES - {"admin/", "admin/secret"}
        assert len(other.requests_to("/robots.txt")) == 1


def test_robots_txt_behind_six_redirects_counts_as_unavailable(team, site):
    build_site(site, posts=1)
    site.redirect("/robots.txt", "/hop1")
    for n in range(1, 6):
        site.redirect(f"/hop{n}", f"/hop{n + 1}")
    site.page("/hop6", "User-agent: *\nDisallow: /\n", content_type="text/plain")

    check = crawl(team, site)

    assert site.requests_to("/hop6") == []
    assert paths(check) == ALL_PAGES


def test_a_robots_txt_redirect_to_the_metadata_address_is_refused(
    team, site, monkeypatch
):
    judged: list[tuple[str, str | None]] = []
    policy = transport.address_block_reason

    def recorded(ip: Any, allow_private: bool) -> str | None:
        reason = policy(ip, allow_private)
        judged.append((str(ip), reason))
        return reason

    monkeypatch.setattr(transport, "address_block_reason", recorded)
    site.redirect("/robots.txt", "http://169.254.169.254/latest/meta-data/")
    site.html("/", "Home", "<p>home</p>")

    check = crawl(team, site)

    [(ip, reason)] = [j for j in judged if j[0] == "169.254.169.254"]
    assert reason == "169.254.169.254 is a cloud metadata address"
    # The site never gave a robots.txt we could read: nothing forbids its pages.
    assert {p.url for p in check.pages.all()} == {site.url("/")}
