"""Progress and times (#21.8), the diff's columns and the readable Text view
(#21.9), and the history: a monitor's chart and the team's feed (#21.13)."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.urls import reverse
from django.utils import timezone

from checks.content import render_inline, render_side_by_side
from checks.content.readable import readable_html
from checks.content.render import with_columns
from checks.models import Check, PageResult, Snapshot
from checks.notify import messages
from monitors import history
from monitors.models import Membership, Monitor, Target, Team
from monitors.templatetags.pagewatch import with_times

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def make_monitor(team: Team, name: str = "Pricing", **fields) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        schedule_timezone="Europe/Berlin",
        **fields,
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/a"])
    return monitor


def make_check(monitor: Monitor, when: datetime, **summary) -> Check:
    counts = dict.fromkeys(("same", "changed", "new", "removed", "error"), 0)
    counts |= summary
    counts["totalPages"] = sum(counts.values())
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.COMPLETED,
        started_at=when,
        finished_at=when + timedelta(seconds=1),
        summary=counts,
    )
    Check.objects.filter(pk=check.pk).update(created_at=when)
    check.refresh_from_db()
    return check


def make_page(check: Check, url: str, status: str = "changed") -> PageResult:
    return PageResult.objects.create(
        check_run=check,
        target_id=check.monitor.targets.first().pk,
        url=url,
        status=status,
        current_snapshot=Snapshot.store(f"copy of {url}"),
        metadata={"title": f"Title of {url}"},
    )


class Markup(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}


# ---------------------------------------------------------------- #21.8


class Moment:
    def __init__(self, when: datetime) -> None:
        self.created_at = when


def test_times_get_seconds_only_where_a_neighbour_shares_the_minute():
    base = datetime(2026, 11, 20, 10, 30, 5, tzinfo=UTC)
    rows = [Moment(base + timedelta(seconds=s)) for s in (0, 33, 600, 1200, 1210)]
    shown = [text for _, text, _ in with_times(rows, "Europe/Berlin")]
    assert shown == [
        "Fri 20 Nov 2026, 11:30:05 CET",
        "Fri 20 Nov 2026, 11:30:38 CET",
        "Fri 20 Nov 2026, 11:40 CET",
        "Fri 20 Nov 2026, 11:50:05 CET",
        "Fri 20 Nov 2026, 11:50:15 CET",
    ]
    full = [full for _, _, full in with_times(rows, "Europe/Berlin")]
    assert full[2] == "Fri 20 Nov 2026, 11:40:05 CET"


def test_the_check_history_shows_seconds_for_checks_in_the_same_minute(web, team):
    monitor = make_monitor(team)
    base = datetime(2026, 11, 20, 10, 30, 5, tzinfo=UTC)
    make_check(monitor, base, same=1)
    make_check(monitor, base + timedelta(seconds=33), same=1)
    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())
    assert 'title="Fri 20 Nov 2026, 11:30:38 CET">Fri 20 Nov 2026, 11:30:38 CET' in page
    assert ">Fri 20 Nov 2026, 11:30:05 CET</time>" in page


def test_a_running_check_without_its_page_list_says_starting_not_0_of_0(web, team):
    monitor = make_monitor(team)
    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.RUNNING,
        started_at=timezone.now(),
    )
    url = reverse("check-progress", kwargs={"pk": monitor.pk, "check_id": check.pk})
    body = web.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Starting the check…" in body and "0 of 0" not in body
    Check.objects.filter(pk=check.pk).update(pages_total=4, pages_done=1)
    body = web.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "1 of 4 pages done" in body and "Starting" not in body


def test_run_now_tells_the_check_history_to_show_the_queued_check(
    web, team, monkeypatch
):
    from checks import dispatch

    monkeypatch.setattr(dispatch, "enqueue", lambda check_id: None)
    monitor = make_monitor(team)
    response = web.post(
        reverse("monitor-run", kwargs={"pk": monitor.pk}), HTTP_HX_REQUEST="true"
    )
    assert "checkStarted" in response["HX-Trigger"]
    assert Check.objects.filter(monitor=monitor, status="queued").exists()
    history_part = web.get(
        monitor.get_absolute_url(),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="check-history",
    ).content.decode()
    assert "Waiting to start" in history_part and "No checks yet" not in history_part


def test_the_list_says_a_first_check_is_under_way_not_no_checks_yet(web, team):
    monitor = make_monitor(team)
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    page = web.get(reverse("monitor-list")).content.decode()
    assert "First check under way" in page and "No checks yet" not in page


# ---------------------------------------------------------------- #21.9


def test_diff_tables_declare_narrow_gutters_before_any_row():
    old = "\n\n".join(f"line {n}" for n in range(120)) + "\n\nprice 19"
    new = old.replace("price 19", "price 24")
    split = render_side_by_side(old, new)
    assert split.startswith(
        '<table class="diff diff-split diff-digits-3"><colgroup>'
        '<col class="diff-ln-col"><col class="diff-text-col">'
        '<col class="diff-ln-col"><col class="diff-text-col"></colgroup><tbody>'
        '<tr class="diff-skip">'
    )
    inline = render_inline("a\n", "b\n")
    assert inline.startswith(
        '<table class="diff diff-inline diff-digits-2"><colgroup>'
        '<col class="diff-ln-col"><col class="diff-ln-col">'
        '<col class="diff-text-col"></colgroup><tbody>'
    )


def test_a_diff_stored_without_columns_gets_them_when_shown():
    stored = '<table class="diff diff-split"><tbody><tr class="diff-skip">'
    shown = with_columns(stored)
    assert shown.startswith('<table class="diff diff-split diff-digits-5"><colgroup>')
    assert shown.endswith('</colgroup><tbody><tr class="diff-skip">')
    current = render_side_by_side("a\n", "b\n")
    assert with_columns(current) == current


def test_the_text_view_shows_markdown_tables_as_tables():
    out, cut = readable_html(
        "# Plans\n\n| Plan | Price |\n|:--|--:|\n| Pro | $19 |\n| Team | $49 |\n"
    )
    assert not cut
    assert '<th class="align-left">Plan</th>' in out
    assert '<td class="align-right">$19</td>' in out
    assert "|" not in out


def test_the_text_view_nests_a_pages_headings_under_the_dashboards_own():
    out, _ = readable_html("# Plans\n\n## Pro\n\n#### Small print\n\n###### Tiny\n")
    assert re.findall(r"<(h\d)>", out) == ["h3", "h4", "h6", "h6"]
    assert "<h1>" not in out and "</h3>" in out


HOSTILE = """# <script>alert(1)</script>

| a | b |
|---|---|
| <img src=x onerror=alert(2)> | [click](javascript:alert(3)) |

Read [the terms](https://evil.example/x "t") and ![logo](https://evil.example/p.png).

<div onclick="alert(4)">raw</div>

```js" onload="alert(5)
<script>alert(6)</script>
```
"""


def test_the_text_view_never_carries_markup_links_or_styles_from_the_page():
    out, _ = readable_html(HOSTILE)
    markup = Markup(out)
    assert markup.tags <= {
        "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "blockquote",
        "pre", "code", "em", "strong", "s", "hr", "br", "div", "table", "thead",
        "tbody", "tr", "th", "td",
    }  # fmt: skip
    assert markup.attributes <= {"class", "start"}
    assert "<script" not in out and "<img" not in out and "href" not in out
    assert "evil.example" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "the terms" in out and "[image: logo]" in out
    assert 'onload="' not in out


def test_a_very_long_copy_is_read_up_to_a_limit():
    from checks.content.readable import READABLE_MAX_CHARS

    out, cut = readable_html("word " * READABLE_MAX_CHARS)
    assert cut and len(out) < READABLE_MAX_CHARS + 100


def test_the_diff_page_shows_the_readable_text_of_both_copies(web, team):
    monitor = make_monitor(team)
    check = make_check(monitor, timezone.now(), changed=1)
    page = PageResult.objects.create(
        check_run=check,
        target_id=monitor.targets.first().pk,
        url="https://e.com/a",
        status="changed",
        previous_snapshot=Snapshot.store("| Plan | Price |\n|---|---|\n| Pro | $19 |"),
        current_snapshot=Snapshot.store("| Plan | Price |\n|---|---|\n| Pro | $24 |"),
    )
    body = web.get(page.get_absolute_url()).content.decode()
    copies = body.split('id="snapshots-title"', 1)[1]
    assert copies.count('<div class="md-table"><table>') == 2
    assert "<td>$19</td>" in copies and "<td>$24</td>" in copies


# ---------------------------------------------------------------- #21.13


def test_the_chart_stacks_changed_and_failed_pages_per_check(team):
    monitor = make_monitor(team)
    start = timezone.now() - timedelta(hours=5)
    make_check(monitor, start, changed=3, error=1)
    make_check(monitor, start + timedelta(hours=1), same=4)
    failed = make_check(monitor, start + timedelta(hours=2))
    Check.objects.filter(pk=failed.pk).update(status="failed")
    Check.objects.create(monitor=monitor, trigger="manual")  # queued: not charted
    chart = history.check_chart(history.recent_checks(monitor))
    assert [(b.changed, b.errors, b.marker) for b in chart.bars] == [
        (3, 1, ""),
        (0, 0, ""),
        (0, 0, "failed"),
    ]
    first = chart.bars[0]
    assert chart.top == 4
    assert first.changed_height == pytest.approx(75) and first.errors_height == 25
    assert first.errors_y == chart.plot_top
    assert (chart.total_changed, chart.total_errors) == (3, 1)


def test_a_chart_bar_says_results_not_judged_were_not_judged_not_that_they_failed(
    web, team
):
    """A web search's results the judge gave no verdict on are drawn with the
    failed pages; the bar's hover said "2 failed" of them, where the chart's
    caption and the table say they could not be judged."""
    from checks.models import SEARCH_KEY

    monitor = make_monitor(team)
    start = timezone.now() - timedelta(hours=2)
    make_check(monitor, start, changed=2, error=1)
    search = make_check(monitor, start + timedelta(hours=1), new=1, error=3)
    found = {SEARCH_KEY: {"alert": 1, "skipped": 2}}
    Check.objects.filter(pk=search.pk).update(summary=search.summary | found)

    url = reverse("team-history")
    body = html.unescape(web.get(url, {"monitor": monitor.pk}).content.decode())
    titles = [
        title.split(": ", 1)[1]
        for title in re.findall(r'<a href="[^"]*" class="bar">\s*<title>([^<]*)<', body)
    ]

    assert titles == [
        "2 pages changed, 1 failed page",
        "0 pages changed, 1 new match, 1 failed page, "
        "2 search results that could not be judged",
    ]


def test_the_feed_lists_the_teams_changes_newest_first_with_links_to_diffs(
    web, team, other_team
):
    pricing = make_monitor(team, "Pricing")
    news = make_monitor(team, "News")
    gone = make_monitor(team, "Deleted one")
    theirs = make_monitor(other_team, "Globex secret")
    now = timezone.now()
    older = make_check(pricing, now - timedelta(hours=2), changed=1, same=3)
    make_page(older, "https://e.com/price")
    make_check(pricing, now - timedelta(hours=1), same=4)  # nothing changed
    newer = make_check(news, now - timedelta(minutes=5), changed=7, new=1)
    pages = [make_page(newer, f"https://e.com/n{i}") for i in range(7)]
    make_page(newer, "https://e.com/brand-new", status="new")
    make_page(make_check(theirs, now, changed=1), "https://globex.example/x")
    make_page(make_check(gone, now, changed=1), "https://e.com/gone")
    gone.soft_delete(now)

    body = html.unescape(web.get(reverse("team-history")).content.decode())
    assert body.index("News") < body.index("Pricing")
    assert pages[0].get_absolute_url() in body
    assert "Title of https://e.com/price" in body
    assert "and 3 more pages in this check" in body  # 8 pages, 5 shown
    assert "brand-new" not in body  # a new page comes after the changed ones
    assert "globex" not in body.lower() and "Deleted one" not in body
    assert body.count('class="feed-item"') == 2


def test_the_feed_of_one_monitor_has_its_chart_and_other_teams_get_404(
    web, team, other_team
):
    pricing = make_monitor(team)
    make_page(make_check(pricing, timezone.now(), changed=1), "https://e.com/p")
    url = reverse("team-history")
    body = web.get(url, {"monitor": pricing.pk}).content.decode()
    assert 'class="check-chart"' in body and body.count('class="feed-item"') == 1
    theirs = make_monitor(other_team)
    assert web.get(url, {"monitor": theirs.pk}).status_code == 404
    assert web.get(url, {"monitor": "not-a-uuid"}).status_code == 404
    assert web.get(url, {"page": "x"}).status_code == 200


def test_the_feed_pages_without_counting_the_whole_history(
    web, team, django_assert_max_num_queries
):
    monitor = make_monitor(team)
    start = timezone.now() - timedelta(days=2)
    for n in range(history.FEED_CHECKS_PER_PAGE + 3):
        make_page(make_check(monitor, start + timedelta(minutes=n), changed=1), "u")
    url = reverse("team-history")
    with django_assert_max_num_queries(8):
        first = web.get(url).content.decode()
    assert first.count('class="feed-item"') == history.FEED_CHECKS_PER_PAGE
    assert 'rel="next"' in first and "COUNT" not in first
    second = web.get(url, {"page": 2}).content.decode()
    assert second.count('class="feed-item"') == 3 and 'rel="next"' not in second
    assert "Nothing older" in web.get(url, {"page": 3}).content.decode()


def test_history_is_in_the_main_navigation(web):
    body = web.get(reverse("team-history")).content.decode()
    assert (
        f'<a href="{reverse("team-history")}" aria-current="page">History</a>' in body
    )


def judge(page: PageResult, verdict: str) -> PageResult:
    """Give a changed page the verdict a check would have recorded, and its
    check the count of noise it would have kept."""
    meaningful = verdict != PageResult.Verdict.NOISE
    page.verdict = verdict
    page.judgment = {
        "meaningful": meaningful,
        "confidence": "low" if verdict == PageResult.Verdict.NOT_JUDGED else "high",
        "reason": "Judged." if verdict != PageResult.Verdict.NOT_JUDGED else "None.",
        "meaningfulChanges": [],
    }
    page.save(update_fields=["verdict", "judgment"])
    noise = page.check_run.pages.filter(status="changed", verdict="noise").count()
    Check.objects.filter(pk=page.check_run_id).update(noise=noise)
    return page


def test_meaningful_changes_only_leaves_out_checks_whose_changes_all_were_noise(
    web, team
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    now = timezone.now()
    before_goal = make_check(monitor, now - timedelta(hours=4), changed=1)
    make_page(before_goal, "https://e.com/a")  # nobody judged it
    no_model = make_check(monitor, now - timedelta(hours=3), changed=1)
    judge(make_page(no_model, "https://e.com/a"), PageResult.Verdict.NOT_JUDGED)
    noise = make_check(monitor, now - timedelta(hours=2), changed=1)
    judge(make_page(noise, "https://e.com/a"), PageResult.Verdict.NOISE)
    meaningful = make_check(monitor, now - timedelta(hours=1), changed=1)
    judge(make_page(meaningful, "https://e.com/a"), PageResult.Verdict.MEANINGFUL)

    every = web.get(monitor.get_absolute_url()).content.decode()
    only = web.get(monitor.get_absolute_url(), {"changes": "meaningful"})
    listed = html.unescape(only.content.decode().split('id="check-history"')[1])

    for check in (before_goal, no_model, noise, meaningful):
        assert str(check.pk) in every.split('id="check-history"')[1]
    for check in (before_goal, no_model, meaningful):
        assert str(check.pk) in listed
    assert str(noise.pk) not in listed
    assert "every change but those the AI judge called unimportant" in listed


def test_meaningful_changes_only_lists_every_change_of_a_monitor_that_does_not_judge(
    web, team
):
    monitor = make_monitor(team)  # no goal: judging is off
    check = make_check(monitor, timezone.now(), changed=1)
    make_page(check, "https://e.com/a")

    only = web.get(monitor.get_absolute_url(), {"changes": "meaningful"})

    assert str(check.pk) in only.content.decode().split('id="check-history"')[1]


def test_meaningful_changes_only_says_so_when_every_change_was_judged_unimportant(
    web, team
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    check = make_check(monitor, timezone.now(), changed=1)
    judge(make_page(check, "https://e.com/a"), PageResult.Verdict.NOISE)

    only = web.get(monitor.get_absolute_url(), {"changes": "meaningful"})

    body = html.unescape(only.content.decode())
    assert "No check has a meaningful change yet." in body
    assert str(check.pk) not in body.split('id="check-history"')[1]


@pytest.mark.parametrize(
    "pages",
    [
        [("changed", "")],
        [("changed", "not_judged")],
        [("changed", "meaningful")],
        [("changed", "noise")],
        [("changed", "noise"), ("changed", "not_judged")],
        [("changed", "noise"), ("new", "")],
        [("changed", "noise"), ("removed", "")],
        [("new", "meaningful")],
        [("removed", "")],
    ],
    ids=str,
)
def test_the_dashboards_meaningful_changes_are_what_a_meaningful_only_channel_is_told(
    web, team, pages
):
    monitor = make_monitor(team, goal="Prices", judge_enabled=True)
    counts = {status: sum(1 for s, _ in pages if s == status) for status, _ in pages}
    check = make_check(monitor, timezone.now(), **counts)
    for n, (status, verdict) in enumerate(pages):
        page = make_page(check, f"https://e.com/{n}", status)
        if verdict:
            judge(page, verdict)

    told = messages.change(check, meaningful_only=True) is not None
    only = web.get(monitor.get_absolute_url(), {"changes": "meaningful"})
    listed = str(check.pk) in only.content.decode().split('id="check-history"')[1]
    on_check = web.get(check.get_absolute_url(), {"status": "meaningful"})
    chip = re.search(
        r'Meaningful changes <span class="chip-count">(\d+)</span>',
        on_check.content.decode(),
    )
    shown = on_check.content.decode().split('id="pages-title"')[1].count("e.com/")

    assert listed is told
    assert chip is not None and (int(chip[1]) > 0) is told
    assert (shown > 0) is told


def test_the_feed_walks_the_index_of_checks_with_changes_not_every_check(team):
    """At 100,000 checks on SQLite a sort of all of a team's checks took
    hundreds of milliseconds; walking the partial index newest first stops
    after a page. (PostgreSQL plans by its statistics: on a table this small
    it sorts, so there the index is checked to exist.)"""
    from django.db import connection

    monitors = [make_monitor(team, f"Shop {i}") for i in range(20)]
    now = timezone.now()
    for i in range(200):
        make_check(
            monitors[i % 20],
            now - timedelta(minutes=i),
            same=2,
            changed=int(i % 9 == 0),
        )
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("ANALYZE")
            sql, params = history.feed_checks(team)[:26].query.sql_with_params()
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = " ".join(str(row) for row in cursor.fetchall())
            assert "check_changes_recent_idx" in plan
            assert "TEMP B-TREE" not in plan
        else:
            indexes = connection.introspection.get_constraints(cursor, "checks_check")
            assert indexes["check_changes_recent_idx"]["columns"] == [
                "created_at",
                "id",
            ]

    assert len(history.feed_checks(team)) == 23


def test_the_chart_words_pages_seen_for_the_first_time_as_new_not_changed(web, team):
    monitor = make_monitor(team)
    start = timezone.now() - timedelta(hours=2)
    make_check(monitor, start, new=2)
    make_check(monitor, start + timedelta(hours=1), changed=3, removed=1)
    body = web.get(reverse("team-history"), {"monitor": monitor.pk}).content.decode()
    assert "2 new" in body and "0 pages changed, 2 new," in body
    assert "3 pages changed, 1 removed," in body
    assert "3 pages changed, 2 new, 1 removed" in body  # the sentence under it
    assert "6 changed" not in body and "2 changed" not in body


def test_the_chart_counts_a_searchs_results_apart_from_the_pages_beside_them(web, team):
    monitor = make_monitor(team)
    check = make_check(monitor, timezone.now() - timedelta(hours=1), same=1)
    # One page unchanged; a new match, and a result the model could not judge.
    Check.objects.filter(pk=check.pk).update(
        summary={
            "same": 1,
            "changed": 0,
            "new": 1,
            "removed": 0,
            "error": 1,
            "totalPages": 3,
            "search": {"alert": 1, "skipped": 1},
        }  # fmt: skip
    )
    body = html.unescape(
        web.get(reverse("team-history"), {"monitor": monitor.pk}).content.decode()
    )
    caption = body.split("<figcaption>", 1)[1].split("</figcaption>", 1)[0]

    assert "0 pages changed, 1 new match and 1 search result that could not be " in (
        " ".join(caption.split())
    )
    assert "1 new and" not in caption and "failed page" not in caption
    assert "Pages or search results that could not be checked" in caption
    assert "went away, and new matches of a web search" in caption
