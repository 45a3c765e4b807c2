"""A crawl page that names another address as canonical is a copy: it is
not recorded, the address it names is, from its own fetch. What a check
records never depends on which page answered first (but for cycles)."""

from __future__ import annotations

import pytest

from checks.models import Check, PageResult
from monitors.models import Monitor, Target
from tests.sites import Site, self_signed
from tests.test_crawl import crawl_monitor, nav, run_check
from tests.test_crawl_canonical import canonical, page, statuses

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def test_variants_naming_one_canonical_never_become_its_content(team, site):
    """/shoe?color=red and ?color=blue both name /shoe (not linked): /shoe is
    recorded from its own fetch, whichever variant answers first."""
    site.html("/", "Home", nav("/shoe?color=red", "/shoe?color=blue"))
    page(site, "/shoe", "Shoe", "<p>Shoe</p>", canonical("/shoe"))

    def variants(slow_red: bool) -> None:
        page(
            site,
            "/shoe?color=red",
            "Shoe",
            "<p>Shoe in red.</p>",
            canonical("/shoe"),
            delay=0.3 if slow_red else 0,
        )
        page(
            site,
            "/shoe?color=blue",
            "Shoe",
            "<p>Shoe in blue.</p>",
            canonical("/shoe"),
            delay=0 if slow_red else 0.3,
        )

    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    variants(slow_red=True)
    first = run_check(monitor)
    variants(slow_red=False)
    second = run_check(monitor)

    assert statuses(first) == {"new": {"", "shoe"}}
    assert "Shoe in" not in first.pages.get(url=site.url("/shoe")).current_snapshot.text
    assert statuses(second) == {"same": {"", "shoe"}}


def test_a_chain_of_canonicals_ends_at_its_end_whatever_the_order(team, site):
    """/a?x names /b; /b names /c; /b is linked from /d only."""
    site.html("/", "Home", nav("/a?x=1", "/d"))
    page(site, "/b", "B", "<p>B</p>", canonical("/c"))
    page(site, "/c", "B", "<p>B</p>", canonical("/c"))

    def order(a_first: bool) -> None:
        page(site, "/a", "B", "<p>B</p>", canonical("/b"), delay=0 if a_first else 0.3)
        site.html("/d", "D", nav("/b"), delay=0.3 if a_first else 0)

    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    order(a_first=True)
    first = run_check(monitor)
    order(a_first=False)
    second = run_check(monitor)

    assert statuses(first) == {"new": {"", "c", "d"}}
    assert statuses(second) == {"same": {"", "c", "d"}}


def test_a_page_naming_an_address_that_is_no_page_records_itself(team, site):
    """/a?x names /b, /b names /c, and /c answers 404: /b is the page."""
    site.html("/", "Home", nav("/a?x=1", "/d"))
    page(site, "/b", "B", "<p>B</p>", canonical("/c"))

    def order(a_first: bool) -> None:
        page(site, "/a", "B", "<p>B</p>", canonical("/b"), delay=0 if a_first else 0.3)
        site.html("/d", "D", nav("/b"), delay=0.3 if a_first else 0)

    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    order(a_first=True)
    first = run_check(monitor)
    order(a_first=False)
    second = run_check(monitor)

    assert statuses(first) == {"new": {"", "b", "d"}}
    assert statuses(second) == {"same": {"", "b", "d"}}
    assert second.pages_total == second.pages_done == 3


def test_a_not_found_page_naming_a_canonical_is_no_page(team, site):
    """Deleted pages show the site's not-found page (HTTP 200), which names
    /not-found as canonical: a link to one is no page, as without it."""
    site.html("/", "Home", nav("/gone-1", "/gone-2", "/about"))
    site.html("/about", "About", "<p>About us, a real page with words.</p>")
    site.otherwise(
        "<!doctype html><html><head><title>Page not found</title>"
        + canonical("/not-found")
        + "</head><body><h1>Page not found</h1><p>Sorry.</p></body></html>"
    )
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    check = run_check(monitor)
    assert statuses(check) == {"new": {"", "about"}}
    assert site.requests_to("/not-found") == []


def test_a_copy_stays_a_copy_when_its_batch_runs_again(team):
    """The batch of /amp/post runs twice (a worker died after the copy was
    marked, before its pages were recorded): counted out once, never
    recorded."""
    import uuid

    from checks.crawl.frontier import Frontier
    from checks.crawl.models import Crawl, CrawlPage
    from checks.jobs import PageJob
    from checks.pipeline.outcome import Item, Outcome
    from monitors.models import Target

    monitor = crawl_monitor(team, "https://example.com/", sitemap="skip")
    target = Target.objects.get(monitor=monitor)
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.RUNNING,
        pages_total=3,
    )
    row = Crawl.objects.create(check_run=check, target_id=target.id, found=3)
    frontier = Frontier(check)
    scope = frontier.crawls[target.id].scope
    for url in (
        "https://example.com/",
        "https://example.com/post",
        "https://example.com/amp/post",
    ):
        CrawlPage.objects.create(crawl=row, key=scope.key(url), url=url, depth=1)
    job = PageJob(
        target.id,
        "https://example.com/amp/post",
        {},
        1,
        uuid.uuid4(),
        depth=1,
        follow=True,
    )

    def item() -> Item:
        outcome = Outcome(PageResult.Status.NEW, {"url": job.url})
        outcome.canonical = "https://example.com/post"
        return Item(job, outcome, None)

    [once] = frontier.copies([item()])
    [again] = frontier.copies([item()])

    row.refresh_from_db()
    check.refresh_from_db()
    assert once.job.record is False
    assert again.job.record is False  # /post's own batch records /post
    assert (row.found, check.pages_total) == (2, 2)
    copy = CrawlPage.objects.get(crawl=row, url="https://example.com/amp/post")
    assert copy.copy_of == "https://example.com/post"


def test_a_page_naming_the_address_that_redirects_to_it_records_itself(team, site):
    """/old redirects to /new; /new still names /old as its canonical."""
    site.html("/", "Home", nav("/old", "/about"))
    site.html("/about", "About", "<p>About us</p>")
    site.redirect("/old", "/new", status=301)
    page(site, "/new", "Article", "<p>The article.</p>", canonical("/old"))
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    check = run_check(monitor)
    assert statuses(check) == {"new": {"", "about", "new"}}
    assert check.pages_total == check.pages_done == 3


def test_a_subdomain_canonical_is_taken_only_as_its_robots_txt_allows(team, site):
    """allowSubdomains: the copy names an address on shop.site.test, whose
    robots.txt keeps /private out: read first, the copy records itself."""
    start = f"http://site.test:{site.port}/"
    shop = f"http://shop.site.test:{site.port}"
    site.page(
        "/robots.txt", "User-agent: *\nDisallow: /private\n", content_type="text/plain"
    )
    site.html("/", "Home", nav("/post?ref=home"))
    page(
        site,
        "/post",
        "Article",
        "<p>The article.</p>",
        canonical(f"{shop}/private/post"),
    )
    page(site, "/private/post", "Article", "<p>The article.</p>")
    local = {"site.test": ["127.0.0.1"], "shop.site.test": ["127.0.0.1"]}
    monitor = crawl_monitor(team, start, sitemap="skip", allowSubdomains=True)

    check = run_check(monitor, resolver=lambda host, port: local[host])

    assert statuses(check) == {"new": {"", "post?ref=home"}}
    assert site.requests_to("/private/post") == []


def test_pages_naming_each_other_record_one_of_them(team, site):
    """/x names /y and /y names /x: a cycle. One of them is recorded (which
    one depends on which answered first: the README says so)."""
    site.html("/", "Home", nav("/x", "/y"))
    page(site, "/x", "Article", "<p>The article.</p>", canonical("/y"))
    page(site, "/y", "Article", "<p>The article.</p>", canonical("/x"))
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    new = statuses(check)["new"]
    assert new in ({"", "x"}, {"", "y"})
    assert check.pages_total == check.pages_done == 2


@pytest.mark.parametrize("copy_first", [True, False])
def test_a_copy_records_itself_once_the_page_it_names_redirects_away(
    team, site, copy_first
):
    """/a?x=1 names /b, which the target had; /b now redirects to /c: /a?x=1
    is a live page, recorded (new) whichever of the two answers first."""
    site.html("/", "Home", nav("/a?x=1", "/b"))
    page(site, "/b", "B", "<p>B</p>")
    page(site, "/c", "C", "<p>C</p>")
    a_delay = 0 if copy_first else 0.3
    page(site, "/a", "B", "<p>B, a variant.</p>", canonical("/b"), delay=a_delay)
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    first = run_check(monitor)
    site.redirect("/b", "/c", status=301)
    second = run_check(monitor)
    third = run_check(monitor)

    assert statuses(first) == {"new": {"", "b"}}
    assert statuses(second) == {"same": {""}, "new": {"a?x=1", "c"}, "removed": {"b"}}
    assert second.pages_total == second.pages_done == 4
    assert statuses(third) == {"same": {"", "a?x=1", "c"}}
    assert third.pages_total == third.pages_done == 3


@pytest.mark.parametrize("copy_first", [True, False])
def test_a_copy_records_itself_once_the_page_it_names_answers_404(
    team, site, copy_first
):
    """/a?x=1 names /b, which the target had; /b now answers 404: /a?x=1 is
    recorded (new), then the same on the next check, while /b stays gone."""
    site.html("/", "Home", nav("/a?x=1", "/b"))
    page(site, "/b", "B", "<p>B</p>")
    a_delay = 0 if copy_first else 0.3
    page(site, "/a", "B", "<p>B, a variant.</p>", canonical("/b"), delay=a_delay)
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    first = run_check(monitor)
    site.remove("/b")
    second = run_check(monitor)
    page(site, "/a", "B", "<p>B, a new variant.</p>", canonical("/b"), delay=a_delay)
    third = run_check(monitor)

    assert statuses(first) == {"new": {"", "b"}}
    assert statuses(second) == {"same": {""}, "new": {"a?x=1"}, "removed": {"b"}}
    assert second.pages_total == second.pages_done == 3
    assert statuses(third) == {"same": {"", "b"}, "changed": {"a?x=1"}}
    assert third.pages_total == third.pages_done == 3


def test_a_page_still_showing_the_not_found_page_is_nobody_s_copy(team, site):
    """/old was removed as the site's "not found" page (HTTP 200), which
    names the home page as canonical: on the next check it is still gone,
    not a copy of the home page that vanished from the results."""
    not_found = (
        "<h1>Oops! We can't find that page.</h1>"
        "<p>The page you are looking for does not exist or has been moved.</p>"
    )
    site.html("/", "Home", nav("/old", "/about") + "<p>Welcome to the shop.</p>")
    site.html("/about", "About", "<p>About us, a real page with words.</p>")
    words = "<p>An old page, with many words of its own, for years.</p>" * 20
    page(site, "/old", "Old", words)
    site.otherwise(
        "<!doctype html><html><head><title>Page not found</title>"
        + canonical("/")
        + f"</head><body><main>{not_found}</main></body></html>"
    )
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.remove("/old")
    removed = run_check(monitor)
    still_gone = run_check(monitor)

    assert statuses(removed) == {"same": {"", "about"}, "removed": {"old"}}
    assert statuses(still_gone) == {"same": {"", "about", "old"}}
    old = still_gone.pages.get(url=site.url("/old"))
    assert old.error_kind == "not_found_page"
    assert still_gone.pages_total == still_gone.pages_done == 3


def test_a_robots_txt_whose_reading_crashes_keeps_its_host_out(team, site, monkeypatch):
    """Reading robots.txt of shop.site.test fails with an unexpected error:
    the host counts as closed to the crawl (as an unreadable robots.txt),
    not as open for the rest of it; the pages linking to it are recorded."""
    from checks.crawl import frontier

    async def crashes(origin, client, **kwargs):
        raise RuntimeError("a bug while reading robots.txt")

    monkeypatch.setattr(frontier, "robots_of", crashes)
    start = f"http://site.test:{site.port}/"
    shop = f"http://shop.site.test:{site.port}"
    site.html("/", "Home", nav("/a", "/b"))
    site.html("/a", "A", "<p>A</p>" + nav(f"{shop}/x"))
    site.html("/b", "B", "<p>B</p>" + nav(f"{shop}/y"))
    site.html("/x", "X", "<p>X</p>")
    site.html("/y", "Y", "<p>Y</p>")
    local = {"site.test": ["127.0.0.1"], "shop.site.test": ["127.0.0.1"]}
    monitor = crawl_monitor(team, start, sitemap="skip", allowSubdomains=True)

    check = run_check(monitor, resolver=lambda host, port: local[host])

    assert statuses(check) == {"new": {"", "a", "b"}}
    assert site.requests_to("/x") == site.requests_to("/y") == []


def test_a_self_signed_site_crawled_without_tls_checks_has_its_robots_txt_read(
    team, tmp_path
):
    """skipTlsVerification: the crawl's own robots.txt read skips it as its
    pages do, so the site is crawled, as its robots.txt allows."""
    with Site(tls=self_signed(tmp_path, "shop.example")) as shop:
        shop.page(
            "/robots.txt",
            "User-agent: *\nDisallow: /private\n",
            content_type="text/plain",
        )
        shop.html("/", "Home", nav("/about", "/private"))
        shop.html("/about", "About", "<p>About us</p>")
        shop.html("/private", "Private", "<p>Staff only</p>")
        monitor = Monitor.objects.create(team=team, name="S", schedule_cron="0 * * * *")
        Target.objects.create(
            monitor=monitor,
            type="crawl",
            url=shop.url("/").replace("http://", "https://"),
            crawl_options={"sitemap": "skip"},
            scrape_options={"skipTlsVerification": True, "timeout": 5000},
        )

        check = run_check(monitor)

        assert statuses(check) == {"new": {"", "about"}}
        assert len(shop.requests_to("/robots.txt")) == 1
        assert shop.requests_to("/private") == []
