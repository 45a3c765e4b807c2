"""Crawl targets (issue #17): a whole site on every check, in-process runner
against 127.0.0.1 sites (the SDK + real worker run is in
test_worker_integration.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from checks import runner
from checks.crawl.scope import Scope, compile_pattern
from checks.fetch import transport
from checks.models import Check, Crawl, PageResult
from monitors.models import Monitor, Target
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
    site.html("/docs/a", "Doc A", "<p>A</p>")
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
    pages = check.pages.all() if status is None else check.pages.filter(status=status)
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
    assert "start page could not be fetched" in crawl_result(check)["truncatedReason"]
