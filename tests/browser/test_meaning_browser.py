"""What a change means, in a real Chromium at 1280 and 390 px: a change
judged unimportant is told apart from one that matters, a web search speaks
its own words, History reads on one clock, a changed page opens on its marked
text, a phone gets inline views and a readable chart, and a crawl's removed
page keeps its title."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from checks.models import Check, PageResult, PageState, Snapshot
from monitors.models import Target
from tests.browser.people import sign_in
from tests.browser.test_dashboard_browser import assert_clean, make_monitor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {
    "1280": {"width": 1280, "height": 900},
    "390": {"width": 390, "height": 844},
}

BEFORE = (
    "# Acme pricing\n\n| Plan | Price |\n| --- | --- |\n"
    "| Starter | $19 |\n| Pro | $49 |\n"
)
AFTER = BEFORE.replace("$49", "$59")


def finish(monitor, pages, when) -> Check:
    """A check of these (url, status, verdict, extra fields) pages, finished
    as a worker finishes it."""
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.RUNNING,
        started_at=when,
    )
    Check.objects.filter(pk=check.pk).update(created_at=when)
    target = monitor.targets.first()
    for url, status, verdict, fields in pages:
        PageResult.objects.create(
            check_run=check,
            target_id=target.pk,
            url=url,
            status=status,
            verdict=verdict,
            **fields,
        )
    check.refresh_from_db()
    check.finish(when + timedelta(seconds=3))
    return check


@pytest.fixture
def story(team):
    """A price change that matters and a counter judged unimportant in one
    check; a check that found only the counter; a web search's check; a
    crawl check whose removed page answered 404."""
    now = timezone.now().replace(microsecond=0)
    prices = make_monitor(
        team, ["https://shop.test/pricing", "https://shop.test/blog"],
        goal="Tell me when a price changes", judge_enabled=True,
    )  # fmt: skip
    changed = {
        "previous_snapshot": Snapshot.store(BEFORE),
        "current_snapshot": Snapshot.store(AFTER),
        "metadata": {"title": "Acme pricing"},
        "judgment": {"meaningful": True, "confidence": 0.9, "reason": "A price."},
    }
    noise = {
        "previous_snapshot": Snapshot.store("Visitors: 3"),
        "current_snapshot": Snapshot.store("Visitors: 4"),
        "metadata": {"title": "Blog"},
        "judgment": {"meaningful": False, "confidence": 0.9, "reason": "A counter."},
    }
    first = finish(
        prices,
        [
            ("https://shop.test/pricing", "changed", "meaningful", changed),
            ("https://shop.test/blog", "changed", "noise", noise),
        ],
        now - timedelta(minutes=10, seconds=20),
    )
    finish(
        prices,
        [("https://shop.test/blog", "changed", "noise", noise)],
        now - timedelta(minutes=10),
    )

    news = make_monitor(team, [], name="Acme news")
    Target.objects.create(monitor=news, type="search", queries=["acme"])
    found = [
        ("https://news.test/launch", "new", "meaningful", "alert", "Acme launches"),
        ("https://news.test/earnings", "same", "noise", "ignored", "Acme earnings"),
    ]
    searched = finish(
        news,
        [
            (url, status, verdict, {"metadata": {"searchStatus": s, "title": t}})
            for url, status, verdict, s, t in found
        ],
        now - timedelta(minutes=10, seconds=40),
    )

    site = make_monitor(team, [], name="Docs site")
    crawl = Target.objects.create(monitor=site, type="crawl", url="https://docs.test/")
    PageState.objects.create(
        monitor=site,
        target_id=crawl.pk,
        url="https://docs.test/old",
        url_hash=PageState.hash_url("https://docs.test/old"),
        presence=PageState.Presence.REMOVED,
        metadata={"title": "Installing the old way"},
    )
    crawled = finish(
        site,
        [
            ("https://docs.test/a", "same", "", {"metadata": {"title": "A"}}),
            ("https://docs.test/old", "removed", "", {"status_code": 404}),
            ("https://docs.test/b", "changed", "", noise | {"judgment": None}),
        ],
        now - timedelta(minutes=30),
    )
    Check.objects.filter(pk=crawled.pk).update(
        target_results=[
            {
                "targetId": str(crawl.pk),
                "type": "crawl",
                "pagesFound": 3,
                "pages": {"new": 0, "changed": 1, "removed": 1, "same": 1},
            },
        ]  # fmt: skip
    )
    return {
        "prices": prices,
        "first": first,
        "searched": searched,
        "crawled": crawled,
        "changed": first.pages.get(status="changed", verdict="meaningful"),
    }


def fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("size", VIEWPORTS)
def test_what_a_change_means_reads_the_same_everywhere(
    browser_page, member, story, screenshot, size
):
    page = browser_page
    viewport = VIEWPORTS[size]
    page.set_viewport_size(viewport)
    sign_in(page)

    # The list: the last check found only a change judged unimportant.
    page.goto("/")
    row = page.locator(f"#monitor-{story['prices'].pk}")
    row.get_by_text("1 change, judged unimportant").wait_for()
    assert row.get_by_text("1 changed").count() == 0
    news = page.locator(f"#monitor-{story['searched'].monitor_id}")
    news.get_by_text("1 new match").wait_for()
    assert news.get_by_text("unchanged").count() == 0
    fits(page, viewport["width"])
    screenshot(page, f"meaning-list-{size}")

    # The monitor page: the history and a chart that stays readable.
    page.goto(story["prices"].get_absolute_url())
    page.locator(".bar-noise").first.wait_for(state="attached")
    chart = page.locator("svg.check-chart").bounding_box()
    assert chart["height"] >= 100, "the chart is too small to read"
    fits(page, viewport["width"])
    screenshot(page, f"meaning-monitor-{size}")

    # History: one clock, verdicts, seconds where checks share a minute.
    page.goto("/history/")
    page.get_by_label("Times shown in").wait_for()
    page.get_by_text("Judged unimportant").first.wait_for()
    page.get_by_text("Matters for the goal").first.wait_for()
    times = page.locator("ol.feed time").all_inner_texts()
    assert len({t.rsplit(" ", 1)[-1] for t in times}) == 1, times  # one zone
    assert any(re.search(r"\d\d:\d\d:\d\d", t) for t in times), times
    fits(page, viewport["width"])
    screenshot(page, f"meaning-history-{size}")

    # A search check: filters in the words of its rows.
    page.goto(story["searched"].get_absolute_url())
    chips = page.locator("ul.chips")
    chips.get_by_text("New matches").wait_for()
    chips.get_by_text("Not relevant").wait_for()
    assert chips.get_by_text("Unchanged").count() == 0
    screenshot(page, f"meaning-search-check-{size}")

    # A crawl check: the removed page by its last title, changed first.
    page.goto(story["crawled"].get_absolute_url())
    page.get_by_text("Installing the old way").wait_for()
    page.get_by_text("2 pages found").wait_for()
    badges = page.locator("table.pages .badge").all_inner_texts()
    assert badges[0] == "Changed", badges
    screenshot(page, f"meaning-crawl-check-{size}")

    # The changed page opens on its text, the price marked inside its table.
    page.goto(story["changed"].get_absolute_url())
    cell = page.locator("#diff-region td", has=page.locator("ins.word-change"))
    assert cell.inner_text().split() == ["$49", "$59"]
    page.locator("#diff-region h3", has_text="Acme pricing").wait_for()
    assert page.locator("#diff-region").get_by_text("| --- |").count() == 0
    if size == "390":
        # Thumb-sized choices, and no side by side on a phone.
        text_link = page.get_by_role("link", name="Page text")
        assert text_link.bounding_box()["height"] >= 44
        assert not page.get_by_role("link", name="Side by side").is_visible()
    fits(page, viewport["width"])
    screenshot(page, f"meaning-diff-text-{size}")
    page.get_by_role("link", name="One column").click()
    page.locator("table.diff.diff-inline").wait_for()
    screenshot(page, f"meaning-diff-markdown-{size}")
    assert_clean(page)


def test_history_remembers_the_zone_a_viewer_picks(browser_page, member, story):
    page = browser_page
    sign_in(page)
    page.goto("/history/")
    page.get_by_label("Times shown in").select_option("UTC")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"tz=UTC"))
    page.goto("/history/")
    times = page.locator("ol.feed time").all_inner_texts()
    assert times and all(t.endswith("UTC") for t in times), times
    assert datetime.now(UTC)  # the feed is read in UTC from now on
    assert_clean(page)


def test_a_noise_change_beside_a_meaningful_one_in_the_list_and_on_the_check(
    browser_page, member, story, screenshot, team
):
    failed_judge = make_monitor(
        team, ["https://shop.test/terms"], name="Terms",
        goal="Tell me when the terms change", judge_enabled=True,
    )  # fmt: skip
    fail_open = {
        "previous_snapshot": Snapshot.store("Terms v1"),
        "current_snapshot": Snapshot.store("Terms v2"),
        "judgment": {
            "meaningful": True, "confidence": "low",
            "reason": "Not judged: the AI model did not answer.",
            "meaningfulChanges": [],
        },
    }  # fmt: skip
    finish(
        failed_judge,
        [("https://shop.test/terms", "changed", "not_judged", fail_open)],
        timezone.now() - timedelta(minutes=5),
    )
    quiet = story["prices"].checks.order_by("-created_at").first()
    page = browser_page
    sign_in(page)

    page.goto("/")
    prices = page.locator(f"#monitor-{story['prices'].pk}")
    prices.get_by_text("1 change, judged unimportant").wait_for()
    cells = prices.locator("ol.strip li")
    assert "has-changes" in cells.nth(0).get_attribute("class")
    assert "has-changes" not in cells.nth(1).get_attribute("class")
    terms = page.locator(f"#monitor-{failed_judge.pk}")
    terms.get_by_text("1 not judged").wait_for()
    screenshot(page, "noise-beside-meaningful-list")

    page.goto(story["first"].get_absolute_url())
    rows = page.locator("table.pages")
    rows.get_by_text("Matters for the goal").wait_for()
    rows.get_by_text("Judged unimportant").wait_for()
    screenshot(page, "noise-beside-meaningful-check")

    page.goto(quiet.get_absolute_url())
    page.get_by_text("every change was judged unimportant for the goal").wait_for()
    screenshot(page, "noise-only-check")
    assert_clean(page)
