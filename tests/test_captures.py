"""Screenshots and PDFs after the browser took them: signed, expiring links in
API results; before, after and the visual change in the dashboard (scoped to
the team); retention forgetting the ones no result refers to.

Captures are made here with Pillow and stored as the recording stores them,
so no browser is needed (tests/test_browser_pages.py takes real ones)."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from PIL import Image, ImageDraw

from checks import retention
from checks.browser.result import Shot
from checks.captures import capture_url
from checks.models import Capture, Check, PageResult
from monitors.models import Membership, Monitor
from tests.test_dashboard_views import make_check, make_monitor, scrape_form


def png(box: tuple[int, int, int, int] | None = None) -> bytes:
    image = Image.new("RGB", (320, 200), "white")
    if box is not None:
        ImageDraw.Draw(image).rectangle(box, fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def result_with(
    check: Check, shot: bytes | None, *, when: timedelta = timedelta(0), **metadata
) -> PageResult:
    target = check.monitor.targets.first()
    page = PageResult.objects.create(
        check_run=check,
        target_id=target.id,
        url="https://example.com/pricing",
        status=PageResult.Status.SAME,
        metadata=metadata,
    )
    PageResult.objects.filter(pk=page.pk).update(created_at=timezone.now() + when)
    if shot is not None:
        capture = Shot(shot, "image/png")
        ids = Capture.store_many([capture])
        page.captures.add(ids[capture.digest])
        page.metadata = {**metadata, "screenshot": capture.digest}
        page.save(update_fields=["metadata"])
    page.refresh_from_db()
    return page


@pytest.fixture
def monitor(team):
    return make_monitor(team)


@pytest.fixture
def web(client, team, django_user_model):
    """A signed-in member of `team`."""
    user = django_user_model.objects.create_user("olive", "olive@example.com", "x")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


@pytest.fixture
def outsider(other_team, django_user_model):
    user = django_user_model.objects.create_user("oscar", "oscar@example.com", "x")
    Membership.objects.create(team=other_team, user=user)
    return user


def detail(api, check: Check) -> dict:
    response = api.get(f"/v2/monitor/{check.monitor_id}/checks/{check.pk}")
    assert response.status_code == 200, response.content
    return response.json()["data"]["pages"][0]["metadata"]


# --- Signed links -----------------------------------------------------------------


def test_the_api_gives_a_signed_link_that_serves_the_screenshot_without_a_key(
    api, client, monitor, settings
):
    settings.PUBLIC_BASE_URL = "https://watch.example"
    page = result_with(make_check(monitor), png((10, 10, 50, 50)))

    link = detail(api, page.check_run)["screenshot"]

    assert link.startswith("https://watch.example/captures/")
    response = client.get(link.removeprefix("https://watch.example"))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response.content == png((10, 10, 50, 50))
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"


def test_the_actions_screenshots_and_pdfs_are_links_too(api, monitor):
    shot, pdf = Shot(png(), "image/png"), Shot(b"%PDF-1.7 x", "application/pdf")
    ids = Capture.store_many([shot, pdf])
    page = result_with(
        make_check(monitor),
        None,
        actions={
            "screenshots": [shot.digest],
            "pdfs": [pdf.digest],
            "scrapes": [],
            "javascriptReturns": [{"type": "number", "value": 4}],
        },
    )
    page.captures.add(*ids.values())

    actions = detail(api, page.check_run)["actions"]

    assert [re.sub(r"/captures/.*", "", u) for u in actions["screenshots"]] == [
        "http://127.0.0.1:8000"
    ]
    assert "/captures/" in actions["pdfs"][0]
    assert actions["javascriptReturns"] == [{"type": "number", "value": 4}]
    assert page.metadata["actions"]["pdfs"] == [pdf.digest]  # stored as hashes


def test_a_link_expires_and_a_tampered_one_names_nothing(client, monitor, settings):
    settings.CAPTURE_URL_TTL_SECONDS = 3600
    page = result_with(make_check(monitor), png())
    other = Capture.objects.create(
        content_hash="f" * 64, media_type="image/png", data=png(), size=10
    )
    path = capture_url(page.screenshot).removeprefix(settings.PUBLIC_BASE_URL)

    forged = path.replace(page.screenshot, other.content_hash)
    assert client.get(forged).status_code == 404
    assert client.get(path[:-3] + "abc").status_code == 404
    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        expired = client.get(path)
    assert expired.status_code == 410
    assert "expired" in expired.content.decode()


def test_links_handed_out_within_a_window_are_one_link_each_lasting_its_time(
    client, monitor, settings
):
    settings.CAPTURE_URL_TTL_SECONDS = 3600  # signed per window of 15 minutes
    page = result_with(make_check(monitor), png())
    window = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
    minutes = timedelta(minutes=1)

    def link_at(moment: datetime) -> str:
        with time_machine.travel(moment, tick=False):
            return capture_url(page.screenshot).removeprefix(settings.PUBLIC_BASE_URL)

    def served_at(path: str, moment: datetime) -> int:
        with time_machine.travel(moment, tick=False):
            return client.get(path).status_code

    first = link_at(window)
    last = link_at(window + 15 * minutes - timedelta(seconds=1))
    assert last == first
    assert link_at(window + 15 * minutes) != first
    # The link handed out last in the window still works its full hour...
    assert served_at(last, window + 75 * minutes - timedelta(seconds=1)) == 200
    # ...and no longer: it is gone an hour after its window ended.
    assert served_at(first, window + 75 * minutes + timedelta(seconds=1)) == 410


# --- The dashboard ------------------------------------------------------------------


def page_view(web, page: PageResult) -> str:
    check = page.check_run
    response = web.get(reverse("page-diff", args=[check.monitor_id, check.pk, page.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_view_shows_before_after_and_what_looks_different(
    web,
    monitor,
):
    make_check_before = make_check(monitor)
    result_with(make_check_before, png(), when=timedelta(hours=-1))
    page = result_with(make_check(monitor), png((100, 50, 160, 90)))

    shown = page_view(web, page)

    assert "About 6 % of the page looks different, in 1 place." in shown
    images = re.findall(r'<img src="([^"]+)" alt="([^"]+)"', shown)
    assert [alt for _, alt in images] == [
        "The page as it looked before",
        "The page as it looked in this check, with the places that look "
        "different outlined in red",
    ]
    for src, _ in images:
        assert web.get(src)["Content-Type"] == "image/png"
    # The box drawn over the screenshot: the new square and a margin around it.
    assert re.findall(
        r'<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"', shown
    ) == [("94", "44", "73", "53")]
    page.refresh_from_db()
    assert page.visual_change["boxes"] == [[94, 44, 73, 53]]
    assert page.visual_change["before"] == page.previous_screenshot()
    marked = reverse(
        "page-visual-change", args=[monitor.pk, page.check_run_id, page.pk]
    )
    assert f'href="{marked}"' in shown
    change = web.get(marked)
    assert change["Content-Type"] == "image/png"
    picture = Image.open(io.BytesIO(change.content)).convert("RGB")
    red, green, blue = picture.getpixel((95, 70))
    assert red > 180 and green < 80 and blue < 80  # the outline, in red
    assert max(picture.getpixel((130, 70))) < 60  # the new square, lightly tinted
    assert picture.getpixel((10, 190)) == (255, 255, 255)  # unchanged
    assert float(change["X-Changed-Fraction"]) == pytest.approx(
        73 * 53 / (320 * 200), rel=0.01
    )


def test_a_page_is_compared_once_and_the_comparison_kept(web, monitor):
    result_with(make_check(monitor), png(), when=timedelta(hours=-1))
    page = result_with(make_check(monitor), png((10, 10, 30, 30)))
    page_view(web, page)
    Capture.objects.update(data=b"gone")  # were it compared again, it would fail

    shown = page_view(web, page)

    assert "Less than 1 %" not in shown
    assert "of the page looks different, in 1 place." in shown


def test_an_unchanged_screenshot_is_said_to_look_the_same(web, monitor):
    result_with(make_check(monitor), png(), when=timedelta(hours=-1))
    page = result_with(make_check(monitor), png())

    shown = page_view(web, page)

    assert "The screenshot looks exactly as it did before." in shown
    assert "page-visual-change" not in shown and "visual-change.png" not in shown


def test_another_teams_visual_change_is_not_found(client, outsider, monitor):
    result_with(make_check(monitor), png(), when=timedelta(hours=-1))
    page = result_with(make_check(monitor), png((1, 1, 9, 9)))
    client.force_login(outsider)

    response = client.get(
        reverse("page-visual-change", args=[monitor.pk, page.check_run_id, page.pk])
    )

    assert response.status_code == 404


def test_how_a_page_was_fetched_is_said_in_plain_words(web, monitor):
    detected = result_with(
        make_check(monitor),
        None,
        fetchedWith="browser",
        fetchedWithReason="A plain fetch found it built by scripts: an empty app "
        'root (<div id="root">) and 0 characters of text.',
        blockedRequests=["Blocked: 10.0.0.5 is a private address"],
    )
    missing = result_with(
        make_check(monitor),
        None,
        fetchedWith="http",
        fetchedWithReason="A plain fetch found it built by scripts (x), but no "
        "browser is available to see it (see BROWSER_EXECUTABLE).",
    )

    shown = page_view(web, detected)
    assert "Opened in a real browser: scripts build this page&#x27;s content" in (shown)
    assert "kept from reaching 1 address this page asked for" in shown
    assert "Blocked: 10.0.0.5 is a private address" in shown
    assert "no browser is installed to show it" in page_view(web, missing)


def test_the_monitor_says_when_its_pages_need_a_browser_this_server_lacks(
    web,
    team,
    settings,
):
    needs = make_monitor(
        team,
        targets=[
            {
                "type": "scrape",
                "urls": ["https://example.com/"],
                "scrapeOptions": {"waitFor": 500},
            }
        ],
    )
    plain = make_monitor(team)

    def shown(monitor) -> str:
        url = reverse("monitor-detail", args=[monitor.pk])
        return web.get(url).content.decode()

    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"
    assert "No browser is installed on this server." in shown(needs)
    assert "No browser is installed" not in shown(plain)
    settings.BROWSER_EXECUTABLE = "/bin/sh"  # any executable stands in
    assert "No browser is installed" not in shown(needs)


# --- Retention ----------------------------------------------------------------------


def test_retention_forgets_captures_no_remaining_result_refers_to(monitor):
    old = make_check(monitor)
    kept = make_check(monitor)
    Check.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=60)
    )
    result_with(old, png((1, 1, 5, 5)))  # only the old check has it
    result_with(old, png())
    result_with(kept, png())  # shared with the kept check
    Capture.objects.update(created_at=timezone.now() - timedelta(days=60))

    purged = retention.purge_expired(timezone.now())

    assert purged.checks == 1 and purged.captures == 1
    assert list(Capture.objects.values_list("content_hash", flat=True)) == [
        Shot(png(), "image/png").digest
    ]


def test_the_oldest_kept_change_still_shows_how_it_looked_before_after_retention(
    web, monitor
):
    """The screenshot before a change belongs to the result before it: when
    retention deleted that one, the change kept lost its "before" (and the
    capture itself, with nothing else referring to it)."""
    old = make_check(monitor)
    Check.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=60)
    )
    result_with(old, png(), when=timedelta(days=-60))
    page = result_with(make_check(monitor), png((100, 50, 160, 90)))
    Capture.objects.update(created_at=timezone.now() - timedelta(days=60))

    purged = retention.purge_expired(timezone.now())

    assert purged.checks == 1 and purged.captures == 0
    page = PageResult.objects.get(pk=page.pk)
    assert page.previous_screenshot() == Shot(png(), "image/png").digest
    shown = page_view(web, page)
    assert "The page as it looked before" in shown
    assert "About 6 % of the page looks different, in 1 place." in shown
    marked = reverse(
        "page-visual-change", args=[monitor.pk, page.check_run_id, page.pk]
    )
    assert web.get(marked).status_code == 200


def screenshotted_history(team, pages: int) -> list[PageResult]:
    """A monitor whose expired check took `pages` screenshots and whose kept
    check took them again: the kept results, each to be handed the one
    before it."""
    monitor = make_monitor(team)
    old = make_check(monitor)
    Check.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=60)
    )
    kept = make_check(monitor)
    urls = [f"https://example.com/page-{n}" for n in range(pages)]
    for n, url in enumerate(urls):
        gone = result_with(old, png((n, n, n + 5, n + 5)), when=timedelta(days=-60))
        PageResult.objects.filter(pk=gone.pk).update(url=url)
    stay = []
    for n, url in enumerate(urls):
        page = result_with(kept, png((n, 50, n + 60, 90)))
        PageResult.objects.filter(pk=page.pk).update(url=url)
        stay.append(page)
    Capture.objects.update(created_at=timezone.now() - timedelta(days=60))
    return stay


def test_retention_hands_screenshots_over_in_as_many_queries_for_many_pages(team):
    """Each page's next result was looked up on its own, by a URL no index
    covers: a query per screenshotted page, each reading the monitor's later
    history."""
    counts = []
    for pages in (2, 6):
        kept = screenshotted_history(team, pages)
        with CaptureQueriesContext(connection) as queries:
            purged = retention.purge_expired(timezone.now())
        assert purged.checks == 1 and purged.captures == 0
        for page in kept:
            page = PageResult.objects.get(pk=page.pk)
            before = page.previous_screenshot()
            assert before is not None and before != page.screenshot
            assert page.captures.filter(content_hash=before).exists()
        counts.append(len(queries))
    assert counts[0] == counts[1]


# --- Turning screenshots on in the dashboard's form ------------------------------


def screenshot_box(html: str) -> str:
    found = re.search(r'<input type="checkbox" name="[^"]*-screenshot"[^>]*>', html)
    assert found, "the form has no screenshot box"
    return found.group(0)


def test_screenshots_are_turned_on_and_off_in_the_dashboard_form(web, team):
    create = web.get(reverse("monitor-create")).content.decode()
    assert "Take screenshots and compare how the pages look" in create
    assert "checked" not in screenshot_box(create)

    web.post(reverse("monitor-create"), scrape_form(**{"t0000aaaa-screenshot": "on"}))

    monitor = Monitor.objects.get(team=team)
    target = monitor.targets.get()
    assert target.scrape_options["formats"] == ["screenshot"]
    edit = reverse("monitor-edit", args=[monitor.pk])
    assert "checked" in screenshot_box(web.get(edit).content.decode())

    # A screenshot format with options of its own (set through the API) is
    # kept while the box stays ticked, other formats always.
    shot = {"type": "screenshot", "fullPage": True}
    target.scrape_options = {"formats": ["markdown", shot]}
    target.save(update_fields=["scrape_options"])
    row = {"t0000aaaa-id": str(target.pk)}
    web.post(edit, scrape_form(**row, **{"t0000aaaa-screenshot": "on"}))
    target.refresh_from_db()
    assert target.scrape_options["formats"] == ["markdown", shot]

    web.post(edit, scrape_form(**row))

    target.refresh_from_db()
    assert target.scrape_options["formats"] == ["markdown"]
    assert "checked" not in screenshot_box(web.get(edit).content.decode())


def test_screenshots_on_a_monitor_that_never_opens_a_browser_are_refused(web, team):
    response = web.post(
        reverse("monitor-create"),
        scrape_form(fetch_with="http", **{"t0000aaaa-screenshot": "on"}),
    )

    assert not Monitor.objects.filter(team=team).exists()
    assert "for a screenshot" in response.content.decode()
    assert "formats" not in response.content.decode()
