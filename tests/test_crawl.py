"""Crawl targets (issue #17): a whole site on every check, in-process runner
against 127.0.0.1 sites (the SDK + real worker run is in
test_worker_integration.py)."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checks import runner, shared_clock
from checks.crawl import scope as scope_module
from checks.crawl.discovery import discover
from checks.crawl.frontier import Frontier
from checks.crawl.scope import Scope, compile_pattern
from checks.crawl.source import CrawlSource
from checks.errors import ErrorKind
from checks.fetch import transport
from checks.jobs import PageJob
from checks.models import Check, Crawl, PageResult
from checks.pipeline.outcome import CheckAbandoned, Item, Outcome
from monitors.models import Membership, Monitor, Target
from tests.sites import Site

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def nav(*paths: str) -> str:
    return "".join(f'<a href="{p}">{p}</a> ' for p in paths)


def build_site(site: Site, posts: int = 30) -> None:
    """A blog: home → /blog/ → posts, docs, an admin area robots.txt
    forbids, a sitemap listing an orphan page nothing links to."""
    post_paths = [f"/blog/post-{i}" for i in range(posts)]
    site.html("/", "Home", nav("/blog/", "/docs/", "/about", "/admin/") + "<p>hi</p>")
    site.html("/blog/", "Blog", nav(*post_paths, "/"))
    for i, path in enumerate(post_paths):
        site.html(path, f"Post {i}", f"<p>Post number {i}.</p>" + nav("/blog/", "/"))
    site.html("/docs/", "Docs", nav("/docs/a", "/docs/b", "/docs/a#part"))
    site.html("/docs/a", "Doc A", "<p>A</p>" + nav("/"))
    site.html("/docs/b", "Doc B", "<p>B</p>")
    site.html("/about", "About", "<p>About us</p>")
    site.html("/admin/", "Admin", nav("/admin/secret"))
    site.html("/admin/secret", "Secret", "<p>secret</p>")
    site.html("/orphan", "Orphan", "<p>Only the sitemap knows me.</p>")
    site.page(
        "/robots.txt",
        f"User-agent: *\nDisallow: /admin/\nSitemap: {site.url('/sitemap.xml')}\n",
        content_type="text/plain",
    )
    site.page(
        "/sitemap.xml",
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/orphan')}</loc></url>"
        f"<url><loc>{site.url('/about')}</loc></url>"
        "</urlset>",
        content_type="application/xml",
    )


def crawl_monitor(team, url: str, **options: Any) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Site", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="crawl", url=url, crawl_options=options)
    return monitor


def run_check(monitor: Monitor, **kwargs: Any) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return runner.run(check, **kwargs)


def paths(check: Check, status: str | None = None) -> set[str]:
    """Paths of the pages the check found (or of those with `status`)."""
    pages = check.pages.exclude(status=PageResult.Status.REMOVED)
    if status is not None:
        pages = check.pages.filter(status=status)
    return {p.url.split(":", 2)[2].split("/", 1)[1] for p in pages}


def crawl_result(check: Check) -> dict[str, Any]:
    [result] = [r for r in check.target_results if r["type"] == "crawl"]
    return result


# --- The first check, the second -------------------------------------------------


def test_the_first_crawl_finds_every_page_the_options_allow_all_new(team, site):
    build_site(site)
    monitor = crawl_monitor(team, site.url("/"))

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED, check.error
    found = paths(check)
    expected = {"", "blog/", "docs/", "docs/a", "docs/b", "about", "orphan"}
    expected |= {f"blog/post-{i}" for i in range(30)}
    assert found == expected  # no /admin/ (robots.txt), /orphan from the sitemap
    assert paths(check, "new") == expected
    assert site.requests_to("/admin/") == []
    result = crawl_result(check)
    assert result["pagesFound"] == len(expected) and result["truncated"] is False
    assert result["removedProcessed"] is True
    assert result["pages"] == {"new": len(expected)}
    assert uuid.UUID(result["crawlId"]).version == 5  # a UUID, as Firecrawl's
    assert check.summary["new"] == len(expected)
    assert check.pages_total == check.pages_done == len(expected)
    assert check.actual_credits == len(expected)


def test_the_second_crawl_finds_changed_removed_and_new_pages(team, site):
    build_site(site)
    monitor = crawl_monitor(team, site.url("/"))
    run_check(monitor)
    site.html("/blog/post-3", "Post 3", "<p>Post number 3, now edited.</p>")
    site.html(
        "/blog/",
        "Blog",
        nav(*(f"/blog/post-{i}" for i in range(30) if i != 7), "/blog/post-new"),
    )
    site.remove("/blog/post-7")
    site.html("/blog/post-new", "New post", "<p>Fresh.</p>")

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED, check.error
    assert paths(check, "changed") == {"blog/post-3", "blog/"}
    assert paths(check, "removed") == {"blog/post-7"}
    assert paths(check, "new") == {"blog/post-new"}
    post3 = check.pages.get(url=site.url("/blog/post-3"))
    assert "now edited" in post3.diff["text"]
    assert crawl_result(check)["pages"]["removed"] == 1


def test_a_crawl_cut_short_by_its_limit_reports_nothing_removed(team, site):
    build_site(site)
    monitor = crawl_monitor(team, site.url("/"))
    run_check(monitor)
    monitor.targets.update(crawl_options={"limit": 5})

    check = run_check(monitor)

    assert len(paths(check)) == 5
    assert paths(check, "removed") == set()
    result = crawl_result(check)
    assert result["truncated"] is True
    assert "limit of 5 pages" in result["truncatedReason"]


def test_a_crawl_whose_start_page_fails_reports_nothing_removed(team, site):
    build_site(site)
    monitor = crawl_monitor(team, site.url("/"))
    run_check(monitor)
    site.page("/", "down", status=503)

    check = run_check(monitor)

    assert paths(check, "removed") == set()
    assert crawl_result(check)["truncatedReason"] == (
        "The start page could not be fetched. "
        "The site had an internal problem (HTTP 503)."
    )


def test_a_site_that_went_down_fails_the_check_and_removes_nothing(team, site):
    site.html("/", "Home", nav("/a", "/b"))
    site.html("/a", "A", "<p>a</p>")
    site.html("/b", "B", "<p>b</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.stop()

    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert check.error == (
        "No page was crawled, because the site could not be reached "
        "(Connection refused by 127.0.0.1)."
    )
    assert check.pages.count() == 0 and check.actual_credits == 0


def test_a_crawl_that_checked_no_page_by_the_sites_own_rules_fails(team, site):
    site.page("/robots.txt", "User-agent: *\nDisallow: /\n", content_type="text/plain")
    site.html("/", "Home", "<p>home</p>")
    monitor = crawl_monitor(team, site.url("/"))

    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert check.error == crawl_result(check)["truncatedReason"]


def test_a_page_failing_for_now_keeps_the_pages_below_it_from_being_removed(team, site):
    site.html("/", "Home", nav("/a", "/c"))
    site.html("/a", "A", nav("/a/deep"))
    site.html("/a/deep", "Deep", "<p>Only /a links here.</p>")
    site.html("/c", "C", "<p>c</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.page("/a", "busy", status=500)

    failing = run_check(monitor)
    site.html("/a", "A", nav("/a/deep"))
    recovered = run_check(monitor)

    assert paths(failing, "removed") == set()
    assert paths(failing, "error") == {"a"}
    reason = crawl_result(failing)["truncatedReason"]
    assert reason.startswith("A page it follows could not be read this time")
    assert reason.endswith(f"may be missing: {site.url('/a')}")
    assert crawl_result(failing)["removedProcessed"] is False
    # The page below was not lost: it is "same" again, not "new".
    assert paths(recovered, "same") == {"", "a", "a/deep", "c"}


def test_a_page_that_answers_with_nothing_for_now_keeps_the_pages_below_it(team, site):
    site.html("/", "Home", nav("/a", "/c"))
    site.html("/a", "A", nav("/a/deep"))
    site.html("/a/deep", "Deep", "<p>Only /a links here.</p>")
    site.html("/c", "C", "<p>c</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.page("/a", b"", content_type="text/html")

    blank = run_check(monitor)

    assert paths(blank, "error") == {"a"}
    assert paths(blank, "removed") == set()
    assert crawl_result(blank)["removedProcessed"] is False


def test_broken_links_and_downloads_do_not_hold_removals_back(team, site):
    site.html("/", "Home", nav("/gone", "/file.bin", "/old"))
    site.page("/file.bin", b"\x00\x01binary", content_type="application/octet-stream")
    site.html("/old", "Old", "<p>old</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.html("/", "Home", nav("/gone", "/file.bin"))

    check = run_check(monitor)

    assert paths(check, "removed") == {"old"}
    assert crawl_result(check)["truncated"] is False


def test_links_to_images_and_other_files_are_not_crawled_as_pages(team, site):
    files = ["/photo.JPG", "/logo.png?v=2", "/site.css", "/app.zip", "/talk.mp4"]
    site.html("/", "Home", nav(*files, "/report.pdf", "/about"))
    for path in files:
        site.page(path.split("?")[0], b"\x00\x01", content_type="image/jpeg")
    site.page("/report.pdf", b"%PDF-1.4 not a real one", content_type="application/pdf")
    site.html("/about", "About", "<p>About us</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert paths(check) == {"", "report.pdf", "about"}  # a PDF is read as a page
    assert all(site.requests_to(path.split("?")[0]) == [] for path in files)


def sitemap_site(site: Site) -> None:
    site.html("/", "Home", "<p>Nothing links to the orphan.</p>")
    site.html("/orphan", "Orphan", "<p>Only the sitemap knows me.</p>")
    robots = f"Sitemap: {site.url('/sitemap.xml')}\n"
    site.page("/robots.txt", robots, content_type="text/plain")
    site.page(
        "/sitemap.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/orphan')}</loc></url></urlset>",
        content_type="application/xml",
    )


def test_a_sitemap_at_the_usual_address_is_read_when_robots_txt_names_none(team, site):
    sitemap_site(site)
    site.remove("/robots.txt")  # none at all: /sitemap.xml is still read

    only = run_check(crawl_monitor(team, site.url("/"), sitemap="only"))
    found = run_check(crawl_monitor(team, site.url("/")))

    assert paths(only) == {"orphan"} and only.status == Check.Status.COMPLETED
    assert paths(found) == {"", "orphan"}
    assert crawl_result(found)["sitemapPages"] == 1


def test_sitemap_pages_counts_only_the_pages_the_crawl_could_take(team, site):
    site.html("/", "Home", "<p>home</p>")
    for path in ("/a", "/b", "/private/x"):
        site.html(path, path, f"<p>{path}</p>")
    listed = [
        site.url("/a"),
        site.url("/b"),
        site.url("/private/x"),  # robots.txt disallows it
        "https://elsewhere.example/page",  # another site
    ]
    site.page(
        "/robots.txt",
        f"User-agent: *\nDisallow: /private/\nSitemap: {site.url('/sitemap.xml')}\n",
        content_type="text/plain",
    )
    site.page(
        "/sitemap.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{url}</loc></url>" for url in listed)
        + "</urlset>",
        content_type="application/xml",
    )

    check = run_check(crawl_monitor(team, site.url("/")))

    assert paths(check) == {"", "a", "b"}
    assert crawl_result(check)["sitemapPages"] == 2


def test_a_sitemap_failing_for_now_keeps_its_pages_from_being_removed(team, site):
    sitemap_site(site)
    monitor = crawl_monitor(team, site.url("/"))
    run_check(monitor)
    site.page("/sitemap.xml", "busy", status=503)

    failing = run_check(monitor)
    site.page("/sitemap.xml", "gone", status=404)
    gone = run_check(monitor)

    assert paths(failing, "removed") == set()
    reason = crawl_result(failing)["truncatedReason"]
    assert reason.startswith("A sitemap could not be read this time")
    assert reason.endswith(site.url("/sitemap.xml"))
    assert paths(gone, "removed") == {"orphan"}  # a sitemap that is gone holds none
    assert crawl_result(gone)["truncated"] is False


def sitemap_index_site(site: Site, delay: float = 0.0) -> None:
    """A sitemap index whose one sitemap lists a page nothing links to; both
    answer after `delay` seconds."""
    sitemap_site(site)
    site.page(
        "/sitemap.xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url('/pages.xml')}</loc></sitemap></sitemapindex>",
        content_type="application/xml",
        delay=delay,
    )
    site.page(
        "/pages.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/orphan')}</loc></url></urlset>",
        content_type="application/xml",
        delay=delay,
    )


@pytest.mark.parametrize(
    ("path", "failure", "why"),
    [
        ("/sitemap.xml", "too many", "The site said we asked too often (HTTP 429)."),
        ("/pages.xml", "too many", "The site said we asked too often (HTTP 429)."),
        ("/sitemap.xml", "slow", "The page took too long to answer."),
        ("/pages.xml", "slow", "The page took too long to answer."),
    ],
)
def test_a_sitemap_answering_too_many_requests_or_too_slowly_holds_removals_back(
    team, site, settings, path, failure, why
):
    sitemap_index_site(site)
    monitor = crawl_monitor(team, site.url("/"))
    first = run_check(monitor)
    assert paths(first) == {"", "orphan"}
    settings.FETCH_TIMEOUT_SECONDS = 1
    if failure == "slow":
        site.page(path, "<urlset/>", content_type="application/xml", delay=1.5)
    else:
        site.page(path, "slow down", status=429, headers={"Retry-After": "60"})

    check = run_check(monitor)

    assert paths(check, "removed") == set()
    result = crawl_result(check)
    assert result["truncated"] is True and result["removedProcessed"] is False
    assert result["truncatedReason"] == (
        f"A sitemap could not be read this time. {why} Pages listed only there "
        f"may be missing: {site.url(path)}"
    )


def test_a_sitemap_only_crawl_whose_sitemap_fails_says_so(team, site):
    sitemap_site(site)
    site.page("/sitemap.xml", "busy", status=500)
    monitor = crawl_monitor(team, site.url("/"), sitemap="only")

    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert check.error.startswith("A sitemap could not be read this time")


def test_a_link_that_redirects_is_not_a_page_the_page_it_leads_to_is(team, site):
    site.redirect("/", "/home")  # the start page is the user's: kept as it is
    site.html("/home", "Home", nav("/old", "/new", "/moved", "/a?ref=nav", "/s"))
    site.redirect("/old", "/new", 301)
    site.html("/new", "New", "<p>new</p>")
    site.redirect("/moved", "/fresh")  # nothing else links to /fresh
    site.html("/fresh", "Fresh", "<p>fresh</p>")
    site.redirect("/a?ref=nav", "/a")
    site.html("/a", "A", "<p>a</p>")
    # A redirect that only adds to the query (a session) is the same page.
    site.handle(
        "/s",
        lambda request: (
            (200, {}, b"<p>s</p>")
            if "?" in request.path
            else (302, {"Location": f"/s?session={time.monotonic_ns()}"}, b"")
        ),
    )
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert paths(check) == {"", "new", "fresh", "a", "s"}
    assert check.pages_total == check.pages_done == 5
    assert crawl_result(check)["pagesFound"] == 5
    assert paths(run_check(monitor), "same") == {"", "new", "fresh", "a", "s"}


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)


def test_a_link_answering_a_download_is_not_a_page_of_the_crawl(team, site):
    # No extension tells these are files: their answers' Content-Type does.
    site.html("/", "Home", nav("/download?id=3", "/photo", "/blob", "/empty", "/a"))
    site.page(
        "/download?id=3", b"PK\x03\x04" + bytes(64), content_type="application/zip"
    )
    site.page("/photo", PNG, content_type="image/png")
    site.page("/blob", bytes(range(256)), content_type="application/octet-stream")
    # A page we do read that is broken is still a page that failed.
    site.page("/empty", b"%PDF-1.7 damaged", content_type="application/pdf")
    site.html("/a", "A", "<p>a</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert paths(check) == {"", "a", "empty"}
    assert paths(check, "error") == {"empty"}
    assert check.pages_total == check.pages_done == 3
    assert crawl_result(check)["pagesFound"] == 3
    site.html("/empty", "Fixed", "<p>fixed</p>")
    again = run_check(monitor)
    assert again.status == Check.Status.COMPLETED
    assert again.pages_total == 3 and paths(again, "error") == set()


def test_a_link_answering_a_download_too_large_to_read_is_not_a_page(
    team, site, settings
):
    settings.FETCH_MAX_BYTES = 4096
    site.html("/", "Home", nav("/export", "/huge"))
    site.page("/export", bytes(8192), content_type="application/octet-stream")
    site.html("/huge", "Huge", "<p>x</p>" * 2000)  # a page: too large is an error
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert paths(check) == {"", "huge"} and paths(check, "error") == {"huge"}
    assert crawl_result(check)["pagesFound"] == 2


def trickling_download(sent: list[int], content_type: str) -> Any:
    """A handler: a 4 MiB file in 64 KiB pieces, 50 ms apart (3.2 s in
    all), each one counted as it is sent (a client that hangs up stops the
    count a piece or two later)."""

    def answer(request: Any) -> Any:
        def pieces() -> Iterator[bytes]:
            for n in range(64):
                sent.append(n)
                yield b"PK\x03\x04" + bytes(64 * 1024 - 4)
                time.sleep(0.05)

        return 200, {"Content-Type": content_type}, pieces()

    return answer


@pytest.mark.parametrize(
    "content_type", ["application/zip", "application/octet-stream", "image/png"]
)
def test_a_link_to_a_big_download_is_dropped_at_its_first_bytes(
    team, site, content_type
):
    sent: list[int] = []
    site.html("/", "Home", nav("/export", "/a"))
    site.handle("/export", trickling_download(sent, content_type))
    site.html("/a", "A", "<p>a</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED
    assert paths(check) == {"", "a"} and crawl_result(check)["pagesFound"] == 2
    assert len(site.requests_to("/export")) == 1
    # Read whole, all 64 pieces are sent before the check ends. Hanging up
    # at the first bytes stops it after a few; half the file leaves a slow,
    # loaded machine 1.6 s to hang up.
    assert len(sent) < 32


def test_a_crawled_page_that_becomes_a_download_is_removed_once(team, site):
    site.html("/", "Home", nav("/report"))
    site.html("/report", "Report", "<p>report</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.page("/report", PNG, content_type="image/png")

    moved, later = run_check(monitor), run_check(monitor)

    assert paths(moved, "removed") == {"report"}
    assert moved.status == Check.Status.COMPLETED
    assert paths(later) == {""} and paths(later, "removed") == set()
    assert later.status == Check.Status.COMPLETED


def test_a_scrape_target_answering_a_download_still_reports_its_error(team, site):
    site.html("/", "Home", nav("/photo"))
    site.page("/photo", PNG, content_type="image/png")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    scrape = Target.objects.create(
        monitor=monitor, type="scrape", urls=[site.url("/photo")]
    )

    check = run_check(monitor)

    [error] = check.pages.filter(status="error")
    assert (error.target_id, error.url) == (scrape.id, site.url("/photo"))
    assert check.status != Check.Status.COMPLETED


def test_a_start_page_answering_a_download_still_fails_the_crawl(team, site):
    site.page("/", PNG, content_type="image/png")

    check = run_check(crawl_monitor(team, site.url("/"), sitemap="skip"))

    assert paths(check, "error") == {""}
    assert check.status != Check.Status.COMPLETED


def test_a_link_that_redirects_out_of_the_crawl_is_not_a_page(team, site):
    with Site() as other:
        other.html("/x", "Elsewhere", "<p>another site</p>")
        site.html("/", "Home", nav("/away", "/private/", "/b"))
        site.redirect("/away", other.url("/x"))
        site.redirect("/private/", "/admin/")
        site.html("/admin/", "Admin", "<p>robots.txt keeps this out</p>")
        site.html("/b", "B", "<p>b</p>")
        site.page("/robots.txt", "User-agent: *\nDisallow: /admin/\n")
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

        check = run_check(monitor)

    assert paths(check) == {"", "b"}
    assert check.status == Check.Status.COMPLETED
    assert check.pages_total == check.pages_done == 2


def test_a_start_page_that_redirects_to_another_site_is_crawled_there(team, site):
    with Site() as moved:
        site.redirect("/", moved.url("/home"), 301)
        moved.html("/home", "Home", nav("/home/a", "/home/b", "/elsewhere"))
        for path in ("/home/a", "/home/b", "/elsewhere"):
            moved.html(path, path, f"<p>{path}</p>")
        moved.page("/robots.txt", "User-agent: *\nDisallow: /home/b\n")
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

        check, again = run_check(monitor), run_check(monitor)

        pages = {p.url for p in check.pages.all()}
        assert pages == {moved.url("/home"), moved.url("/home/a")}
        assert moved.requests_to("/home/b") == []
        assert {p.url: p.status for p in again.pages.all()} == dict.fromkeys(
            pages, "same"
        )
        assert crawl_result(check)["startUrl"] == moved.url("/home")


def test_a_page_that_starts_redirecting_is_removed_once(team, site):
    site.html("/", "Home", nav("/old"))
    site.html("/old", "Old", "<p>old</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.redirect("/old", "/new", 301)
    site.html("/new", "New", "<p>new</p>")

    moved, later = run_check(monitor), run_check(monitor)

    assert paths(moved, "removed") == {"old"} and paths(moved, "new") == {"new"}
    assert moved.pages.get(url=site.url("/old")).metadata["title"] == "Old"
    assert paths(later) == {"", "new"} and paths(later, "removed") == set()


def test_a_page_that_starts_refreshing_to_another_site_is_removed_once(team, site):
    with Site() as other:
        other.html("/", "Elsewhere", "<p>another site</p>")
        site.html("/", "Home", nav("/moved"))
        site.html("/moved", "Moved", "<p>here for now</p>")
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
        run_check(monitor)
        refresh = f'<meta http-equiv="refresh" content="0; url={other.url("/")}">'
        site.page("/moved", f"<html><head>{refresh}</head><body></body></html>")

        moved, later = run_check(monitor), run_check(monitor)

        assert other.requests == []
    assert paths(moved, "removed") == {"moved"} and paths(moved, "error") == set()
    assert moved.status == Check.Status.COMPLETED
    assert paths(later) == {""} and paths(later, "removed") == set()


def test_a_page_a_crawl_no_longer_finds_is_removed_once_then_has_no_row(team, site):
    site.html("/", "Home", nav("/old"))
    site.html("/old", "Old", "<p>old</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.html("/", "Home", "<p>Nothing to follow.</p>")
    site.remove("/old")

    removed = run_check(monitor)
    asked = len(site.requests_to("/old"))
    later = run_check(monitor)

    assert paths(removed, "removed") == {"old"}
    assert removed.pages.get(url=site.url("/old")).status_code is None
    assert not later.pages.filter(url=site.url("/old")).exists()
    assert len(site.requests_to("/old")) == asked  # not looked for again
    assert later.summary == {
        "totalPages": 1, "same": 1, "changed": 0, "new": 0, "removed": 0, "error": 0,
    }  # fmt: skip


def test_a_linked_page_answering_404_is_removed_once_then_still_gone(team, site):
    site.html("/", "Home", nav("/old"))
    site.html("/old", "Old", "<p>old</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.remove("/old")  # still linked from the home page

    removed, later = run_check(monitor), run_check(monitor)

    assert paths(removed, "removed") == {"old"}
    page = later.pages.get(url=site.url("/old"))
    assert (page.status, page.status_code) == (PageResult.Status.SAME, 404)
    assert later.status == Check.Status.COMPLETED and later.summary["error"] == 0


# --- Options at their boundaries -------------------------------------------------


def test_max_discovery_depth_stops_at_its_depth(team, site):
    build_site(site)
    site.page("/robots.txt", "", content_type="text/plain")
    site.remove("/sitemap.xml")  # no sitemap
    monitor = crawl_monitor(team, site.url("/"), maxDiscoveryDepth=1)

    check = run_check(monitor)

    assert paths(check) == {"", "blog/", "docs/", "about", "admin/"}
    monitor.targets.update(crawl_options={"maxDiscoveryDepth": 0})
    assert paths(run_check(monitor)) == {""}


def test_only_pages_below_the_start_path_unless_the_whole_domain_is_crawled(team, site):
    build_site(site, posts=3)
    monitor = crawl_monitor(team, site.url("/docs/"), sitemap="skip")

    assert paths(run_check(monitor)) == {"docs/", "docs/a", "docs/b"}

    monitor.targets.update(crawl_options={"sitemap": "skip", "crawlEntireDomain": True})
    wide = paths(run_check(monitor))
    assert {"", "about", "blog/", "blog/post-2"} <= wide


def test_include_and_exclude_patterns_choose_the_pages(team, site):
    build_site(site, posts=5)
    monitor = crawl_monitor(
        team, site.url("/"), includePaths=["^/blog/"], excludePaths=["post-[34]$"]
    )

    check = run_check(monitor)

    # The start page is outside includePaths: fetched for its links only.
    assert paths(check) == {"blog/", "blog/post-0", "blog/post-1", "blog/post-2"}
    assert check.pages_total == 4


def test_query_parameters_make_other_pages_unless_ignored(team, site):
    site.html("/", "Home", nav("/list?page=1", "/list?page=2", "/list"))
    site.html("/list", "List", "<p>list</p>")
    site.page("/robots.txt", "", content_type="text/plain")
    monitor = crawl_monitor(team, site.url("/"))

    assert paths(run_check(monitor)) == {"", "list", "list?page=1", "list?page=2"}

    monitor.targets.update(crawl_options={"ignoreQueryParameters": True})
    assert paths(run_check(monitor)) == {"", "list"}


def test_similar_urls_are_one_page(team, site):
    site.html("/", "Home", nav("/a", "/a/", "/b/index.html", "/b/", "/a#top"))
    site.html("/a", "A", "<p>a</p>")
    site.html("/a/", "A", "<p>a</p>")
    site.html("/b/", "B", "<p>b</p>")
    site.html("/b/index.html", "B", "<p>b</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    assert len(paths(run_check(monitor))) == 3  # /, one of /a, one of /b

    monitor.targets.update(
        crawl_options={"sitemap": "skip", "deduplicateSimilarURLs": False}
    )
    assert len(paths(run_check(monitor))) == 5


def test_subdomains_are_followed_only_when_allowed(team, site):
    site.html("/", "Home", nav(f"http://docs.site.test:{site.port}/guide"))
    site.html("/guide", "Guide", "<p>guide</p>")
    start = f"http://site.test:{site.port}/"
    monitor = crawl_monitor(team, start, sitemap="skip")
    local = {"site.test": ["127.0.0.1"], "docs.site.test": ["127.0.0.1"]}

    def resolver(host: str, port: int) -> list[str]:
        return local[host]

    assert {p.url for p in run_check(monitor, resolver=resolver).pages.all()} == {start}

    monitor.targets.update(crawl_options={"sitemap": "skip", "allowSubdomains": True})
    found = {p.url for p in run_check(monitor, resolver=resolver).pages.all()}
    assert found == {start, f"http://docs.site.test:{site.port}/guide"}


def test_external_links_are_checked_one_hop_when_allowed(team, site):
    with Site() as other:
        other.html("/", "Other", nav("/deeper"))
        other.html("/deeper", "Deeper", "<p>too far</p>")
        site.html("/", "Home", nav(other.url("/")))
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
        assert len(paths(run_check(monitor))) == 1

        monitor.targets.update(
            crawl_options={"sitemap": "skip", "allowExternalLinks": True}
        )
        found = {p.url for p in run_check(monitor).pages.all()}
        assert found == {site.url("/"), other.url("/")}


def test_sitemap_only_checks_the_sitemaps_pages(team, site):
    build_site(site, posts=2)
    monitor = crawl_monitor(team, site.url("/"), sitemap="only")

    assert paths(run_check(monitor)) == {"orphan", "about"}


def test_a_delay_fetches_one_page_at_a_time_that_far_apart(team, site):
    site.html("/", "Home", nav("/a", "/b", "/c"))
    for name in "abc":
        site.html(f"/{name}", name, f"<p>{name}</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip", delay=0.3)

    check = run_check(monitor)

    assert len(paths(check)) == 4
    times = sorted(r.time for r in site.requests if r.path != "/robots.txt")
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    # Times are taken as requests arrive: on a busy machine one arrival can be
    # late, so its gap grows and the next shrinks. The span cannot shrink.
    assert times[-1] - times[0] >= 3 * 0.3 - 0.02
    assert min(gaps) >= 0.15


def paced_sitemap_site(site: Site, delay: float) -> None:
    sitemap_index_site(site)
    site.page(
        "/robots.txt",
        f"User-agent: *\nCrawl-delay: {delay}\nSitemap: {site.url('/sitemap.xml')}\n",
        content_type="text/plain",
    )


def test_crawl_delay_paces_robots_txt_and_sitemaps_as_it_paces_pages(team, site):
    paced_sitemap_site(site, 0.3)
    monitor = crawl_monitor(team, site.url("/"))

    check = run_check(monitor)

    assert paths(check) == {"", "orphan"}
    # robots.txt, where the start page leads, the index, its sitemap, 2 pages.
    assert [urlsplit(r.path).path for r in site.requests][:4] == [
        "/robots.txt",
        "/",
        "/sitemap.xml",
        "/pages.xml",
    ]
    times = [r.time for r in site.requests]
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert len(times) == 6
    # Those before the pages go one after another; the pages' times can
    # shift as the test above says, but their span cannot shrink.
    assert min(gaps[:3]) >= 0.2
    assert times[-1] - times[0] >= 5 * 0.3 - 0.02


def test_a_paced_discovery_keeps_its_check_alive(team, site):
    paced_sitemap_site(site, 0.5)
    monitor = crawl_monitor(team, site.url("/"))
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    assert runner.claim(check)
    claimed = check.heartbeat_at

    runner.plan(check)  # robots.txt, then three paced requests

    check.refresh_from_db()
    assert check.heartbeat_at - claimed >= timedelta(seconds=0.8)


def test_a_discovery_of_slow_sitemaps_keeps_its_check_alive(team, site):
    sitemap_index_site(site, delay=0.5)  # no Crawl-delay: the site is slow
    monitor = crawl_monitor(team, site.url("/"))
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    assert runner.claim(check)
    claimed = check.heartbeat_at

    runner.plan(check)

    check.refresh_from_db()
    assert check.heartbeat_at - claimed >= timedelta(seconds=0.4)


@pytest.mark.parametrize("stop", [CheckAbandoned, SoftTimeLimitExceeded])
def test_a_check_ended_while_its_discovery_waits_reads_no_more_sitemaps(site, stop):
    paced_sitemap_site(site, 0.1)
    beats: list[int] = []

    def alive() -> None:
        beats.append(len(beats))
        if len(beats) > 1:  # ended by the sweeper, or out of time
            raise stop

    with pytest.raises(stop):
        discover(Scope(site.url("/"), {}), sitemaps=True, alive=alive)

    assert [r.path for r in site.requests] == ["/robots.txt", "/"]
    assert beats == [0, 1]


def test_unknown_crawl_options_are_listed_as_not_applied(team, site, settings):
    settings.CRAWL_ALLOW_IGNORE_ROBOTS = False
    site.html("/", "Home", "<p>x</p>")
    monitor = crawl_monitor(team, site.url("/"), shinyNewOption=1, ignoreRobotsTxt=True)

    result = crawl_result(run_check(monitor))

    assert result["notApplied"] == ["shinyNewOption", "ignoreRobotsTxt"]


def test_unknown_crawl_options_set_to_false_or_null_are_not_listed(team, site):
    # The rule of scrapeOptions: false and null ask for nothing.
    site.html("/", "Home", "<p>x</p>")
    monitor = crawl_monitor(team, site.url("/"), shinyOff=False, shinyUnset=None)

    result = crawl_result(run_check(monitor))

    assert "notApplied" not in result


def test_robots_txt_is_ignored_only_when_the_operator_allows_it(team, site, settings):
    build_site(site, posts=1)
    settings.CRAWL_ALLOW_IGNORE_ROBOTS = True
    monitor = crawl_monitor(team, site.url("/"), ignoreRobotsTxt=True)

    assert {"admin/", "admin/secret"} <= paths(run_check(monitor))


# --- Safety --------------------------------------------------------------------


@pytest.fixture
def public_site(monkeypatch, settings) -> Iterator[Site]:
    """127.0.0.1 stands in for a public server; every other address is judged
    by the real policy with private targets forbidden."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    real = transport.address_block_reason

    def policy(ip: Any, allow_private: bool) -> str | None:
        return None if str(ip) == "127.0.0.1" else real(ip, allow_private)

    monkeypatch.setattr(transport, "address_block_reason", policy)
    monkeypatch.setattr(scope_module, "address_block_reason", policy)
    with Site() as running:
        yield running


def test_links_redirects_and_sitemaps_to_private_addresses_are_refused(
    team, public_site
):
    site = public_site
    site.html("/", "Home", nav("http://10.0.0.5/", "/jump", "http://169.254.169.254/"))
    site.redirect("/jump", "http://192.168.1.1/admin")
    site.page(
        "/robots.txt",
        f"Sitemap: {site.url('/sitemap.xml')}\n",
        content_type="text/plain",
    )
    site.page(
        "/sitemap.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>http://10.1.2.3/internal</loc></url></urlset>",
        content_type="application/xml",
    )
    monitor = crawl_monitor(team, site.url("/"), allowExternalLinks=True)

    check = run_check(monitor)

    # A redirect to an address the policy refuses leads out of the crawl,
    # like a link there: it is not followed, and /jump is no page.
    assert {p.url for p in check.pages.all()} == {site.url("/")}
    assert check.status == Check.Status.COMPLETED


def test_a_redirect_to_a_crawled_host_on_a_private_address_is_refused(
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

    check = run_check(monitor, resolver=resolver)

    # The host is the crawl's; the address it resolves to is refused at the
    # hop, as a start page there would be.
    jump = check.pages.get(url=site.url("/jump").replace("127.0.0.1", "site.test"))
    assert (jump.status, jump.error_kind) == ("error", "blocked_address")
    assert jump.error == (
        "Blocked: 10.0.0.5 is a private address (intranet.site.test resolves to it)"
    )
    assert site.requests_to("/admin") == []


def test_robots_txt_on_a_blocked_address_is_never_fetched(team, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    monitor = crawl_monitor(team, "http://10.9.9.9/")

    check = run_check(monitor)

    [page] = check.pages.all()
    assert page.error_kind == "blocked_address"
    assert "start page could not be fetched" in crawl_result(check)["truncatedReason"]


def test_a_pattern_that_would_backtrack_for_ever_returns_at_once():
    scope = Scope("http://example.com/", {"includePaths": ["^(a+)+$"]})
    url = "http://example.com/" + "a" * 30_000 + "!"
    started = time.perf_counter()
    assert scope.admit(url, 1) is None
    assert time.perf_counter() - started < 0.5


def test_patterns_re2_cannot_run_are_refused_when_saved(api):
    body = {
        "name": "Site",
        "schedule": {"cron": "0 * * * *"},
        "targets": [
            {
                "type": "crawl",
                "url": "https://example.com/",
                "crawlOptions": {"includePaths": ["(a)\\1"]},
            }
        ],
    }
    response = api.post("/v2/monitor", body, format="json")
    assert response.status_code == 400
    assert "Not a pattern we can use" in response.content.decode()
    with pytest.raises(ValueError):
        compile_pattern("(?=x)")


def test_the_crawl_row_remembers_robots_txt_for_every_batch(team, site):
    build_site(site, posts=1)
    check = run_check(crawl_monitor(team, site.url("/")))
    assert "Disallow: /admin/" in Crawl.objects.get(check_run=check).robots


# --- Cost per page ---------------------------------------------------------------


def test_planning_a_crawl_builds_its_rules_once(team, site, monkeypatch):
    build_site(site, posts=1)
    monitor = crawl_monitor(team, site.url("/"))
    built: list[str] = []
    post_init = Scope.__post_init__

    def counted(scope: Scope) -> None:
        built.append(scope.start_url)
        post_init(scope)

    monkeypatch.setattr(Scope, "__post_init__", counted)
    source = CrawlSource(monitor.targets.get(), {})

    assert built == [site.url("/")]
    assert {link.url for link, _ in source.seeds} == {
        site.url("/"),
        site.url("/orphan"),
        site.url("/about"),
    }
    assert not source.scope.robots_allow(site.url("/admin/"))


def test_a_link_met_on_every_page_is_scoped_once(monkeypatch):
    seen: list[str] = []
    canonical = scope_module.canonical

    def counted(url: str, **kwargs: Any) -> str | None:
        seen.append(url)
        return canonical(url, **kwargs)

    monkeypatch.setattr(scope_module, "canonical", counted)
    scope = Scope("http://example.com/", {"excludePaths": ["^/private"]})
    nav = ["http://example.com/news", "http://example.com/private", "/relative"]
    for depth in (1, 2, 3):
        links = scope.links(nav, depth)
        assert [(link.url, link.depth) for link in links] == [
            ("http://example.com/news", depth)
        ]
    assert seen.count("http://example.com/news") == 1
    assert seen.count("http://example.com/private") == 1


def test_robots_txt_learnt_after_a_link_was_scoped_still_refuses_it():
    scope = Scope("http://example.com/", {"allowExternalLinks": True})
    url = "http://other.example/secret"
    assert [link.url for link in scope.links([url], 1)] == [url]
    scope.remember_robots("http://other.example", "User-agent: *\nDisallow: /secret")
    assert scope.links([url], 1) == []


def test_scoping_answers_the_same_once_its_memory_is_full(monkeypatch):
    monkeypatch.setattr(scope_module, "PLACES_KEPT", 2)
    scope = Scope("http://example.com/blog/", {})
    urls = [f"http://example.com/blog/{n}" for n in range(5)]
    urls += ["http://example.com/shop/1", "http://elsewhere.example/"]
    first = scope.links(urls, 1)
    assert [link.url for link in first] == urls[:5]
    assert scope.links(urls, 1) == first


def test_links_the_crawl_knows_already_are_admitted_without_locking_the_check(
    team, site, django_assert_num_queries
):
    build_site(site, posts=3)
    monitor = crawl_monitor(team, site.url("/"))
    check = run_check(monitor)
    job = PageJob(
        monitor.targets.get().id,
        site.url("/blog/"),
        {},
        1,
        uuid.uuid4(),
        depth=1,
        follow=True,
    )
    outcome = Outcome(PageResult.Status.SAME, {}, status_code=200)
    outcome.links = [site.url("/blog/post-1"), site.url("/"), site.url("/docs/")]
    found = Crawl.objects.get(check_run=check).found
    crawls = Frontier(check)
    with django_assert_num_queries(1):  # the frontier's keys read; no lock
        assert crawls.admit([(job, outcome, None)]) == []
    outcome.links.append(site.url("/blog/post-9"))
    [batch] = crawls.admit([(job, outcome, None)])
    assert [ref[1] for ref in batch.pages] == [site.url("/blog/post-9")]
    assert Crawl.objects.get(check_run=check).found == found + 1


def test_a_batch_with_a_redirect_and_a_download_locks_the_check_once(team, site):
    build_site(site, posts=3)
    monitor = crawl_monitor(team, site.url("/"))
    check = run_check(monitor)
    target_id = monitor.targets.get().id
    row = Crawl.objects.get(check_run=check)
    found, total = row.found, check.pages_total

    def job(path: str) -> PageJob:
        return PageJob(target_id, site.url(path), {}, 1, uuid.uuid4(), depth=1)

    moved = Outcome(PageResult.Status.NEW, {"url": site.url("/moved-about")})
    download = Outcome(
        PageResult.Status.ERROR,
        {"contentType": "application/zip"},
        error_kind=ErrorKind.UNREADABLE,
    )
    crawls = Frontier(check)
    with CaptureQueriesContext(connection) as queries:
        kept = crawls.redirected(
            [Item(job("/about"), moved, None), Item(job("/docs/b"), download, None)]
        )
        [batch] = crawls.admit(kept)

    transactions = [q for q in queries if q["sql"].startswith("SAVEPOINT")]
    assert len(transactions) == 1  # the check's row locked once
    assert [ref[1] for ref in batch.pages] == [site.url("/moved-about")]
    assert Crawl.objects.get(pk=row.pk).found == found - 2 + 1
    check.refresh_from_db()
    assert check.pages_total == total - 2 + 1


# --- Dashboard -------------------------------------------------------------------


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def test_a_checks_page_says_what_the_crawl_found_and_why_it_stopped(web, team, site):
    build_site(site, posts=5)
    monitor = crawl_monitor(team, site.url("/"))
    run_check(monitor)
    site.html("/blog/post-1", "Post 1", "<p>edited</p>")
    monitor.targets.update(crawl_options={"limit": 3})
    check = run_check(monitor)

    page = web.get(check.get_absolute_url()).content.decode()

    assert "Website crawl from 127.0.0.1" in page
    assert "3 pages found" in page
    assert "Incomplete: The crawl stopped at its limit of 3 pages." in page
    assert "were not marked as removed" in page


def test_a_running_crawls_progress_says_its_pages_are_found_so_far(web, team, site):
    monitor = crawl_monitor(team, site.url("/"))
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.RUNNING,
        pages_total=31,
        pages_done=5,
    )
    url = reverse("check-progress", kwargs={"pk": monitor.pk, "check_id": check.pk})

    polled = web.get(url, HTTP_HX_REQUEST="true").content.decode()
    shown = web.get(monitor.get_absolute_url()).content.decode()

    words = "5 pages checked of 31 found so far; more may be found"
    assert words in polled and words in shown
    assert "5 of 31 pages done" not in polled


def test_a_checks_page_says_the_crawl_went_where_its_start_address_led(web, team, site):
    with Site() as moved:
        site.redirect("/", moved.url("/"))
        moved.html("/", "Home", "<p>Moved here.</p>")
        check = run_check(crawl_monitor(team, site.url("/"), sitemap="skip"))

        page = web.get(check.get_absolute_url()).content.decode()

    assert (
        f"Its start address led to another site, 127.0.0.1:{moved.port}/, "
        "so that is the site crawled."
    ) in page


def test_a_sites_page_lists_every_page_with_when_it_was_seen(web, team, site):
    build_site(site, posts=2)
    monitor = crawl_monitor(team, site.url("/"))
    run_check(monitor)
    site.html("/blog/", "Blog", nav("/blog/post-0"))
    site.remove("/blog/post-1")
    run_check(monitor)
    target = monitor.targets.get()

    page = web.get(f"/monitors/{monitor.pk}/sites/{target.pk}/").content.decode()

    assert page.count("<tr>") == 1 + 9  # header + every page ever found
    assert "Gone" in page and site.url("/blog/post-1")[7:] in page
    detail = web.get(monitor.get_absolute_url()).content.decode()
    assert f"/monitors/{monitor.pk}/sites/{target.pk}/" in detail


def test_a_sites_page_does_not_call_a_page_that_never_loaded_on_the_site(
    web, team, site
):
    site.html("/", "Home", nav("/about", "/broken"))
    site.html("/about", "About", "<p>About us</p>")
    site.page("/broken", "Internal error", status=500)  # a 404 is no page at all
    monitor = crawl_monitor(team, site.url("/"))
    check = run_check(monitor)
    assert check.pages.get(url=site.url("/broken")).status == "error"
    target = monitor.targets.get()

    page = web.get(f"/monitors/{monitor.pk}/sites/{target.pk}/").content.decode()

    rows = {
        re.search(r">(127\.0\.0\.1:\d+/[^<]*)<", row)[1].split("/", 1)[1]: row
        for row in page.split("<tr>")[2:]
    }
    assert "On the site" in rows["about"] and "On the site" not in rows["broken"]
    assert "Could not be loaded" in rows["broken"]


def test_the_form_says_at_once_when_a_path_pattern_cannot_be_used(web):
    data = {
        "name": "Site",
        "schedule": "hourly",
        "timezone": "UTC",
        "goal": "",
        "judge": "auto",
        "retention_days": "",
        "webhook_url": "",
        "target": ["t0000bbbb"],
        "t0000bbbb-type": "crawl",
        "t0000bbbb-url": "https://example.com/",
        "t0000bbbb-include_paths": "^/blog/\n(a)\\1\n",
        "_touched": "t0000bbbb-include_paths",
    }
    response = web.post("/monitors/new/validate/", data, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert "This pattern is not valid: “\\1” is not supported here" in body


# Setting and option names mean nothing to the staff who read these reasons
# on the monitor list and the check page.
API_WORDS = ("crawlOptions", "sitemap is", "CRAWL_DEADLINE_SECONDS")


def test_a_sitemap_only_crawl_of_a_site_without_one_says_why_in_words(team, site):
    site.html("/", "Home", "<p>No sitemap here.</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="only")

    reason = crawl_result(run_check(monitor))["truncatedReason"]

    assert reason == (
        "No sitemap was found, and this crawl checks only the pages a sitemap "
        "lists, so no page was checked."
    )
    assert not any(word in reason for word in API_WORDS)


def test_a_crawl_on_a_machine_whose_clock_is_ahead_is_timed_on_the_databases_clock(
    team, site, settings, monkeypatch
):
    """A check's start is stamped by the database's clock (shared_clock), but
    its crawl deadline and its end were measured by this machine's: an hour
    ahead, every crawl stopped at once and ended before it began."""
    monkeypatch.setattr(shared_clock, "_offset", timedelta(hours=-1))
    settings.CRAWL_DEADLINE_SECONDS = 600
    site.html("/", "Home", nav("/a", "/b"))
    for name in "ab":
        site.html(f"/{name}", name, f"<p>{name}</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert crawl_result(check)["truncated"] is False
    assert check.pages.count() == 3
    assert check.started_at <= check.finished_at <= shared_clock.now()


def test_a_crawl_past_its_time_says_so_without_the_settings_name(team, site, settings):
    settings.CRAWL_DEADLINE_SECONDS = 0
    site.html("/", "Home", nav("/a", "/b"))
    for name in "ab":
        site.html(f"/{name}", name, f"<p>{name}</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    result = crawl_result(run_check(monitor))

    assert result["truncated"] is True
    assert result["truncatedReason"] == (
        "The crawl stopped after 0 minutes, the longest a crawl may run here."
    )
