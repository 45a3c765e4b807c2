"""A crawl check's page reads the way its site changed: a removed page is
named by the title it last had, pages found this time do not count a page
that is gone, and changed pages come first."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from monitors.models import Membership
from tests.test_crawl import crawl_monitor, nav, run_check

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def text_of(response) -> str:
    return text_of_html(response.content.decode())


def text_of_html(body: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


@pytest.fixture
def recrawled(team, site):
    """A site of a home page and five pages: one is edited, one answers 404
    (still linked from home), one is no longer linked at all."""
    pages = ["/a", "/b", "/c", "/old", "/gone"]
    site.html("/", "Home", nav(*pages))
    for path in pages:
        site.html(path, f"Title of {path}", f"<p>{path} text</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.html("/", "Home", nav("/a", "/b", "/c", "/old"))
    site.html("/c", "Title of /c", "<p>/c text, edited</p>")
    site.remove("/old")
    site.remove("/gone")
    return run_check(monitor)


def test_removed_pages_are_named_by_their_last_title(web, recrawled):
    words = text_of(web.get(recrawled.get_absolute_url()))
    assert "Title of /old" in words and "Title of /gone" in words


def test_removed_pages_are_named_by_their_last_title_in_the_history(web, recrawled):
    body = web.get(reverse("team-history")).content.decode()
    newest = body.split('class="feed-item"')[1]  # the recrawl, not the first check
    words = text_of_html(newest)
    assert "Title of /old" in words and "Title of /gone" in words


def test_a_removed_page_is_headed_by_its_last_title(web, recrawled):
    gone = recrawled.pages.get(status="removed", url__endswith="/old")
    body = web.get(gone.get_absolute_url()).content.decode()
    assert re.search(r"<h1[^>]*>Title of /old</h1>", body)


def test_pages_found_do_not_count_the_pages_that_are_gone(web, recrawled):
    words = text_of(web.get(recrawled.get_absolute_url()))
    assert "4 pages found — 0 new, 2 changed; 2 pages no longer there." in words


def test_changed_pages_are_listed_first(web, recrawled):
    body = web.get(recrawled.get_absolute_url()).content.decode()
    rows = re.findall(r'class="badge s-(\w+)"', body.split('id="page-results"')[1])
    assert rows[0] == "changed"
    assert rows.index("removed") < rows.index("same")


def test_a_crawl_monitor_writes_its_page_limit_as_the_form_does(web, team):
    # The form says "Empty means up to 10,000."; the monitor read "10000".
    unlimited = crawl_monitor(team, "https://example.com/")
    limited = crawl_monitor(team, "https://example.org/", limit=2500)
    assert "up to 10,000 pages" in text_of(web.get(unlimited.get_absolute_url()))
    assert "up to 2,500 pages" in text_of(web.get(limited.get_absolute_url()))


def test_a_page_that_could_not_be_checked_is_named_by_its_last_title(web, team, site):
    site.html("/", "Home", nav("/a"))
    site.html("/a", "Title of /a", "<p>a</p>")
    monitor = crawl_monitor(team, site.url("/"), sitemap="skip")
    run_check(monitor)
    site.page("/a", "busy", status=500)

    check = run_check(monitor)

    failed = check.pages.get(status="error")
    words = text_of(web.get(check.get_absolute_url()))
    short = failed.url.removeprefix("http://")
    assert f"Title of /a {short} Error" in words
    body = web.get(failed.get_absolute_url()).content.decode()
    assert re.search(r"<h1[^>]*>Title of /a</h1>", body)
