"""A crawl checked again and again against sites shaped like the real web:
across checks a user sees only what really changed on the site (a page
still there is never `removed` then `new`), and no crawl runs away."""

from __future__ import annotations

import itertools

import pytest

from checks.models import Check
from tests.sites import Answer, Request, Site
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


def session_site(site: Site) -> None:
    """Every answer links its pages with a new session id, in the path
    (Java's ;jsessionid=) or in the query (PHP's PHPSESSID, a bare sid),
    and with campaign tags (utm_*) that differ by page."""
    sessions = itertools.count()

    def answer(request: Request) -> Answer:
        sid = f"{next(sessions):032x}"
        links = nav(
            f"/a;jsessionid={sid}",
            f"/b?PHPSESSID={sid}&page=2",
            f"/c?sid={sid}",
            "/d?utm_source=news&utm_medium=mail&id=7",
        )
        title = urlsplit_path(request.path)
        body = f"<html><head><title>{title}</title></head><body>{links}</body></html>"
        return 200, {"Content-Type": "text/html"}, body.encode()

    for path in ("/", "/a", "/b", "/c", "/d"):
        site.handle(path, answer)


def urlsplit_path(path: str) -> str:
    return path.split("?", 1)[0].split(";", 1)[0]


def test_session_ids_and_campaign_tags_do_not_make_new_pages(team, site):
    session_site(site)
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
