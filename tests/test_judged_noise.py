"""A change the judge called unimportant never reads like one that matters:
the monitor list, the monitor page's check history and chart, the History
feed and its filter tell the two apart; where judging is off, a change is a
change."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from checks.models import Check, PageResult
from monitors import history
from tests import test_history
from tests.test_history import make_check, make_monitor, make_page

pytestmark = pytest.mark.django_db

web = test_history.web


def finished_check(monitor, *verdicts: str, minutes_ago: int = 5) -> Check:
    """A check whose changed pages got these verdicts ("" = not judged),
    finished as a worker finishes it."""
    when = timezone.now() - timedelta(minutes=minutes_ago)
    check = make_check(monitor, when, changed=len(verdicts))
    Check.objects.filter(pk=check.pk).update(status=Check.Status.RUNNING)
    check.refresh_from_db()
    for index, verdict in enumerate(verdicts):
        page = make_page(check, f"https://e.com/p{minutes_ago}-{index}")
        judgment = None
        if verdict:  # as the judge writes it; a failed judge fails open
            judgment = {
                "meaningful": verdict != "noise",
                "confidence": "high" if verdict != "not_judged" else "low",
                "reason": f"Judged {verdict}.",
                "meaningfulChanges": [],
            }
        PageResult.objects.filter(pk=page.pk).update(verdict=verdict, judgment=judgment)
    check.finish(timezone.now())
    return check


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_finishing_a_check_counts_its_changes_judged_unimportant(team):
    monitor = make_monitor(team)
    check = finished_check(monitor, "noise", "meaningful", "noise")

    monitor.refresh_from_db()
    assert (check.noise, monitor.last_check_noise) == (2, 2)


def test_the_monitor_list_says_a_noise_only_check_was_judged_unimportant(web, team):
    monitor = make_monitor(team)
    finished_check(monitor, "noise")

    page = text(web.get(reverse("monitor-list")))

    assert "1 change, judged unimportant" in page
    assert "1 changed" not in page


def test_the_monitor_page_history_and_chart_tell_noise_apart(web, team):
    monitor = make_monitor(team)
    finished_check(monitor, "noise", minutes_ago=10)
    finished_check(monitor, "meaningful", "noise", minutes_ago=5)

    page = text(web.get(monitor.get_absolute_url()))
    chart = text(web.get(reverse("team-history") + f"?monitor={monitor.pk}"))

    assert "1 change, judged unimportant" in page
    assert "1 changed" in page and "1 more judged unimportant" in page
    assert 'class="bar-noise"' in chart and "Changes judged unimportant" in chart


def test_history_marks_the_verdicts_and_can_show_only_changes_that_matter(web, team):
    monitor = make_monitor(team, "Prices")
    noise_only = finished_check(monitor, "noise", minutes_ago=10)
    matters = finished_check(monitor, "meaningful", minutes_ago=5)

    everything = text(web.get(reverse("team-history")))
    filtered = text(web.get(reverse("team-history") + "?show=matter"))

    assert "Judged unimportant" in everything and "Matters for the goal" in everything
    assert noise_only.get_absolute_url() in everything
    assert matters.get_absolute_url() in filtered
    assert noise_only.get_absolute_url() not in filtered
    assert "Show every change" in filtered


def test_without_judging_every_change_counts_and_matters(web, team):
    monitor = make_monitor(team)
    check = finished_check(monitor, "", "")

    page = text(web.get(reverse("monitor-list")))

    assert "2 changed" in page and "unimportant" not in page
    assert [c.pk for c in history.feed_checks(team, that_matter=True)] == [check.pk]


def test_a_first_check_of_new_pages_draws_a_bar_not_a_flat_line(team):
    monitor = make_monitor(team)
    check = make_check(monitor, timezone.now(), new=1)

    [bar] = history.check_chart([check]).bars

    assert bar.changed == 1 and bar.changed_height > 0


def test_a_delivered_badge_is_green_and_a_failed_one_red():
    css = (settings.BASE_DIR / "static" / "css" / "app.css").read_text()

    assert ".d-delivered { background: var(--ok-bg)" in css
    assert ".d-failed { background: var(--bad-bg)" in css


def test_a_pages_own_history_marks_which_of_its_changes_were_judged_unimportant(
    web, team
):
    monitor = make_monitor(team)
    for minutes_ago, verdict in ((15, "noise"), (10, "noise"), (5, "meaningful")):
        check = make_check(
            monitor, timezone.now() - timedelta(minutes=minutes_ago), changed=1
        )
        page = make_page(check, "https://e.com/pricing")
        PageResult.objects.filter(pk=page.pk).update(verdict=verdict)

    shown = text(web.get(page.get_absolute_url()))
    timeline = shown.split('id="page-history-title"', 1)[1]

    assert timeline.count("Judged unimportant") == 2
    assert timeline.count("Matters for the goal") == 1


def test_a_checks_page_counts_and_filters_its_changes_judged_unimportant(web, team):
    monitor = make_monitor(team)
    check = finished_check(monitor, "meaningful", "noise", "noise")

    page = text(web.get(check.get_absolute_url()))
    noise = text(web.get(check.get_absolute_url(), {"status": "noise"}))
    rows = noise.split('id="pages-title"', 1)[1]

    assert 'Judged unimportant <span class="chip-count">2</span>' in page
    assert 'Meaningful changes <span class="chip-count">1</span>' in page
    assert rows.count("See what changed") == 2
    assert "Matters for the goal" not in rows


def test_history_of_changes_that_matter_with_none_says_so_not_that_nothing_changed(
    web, team
):
    finished_check(make_monitor(team), "noise")

    filtered = text(web.get(reverse("team-history") + "?show=matter"))
    empty = filtered.split('class="empty"', 1)[1]

    assert "No changes yet" not in empty
    assert "No changes that matter yet" in empty
    assert "the AI judge called unimportant" in empty and "Show every change" in empty


def test_the_monitor_lists_strip_marks_only_checks_with_a_change_that_matters(
    web, team
):
    monitor = make_monitor(team)
    finished_check(monitor, "noise", minutes_ago=10)
    finished_check(monitor, "meaningful", "noise", minutes_ago=5)

    page = web.get(reverse("monitor-list")).content.decode()
    cells = re.findall(r'<li class="(cell [^"]*)" title="([^"]*)"', page)
    spoken = text(web.get(reverse("monitor-list")))

    assert [("has-changes" in css, "judged unimportant" in t) for css, t in cells] == [
        (False, True),
        (True, True),
    ]
    assert "1 found changes that matter, 1 only changes judged unimportant" in spoken


def test_history_and_a_pages_timeline_say_a_change_was_not_judged(web, team):
    monitor = make_monitor(team)
    check = finished_check(monitor, "not_judged")
    page = check.pages.get()

    feed = text(web.get(reverse("team-history"))).split('id="main"', 1)[1]
    timeline = text(web.get(page.get_absolute_url())).split(
        'id="page-history-title"', 1
    )[1]

    assert "Not judged" in feed
    assert "Not judged" in timeline


def test_the_monitor_list_and_check_history_say_how_many_changes_were_not_judged(
    web, team
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    finished_check(monitor, "not_judged", "meaningful", "not_judged")
    quiet = make_monitor(team, "Judged fine", goal="Prices", judge_enabled=True)
    finished_check(quiet, "meaningful")

    listed = text(web.get(reverse("monitor-list")))
    rows = text(web.get(monitor.get_absolute_url())).split('id="check-history"', 1)[1]

    assert "3 changed" in listed and "2 not judged" in listed
    assert listed.count("not judged</li>") == 1  # the strip says it on hover
    assert "3 changed" in rows and "2 not judged" in rows


def test_a_monitor_list_of_monitors_without_unjudged_changes_asks_nothing_more(
    web, team, django_assert_max_num_queries
):
    for name in ("A", "B"):
        monitor = make_monitor(team, name, goal="Prices", judge_enabled=True)
        finished_check(monitor, "noise", "noise")
    web.get(reverse("monitor-list"))  # settle the session and caches

    with django_assert_max_num_queries(99) as queries:
        web.get(reverse("monitor-list"))

    assert not [q for q in queries.captured_queries if "not_judged" in q["sql"]]


def test_a_check_whose_every_change_was_noise_says_who_was_not_told(web, team):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    quiet = finished_check(monitor, "noise", "noise", minutes_ago=10)
    told = finished_check(monitor, "meaningful", "noise", minutes_ago=5)

    quiet_page = text(web.get(quiet.get_absolute_url()))
    told_page = text(web.get(told.get_absolute_url()))

    said = "every change was judged unimportant for the goal"
    assert said in quiet_page and "No e-mail" in quiet_page
    assert said not in told_page


def test_a_change_judged_unimportant_wears_the_calm_colour_wherever_its_row_is(
    web, team
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    check = finished_check(monitor, "meaningful", "noise")
    noise = check.pages.get(verdict="noise")

    pages = {
        "check": web.get(check.get_absolute_url()),
        "history": web.get(reverse("team-history")),
        "diff": web.get(noise.get_absolute_url()),
    }

    for where, response in pages.items():
        badges = re.findall(r'class="badge (?:big )?s-(\w+)">Changed<', text(response))
        assert sorted(set(badges)) == (
            ["noise"] if where == "diff" else ["changed", "noise"]
        ), where


def test_the_monitor_pages_last_check_card_says_how_many_changes_were_not_judged(
    web, team
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    finished_check(monitor, "not_judged", "meaningful")

    card = text(web.get(monitor.get_absolute_url())).split('class="run-result"', 1)[1]

    assert "2 changed" in card.split("</p>", 1)[0]
    assert "1 not judged" in card.split("</p>", 1)[0]


def test_a_monitor_page_asks_once_for_the_changes_not_judged_of_its_checks(
    web, team, django_assert_max_num_queries
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    for minutes_ago in (20, 15, 10, 5):
        finished_check(monitor, "not_judged", minutes_ago=minutes_ago)
    web.get(monitor.get_absolute_url())

    with django_assert_max_num_queries(99) as queries:
        shown = text(web.get(monitor.get_absolute_url()))

    asked = [q for q in queries.captured_queries if "'not_judged'" in q["sql"]]
    assert shown.count("1 not judged") == 5  # four rows and the last check's card
    assert len(asked) == 2  # the rows together, and the card


def test_the_monitor_lists_strip_says_a_change_was_not_judged_on_hover(web, team):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    finished_check(monitor, "not_judged", minutes_ago=10)
    finished_check(monitor, "not_judged", "meaningful", "not_judged", minutes_ago=5)

    page = html.unescape(web.get(reverse("monitor-list")).content.decode())
    titles = re.findall(r'<li class="cell [^"]*" title="([^"]*)"', page)

    assert [t.split(": ", 1)[1] for t in titles] == [
        "Completed, 1 changed, 1 not judged",
        "Completed, 3 changed, 2 not judged",
    ]


def test_the_strips_hover_says_each_checks_changes_as_the_history_page_counts_them(
    web, team
):
    """Changes judged unimportant, changes not judged and both at once: each
    cell's hover text uses the words of the History page's counts and its
    "not judged" badge, never a count the reader must guess the meaning of."""
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    states = [
        ("noise",),
        ("meaningful", "noise", "noise"),
        ("not_judged", "noise"),
        ("not_judged", "not_judged", "meaningful", "noise"),
    ]
    for minutes_ago, verdicts in zip((20, 15, 10, 5), states, strict=True):
        finished_check(monitor, *verdicts, minutes_ago=minutes_ago)

    page = html.unescape(web.get(reverse("monitor-list")).content.decode())
    titles = re.findall(r'<li class="cell [^"]*" title="([^"]*)"', page)
    feed = html.unescape(text(web.get(reverse("team-history"))))
    counts = [
        re.sub(r"<[^>]+>", ", ", row).strip(", ").replace(", , ", ", ")
        for row in re.findall(r'<ul class="counts">(.*?)</ul>', feed)
    ]

    hovered = [title.split(": ", 1)[1].removeprefix("Completed, ") for title in titles]
    assert hovered == [
        "1 change, judged unimportant",
        "1 changed, 2 more judged unimportant",
        "1 changed, 1 more judged unimportant, 1 not judged",
        "3 changed, 1 more judged unimportant, 2 not judged",
    ]
    assert counts == hovered[::-1]  # the History page lists the newest first


def test_history_counts_say_how_many_changes_of_a_check_were_not_judged(web, team):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    finished_check(monitor, "not_judged", minutes_ago=10)
    finished_check(monitor, "meaningful", minutes_ago=5)

    feed = text(web.get(reverse("team-history"))).split('id="main"', 1)[1]
    counts = re.findall(r'<ul class="counts">(.*?)</ul>', feed)

    assert ["not judged" in c for c in counts] == [False, True]
    assert "1 changed" in counts[1] and "1 not judged" in counts[1]


def test_a_checks_page_reads_only_a_page_of_its_pages_however_many_were_judged(
    web, team
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    small = finished_check(monitor, "noise", "noise", minutes_ago=10)
    large = finished_check(monitor, *["noise"] * 60, minutes_ago=5)
    web.get(small.get_absolute_url())

    shown = {}
    read = {}
    for name, check in (("small", small), ("large", large)):
        with CaptureQueriesContext(connection) as queries:
            shown[name] = text(web.get(check.get_absolute_url()))
        # Every read of page rows is counted by the database or cut to one
        # page of the list (LIMIT); none walks all of them.
        read[name] = [
            q["sql"]
            for q in queries.captured_queries
            if 'FROM "checks_pageresult"' in q["sql"]
            and "COUNT(" not in q["sql"]
            and "LIMIT" not in q["sql"]
        ]

    said = "every change was judged unimportant for the goal"
    assert said in shown["small"] and said in shown["large"]
    assert read == {"small": [], "large": []}
