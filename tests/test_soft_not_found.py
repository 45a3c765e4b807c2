"""Soft 404s: a page the site took down that still answers HTTP 200 with the
site's "not found" page is gone, as a real 404 would say, never a change of
its text. Real pages on 127.0.0.1 (tests/sites.py); the made-up address that
confirms it is counted on the test server."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from checks import runner
from checks.content.not_found import looks_not_found, probe_url, same_text
from checks.crawl.scope import Scope
from checks.errors import ErrorKind, error_words
from checks.fetch import OutboundClient
from checks.jobs import PageJob, Via
from checks.models import Check, PageResult, PageState
from checks.notify import reports
from checks.pipeline.extract import extract_page
from checks.pipeline.fetch import BrowserFetcher, Fetchers, HttpFetcher
from checks.pipeline.not_found import NotFoundProbe
from monitors.models import Membership, Monitor, Target, Team
from tests.sites import Site, self_signed

pytestmark = pytest.mark.django_db

NOT_FOUND = (
    "<!doctype html><html><head><title>Page not found – Acme Shop</title></head>"
    "<body><nav><a href='/'>Home</a> <a href='/shop/'>Shop</a></nav>"
    "<main><h1>Oops! We can't find that page.</h1>"
    "<p>The page you are looking for does not exist or has been moved.</p>"
    "<p>Try our <a href='/search'>search</a>.</p></main></body></html>"
)
PRODUCT = "".join(
    f"<p>The Widget {n} is a sturdy steel widget for every workshop, made to "
    f"last for years, with a two-year warranty and free returns.</p>"
    for n in range(12)
)


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


@pytest.fixture
def shop(site: Site) -> Site:
    """A shop whose unknown addresses answer its "not found" page with 200."""
    site.otherwise(NOT_FOUND)
    site.html("/shop/widget", "Widget – Acme Shop", f"<h1>Widget</h1>{PRODUCT}")
    return site


def make_monitor(team: Team, urls: list[str]) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=urls)
    return monitor


def crawl_monitor(team: Team, url: str, **options: Any) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Site", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="crawl", url=url, crawl_options=options)
    return monitor


def run_check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return runner.run(check)


def state_of(monitor: Monitor, url: str) -> PageState:
    return PageState.objects.get(monitor=monitor, url_hash=PageState.hash_url(url))


def made_up(site: Site, known: set[str]) -> list[str]:
    """Paths the site was asked for that it never had: the probes (robots.txt,
    read before a probe, is not one)."""
    known = known | {"/robots.txt"}
    return [r.path for r in site.requests if urlsplit(r.path).path not in known]


# --- A page taken down ----------------------------------------------------------


def test_a_product_page_that_becomes_the_sites_not_found_page_is_removed_saying_why(
    team, shop
):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    kept = state_of(monitor, url)
    shop.remove("/shop/widget")  # the shop's not-found page, with HTTP 200

    check = run_check(monitor)

    page = check.pages.get(url=url)
    assert page.status == PageResult.Status.REMOVED
    assert page.status_code == 200
    assert page.error_kind == ErrorKind.NOT_FOUND_PAGE
    assert "not found" in page.error and "200" in page.error
    assert page.diff is None and page.current_snapshot_id is None
    assert check.summary["removed"] == 1 and check.summary["changed"] == 0
    state = state_of(monitor, url)
    assert state.presence == PageState.Presence.REMOVED
    assert state.snapshot_id == kept.snapshot_id  # kept as a real 404 keeps it
    assert "not found" in error_words(page.error_kind, 200, page.error)


def test_a_page_still_showing_the_not_found_page_is_still_gone_then_new_when_back(
    team, shop
):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.remove("/shop/widget")
    run_check(monitor)

    later = run_check(monitor)

    page = later.pages.get(url=url)
    assert page.status == PageResult.Status.SAME and page.is_still_gone
    assert page.current_snapshot_id is None and page.previous_snapshot_id is None
    assert later.summary["error"] == 0
    assert state_of(monitor, url).presence == PageState.Presence.REMOVED
    shop.html("/shop/widget", "Widget – Acme Shop", f"<h1>Widget</h1>{PRODUCT}")
    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.NEW


def test_the_made_up_address_is_asked_once_per_host_in_a_check(team, shop):
    for name in ("gadget", "gizmo"):
        shop.html(f"/shop/{name}", name, f"<h1>{name}</h1>{PRODUCT}")
    urls = [shop.url(f"/shop/{name}") for name in ("widget", "gadget", "gizmo")]
    monitor = make_monitor(team, urls)
    run_check(monitor)
    for name in ("widget", "gadget", "gizmo"):
        shop.remove(f"/shop/{name}")
    before = len(shop.requests)

    check = run_check(monitor)

    assert {p.status for p in check.pages.all()} == {PageResult.Status.REMOVED}
    probes = made_up(shop, {urlsplit(u).path for u in urls})
    assert len(probes) == 1 and probes[0].startswith("/shop/")
    # Three pages, robots.txt and one probe.
    assert len(shop.requests) - before == 5


def test_the_made_up_address_is_asked_as_the_page_is(team, shop):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    monitor.targets.update(scrape_options={"headers": {"X-Shop-Key": "k1"}})
    run_check(monitor)
    shop.remove("/shop/widget")

    run_check(monitor)

    [probe] = [
        r
        for r in shop.requests
        if urlsplit(r.path).path not in ("/shop/widget", "/robots.txt")
    ]
    [page] = shop.requests_to("/shop/widget")[-1:]
    assert probe.header("X-Shop-Key") == "k1"
    assert probe.header("User-Agent") == page.header("User-Agent")


def test_an_unchanged_page_pays_for_no_made_up_address(team, shop):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)

    check = run_check(monitor)

    assert check.pages.get(url=url).status == PageResult.Status.SAME
    assert made_up(shop, {"/shop/widget"}) == []


def test_a_deep_page_redirecting_home_as_any_unknown_address_does_is_removed(
    team, site
):
    site.html("/", "Acme", "<h1>Welcome to Acme</h1><p>Our latest offers.</p>")
    site.html("/shop/widget", "Widget", f"<h1>Widget</h1>{PRODUCT}")
    url = site.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.otherwise("", status=302, headers={"Location": "/"})
    site.remove("/shop/widget")

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.REMOVED
    assert page.error_kind == ErrorKind.NOT_FOUND_PAGE


def test_people_are_told_the_page_shows_the_sites_not_found_page(team, shop, web):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.remove("/shop/widget")
    removed = run_check(monitor)
    later = run_check(monitor)

    [line] = reports.change_report(removed).pages
    listed = web.get(later.get_absolute_url()).content.decode()
    shown = web.get(removed.pages.get(url=url).get_absolute_url()).content.decode()

    assert (line.status, line.url) == ("removed", url)
    assert "site's “not found” page" in line.error
    assert "Still gone (the site shows its “not found” page)" in listed
    assert "although the server answered HTTP 200" in shown


# --- Pages that are not gone ----------------------------------------------------


def test_a_search_page_that_now_says_no_results_found_is_changed(team, shop):
    results = "".join(
        f"<li>Shoe model {n}, leather, size 38 to 46</li>" for n in range(30)
    )
    url = shop.html(
        "/search", "Search: shoes", f"<h1>Results for shoes</h1><ul>{results}</ul>"
    )
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.html(
        "/search",
        "Search: shoes – nothing found",
        "<h1>No results found</h1><p>Nothing was found for “shoes”.</p>",
    )

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.CHANGED
    assert page.error_kind == ""
    assert state_of(monitor, url).presence == PageState.Presence.ACTIVE


def test_a_page_saying_not_found_on_a_site_answering_real_404s_is_changed(team, site):
    url = site.html("/shop/widget", "Widget", f"<h1>Widget</h1>{PRODUCT}")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/shop/widget", NOT_FOUND)  # unknown addresses answer a real 404

    check = run_check(monitor)

    page = check.pages.get(url=url)
    assert page.status == PageResult.Status.CHANGED
    assert page.error_kind == ""
    assert len(made_up(site, {"/shop/widget"})) == 1  # asked, answered 404


def test_a_page_answering_a_real_404_asks_no_made_up_address(team, site):
    url = site.html("/shop/widget", "Widget", f"<h1>Widget</h1>{PRODUCT}")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.remove("/shop/widget")

    page = run_check(monitor).pages.get(url=url)

    assert (page.status, page.status_code) == (PageResult.Status.REMOVED, 404)
    assert page.error_kind == "" and page.error is None
    assert made_up(site, {"/shop/widget"}) == []


# --- The first check ------------------------------------------------------------


def test_the_first_check_of_a_not_found_address_is_an_error_not_a_baseline(team, shop):
    url = shop.url("/shop/no-such-widget")
    monitor = make_monitor(team, [url])

    check = run_check(monitor)

    page = check.pages.get(url=url)
    assert page.status == PageResult.Status.ERROR
    assert page.status_code == 200
    assert page.error_kind == ErrorKind.NOT_FOUND_PAGE
    assert "looks like the site's" in page.error
    assert page.current_snapshot_id is None
    assert not PageState.objects.filter(
        monitor=monitor, snapshot__isnull=False
    ).exists()


# --- Crawls ---------------------------------------------------------------------


def test_a_crawled_page_that_becomes_the_not_found_page_is_removed_saying_why(
    team, shop
):
    shop.html(
        "/", "Acme", "<a href='/shop/widget'>Widget</a> <a href='/about'>About</a>"
    )
    shop.html("/about", "About", "<p>About Acme, a shop since 1990.</p>")
    monitor = crawl_monitor(team, shop.url("/"), sitemap="skip")
    first = run_check(monitor)
    assert first.pages.count() == 3
    shop.remove("/shop/widget")  # still linked from the home page

    check = run_check(monitor)

    page = check.pages.get(url=shop.url("/shop/widget"))
    assert page.status == PageResult.Status.REMOVED
    assert page.error_kind == ErrorKind.NOT_FOUND_PAGE
    assert check.summary["changed"] == 0
    assert check.pages.get(url=shop.url("/about")).status == PageResult.Status.SAME


def test_a_crawled_link_to_a_not_found_page_never_seen_is_no_page(team, shop):
    shop.html(
        "/", "Acme", "<a href='/shop/widget'>Widget</a> <a href='/shop/gone'>Old</a>"
    )
    monitor = crawl_monitor(team, shop.url("/"), sitemap="skip")

    check = run_check(monitor)

    assert not check.pages.filter(url=shop.url("/shop/gone")).exists()
    assert check.summary["error"] == 0


# --- The probe and its words ----------------------------------------------------


def test_the_made_up_address_goes_through_the_address_policy(settings, shop):
    job = PageJob(uuid.uuid4(), shop.url("/shop/no-such"), {}, 1, uuid.uuid4())
    fetched = asyncio.run(_fetch(job))
    outcome = extract_page(job, fetched, None)
    assert outcome.not_found is not None
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    before = len(shop.requests)

    confirmed = asyncio.run(_confirm(job, outcome))

    assert len(shop.requests) == before  # refused before connecting
    assert confirmed.status == PageResult.Status.NEW  # not taken for a soft 404


async def _fetch(job: PageJob) -> Any:
    client = OutboundClient()
    try:
        return await client.fetch(job.url)
    finally:
        await client.aclose()


async def _confirm(job: PageJob, outcome: Any, scope: Scope | None = None) -> Any:
    fetchers = Fetchers(HttpFetcher(OutboundClient()), BrowserFetcher())
    probe = NotFoundProbe(fetchers, uuid.uuid4(), lambda job: scope)
    try:
        return await probe.confirm(job, outcome, None)
    finally:
        await fetchers.aclose()


@pytest.mark.parametrize(
    ("title", "heading"),
    [
        ("Page not found – Acme", ""),
        ("404", ""),
        ("Acme", "Oops! That page can’t be found."),
        ("Seite nicht gefunden", ""),
        ("Page introuvable", ""),
        ("Página no encontrada", ""),
        ("Pagina non trovata", ""),
        ("Página não encontrada", ""),
        ("Pagina niet gevonden", ""),
        ("Acme", "This page doesn't exist"),
    ],
)
def test_not_found_pages_are_told_by_their_title_or_heading(title, heading):
    assert looks_not_found(title, heading, "")


@pytest.mark.parametrize(
    ("title", "heading"),
    [
        ("Search: shoes", "No results found"),
        ("Acme", "Widget"),
        ("Lost and found", "Found: a grey cat"),
    ],
)
def test_other_pages_are_not_told_for_not_found_pages(title, heading):
    assert not looks_not_found(title, heading, "")


def test_a_made_up_address_sits_beside_the_page_on_the_same_host():
    probe = urlsplit(probe_url("https://shop.example/shop/widget.html?id=3"))

    assert (probe.scheme, probe.netloc) == ("https", "shop.example")
    assert probe.path.startswith("/shop/") and probe.path.endswith(".html")
    assert probe.path != "/shop/widget.html" and probe.query == ""


def test_texts_that_differ_only_by_their_address_are_the_same_page():
    page = "# Not found\n\nNothing at /shop/widget. Go home."
    probe = "# Not found\n\nNothing at /shop/xq81kz. Go home."

    assert same_text(page, probe, ("/shop/widget", "/shop/xq81kz"))
    assert not same_text(page, "# Widget\n\nA sturdy widget.", ())


# --- Removed pages, home pages, several targets --------------------------------

BODY_ONLY_NOT_FOUND = (
    "<!doctype html><html><head><title>Acme Shop</title></head>"
    "<body><main><h2>Oops</h2>"
    "<p>Sorry, the page you are looking for does not exist.</p></main></body></html>"
)


def test_a_removed_page_whose_not_found_page_says_so_only_in_its_text_stays_gone(
    team, site
):
    site.otherwise(BODY_ONLY_NOT_FOUND)
    url = site.html("/shop/widget", "Widget", f"<h1>Widget</h1>{PRODUCT}")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    kept = state_of(monitor, url)
    site.remove("/shop/widget")
    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.REMOVED

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.SAME and page.is_still_gone
    assert page.error_kind == ErrorKind.NOT_FOUND_PAGE
    state = state_of(monitor, url)
    assert state.presence == PageState.Presence.REMOVED
    assert state.snapshot_id == kept.snapshot_id  # not the not-found page


def test_a_removed_deep_page_still_redirecting_home_stays_gone(team, site):
    site.html("/", "Acme", "<h1>Welcome to Acme</h1><p>Our latest offers.</p>")
    url = site.html("/shop/widget", "Widget", f"<h1>Widget</h1>{PRODUCT}")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.otherwise("", status=302, headers={"Location": "/"})
    site.remove("/shop/widget")
    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.REMOVED

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.SAME and page.is_still_gone
    assert state_of(monitor, url).presence == PageState.Presence.REMOVED


def test_a_home_page_watched_through_an_address_that_always_led_home_changes(
    team, site
):
    home = "<h1>Welcome to Acme</h1>" + "".join(
        f"<p>Offer {n}: widgets at $10 each, while stocks last.</p>" for n in range(10)
    )
    site.html("/", "Acme", home)
    site.otherwise("", status=302, headers={"Location": "/"})  # /en/ too
    url = site.url("/en/")
    monitor = make_monitor(team, [url])
    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.NEW
    site.html("/", "Acme", home.replace("$10", "$12"))

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.CHANGED
    assert page.error_kind == ""
    assert state_of(monitor, url).presence == PageState.Presence.ACTIVE


def test_each_target_on_a_host_has_the_made_up_address_read_with_its_own_options(
    team, shop
):
    shop.html("/shop/gadget", "Gadget", f"<h1>Gadget</h1>{PRODUCT}")
    plain, trimmed = shop.url("/shop/widget"), shop.url("/shop/gadget")
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[plain])
    Target.objects.create(
        monitor=monitor,
        type="scrape",
        urls=[trimmed],
        scrape_options={"excludeTags": ["h1", "nav", "a"]},
    )
    run_check(monitor)
    shop.remove("/shop/widget")
    shop.remove("/shop/gadget")

    check = run_check(monitor)

    assert {p.url: p.status for p in check.pages.all()} == {
        plain: PageResult.Status.REMOVED,
        trimmed: PageResult.Status.REMOVED,
    }
    assert len(made_up(shop, {"/shop/widget", "/shop/gadget"})) == 2


class _SeenBrowser(BrowserFetcher):
    """A browser that fetches over plain HTTP and keeps the jobs it is given."""

    def __init__(self, http: HttpFetcher) -> None:
        super().__init__()
        self.http = http
        self.jobs: list[PageJob] = []

    async def fetch(self, job: PageJob, headers: Any, stop_at: Any = None) -> Any:
        self.jobs.append(job)
        return await self.http.fetch(job, headers, stop_at)


def test_a_made_up_address_in_the_browser_neither_acts_nor_takes_a_screenshot(shop):
    options = {
        "formats": ["markdown", {"type": "screenshot", "fullPage": True}],
        "actions": [{"type": "click", "selector": "#buy"}],
        "waitFor": 300,
    }
    job = PageJob(uuid.uuid4(), shop.url("/shop/no-such"), options, 1, uuid.uuid4())
    job = dataclasses.replace(job, browser=Via.OPTIONS)
    http = HttpFetcher(OutboundClient())
    browser = _SeenBrowser(http)

    async def confirm() -> Any:
        fetched = await http.fetch(job, job.headers)
        outcome = extract_page(job, fetched, None)
        assert outcome.not_found is not None
        try:
            return await NotFoundProbe(Fetchers(http, browser), uuid.uuid4()).confirm(
                job, outcome, None
            )
        finally:
            await http.aclose()

    confirmed = asyncio.run(confirm())

    assert confirmed.error_kind == ErrorKind.NOT_FOUND_PAGE
    [asked] = browser.jobs
    assert asked.url != job.url
    assert "actions" not in asked.options
    assert asked.options["formats"] == ["markdown"]
    assert asked.options["waitFor"] == 300  # the page is still given its time


@pytest.mark.parametrize(
    ("url", "beside"),
    [
        ("https://shop.example/docs/http-404/", "/docs/"),
        ("https://shop.example/docs/v1.2/", "/docs/"),
        ("https://shop.example/", "/"),
    ],
)
def test_a_made_up_address_for_a_folder_address_sits_beside_it(url, beside):
    path = urlsplit(probe_url(url)).path

    assert path.startswith(f"{beside}pagewatch-") and path.endswith("/")
    assert path.count("/") == beside.count("/") + 1


# --- robots.txt -----------------------------------------------------------------

KEEP_OUT_OF_SHOP = "User-agent: *\nDisallow: /shop/\n"


def test_a_made_up_address_robots_txt_disallows_is_not_asked(team, shop, web):
    shop.page("/robots.txt", KEEP_OUT_OF_SHOP, content_type="text/plain")
    url = shop.url("/shop/widget")  # asked for by the user: fetched all the same
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.remove("/shop/widget")

    check = run_check(monitor)

    assert made_up(shop, {"/shop/widget"}) == []
    page = check.pages.get(url=url)
    assert page.status == PageResult.Status.CHANGED  # as when a probe fails
    assert page.error_kind == ""
    assert state_of(monitor, url).presence == PageState.Presence.ACTIVE
    shown = web.get(page.get_absolute_url()).content.decode()
    assert "robots.txt asks crawlers not to open" in shown


def test_robots_txt_is_read_once_per_host_in_a_check_for_the_made_up_addresses(
    team, shop
):
    shop.page("/robots.txt", "User-agent: *\nDisallow: /private/\n")
    shop.html("/shop/gadget", "Gadget", f"<h1>Gadget</h1>{PRODUCT}")
    plain, trimmed = shop.url("/shop/widget"), shop.url("/shop/gadget")
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[plain])
    Target.objects.create(
        monitor=monitor,
        type="scrape",
        urls=[trimmed],
        scrape_options={"excludeTags": ["nav"]},
    )
    run_check(monitor)
    shop.remove("/shop/widget")
    shop.remove("/shop/gadget")

    check = run_check(monitor)

    assert {p.status for p in check.pages.all()} == {PageResult.Status.REMOVED}
    assert len(made_up(shop, {"/shop/widget", "/shop/gadget"})) == 2
    assert len(shop.requests_to("/robots.txt")) == 1


def test_a_crawl_obeys_the_robots_txt_it_read_for_a_made_up_address(team, shop):
    shop.page("/robots.txt", "User-agent: *\nDisallow: /shop/pagewatch-\n")
    shop.html("/", "Acme", "<a href='/shop/widget'>Widget</a>")
    monitor = crawl_monitor(team, shop.url("/"), sitemap="skip")
    run_check(monitor)
    shop.remove("/shop/widget")  # still linked from the home page
    read_before = len(shop.requests_to("/robots.txt"))

    check = run_check(monitor)

    # The not-found page's own links are crawled: no made-up address is.
    assert [r.path for r in shop.requests if "/pagewatch-" in r.path] == []
    page = check.pages.get(url=shop.url("/shop/widget"))
    assert page.status == PageResult.Status.CHANGED
    assert page.metadata.get("notFoundUnconfirmed") == "robots"
    # Read once, by the crawl's start: the made-up address used what it read.
    assert len(shop.requests_to("/robots.txt")) == read_before + 1


# --- A page gone, looked at again -----------------------------------------------


def test_a_page_still_showing_the_not_found_page_it_was_confirmed_as_asks_nothing(
    team, shop
):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.remove("/shop/widget")
    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.REMOVED
    before = len(shop.requests)

    later = run_check(monitor)
    again = run_check(monitor)

    for check in (later, again):
        page = check.pages.get(url=url)
        assert page.status == PageResult.Status.SAME and page.is_still_gone
        assert page.error_kind == ErrorKind.NOT_FOUND_PAGE
    # Only the page itself, twice: no robots.txt, no made-up address.
    assert [urlsplit(r.path).path for r in shop.requests[before:]] == [
        "/shop/widget",
        "/shop/widget",
    ]
    assert state_of(monitor, url).presence == PageState.Presence.REMOVED


def test_a_gone_page_showing_a_new_not_found_page_is_confirmed_once_again(team, shop):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.remove("/shop/widget")
    run_check(monitor)
    shop.otherwise(NOT_FOUND.replace("Oops!", "Sorry!"))  # the site's new design
    before = len(made_up(shop, {"/shop/widget"}))

    redesigned = run_check(monitor).pages.get(url=url)
    after = run_check(monitor).pages.get(url=url)

    assert redesigned.is_still_gone and after.is_still_gone
    assert len(made_up(shop, {"/shop/widget"})) == before + 1


def test_a_page_brought_back_forgets_the_not_found_page_it_showed(team, shop):
    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.remove("/shop/widget")
    run_check(monitor)
    assert state_of(monitor, url).not_found_hash != ""
    shop.html("/shop/widget", "Widget – Acme Shop", f"<h1>Widget</h1>{PRODUCT}")

    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.NEW

    assert state_of(monitor, url).not_found_hash == ""


# --- A page never seen ----------------------------------------------------------


def test_a_first_check_tells_a_not_found_page_by_its_first_lines(team, site):
    site.otherwise(BODY_ONLY_NOT_FOUND)  # its title and heading say nothing
    url = site.url("/shop/no-such-widget")
    monitor = make_monitor(team, [url])

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == ErrorKind.NOT_FOUND_PAGE


def test_a_new_page_about_404s_on_a_site_answering_real_404s_is_new(team, site):
    url = site.html(
        "/blog/errors",
        "Our blog",
        "<h2>Why a 404 is not the end</h2><p>When a page does not exist any more, "
        f"tell your visitors where to go next.</p>{PRODUCT}",
    )
    monitor = make_monitor(team, [url])

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.NEW
    assert len(made_up(site, {"/blog/errors"})) == 1  # asked, answered 404


def test_a_gone_page_showing_a_new_request_id_each_time_is_still_gone_asking_nothing(
    team, shop
):
    def with_request_id(n: int) -> str:
        noise = f"<p>Request 7f3a-{n:04d} at 10:{n:02d}</p>"
        return NOT_FOUND.replace("</main>", noise + "</main>")

    served = itertools.count(1)
    shop.otherwise(with_request_id(0))

    def not_found_with_request_id(request: Any) -> Any:
        return (
            200,
            {"Content-Type": "text/html"},
            with_request_id(next(served)).encode(),
        )

    url = shop.url("/shop/widget")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    shop.handle("/shop/widget", not_found_with_request_id)
    assert run_check(monitor).pages.get(url=url).status == PageResult.Status.REMOVED
    before = len(shop.requests)

    later = run_check(monitor)
    again = run_check(monitor)

    for check in (later, again):
        page = check.pages.get(url=url)
        assert page.status == PageResult.Status.SAME and page.is_still_gone
    # Only the page itself, twice: no robots.txt, no made-up address.
    assert [urlsplit(r.path).path for r in shop.requests[before:]] == [
        "/shop/widget",
        "/shop/widget",
    ]


# --- A page never seen, on a site answering every address with one page --------

ATLANTA = (
    "<!doctype html><html><head><title>Peach Plumbing</title></head><body>"
    "<main><h1>Peach Plumbing, Atlanta</h1><p>Family run since 1982. Call us: "
    f"(404) 555-0100</p>{PRODUCT}</main></body></html>"
)


def test_a_home_page_with_an_atlanta_phone_number_is_new_where_it_answers_everywhere(
    team, site
):
    site.page("/", ATLANTA)
    site.otherwise(ATLANTA)  # many sites answer unknown addresses with it
    url = site.url("/")
    monitor = make_monitor(team, [url])

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.NEW, (page.status, page.error)
    assert state_of(monitor, url).has_baseline


def test_a_deep_page_of_an_app_answering_every_address_alike_is_new_despite_404_in_it(
    team, site
):
    site.otherwise(ATLANTA)  # an app's shell: the same page at any address
    url = site.url("/contact")
    monitor = make_monitor(team, [url])

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.NEW, (page.status, page.error)
    assert state_of(monitor, url).has_baseline


@pytest.mark.parametrize(
    "lines",
    [
        "Peach Plumbing, Atlanta. Call us: (404) 555-0100",
        "The meeting is in Room 404 on the fourth floor.",
        "For sale: a Peugeot 404 from 1968, in running order.",
        "Open 9 to 5 at 404 Main Street.",
    ],
)
def test_a_bare_404_in_a_new_pages_first_lines_is_no_sign_of_a_not_found_page(lines):
    assert not looks_not_found("Acme", "Welcome", lines, new=True)


@pytest.mark.parametrize(
    "lines",
    [
        "Error 404 We looked everywhere for this page.",
        "404 Not Found nginx",
        "404 error: nothing here. Go back home.",
        "Oops, a 404 page. Sorry about that.",
        "HTTP 404 – the address is wrong.",
    ],
)
def test_a_404_with_words_of_an_error_in_a_new_pages_first_lines_is_a_sign(lines):
    assert looks_not_found("Acme", "", lines, new=True)


@pytest.mark.parametrize(
    ("path", "otherwise"),
    [
        ("/", {}),  # the home page answers any unknown address
        ("/en/", {"status": 302, "headers": {"Location": "/en/"}}),
    ],
)
def test_a_new_page_where_unknown_addresses_land_is_new_though_its_title_says_404(
    team, site, path, otherwise
):
    home = (
        "<!doctype html><html><head><title>404 Records – vinyl and more</title>"
        f"</head><body><main><h1>404 Records</h1>{PRODUCT}</main></body></html>"
    )
    site.page(path, home)
    site.otherwise(home if not otherwise else "", **otherwise)
    url = site.url(path)
    monitor = make_monitor(team, [url])

    page = run_check(monitor).pages.get(url=url)

    assert page.status == PageResult.Status.NEW, (page.status, page.error)
    assert len(made_up(site, {path})) == 1  # asked, answered with the page
    assert state_of(monitor, url).has_baseline


# --- What the made-up address is asked under ------------------------------------


def test_robots_txt_of_a_self_signed_site_is_read_as_its_page_is(
    team, tmp_path, settings
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    with Site(tls=self_signed(tmp_path, "shop.example")) as shop:
        shop.otherwise(NOT_FOUND)
        shop.html("/shop/widget", "Widget – Acme Shop", f"<h1>Widget</h1>{PRODUCT}")
        url = shop.url("/shop/widget").replace("http://", "https://")
        monitor = Monitor.objects.create(team=team, name="S", schedule_cron="0 * * * *")
        Target.objects.create(
            monitor=monitor,
            type="scrape",
            urls=[url],
            scrape_options={"skipTlsVerification": True},
        )
        run_check(monitor)
        shop.remove("/shop/widget")

        page = run_check(monitor).pages.get(url=url)

        assert page.status == PageResult.Status.REMOVED, page.metadata
        assert page.error_kind == ErrorKind.NOT_FOUND_PAGE
        assert "notFoundUnconfirmed" not in page.metadata
        assert len(shop.requests_to("/robots.txt")) == 1  # read, not refused


def test_a_crawl_and_a_page_on_one_host_each_ask_under_their_own_robots_rules(
    team, shop, settings
):
    settings.CRAWL_ALLOW_IGNORE_ROBOTS = True  # lets a crawl name its own agent
    shop.page(
        "/robots.txt",
        "User-agent: FriendlyBot\nAllow: /\n\nUser-agent: *\nDisallow: /shop/\n",
        content_type="text/plain",
    )
    shop.html("/", "Acme", "<a href='/shop/widget'>Widget</a>")
    url = shop.url("/shop/widget")
    monitor = Monitor.objects.create(team=team, name="S", schedule_cron="0 * * * *")
    crawl = Target.objects.create(
        monitor=monitor,
        type="crawl",
        url=shop.url("/"),
        crawl_options={"sitemap": "skip", "robotsUserAgent": "FriendlyBot"},
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    run_check(monitor)
    shop.remove("/shop/widget")  # still linked from the home page

    check = run_check(monitor)

    crawled = check.pages.get(url=url, target_id=crawl.pk)
    asked = check.pages.exclude(target_id=crawl.pk).get(url=url)
    assert crawled.status == PageResult.Status.REMOVED, crawled.metadata
    assert asked.status == PageResult.Status.CHANGED
    assert asked.metadata.get("notFoundUnconfirmed") == "robots"
    assert len(made_up(shop, {"/", "/shop/widget"})) == 1


def test_a_host_whose_robots_txt_a_crawl_is_still_reading_is_read_for_the_probe(
    shop,
):
    shop.page("/robots.txt", KEEP_OUT_OF_SHOP, content_type="text/plain")
    job = PageJob(uuid.uuid4(), shop.url("/shop/no-such"), {}, 1, uuid.uuid4())
    outcome = extract_page(job, asyncio.run(_fetch(job)), None)
    assert outcome.not_found is not None
    scope = Scope("https://start.example/", {})  # a crawl that links to the shop
    scope.claim_robots(Scope.host_of(job.url))  # its read under way

    confirmed = asyncio.run(_confirm(job, outcome, scope))

    assert made_up(shop, {"/shop/no-such"}) == []
    assert confirmed.status == PageResult.Status.NEW
    assert confirmed.metadata["notFoundUnconfirmed"] == "robots"
