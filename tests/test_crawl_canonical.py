"""A crawl follows <link rel="canonical"> (and the HTTP Link header's): the
same article reached under several addresses is one page, recorded under the
address the site names for it; a canonical the crawl would not take is
ignored."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from checks.crawl.canonical import declared_canonical
from checks.fetch import FetchResult
from checks.models import Check, PageResult, PageState
from monitors.models import Monitor, Target
from tests.sites import Site
from tests.test_crawl import crawl_monitor, crawl_result, nav, paths, run_check

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def page(
    site: Site, path: str, title: str, content: str, head: str = "", **options: Any
) -> str:
    site.page(
        path,
        f"<!doctype html><html><head><title>{title}</title>{head}</head>"
        f"<body><main>{content}</main></body></html>",
        **options,
    )
    return site.url(path)


def canonical(href: str) -> str:
    return f'<link rel="canonical" href="{href}">'


def article_site(site: Site, declared: str = "/post") -> None:
    """Home links to one article under three addresses; /about links to its
    own address. The article (whatever its query) names `declared` as its
    canonical address, relative as sites mostly write it."""
    home = nav("/post?ref=home", "/post?from=side", "/amp/post", "/about")
    site.html("/", "Home", home)
    site.html("/about", "About", "<p>About us</p>" + nav("/post"))
    article = "<p>The article, first version.</p>" + nav("/")
    page(site, "/post", "Article", article, canonical(declared))
    page(site, "/amp/post", "Article", article, canonical(site.url(declared)))


def statuses(check: Check) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for url, status in check.pages.values_list("url", "status"):
        found.setdefault(status, set()).add(url.split(":", 2)[2].split("/", 1)[1])
    return found


def test_addresses_that_name_one_canonical_are_recorded_once_under_it(team, site):
    article_site(site)
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED, check.error
    assert paths(check) == {"", "about", "post"}
    assert check.pages_total == check.pages_done == 3
    assert crawl_result(check)["pagesFound"] == 3
    post = check.pages.get(url=site.url("/post"))
    assert post.status == PageResult.Status.NEW
    assert "first version" in post.current_snapshot.text
    states = PageState.objects.filter(monitor=monitor)
    assert set(states.values_list("url", flat=True)) == {
        site.url("/"),
        site.url("/about"),
        site.url("/post"),
    }


def test_one_edit_of_the_article_is_one_changed_page(team, site):
    article_site(site)
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    edited = "<p>The article, edited.</p>"
    page(site, "/post", "Article", edited, canonical("/post"))
    page(site, "/amp/post", "Article", edited, canonical("/post"))

    check = run_check(monitor)

    assert statuses(check) == {"changed": {"post"}, "same": {"", "about"}}


def test_two_checks_in_a_row_find_every_page_the_same(team, site):
    article_site(site)
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    first = run_check(monitor)

    second, third = run_check(monitor), run_check(monitor)

    assert statuses(first) == {"new": {"", "about", "post"}}
    assert statuses(second) == statuses(third) == {"same": {"", "about", "post"}}


@pytest.mark.parametrize(
    "declared",
    [
        "https://elsewhere.example/post",  # another site
        "/private/post",  # a path the crawl's excludePaths keep out
        "http://[::1",  # garbage
        "javascript:alert(1)",
    ],
)
def test_a_canonical_the_crawl_would_not_take_is_ignored(team, site, declared):
    site.html("/", "Home", nav("/post?ref=home", "/about"))
    site.html("/about", "About", "<p>About us</p>")
    page(site, "/post", "Article", "<p>The article.</p>", canonical(declared))
    monitor = crawl_monitor(
        team, site.url("/"), sitemap="skip", excludePaths=["^/private"]
    )

    check = run_check(monitor)

    assert paths(check) == {"", "about", "post?ref=home"}
    assert site.requests_to("/private/post") == []


def test_a_canonical_named_in_the_link_header_is_followed(team, site):
    site.html("/", "Home", nav("/post?ref=home", "/post?from=side"))
    link = f'<{site.url("/post")}>; rel="canonical", </feed>; rel="alternate"'
    page(site, "/post", "Article", "<p>The article.</p>", headers={"Link": link})
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert paths(check) == {"", "post"}


def test_with_similar_addresses_kept_apart_canonicals_are_not_followed(team, site):
    article_site(site)
    monitor = crawl_monitor(
        team, site.url("/"), sitemap="skip", deduplicateSimilarURLs=False
    )

    check = run_check(monitor)

    assert paths(check) == {
        "", "about", "post", "post?ref=home", "post?from=side", "amp/post"
    }  # fmt: skip


def test_the_page_limit_counts_the_article_once(team, site):
    copies = ("/a-post?ref=1", "/a-post?ref=2", "/a-post?ref=3")
    site.html("/", "Home", nav(*copies, "/b-about", "/c-contact"))
    page(site, "/a-post", "Article", "<p>The article.</p>", canonical("/a-post"))
    site.html("/b-about", "About", "<p>About us</p>")
    site.html("/c-contact", "Contact", "<p>Write to us</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip", limit=3)

    check = run_check(monitor)

    assert paths(check) == {"", "a-post", "b-about"}
    assert crawl_result(check)["pagesFound"] == 3
    assert check.pages_total == check.pages_done == 3


def test_a_page_the_target_had_under_its_own_address_moves_to_its_canonical(team, site):
    site.html("/", "Home", nav("/post?ref=home"))
    site.html("/post", "Article", "<p>The article.</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    page(site, "/post", "Article", "<p>The article.</p>", canonical("/post"))

    check = run_check(monitor)

    assert statuses(check) == {
        "same": {""},
        "new": {"post"},
        "removed": {"post?ref=home"},
    }
    third = run_check(monitor)
    assert statuses(third) == {"same": {"", "post"}}


def test_a_scrape_target_keeps_the_addresses_it_was_given(team, site):
    page(site, "/post", "Article", "<p>The article.</p>", canonical("/post"))
    monitor = Monitor.objects.create(team=team, name="Posts", schedule_cron="0 * * * *")
    urls = [site.url("/post?ref=home"), site.url("/post?from=side")]
    Target.objects.create(monitor=monitor, type="scrape", urls=urls)

    check = run_check(monitor)

    assert set(check.pages.values_list("url", flat=True)) == set(urls)


# --- Reading the canonical address ------------------------------------------------


def answer(
    body: str, link: str = "", url: str = "https://s.test/a/post?ref=1"
) -> FetchResult:
    headers = httpx.Headers({"content-type": "text/html"})
    if link:
        headers["link"] = link
    return FetchResult(url, url, 200, headers, body.encode())


@pytest.mark.parametrize(
    ("body", "link", "named"),
    [
        (canonical("/post#top"), "", "https://s.test/post"),
        (canonical("post"), "", "https://s.test/a/post"),
        (
            '<base href="https://s.test/b/">' + canonical("post"),
            "",
            "https://s.test/b/post",
        ),
        ('<link rel="Canonical preload" href="/post">', "", "https://s.test/post"),
        (canonical("/post") + canonical("/other"), "", None),  # two: none
        (
            canonical("/post") + canonical("https://s.test/post"),
            "",
            "https://s.test/post",
        ),
        (canonical("http://[::1"), "", None),
        (canonical("mailto:a@s.test"), "", None),
        (canonical(""), "", None),
        (
            "",
            '</feed>; rel="alternate", </post>; rel="canonical"',
            "https://s.test/post",
        ),
        ("", "<https://s.test/post>; rel=canonical", "https://s.test/post"),
        (canonical("/other"), '</post>; rel="canonical"', None),  # they disagree
    ],
)
def test_the_canonical_address_a_page_names(body, link, named):
    page = f"<html><head><title>T</title>{body}</head><body>x</body></html>"

    assert declared_canonical(answer(page, link)) == named
