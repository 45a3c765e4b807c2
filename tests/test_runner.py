"""checks.runner against real pages served on 127.0.0.1 (tests/sites.py)."""

from __future__ import annotations

import gzip
import socket
import time
import uuid
import zlib
from datetime import UTC, timedelta
from typing import Any

import pytest
from celery.exceptions import Retry, SoftTimeLimitExceeded
from django.db import connection
from django.utils import timezone

from checks import notify, runner
from checks.content import (
    content_hash,
    pack_snapshot,
    render_side_by_side,
    snapshot_hash,
)
from checks.errors import ErrorKind
from checks.fetch import OutboundClient
from checks.jobs import MAX_PAGE_TIMEOUT, MIN_PAGE_TIMEOUT, PageJob
from checks.models import Check, CheckBatch, PageResult, PageState, Snapshot
from checks.pipeline import batch, compare, record, sources
from checks.pipeline import plan as planning
from checks.pipeline.outcome import Content, Outcome, Pending
from checks.tasks import run_check_task
from config.celery import app as celery_app
from monitors.models import Monitor, Target, Team
from tests.sites import Site, refused_url

pytestmark = pytest.mark.django_db

PRICING = "<h1>Plans</h1><p>Starter costs $19 a month.</p><p>Pro costs $49.</p>"


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def make_monitor(
    team: Team,
    urls: list[str],
    *,
    scrape_options: dict[str, Any] | None = None,
    cron: str = "*/30 * * * *",
) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Pricing", schedule_cron=cron)
    Target.objects.create(
        monitor=monitor, type="scrape", urls=urls, scrape_options=scrape_options or {}
    )
    return monitor


def run_check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return runner.run(check)


def page_of(check: Check, url: str) -> PageResult:
    return check.pages.get(url=url)


def rendered(page: PageResult) -> str:
    """The side-by-side diff the dashboard renders from the page's snapshots."""
    return render_side_by_side(page.previous_snapshot.text, page.current_snapshot.text)


def state_of(monitor: Monitor, url: str) -> PageState:
    return PageState.objects.get(monitor=monitor, url_hash=PageState.hash_url(url))


# --- new, same, changed ---------------------------------------------------------


def test_first_check_reports_every_page_as_new(team, site):
    pricing = site.html("/pricing", "Pricing", PRICING)
    about = site.html("/about", "About us", "<p>We watch pages.</p>")
    monitor = make_monitor(team, [pricing, about])

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED
    assert check.error is None
    assert check.summary == {
        "totalPages": 2, "same": 0, "changed": 0, "new": 2, "removed": 0, "error": 0,
    }  # fmt: skip
    assert check.started_at and check.finished_at and check.pages_done == 2
    [result] = check.target_results
    assert (result["targetId"], result["type"]) == (
        str(monitor.targets.get().pk),
        "scrape",
    )
    # One scrape id per URL, in URL order; pages are listed as they finished.
    assert sorted(result["expectedJobs"]) == sorted(
        str(p.current_scrape_id) for p in check.pages.all()
    )
    page = page_of(check, pricing)
    assert page.status == PageResult.Status.NEW
    assert page.status_code == 200 and page.diff is None and page.error is None
    assert page.metadata["title"] == "Pricing"
    assert page.metadata["statusCode"] == 200
    assert page.metadata["contentType"].startswith("text/html")
    assert page.metadata["sourceURL"] == pricing
    assert page.metadata["url"] == pricing
    assert page.metadata["creditsUsed"] == 1
    assert "notApplied" not in page.metadata
    state = state_of(monitor, pricing)
    assert state.presence == PageState.Presence.ACTIVE
    assert state.scrape_id == page.current_scrape_id
    assert "Starter costs $19" in state.snapshot.text
    assert page.current_snapshot_id == state.snapshot_id


def test_finishing_updates_the_monitor(team, site):
    monitor = make_monitor(team, [site.html("/", "Home", "<p>Hello</p>")])

    check = run_check(monitor)

    monitor.refresh_from_db()
    assert monitor.current_check_id is None
    assert monitor.last_run_at == check.finished_at
    assert monitor.last_check_summary == check.summary
    assert check.actual_credits == 1
    assert check.billing_status == Check.Billing.NOT_APPLICABLE


def test_unchanged_page_is_same_and_stores_no_new_snapshot(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    first = run_check(monitor)

    second = run_check(monitor)

    page = page_of(second, url)
    assert page.status == PageResult.Status.SAME
    assert page.diff is None
    assert page.previous_scrape_id == page_of(first, url).current_scrape_id
    assert second.summary["same"] == 1
    assert Snapshot.objects.count() == 1
    assert state_of(monitor, url).scrape_id == page.current_scrape_id


def test_whitespace_only_change_is_same(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/pricing", "Pricing", PRICING.replace("</p><p>", "</p>\n\n   <p>  "))

    check = run_check(monitor)

    assert page_of(check, url).status == PageResult.Status.SAME


@pytest.fixture
def conversions(settings, monkeypatch) -> list[str]:
    """Each HTML to Markdown conversion a check makes (its base URL)."""
    from checks.content import source

    calls: list[str] = []
    original = source._markdown

    def counting(html: str, base: str, *, drop_data_images: bool) -> str:
        calls.append(base)
        return original(html, base, drop_data_images=drop_data_images)

    monkeypatch.setattr(source, "_markdown", counting)
    return calls


def test_new_and_unchanged_pages_are_never_converted_to_markdown(
    team, site, conversions
):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])

    checks = [run_check(monitor), run_check(monitor)]

    assert [page_of(c, url).status for c in checks] == ["new", "same"]
    assert conversions == []
    assert state_of(monitor, url).snapshot.format == Snapshot.Format.HTML

    site.html("/pricing", "Pricing", PRICING.replace("$19", "$24"))
    changed = run_check(monitor)

    assert page_of(changed, url).status == PageResult.Status.CHANGED
    assert conversions == [url, url]  # the baseline's source, then the new one


def test_a_markup_only_change_is_same_and_keeps_the_baseline(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    baseline = state_of(monitor, url).snapshot
    site.html("/pricing", "Pricing", PRICING.replace("<p>", '<p class="lead">'))

    check = run_check(monitor)

    page = page_of(check, url)
    assert (page.status, page.diff) == (PageResult.Status.SAME, None)
    assert page.current_snapshot_id == page.previous_snapshot_id == baseline.pk
    assert Snapshot.objects.count() == 1  # nothing stored for a same page
    state = state_of(monitor, url)
    assert state.snapshot_id == baseline.pk
    assert state.normalized_hash == content_hash(baseline.text)


def test_markup_that_keeps_changing_costs_one_conversion_once_its_text_is_known(
    team, site, conversions
):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    baseline = state_of(monitor, url).snapshot
    counts = []
    for nonce in ("a1", "b2"):  # a new id in the markup on every fetch
        site.html("/pricing", "Pricing", PRICING.replace("<p>", f'<p id="{nonce}">'))
        conversions.clear()
        check = run_check(monitor)
        counts.append(len(conversions))
        assert page_of(check, url).status == PageResult.Status.SAME
        assert state_of(monitor, url).snapshot_id == baseline.pk

    # First time: the baseline and the page, then compared. Once the text's
    # hash is stored, the page alone: its text has that hash.
    assert counts == [2, 1]
    assert state_of(monitor, url).normalized_hash == content_hash(baseline.text)

    site.html("/pricing", "Pricing", PRICING.replace("$19", "$24"))
    changed = page_of(run_check(monitor), url)

    assert changed.status == PageResult.Status.CHANGED  # a real change still diffs
    assert "+Starter costs $24 a month." in changed.diff["text"]


@pytest.fixture
def script_looks(monkeypatch) -> list[int]:
    """Each time a fetched body is parsed to see whether scripts build it."""
    from checks.browser import detect

    calls: list[int] = []
    original = detect.script_built

    def counting(content: bytes, content_type: str, **given: Any) -> str | None:
        calls.append(len(content))
        return original(content, content_type, **given)

    monkeypatch.setattr(detect, "script_built", counting)
    return calls


def test_a_plain_page_whose_text_stays_the_same_is_not_parsed_for_scripts_again(
    team, site, script_looks
):
    def serve(nonce: str, price: str = "$19") -> str:
        script = f'<script>window.ad = "{nonce}";</script>'
        text = PRICING.replace("$19", price) + "<p>Plenty of text. </p>" * 30
        return site.html("/pricing", "Pricing", script + text)

    url = serve("a1")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    assert len(script_looks) == 1 and state_of(monitor, url).fetcher == "http"

    for nonce in ("b2", "c3"):  # new markup on every fetch, the same text
        serve(nonce)
        assert page_of(run_check(monitor), url).status == PageResult.Status.SAME
    assert len(script_looks) == 1

    serve("d4", price="$24")
    assert page_of(run_check(monitor), url).status == PageResult.Status.CHANGED
    assert len(script_looks) == 2  # new text: is it still there without scripts?


def test_a_damaged_baseline_text_reports_the_page_changed_in_full():
    source = '{"base": "https://example.com/", "dropDataImages": false}\n<p>Hi</p>'
    state = PageState(snapshot_id=1, normalized_hash="0" * 64)
    outcome = Outcome(
        PageResult.Status.SAME,
        {},
        content=Content(),
        pending=Pending("html", source, "Hi\n"),
    )

    compare.compare_page(outcome, state, (b"not a snapshot", "html"))

    assert outcome.status == PageResult.Status.CHANGED
    assert "+Hi" in outcome.diff["text"] and outcome.pending is None
    assert outcome.content.normalized_hash == content_hash("Hi\n")


@pytest.mark.parametrize("text_hash_known", [False, True], ids=["unknown", "known"])
def test_a_baseline_stored_as_markdown_is_replaced_once_by_the_page_source(
    team, site, text_hash_known
):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    markdown = state_of(monitor, url).snapshot.text
    # What an earlier version stored: the Markdown itself, zlib-compressed.
    old = Snapshot.objects.create(
        content_hash=snapshot_hash(markdown),
        data=zlib.compress(markdown.encode()),
        size=len(markdown),
        format=Snapshot.Format.MARKDOWN,
    )
    # Known: the page is found the same from the stored hash, without the baseline.
    known = content_hash(markdown) if text_hash_known else ""
    # (Nor did it keep the body's hash: the page is extracted again.)
    PageState.objects.filter(monitor=monitor).update(
        snapshot=old, normalized_hash=known, body_hash=""
    )

    second, third = run_check(monitor), run_check(monitor)

    assert [page_of(c, url).status for c in (second, third)] == ["same", "same"]
    state = state_of(monitor, url)
    assert state.snapshot.format == Snapshot.Format.HTML
    assert state.snapshot.text == markdown
    assert page_of(second, url).previous_snapshot_id == old.pk
    assert page_of(second, url).current_snapshot_id == state.snapshot_id
    assert page_of(third, url).previous_snapshot_id == state.snapshot_id


def test_a_damaged_baseline_reports_the_page_changed_in_full(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    Snapshot.objects.update(data=b"damaged")
    site.html("/pricing", "Pricing", PRICING.replace("$19", "$24"))

    check = run_check(monitor)

    page = page_of(check, url)
    assert check.status == Check.Status.COMPLETED
    assert page.status == PageResult.Status.CHANGED
    assert "+Starter costs $24 a month." in page.diff["text"]
    assert "$24" in state_of(monitor, url).snapshot.text  # a readable baseline again


def test_changed_page_carries_a_unified_diff_and_side_by_side_html(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/pricing", "Pricing", PRICING.replace("$19", "$24"))

    check = run_check(monitor)

    page = page_of(check, url)
    assert page.status == PageResult.Status.CHANGED
    assert check.summary["changed"] == 1 and check.status == Check.Status.COMPLETED
    text = page.diff["text"]
    assert text.startswith("--- previous\n+++ current\n@@ ")
    assert "-Starter costs $19 a month.\n" in text
    assert "+Starter costs $24 a month.\n" in text
    changes = page.diff["json"]["files"][0]["chunks"][0]["changes"]
    assert {
        "type": "del", "del": True, "ln": 3, "content": "-Starter costs $19 a month.",
    } in changes  # fmt: skip
    assert any(c["content"] == "+Starter costs $24 a month." for c in changes)
    html = rendered(page)
    assert "<del>19</del>" in html and "<ins>24</ins>" in html
    # The baseline moved on: the next check compares with $24.
    assert "$24" in state_of(monitor, url).snapshot.text
    assert page.previous_snapshot.text != page.current_snapshot.text


def test_page_content_is_escaped_in_the_rendered_diff(team, site):
    url = site.html("/x", "X", "<p>safe</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/x", "X", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>")

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.CHANGED
    assert "<script>" not in rendered(page)
    assert "&lt;script&gt;" in rendered(page)


# --- removed and errors ---------------------------------------------------------


def test_page_answering_404_after_a_good_fetch_is_removed_then_new_again(team, site):
    url = site.html("/gone", "Gone soon", "<p>Here today</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.remove("/gone")

    removed = run_check(monitor)

    page = page_of(removed, url)
    assert page.status == PageResult.Status.REMOVED
    assert page.status_code == 404
    assert removed.status == Check.Status.COMPLETED
    assert removed.actual_credits == 0  # removed pages are free
    state = state_of(monitor, url)
    assert state.presence == PageState.Presence.REMOVED

    still_gone = run_check(monitor)
    assert page_of(still_gone, url).status == PageResult.Status.SAME
    assert page_of(still_gone, url).status_code == 404
    assert still_gone.summary["error"] == 0

    site.html("/gone", "Back", "<p>Here today</p>")
    back = run_check(monitor)
    assert page_of(back, url).status == PageResult.Status.NEW
    assert state_of(monitor, url).presence == PageState.Presence.ACTIVE


def test_410_after_a_good_fetch_is_removed(team, site):
    url = site.html("/old", "Old", "<p>Old</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/old", "Gone", status=410)

    assert page_of(run_check(monitor), url).status == PageResult.Status.REMOVED


@pytest.mark.parametrize("code", [404, 410])
def test_a_page_still_gone_after_it_was_removed_is_same_and_stays_removed(
    team, site, code
):
    url = site.html("/gone", "Gone soon", "<p>Here today</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/gone", "<h1>Not here any more</h1>", status=code)
    run_check(monitor)
    removed = state_of(monitor, url)
    snapshots = Snapshot.objects.count()

    check = run_check(monitor)

    page = page_of(check, url)
    assert page.status == PageResult.Status.SAME
    assert page.status_code == page.metadata["statusCode"] == code
    assert (page.error, page.error_kind) == (None, "")
    assert page.diff is None
    # Nothing of the gone page's answer is kept, and nothing comes before it.
    assert page.current_snapshot_id is None and page.previous_snapshot_id is None
    assert page.previous_scrape_id is None and page.current_scrape_id is not None
    assert Snapshot.objects.count() == snapshots
    assert check.status == Check.Status.COMPLETED and check.error is None
    assert check.summary == {
        "totalPages": 1, "same": 1, "changed": 0, "new": 0, "removed": 0, "error": 0,
    }  # fmt: skip
    state = state_of(monitor, url)
    assert state.presence == PageState.Presence.REMOVED
    assert (state.snapshot_id, state.scrape_id, state.body_hash, state.updated_at) == (
        removed.snapshot_id,
        removed.scrape_id,
        removed.body_hash,
        removed.updated_at,
    )


def test_a_page_gone_then_still_gone_then_back_is_new_removed_same_new(team, site):
    url = site.html("/gone", "Gone soon", "<p>Here today</p>")
    monitor = make_monitor(team, [url])
    statuses = [page_of(run_check(monitor), url).status]
    site.remove("/gone")
    statuses += [page_of(run_check(monitor), url).status for _ in range(3)]
    site.html("/gone", "Back", "<p>Here again, rewritten</p>")
    back = page_of(run_check(monitor), url)

    assert statuses + [back.status] == ["new", "removed", "same", "same", "new"]
    assert back.previous_snapshot_id is None and back.diff is None
    assert "Here again, rewritten" in state_of(monitor, url).snapshot.text


@pytest.mark.parametrize(
    ("cron", "credits"),
    [("*/30 * * * *", 1), ("0 * * * *", 0)],
    ids=["paid-like-any-fetched-page", "free-like-any-unchanged-page"],
)
def test_a_page_still_gone_costs_what_an_unchanged_page_costs(
    team, site, settings, cron, credits
):
    settings.UNCHANGED_PAGES_FREE_MIN_INTERVAL = 60
    url = site.html("/gone", "Gone soon", "<p>Here today</p>")
    monitor = make_monitor(team, [url], cron=cron)
    run_check(monitor)
    site.remove("/gone")

    removed, still_gone = run_check(monitor), run_check(monitor)

    assert removed.actual_credits == 0  # removed pages are free
    assert page_of(still_gone, url).metadata["creditsUsed"] == 1
    assert still_gone.actual_credits == credits


def test_refused_connection_is_an_error_and_keeps_the_baseline(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    baseline = state_of(monitor, url)
    site.stop()

    check = run_check(monitor)

    page = page_of(check, url)
    assert page.status == PageResult.Status.ERROR
    assert page.error == "Connection refused by 127.0.0.1"
    assert page.status_code is None and page.current_snapshot_id is None
    assert check.status == Check.Status.FAILED
    assert check.error == "The page could not be checked."
    assert check.summary["error"] == 1
    kept = state_of(monitor, url)
    assert (kept.snapshot_id, kept.scrape_id) == (
        baseline.snapshot_id,
        baseline.scrape_id,
    )


def test_a_good_fetch_after_an_error_compares_with_the_last_good_content(team):
    with Site() as site:
        url = site.html("/p", "P", "<p>version one</p>")
        monitor = make_monitor(team, [url])
        run_check(monitor)
        port = site.port
    assert page_of(run_check(monitor), url).status == PageResult.Status.ERROR

    with Site(port=port) as back:
        back.html("/p", "P", "<p>version two</p>")
        page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.CHANGED
    assert "-version one\n+version two\n" in page.diff["text"]


def test_server_errors_are_errors_not_new_baselines(team, site):
    url = site.html("/flaky", "Flaky", "<p>fine</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.page("/flaky", "<p>Internal Server Error</p>", status=500)

    check = run_check(monitor)

    page = page_of(check, url)
    assert page.status == PageResult.Status.ERROR
    assert (page.status_code, page.error) == (500, "The page answered HTTP 500.")
    assert "fine" in state_of(monitor, url).snapshot.text

    site.html("/flaky", "Flaky", "<p>fine</p>")
    assert page_of(run_check(monitor), url).status == PageResult.Status.SAME


def test_never_fetched_page_that_is_missing_is_an_error(team, site):
    url = site.url("/never")
    check = run_check(make_monitor(team, [url]))
    assert page_of(check, url).status == PageResult.Status.ERROR
    assert not PageState.objects.exists()


def test_unreadable_content_is_an_extraction_error(team, site):
    url = site.page("/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png")
    check = run_check(make_monitor(team, [url]))
    page = page_of(check, url)
    assert page.status == PageResult.Status.ERROR
    assert "image" in page.error


def test_compressed_pages_are_decoded_and_capped_by_the_fetch(team, site, settings):
    settings.FETCH_MAX_BYTES = 64 * 1024
    document = f"<html><body><main><p>{'Plans and prices. ' * 200}</p></main></body>"
    small = site.page(
        "/small", gzip.compress(document.encode()), headers={"Content-Encoding": "gzip"}
    )
    # 1 KB on the wire, 1 MB once decoded: a decompression bomb.
    bomb = site.page(
        "/bomb",
        gzip.compress(b"<p>" + b"a" * 1024 * 1024),
        headers={"Content-Encoding": "gzip"},
    )

    check = run_check(make_monitor(team, [small, bomb]))

    assert page_of(check, small).status == PageResult.Status.NEW
    assert "Plans and prices." in state_of(check.monitor, small).snapshot.text
    assert page_of(check, bomb).status == PageResult.Status.ERROR
    assert page_of(check, bomb).error == "Page is larger than 64 KB"


def test_a_check_whose_every_page_failed_is_failed_not_completed_with_errors(team):
    urls = [refused_url("/a"), refused_url("/b")]
    monitor = make_monitor(team, urls)
    check = run_check(monitor)
    assert check.status == Check.Status.FAILED
    assert check.error == "None of the 2 pages could be checked."
    assert check.summary["error"] == 2 and check.actual_credits == 0
    monitor.refresh_from_db()
    assert monitor.last_check_summary["error"] == 2
    assert monitor.current_check_id is None


def test_a_check_with_some_pages_failed_is_partial(team, site):
    ok = site.html("/ok", "OK", "<p>Fine.</p>")
    check = run_check(make_monitor(team, [ok, refused_url("/a")]))
    assert check.status == Check.Status.PARTIAL
    assert check.error == "1 of 2 pages could not be checked."


# --- error kinds ----------------------------------------------------------------


def nxdomain(host: str, port: int) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def failing_url(kind: str, site: Site, settings: Any) -> tuple[str, dict[str, Any]]:
    """A URL whose fetch fails with `kind` (on 127.0.0.1, or refused before
    connecting), and the scrape options it needs."""
    if kind == "refused":
        return refused_url("/gone"), {}
    if kind == "timeout":
        return site.html("/slow", "Slow", "<p>x</p>", delay=3), {"timeout": 1000}
    if kind == "too_large":
        settings.FETCH_MAX_BYTES = 1024
        return site.page("/big", "x" * 4096), {}
    if kind == "too_many_redirects":
        return site.redirect("/loop", "/loop"), {}
    if kind == "blocked_address":
        return "http://169.254.169.254/latest/meta-data/", {}
    assert kind == "dns"
    return "http://nowhere.test/", {}


@pytest.mark.parametrize(
    "kind",
    ["refused", "timeout", "too_large", "too_many_redirects", "blocked_address", "dns"],
)
def test_a_failed_fetch_is_stored_with_its_kind(team, site, settings, kind):
    url, options = failing_url(kind, site, settings)
    check = Check.objects.create(
        monitor=make_monitor(team, [url], scrape_options=options),
        trigger=Check.Trigger.MANUAL,
    )

    runner.run(check, resolver=nxdomain)

    page = page_of(check, url)
    assert (page.status, page.error_kind) == (PageResult.Status.ERROR, kind)
    assert page.error  # the message API clients read is still there


def test_http_errors_are_stored_as_4xx_or_5xx(team, site):
    missing = site.url("/missing")
    broken = site.page("/broken", "<p>oops</p>", status=503)

    check = run_check(make_monitor(team, [missing, broken]))

    assert page_of(check, missing).error_kind == ErrorKind.HTTP_4XX
    assert page_of(check, broken).error_kind == ErrorKind.HTTP_5XX


def test_content_that_cannot_be_extracted_is_stored_as_unreadable(team, site):
    url = site.page("/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png")
    page = page_of(run_check(make_monitor(team, [url])), url)
    assert page.error_kind == ErrorKind.UNREADABLE


def test_a_min_age_miss_is_stored_as_not_cached(team, site):
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"minAge": 600_000})
    page = page_of(run_check(monitor), url)
    assert page.error_kind == ErrorKind.NOT_CACHED
    assert site.requests == []


def test_a_fetch_that_crashes_is_stored_as_internal(team, site, monkeypatch):
    async def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(OutboundClient, "fetch", crash)
    url = site.html("/p", "P", "<p>x</p>")
    page = page_of(run_check(make_monitor(team, [url])), url)
    assert page.error_kind == ErrorKind.INTERNAL


def test_a_good_page_has_no_error_kind(team, site):
    url = site.html("/p", "P", "<p>x</p>")
    page = page_of(run_check(make_monitor(team, [url])), url)
    assert (page.status, page.error_kind) == (PageResult.Status.NEW, "")


# --- SSRF -----------------------------------------------------------------------


def test_private_addresses_are_refused_when_not_allowed(team, site, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    urls = [site.html("/", "Home", "<p>hi</p>"), "http://10.0.0.1/", "http://[::1]/"]

    check = run_check(make_monitor(team, urls))

    for url in urls:
        page = page_of(check, url)
        assert page.status == PageResult.Status.ERROR
        assert page.error.startswith("Blocked: ")
    assert site.requests == []  # nothing ever reached the local server


def test_cloud_metadata_address_stays_blocked_even_when_private_is_allowed(team):
    url = "http://169.254.169.254/latest/meta-data/"
    page = page_of(run_check(make_monitor(team, [url])), url)
    assert page.status == PageResult.Status.ERROR
    assert page.error == "Blocked: 169.254.169.254 is a cloud metadata address"


# --- scrapeOptions ---------------------------------------------------------------


def test_max_age_reuses_a_recent_fetch_without_fetching(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url], scrape_options={"maxAge": 3_600_000})
    first = run_check(monitor)
    site.html("/pricing", "Pricing", PRICING.replace("$19", "$99"))

    second = run_check(monitor)

    assert len(site.requests_to("/pricing")) == 1
    page = page_of(second, url)
    assert page.status == PageResult.Status.SAME
    assert page.metadata["cacheState"] == "hit"
    # When the copy was fetched, as Firecrawl writes a moment (milliseconds, Z).
    cached_at = PageState.objects.get().cached_at
    assert page.metadata["cachedAt"] == cached_at.astimezone(UTC).isoformat(
        timespec="milliseconds"
    ).replace("+00:00", "Z")
    assert page.metadata["title"] == "Pricing" and page.status_code == 200
    assert page.current_snapshot_id == page_of(first, url).current_snapshot_id
    assert page.current_scrape_id != page_of(first, url).current_scrape_id


def test_max_age_fetches_again_once_the_copy_is_too_old(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url], scrape_options={"maxAge": 60_000})
    run_check(monitor)
    PageState.objects.update(cached_at=timezone.now() - timedelta(minutes=2))

    run_check(monitor)

    assert len(site.requests_to("/pricing")) == 2


def test_monitors_fetch_fresh_by_default(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    run_check(monitor)
    assert len(site.requests_to("/pricing")) == 2


def test_store_in_cache_false_is_never_reused(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    options = {"maxAge": 3_600_000, "storeInCache": False}
    monitor = make_monitor(team, [url], scrape_options=options)
    run_check(monitor)
    run_check(monitor)
    assert len(site.requests_to("/pricing")) == 2
    assert state_of(monitor, url).cached_at is None


def test_min_age_serves_only_an_old_enough_cached_copy(team, site):
    url = site.html("/pricing", "Pricing", PRICING)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    Target.objects.update(scrape_options={"minAge": 600_000})

    too_young = page_of(run_check(monitor), url)
    assert too_young.status == PageResult.Status.ERROR
    assert "minAge" in too_young.error

    PageState.objects.update(cached_at=timezone.now() - timedelta(minutes=11))
    old_enough = page_of(run_check(monitor), url)
    assert old_enough.status == PageResult.Status.SAME
    assert len(site.requests_to("/pricing")) == 1


def test_options_needing_a_browser_fail_the_page_when_there_is_no_browser(
    team, site, settings
):
    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"
    url = site.html("/p", "P", "<p>x</p>")
    options = {"waitFor": 1000, "formats": ["markdown", "screenshot"]}

    page = page_of(run_check(make_monitor(team, [url], scrape_options=options)), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "browser"
    assert "BROWSER_EXECUTABLE (/nowhere/chromium) was not found" in page.error
    assert page.metadata["fetchedWith"] == "browser"
    assert site.requests_to("/p") == []


def test_options_only_an_llm_or_a_proxy_network_honours_are_not_applied(team, site):
    url = site.html("/p", "P", "<p>x</p>")
    options = {
        # The summary needs a model, and none is configured here.
        "formats": ["markdown", {"type": "summary"}],
        "proxy": "stealth",
    }
    page = page_of(run_check(make_monitor(team, [url], scrape_options=options)), url)
    assert page.status == PageResult.Status.NEW
    assert page.metadata["fetchedWith"] == "http"
    assert page.metadata["notApplied"] == ["formats.summary", "proxy"]


def test_headers_are_sent(team, site):
    url = site.html("/p", "P", "<p>x</p>")
    options = {"headers": {"X-Token": "secret"}}
    run_check(make_monitor(team, [url], scrape_options=options))
    request = site.requests_to("/p")[0]
    assert request.header("X-Token") == "secret"
    assert request.header("User-Agent").startswith("Pagewatch/")


def test_a_slow_page_times_out_with_scrape_options_timeout(team, site):
    url = site.html("/slow", "Slow", "<p>x</p>", delay=3)
    page = page_of(
        run_check(make_monitor(team, [url], scrape_options={"timeout": 1000})), url
    )
    assert page.status == PageResult.Status.ERROR
    assert page.error == "Gave up on 127.0.0.1 after 1 s"


def test_search_targets_without_a_provider_are_skipped_without_failing_the_check(
    team, site
):
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url])
    search = Target.objects.create(
        monitor=monitor, type="search", queries=["x"], position=2
    )

    check = run_check(monitor)

    assert check.status == Check.Status.COMPLETED
    assert check.summary["totalPages"] == 1
    results = {r["type"]: r for r in check.target_results}
    assert results["search"]["targetId"] == str(search.pk)
    assert results["search"]["skipped"] is True
    assert "no search provider is configured" in results["search"]["reason"]


def test_a_check_whose_every_target_is_skipped_fails_with_the_reason(team):
    monitor = make_monitor(team, [])
    Target.objects.filter(monitor=monitor).delete()
    Target.objects.create(monitor=monitor, type="search", queries=["x"])

    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert "Web searches are not run: no search provider" in check.error
    assert check.summary["totalPages"] == 0


# --- credits --------------------------------------------------------------------


def test_same_pages_are_free_when_the_interval_qualifies(team, site, settings):
    settings.UNCHANGED_PAGES_FREE_MIN_INTERVAL = 60
    url = site.html("/p", "P", "<p>x</p>")
    hourly = make_monitor(team, [url], cron="0 * * * *")
    run_check(hourly)
    assert run_check(hourly).actual_credits == 0

    every_half_hour = make_monitor(team, [url])
    run_check(every_half_hour)
    assert run_check(every_half_hour).actual_credits == 1


def test_credits_are_reserved_then_confirmed_when_the_team_has_an_allowance(team, site):
    Team.objects.filter(pk=team.pk).update(credit_allowance=100)
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url])
    check = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, estimated_credits=1
    )

    check = runner.run(check)

    assert check.billing_status == Check.Billing.CONFIRMED
    assert (check.reserved_credits, check.actual_credits) == (1, 1)
    assert Check.objects.credits_used(team, timezone.now()) == 1


def test_check_is_skipped_when_the_allowance_is_exhausted(team, site):
    Team.objects.filter(pk=team.pk).update(credit_allowance=5)
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url])
    spent = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.COMPLETED,
        finished_at=timezone.now(),
        actual_credits=5,
    )
    check = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, estimated_credits=1
    )
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)

    check = runner.run(check)

    assert check.status == Check.Status.SKIPPED_NO_CREDITS
    assert check.error == "Monitor check skipped: insufficient credits."
    assert check.actual_credits == 0 and check.finished_at is not None
    assert site.requests == []
    monitor.refresh_from_db()
    assert monitor.current_check_id is None
    assert monitor.last_run_at == check.finished_at
    assert spent.pk != check.pk


# --- claiming, taking over, failing -------------------------------------------------


def test_a_claimed_check_cannot_be_claimed_again(team):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    assert runner.claim(check) is True
    assert runner.claim(Check.objects.get(pk=check.pk)) is False
    assert Check.objects.get(pk=check.pk).status == Check.Status.RUNNING


def test_a_running_check_without_heartbeat_is_taken_over_and_resumed(team, site):
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>{i}</p>") for i in range(3)]
    monitor = make_monitor(team, urls)
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    runner.claim(check)
    # The first worker recorded one page, then died.
    runner.plan(check)
    check.refresh_from_db()
    [(_, jobs)] = sources.plan(check, list(monitor.targets.all()))
    outcome = Outcome(
        PageResult.Status.NEW, {"creditsUsed": 1}, content=Content(pack_snapshot("0"))
    )
    record.record_many(check, [(jobs[0], outcome, None)])
    long_ago = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    Check.objects.filter(pk=check.pk).update(heartbeat_at=long_ago)
    CheckBatch.objects.filter(check_run=check).update(
        status=CheckBatch.Status.RUNNING, heartbeat_at=long_ago
    )

    check = runner.run(Check.objects.get(pk=check.pk))

    assert check.status == Check.Status.COMPLETED
    assert check.pages.count() == 3 and check.pages_done == 3
    assert site.requests_to("/p0") == []  # already done, not fetched again
    assert [p.current_scrape_id for p in check.pages.order_by("url")] == [
        j.scrape_id for j in jobs
    ]


def test_a_delivery_beyond_the_third_gives_the_check_up(team):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    check = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, attempts=runner.MAX_ATTEMPTS
    )
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)

    assert runner.begin_delivery(check.pk) is None

    check.refresh_from_db()
    assert check.status == Check.Status.FAILED
    assert check.attempts == runner.MAX_ATTEMPTS + 1
    assert "given up after 3 attempts" in check.error
    monitor.refresh_from_db()
    assert monitor.current_check_id is None


def test_a_check_whose_worker_went_quiet_is_taken_over_as_a_counted_attempt(team):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    quiet = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.RUNNING,
        heartbeat_at=quiet,
        attempts=1,
    )

    taken = runner.begin_delivery(check.pk)

    assert taken is not None and taken.pk == check.pk
    check.refresh_from_db()
    assert check.attempts == 2


def test_deliveries_of_finished_or_missing_checks_do_nothing(team):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    done = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.COMPLETED
    )
    assert runner.begin_delivery(done.pk) is None
    assert runner.begin_delivery("00000000-0000-0000-0000-000000000000") is None
    done.refresh_from_db()
    assert done.attempts == 0


def test_a_check_failed_meanwhile_is_not_finished_over(team):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    runner.claim(check)
    assert runner.fail(check.pk, "Lost.")

    assert runner.finish(check.pk) is None
    check.refresh_from_db()
    assert (check.status, check.error) == (Check.Status.FAILED, "Lost.")


def test_a_check_failed_before_its_pages_are_written_records_none(team, site):
    # Fetching starts before the progress row is written; a check the sweeper
    # failed in between must stop its fetcher and leave nothing behind.
    urls = [site.html(f"/p{i}", "P", f"<p>{i}</p>", delay=0.2) for i in range(3)]
    monitor = make_monitor(team, urls)
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    assert runner.claim(check)
    assert runner.fail(check.pk, "Lost.")

    runner.execute(check)

    check.refresh_from_db()
    assert (check.status, check.error) == (Check.Status.FAILED, "Lost.")
    assert not PageResult.objects.filter(check_run=check).exists()


def test_a_crash_fails_the_check_with_a_reason(team, site, monkeypatch):
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url])

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(batch, "record_many", explode)
    check = run_check(monitor)

    assert check.status == Check.Status.FAILED
    assert check.error == "Monitor check failed because of an internal error."
    assert Monitor.objects.get(pk=monitor.pk).current_check_id is None


@pytest.mark.django_db(transaction=True)
def test_notifications_are_written_inside_the_transactions(team, site, monkeypatch):
    calls: list[tuple[str, bool]] = []

    def page_hook(page: PageResult) -> None:
        calls.append(("page", connection.in_atomic_block))

    def check_hook(check: Check, **_kwargs: object) -> None:
        calls.append((check.status, connection.in_atomic_block))

    monkeypatch.setattr(notify, "on_page_result", page_hook)
    monkeypatch.setattr(notify, "on_check_finished", check_hook)
    urls = [site.html("/a", "A", "<p>a</p>"), site.html("/b", "B", "<p>b</p>")]

    run_check(make_monitor(team, urls))

    assert calls == [("page", True), ("page", True), ("completed", True)]


def test_the_soft_time_limit_fails_the_check_without_waiting_for_slow_pages(
    team, site, monkeypatch
):
    url = site.html("/slow", "Slow", "<p>x</p>", delay=20)
    monitor = make_monitor(team, [url])
    monkeypatch.setattr(batch, "HEARTBEAT_SECONDS", 0.1)

    def time_is_up(*args: object) -> None:
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(batch, "heartbeat", time_is_up)
    started = time.monotonic()

    check = run_check(monitor)

    assert time.monotonic() - started < 5
    assert check.status == Check.Status.FAILED
    assert check.error == "Monitor check exceeded its time limit and was stopped."
    assert Monitor.objects.get(pk=monitor.pk).current_check_id is None


# --- the sweeper --------------------------------------------------------------------


def test_stale_checks_are_failed_and_fresh_ones_left_alone(team):
    now = timezone.now()
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    others = [make_monitor(team, ["http://127.0.0.1:9/"]) for _ in range(3)]
    limit = runner.stale_running_after()
    lost_message = Check.objects.create(monitor=monitor, trigger="manual")
    Check.objects.filter(pk=lost_message.pk).update(
        created_at=now - timedelta(minutes=11)
    )
    # Silent for longer than a lost check waits to be taken up again.
    lost_worker = Check.objects.create(
        monitor=others[0],
        trigger="manual",
        status=Check.Status.RUNNING,
        heartbeat_at=now
        - runner.stale_running_after()
        - runner.STALE_QUEUED_AFTER
        - timedelta(seconds=1),
    )
    waiting = Check.objects.create(monitor=others[1], trigger="manual")
    working = Check.objects.create(
        monitor=others[2],
        trigger="manual",
        status=Check.Status.RUNNING,
        heartbeat_at=now - limit + timedelta(seconds=30),
    )
    for check in (lost_message, lost_worker, waiting, working):
        Monitor.objects.filter(pk=check.monitor_id).update(current_check_id=check.pk)

    assert runner.fail_stale_checks(now) == 2

    lost_message.refresh_from_db()
    assert lost_message.status == Check.Status.FAILED
    assert lost_message.error == runner.stale_queued_message()
    lost_worker.refresh_from_db()
    assert lost_worker.status == Check.Status.FAILED
    assert lost_worker.error == runner.STALE_RUNNING_MESSAGE
    assert lost_worker.finished_at == now
    for check in (lost_message, lost_worker):
        assert Monitor.objects.get(pk=check.monitor_id).current_check_id is None
    for check in (waiting, working):
        assert Check.objects.get(pk=check.pk).status in Check.IN_FLIGHT
        assert Monitor.objects.get(pk=check.monitor_id).current_check_id == check.pk


@pytest.fixture
def check_queue(settings) -> Any:
    """The check queue of the tests' in-memory broker, emptied before and
    after."""
    with celery_app.connection_for_write() as connection:
        queue = connection.SimpleQueue(settings.CELERY_TASK_DEFAULT_QUEUE, no_ack=True)
        queue.clear()
        yield queue
        queue.clear()
        queue.close()


def checks_sent(queue: Any) -> list[str]:
    """The check ids of the run-check messages on `queue` (taken off it)."""
    ids = []
    while True:
        try:
            message = queue.get(block=False)
        except queue.Empty:
            return ids
        assert message.headers["task"] == runner.RUN_CHECK_TASK
        ids.append(message.payload[0][0])


def queued_since(monitor: Monitor, moment: Any) -> Check:
    check = Check.objects.create(monitor=monitor, trigger="manual")
    Check.objects.filter(pk=check.pk).update(created_at=moment)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return check


def test_a_queued_check_whose_message_was_lost_is_sent_again(team, check_queue):
    now = timezone.now()
    stale = runner.stale_running_after()
    lost = queued_since(make_monitor(team, ["http://127.0.0.1:9/"]), now - stale * 2)
    fresh = queued_since(make_monitor(team, ["http://127.0.0.1:9/"]), now)

    assert runner.fail_stale_checks(now) == 0

    assert checks_sent(check_queue) == [str(lost.pk)]
    for check in (lost, fresh):
        assert Check.objects.get(pk=check.pk).status == Check.Status.QUEUED


def test_queued_checks_behind_a_backlog_are_not_sent_twice(team, check_queue):
    now = timezone.now()
    waiting = queued_since(
        make_monitor(team, ["http://127.0.0.1:9/"]),
        now - runner.stale_running_after() * 2,
    )
    celery_app.send_task(runner.RUN_CHECK_TASK, args=["another check"])

    runner.fail_stale_checks(now)

    assert checks_sent(check_queue) == ["another check"]
    assert Check.objects.get(pk=waiting.pk).status == Check.Status.QUEUED


def test_a_message_sent_again_for_a_check_already_taken_costs_it_nothing(team):
    check = Check.objects.create(
        monitor=make_monitor(team, ["http://127.0.0.1:9/"]), trigger="manual"
    )
    taken = runner.begin_delivery(check.pk)
    assert taken is not None and runner.claim(taken)

    again = runner.begin_delivery(check.pk)

    assert again is not None and runner.is_busy(again)
    check.refresh_from_db()
    assert check.status == Check.Status.RUNNING and check.attempts == 1


def lost_while_planning(monitor: Monitor, attempts: int) -> Check:
    """A check whose worker died while planning it: running, no batch, its
    heartbeat past the stale time, after `attempts` deliveries."""
    stale = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    return Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status=Check.Status.RUNNING,
        heartbeat_at=stale,
        attempts=attempts,
    )


def test_a_check_whose_worker_died_while_planning_is_planned_again_once(
    team, site, check_queue
):
    urls = [site.html(f"/p{n}", f"P{n}", f"<p>{n}</p>") for n in range(3)]
    check = lost_while_planning(make_monitor(team, urls), attempts=1)

    assert runner.fail_stale_checks(timezone.now()) == 0

    assert checks_sent(check_queue) == [str(check.pk)]
    run_check_task(str(check.pk))  # the worker that takes the message
    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED and check.attempts == 2
    assert check.summary["new"] == 3 and check.pages.count() == 3
    assert check.batches.count() == 1
    assert all(len(site.requests_to(f"/p{n}")) == 1 for n in range(3))


def test_a_check_lost_while_planning_is_sent_again_under_a_stale_time_of_an_hour(
    team, settings, check_queue
):
    settings.CHECK_STALE_AFTER_SECONDS = 3600  # above the 10 minutes' window
    check = lost_while_planning(make_monitor(team, ["http://127.0.0.1:9/"]), 1)

    assert runner.fail_stale_checks(timezone.now()) == 0

    assert checks_sent(check_queue) == [str(check.pk)]
    assert Check.objects.get(pk=check.pk).status == Check.Status.RUNNING


def test_a_check_whose_planning_was_lost_behind_a_backlog_waits_its_turn(
    team, check_queue
):
    check = lost_while_planning(make_monitor(team, ["http://127.0.0.1:9/"]), 1)
    celery_app.send_task(runner.RUN_CHECK_TASK, args=["another check"])

    assert runner.fail_stale_checks(timezone.now()) == 0

    assert checks_sent(check_queue) == ["another check"]
    assert Check.objects.get(pk=check.pk).status == Check.Status.RUNNING


def test_a_check_whose_planning_was_lost_three_times_is_given_up(team, check_queue):
    check = lost_while_planning(
        make_monitor(team, ["http://127.0.0.1:9/"]), runner.MAX_ATTEMPTS
    )

    assert runner.fail_stale_checks(timezone.now()) == 1

    assert checks_sent(check_queue) == []
    check.refresh_from_db()
    assert check.status == Check.Status.FAILED
    assert check.error == runner.GIVEN_UP_MESSAGE


def test_a_plan_written_meanwhile_by_a_worker_that_took_the_check_over_stands(
    team, site, monkeypatch
):
    urls = [site.html(f"/p{n}", f"P{n}", f"<p>{n}</p>") for n in range(3)]
    monitor = make_monitor(team, urls)
    check = Check.objects.create(monitor=monitor, trigger="manual")
    assert runner.claim(check)
    plan_sources = sources.plan

    def slow_then_overtaken(*args: Any) -> Any:
        planned = plan_sources(*args)
        # This worker was slow: another took the check over and planned it
        # (its monitor had one page by then) before this plan was written.
        monkeypatch.setattr(sources, "plan", plan_sources)
        Target.objects.filter(monitor=monitor).update(urls=urls[:1])
        planning.plan(Check.objects.get(pk=check.pk))
        return planned

    monkeypatch.setattr(sources, "plan", slow_then_overtaken)
    batches = planning.plan(check)

    check.refresh_from_db()
    assert check.pages_total == 1
    assert [len(b.pages) for b in batches] == [1]
    assert [len(b.pages) for b in check.batches.all()] == [1]


def test_a_failed_check_releases_its_credit_reservation(team):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    check = Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status=Check.Status.RUNNING,
        billing_status=Check.Billing.RESERVED,
        reserved_credits=3,
    )
    runner.fail(check.pk, "Lost.")
    check.refresh_from_db()
    assert check.billing_status == Check.Billing.RELEASED
    assert check.actual_credits == 0


# --- the task ---------------------------------------------------------------------


def test_the_task_runs_a_queued_check_once(team, site):
    url = site.html("/p", "P", "<p>x</p>")
    check = Check.objects.create(monitor=make_monitor(team, [url]), trigger="manual")

    run_check_task(str(check.pk))
    run_check_task(str(check.pk))  # a duplicate delivery: nothing left to do

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED
    assert check.attempts == 1
    assert len(site.requests_to("/p")) == 1


def test_the_task_retries_later_while_another_worker_holds_the_check_at_no_cost(
    team,
):
    monitor = make_monitor(team, ["http://127.0.0.1:9/"])
    check = Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status=Check.Status.RUNNING,
        heartbeat_at=timezone.now(),
    )
    with pytest.raises(Retry):
        run_check_task(str(check.pk))
    check.refresh_from_db()
    # A second message for a running check is not an attempt of its own.
    assert check.status == Check.Status.RUNNING and check.attempts == 0


def test_scrape_options_become_fetch_settings():
    def job(**options: Any) -> PageJob:
        return PageJob(uuid.uuid4(), "https://example.com/", options, 1, uuid.uuid4())

    assert job().verify_tls is True and job().timeout is None
    assert job(skipTlsVerification=True).verify_tls is False
    assert job(timeout=15000).timeout == 15.0
    assert job(timeout=10).timeout == MIN_PAGE_TIMEOUT
    assert job(timeout=10**9).timeout == MAX_PAGE_TIMEOUT
    assert job(timeout="soon").timeout is None
    assert job(mobile=True, headers={"User-Agent": "mine"}).headers == {
        "User-Agent": "mine"
    }
    assert job(headers="not a map").headers == {}


@pytest.mark.django_db
def test_claiming_and_finishing_a_check_without_notifications_stay_short(
    team, django_assert_num_queries
):
    # Both sit on every check's critical path: claim reads the check with its
    # monitor and team in one query, finish counts no deliveries when there
    # are none and writes the check once.
    monitor = make_monitor(team, ["http://127.0.0.1:9/a"])
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)

    with django_assert_num_queries(4):  # savepoint, UPDATE, SELECT, release
        assert runner.claim(check)
    # savepoint, 7 statements (the check, its tally, its deliveries so far,
    # whether a channel got one, the monitor's channels, two UPDATEs), release
    with django_assert_num_queries(9):
        runner.finish(check.pk)

    check.refresh_from_db()
    monitor.refresh_from_db()
    assert check.status == Check.Status.COMPLETED
    assert check.notification_status["webhook"]["skipped"] is True
    assert check.notification_status["email"]["reason"] == "disabled"
    assert monitor.current_check_id is None
    assert monitor.last_run_at == check.finished_at


def pending_batch_since(team: Any, moment: Any) -> CheckBatch:
    check = Check.objects.create(
        monitor=make_monitor(team, ["http://127.0.0.1:9/"]),
        trigger="manual",
        status=Check.Status.RUNNING,
        heartbeat_at=timezone.now(),
    )
    return CheckBatch.objects.create(
        check_run=check, number=0, pages=[], heartbeat_at=moment
    )


def messages_on(queue: Any) -> list[tuple[str, Any]]:
    sent = []
    while True:
        try:
            message = queue.get(block=False)
        except queue.Empty:
            return sent
        sent.append((message.headers["task"], message.payload[0][0]))


def test_a_pending_batch_whose_message_redis_forgot_is_sent_after_the_stale_time(
    team, check_queue
):
    now = timezone.now()
    stale = runner.stale_running_after()
    lost = pending_batch_since(team, now - stale * 2)
    pending_batch_since(team, now)  # queued just now: left alone

    assert runner.fail_stale_checks(now) == 0

    assert messages_on(check_queue) == [(runner.RUN_BATCH_TASK, lost.pk)]
    lost.refresh_from_db()
    assert lost.status == CheckBatch.Status.PENDING and lost.heartbeat_at == now


def test_pending_batches_behind_a_backlog_are_not_sent_twice(team, check_queue):
    now = timezone.now()
    waiting = pending_batch_since(team, now - runner.stale_running_after() * 2)
    celery_app.send_task(runner.RUN_CHECK_TASK, args=["another check"])

    runner.fail_stale_checks(now)

    assert messages_on(check_queue) == [(runner.RUN_CHECK_TASK, "another check")]
    assert CheckBatch.objects.get(pk=waiting.pk).heartbeat_at < now
