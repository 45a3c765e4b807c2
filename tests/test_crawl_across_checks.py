"""A crawl checked again and again against sites shaped like the real web:
across checks a user sees only what really changed on the site (a page
still there is never `removed` then `new`), and no crawl runs away."""

from __future__ import annotations

import html
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from checks import runner
from checks.crawl.kept_out import KEPT_OUT_CHECKS, REMOVED
from checks.crawl.scope import canonical
from checks.models import Check
from config.celery import app as celery_app
from monitors.models import Membership
from tests.sites import Site, sections_site, sessions_site
from tests.test_batches import batch_ids
from tests.test_crawl import crawl_monitor, crawl_result, nav, paths, run_check

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def statuses(check: Check) -> dict[str, set[str]]:
    """The check's page paths by status."""
    by_status: dict[str, set[str]] = {}
    for status in ("new", "same", "changed", "removed", "error"):
        if found := paths(check, status):
            by_status[status] = found
    return by_status


# --- Addresses that change on every answer ---------------------------------------


def test_session_ids_and_campaign_tags_do_not_make_new_pages(team, site):
    sessions_site(site)
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip", limit=50)

    first, second, third = (run_check(monitor) for _ in range(3))

    assert paths(first) == {"", "a", "b?page=2", "c", "d?id=7"}
    assert crawl_result(first)["truncated"] is False
    for later in (second, third):
        # The links' session ids are in the pages' text, so a page may read as
        # changed; it is the same page, never removed and found anew.
        assert paths(later) == paths(first)
        assert set(statuses(later)) <= {"same", "changed"}
    asked = {request.path for request in site.requests}
    assert not [path for path in asked if "sid" in path.lower() or "utm_" in path]


def test_an_article_id_named_sid_keeps_each_article_its_own_page(team, site):
    # PHP-Nuke and e107 name an article by `sid`: a short number, no session.
    site.html("/", "News", nav("/article.php?sid=124", "/article.php?sid=125"))
    site.html("/article.php?sid=124", "One", "<p>The first article.</p>")
    site.html("/article.php?sid=125", "Two", "<p>The second article.</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert paths(check) == {"", "article.php?sid=124", "article.php?sid=125"}
    assert paths(check, "error") == set()


def test_a_sid_that_looks_like_a_token_is_dropped_as_a_session():
    token = "0123456789abcdef0123456789abcdef"
    assert canonical(f"http://example.com/a.php?sid={token}&page=2") == (
        "http://example.com/a.php?page=2"
    )
    assert canonical("http://example.com/a.php?sid=124&session_id=7") == (
        "http://example.com/a.php?session_id=7&sid=124"
    )
    assert canonical("http://example.com/a.php?PHPSESSID=7") == (
        "http://example.com/a.php"
    )


# --- A site larger than the crawl's limit ------------------------------------------


def test_a_site_larger_than_the_limit_is_the_same_pages_on_every_check(team, site):
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip", limit=20)
    checks = []
    for order in range(3):
        sections_site(site, order)
        checks.append(run_check(monitor))
    first, second, third = checks

    assert len(paths(first)) == 20 and crawl_result(first)["truncated"] is True
    # The pages answering first differ, yet the crawl takes the pages it
    # had: nothing is new, nothing is left out.
    assert statuses(second) == statuses(third) == {"same": paths(first)}
    assert crawl_result(third)["pagesFound"] == 20


def test_a_new_page_on_a_site_past_the_limit_takes_the_room_of_one_gone(team, site):
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip", limit=20)
    sections_site(site, 0)
    first = run_check(monitor)
    [gone] = sorted(p for p in paths(first) if p.count("/") == 1)[:1]
    section = "/" + gone.split("/")[0]
    others = [f"{section}/p{j}" for j in range(4) if f"{section}/p{j}" != "/" + gone]
    site.html(section, section, nav(*others, f"{section}/fresh"))
    site.html(f"{section}/fresh", "Fresh", "<p>Just written.</p>")
    site.remove("/" + gone)

    second = run_check(monitor)

    assert paths(second, "new") == {f"{section[1:]}/fresh"}
    assert paths(second) == paths(first) - {gone} | {f"{section[1:]}/fresh"}
    # The crawl stopped at its limit: a page it did not reach is not called
    # removed, even this one, gone from the site.
    assert paths(second, "removed") == set()


# --- One page, many spellings ----------------------------------------------------


def test_a_page_linked_with_and_without_its_slash_keeps_the_address_it_had(team, site):
    site.html("/", "Home", nav("/x", "/y"))
    site.html("/a", "A", "<p>a</p>")
    site.html("/a/", "A", "<p>a</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    checks = []
    for order in range(3):
        # Which of /x and /y answers first decides which link to /a is met first.
        site.html("/x", "X", nav("/a/"), delay=0.2 if order % 2 else 0)
        site.html("/y", "Y", nav("/a"), delay=0 if order % 2 else 0.2)
        checks.append(run_check(monitor))
    first, second, third = checks

    assert paths(first) == {"", "x", "y", "a/"}
    assert statuses(second) == statuses(third) == {"same": paths(first)}


# --- robots.txt changing between checks ---------------------------------------------


def test_a_page_robots_txt_keeps_out_for_a_while_is_not_removed_then_new(team, site):
    site.html("/", "Home", nav("/a", "/b"))
    site.html("/a", "A", "<p>a</p>")
    site.html("/b", "B", "<p>b</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    first = run_check(monitor)
    site.page("/robots.txt", "User-agent: *\nDisallow: /a\n", content_type="text/plain")

    kept_out = run_check(monitor)
    site.remove("/robots.txt")
    back = run_check(monitor)

    assert paths(first) == {"", "a", "b"}
    # Listed, saying why it was not looked at, rather than left out silently.
    assert statuses(kept_out) == {"same": {"", "b"}, "error": {"a"}}
    [page] = kept_out.pages.filter(status="error")
    assert "robots.txt" in page.error and "Not checked" in page.error
    assert kept_out.status == Check.Status.PARTIAL
    assert site.requests_to("/a") and len(site.requests_to("/a")) == 2
    assert statuses(back) == {"same": {"", "a", "b"}}


def test_a_page_robots_txt_keeps_out_for_good_is_removed_once_saying_why(
    team, site, client, django_user_model
):
    site.html("/", "Home", nav("/a", "/b"))
    site.html("/a", "A", "<p>a</p>")
    site.html("/b", "B", "<p>b</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.page("/robots.txt", "User-agent: *\nDisallow: /a\n", content_type="text/plain")

    kept_out = [run_check(monitor) for _ in range(KEPT_OUT_CHECKS + 1)]

    *waiting, removed, after = kept_out
    for check in waiting:
        assert statuses(check) == {"same": {"", "b"}, "error": {"a"}}
    assert statuses(removed) == {"same": {"", "b"}, "removed": {"a"}}
    [page] = removed.pages.filter(status="removed")
    assert page.error == "The site's robots.txt now asks crawlers to stay out."
    assert removed.status == Check.Status.COMPLETED
    assert statuses(after) == {"same": {"", "b"}}  # once, then no longer listed
    assert len(site.requests_to("/a")) == 1  # the first check's, never since
    user = django_user_model.objects.create_user("ana", "ana@acme.test", "pw-x")
    Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
    client.force_login(user)
    for check, said in ((waiting[0], "Not checked: the site"), (removed, REMOVED)):
        ids = {"pk": monitor.pk, "check_id": check.pk}
        shown = html.unescape(client.get(reverse("check-detail", kwargs=ids)).text)
        assert said in shown


# --- Links that lead to no page ----------------------------------------------------


def test_links_to_pages_that_never_were_are_no_error_on_every_check(team, site):
    site.html("/", "Home", nav("/a", "/missing", "/loop"))
    site.html("/a", "A", "<p>a</p>")
    site.redirect("/loop", "/loop-back")
    site.redirect("/loop-back", "/loop")
    sitemap = f"<url><loc>{site.url('/listed-but-gone')}</loc></url>"
    site.page(
        "/sitemap.xml",
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{sitemap}</urlset>',
        content_type="application/xml",
    )
    monitor = crawl_monitor(team, site.url("/"))

    first, second = run_check(monitor), run_check(monitor)

    for check in (first, second):
        assert check.status == Check.Status.COMPLETED, check.error
        assert paths(check) == {"", "a"}
        assert crawl_result(check)["pagesFound"] == 2
    assert statuses(second) == {"same": {"", "a"}}
    assert crawl_result(second)["truncated"] is False


# --- Redirects ---------------------------------------------------------------------


def test_redirects_are_one_page_and_a_redirect_out_of_the_crawl_is_never_followed(
    team, site
):
    with Site() as other:
        other.html("/", "Elsewhere", "<p>another site</p>")
        site.html("/", "Home", nav("/old", "/chain", "/away", "/private/", "/new"))
        site.redirect("/old", "/new", 301)
        site.redirect("/chain", "/chain-2", 301)
        site.redirect("/chain-2", "/new", 302)
        site.html("/new", "New", "<p>new</p>")
        site.redirect("/away", other.url("/"))
        site.redirect("/private/", "/admin/")
        site.page("/robots.txt", "User-agent: *\nDisallow: /admin/\n")
        monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

        checks = [run_check(monitor) for _ in range(3)]

    for check in checks:
        assert paths(check) == {"", "new"}
        assert check.status == Check.Status.COMPLETED, check.error
    assert statuses(checks[2]) == {"same": {"", "new"}}
    assert other.requests == [] and site.requests_to("/admin/") == []


# --- Paths written many ways --------------------------------------------------------


def test_a_path_with_doubled_slashes_or_dot_segments_is_the_one_page(team, site):
    doubled = site.url("//docs/page")  # not "//docs/page": that names a host
    site.html("/", "Home", nav("/docs//page", doubled, "/docs/x/../page"))
    site.html("/docs/page", "Page", "<p>the page</p>")
    site.html("/docs//page", "Page", "<p>the page</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")

    first, second = run_check(monitor), run_check(monitor)

    assert len(paths(first)) == 2 and "" in paths(first)
    [page] = paths(first) - {""}
    assert page in {"docs/page", "docs//page"}
    assert statuses(second) == {"same": paths(first)}
    # No segment is lost on the way: nothing asked for a page that is not there.
    assert {r.path for r in site.requests} <= {
        "/",
        "/robots.txt",
        "/docs/page",
        "/docs//page",
        "//docs/page",
        "/docs/",
    }


# --- Links waiting for room, and a worker lost --------------------------------------


def test_links_left_waiting_by_a_lost_worker_are_sent_by_the_sweeper(
    team, site, monkeypatch
):
    site.html("/", "Home", nav("/d", "/c", "/b", "/a"))
    for path in ("/a", "/b", "/c", "/d"):
        site.html(path, path, f"<p>{path}</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip", limit=3)
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    assert runner.claim(check)
    [start] = runner.plan(check)
    # Four links for two places: they wait until no batch is open, and the
    # worker dies before it admits them.
    assert runner._run_batch(start, None) == []
    long_ago = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    Check.objects.filter(pk=check.pk).update(heartbeat_at=long_ago)
    sent: list[tuple[str, list]] = []

    def send_task(name: str, args: Any = None, **_options: Any) -> None:
        sent.append((name, list(args or [])))

    monkeypatch.setattr(celery_app, "send_task", send_task)
    assert runner.fail_stale_checks(timezone.now()) == 0

    [waited] = batch_ids(sent)
    assert runner.run_batch(waited)
    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED
    assert paths(check) == {"", "a", "b"}  # nearest first, then by address
    assert "limit of 3 pages" in crawl_result(check)["truncatedReason"]
