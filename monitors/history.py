"""What the dashboard's history shows: a chart of a monitor's recent checks
and the team's feed of changes, newest first.

Both are made on the server and read without JavaScript: the chart is an SVG
whose shapes the template draws from the coordinates worked out here (plus a
table of the same numbers), the feed is plain HTML with links to each diff.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Case, F, IntegerField, Value, When, Window
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, RowNumber

from checks.models import SEARCH_KEY, Check, Crawl, PageResult
from checks.models.check import check_path
from checks.summary import found_nothing, page_counts, search_counts, search_words
from monitors.models import Monitor, Team

CHART_CHECKS = 30
FEED_CHECKS_PER_PAGE = 20
FEED_PAGES_PER_CHECK = 5
# What the feed lists of a check: pages that differ from the check before.
FEED_STATUSES = (
    PageResult.Status.CHANGED,
    PageResult.Status.REMOVED,
    PageResult.Status.NEW,
)

# Chart geometry, in SVG user units (the image scales to its box).
SLOT = 20
BAR = 14
PLOT_HEIGHT = 100
TOP = 8
LEFT = 34
BOTTOM = 22


@dataclass(frozen=True)
class Bar:
    """One check in the chart: its slot, and the heights of its changed
    pages that matter, its changes judged unimportant and its failed pages
    (stacked in that order from the bottom)."""

    check: Check
    x: int
    changed: int  # pages that differ and matter: changed, new or gone
    errors: int
    changed_y: float
    changed_height: float
    errors_y: float
    errors_height: float
    noise: int = 0  # changes the judge called unimportant
    noise_y: float = 0.0
    noise_height: float = 0.0
    # A check that looked at no page (failed outright, or skipped): drawn as
    # a mark on the axis so the gap is visible and explained.
    marker: str = ""
    new: int = 0  # of `changed`, pages seen for the first time
    removed: int = 0  # of `changed`, pages that went away
    matches: int = 0  # of `changed`, a web search's new matches
    unjudged: int = 0  # of `errors`, search results that could not be judged

    @property
    def found_words(self) -> str:
        return found_words(self.changed, self.new, self.removed, self.matches)

    @property
    def errors_words(self) -> str:
        return errors_words(self.errors, self.unjudged)

    @property
    def started_at(self) -> Any:
        return self.check.started_at

    @property
    def created_at(self) -> Any:
        return self.check.created_at


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    top: int  # the largest value the y axis shows
    width: int
    height: int = TOP + PLOT_HEIGHT + BOTTOM
    left: int = LEFT
    plot_top: int = TOP
    baseline: int = TOP + PLOT_HEIGHT
    bar_width: int = BAR
    middle_ticks: list[tuple[int, float]] = field(default_factory=list)

    @property
    def right(self) -> int:
        return self.width

    @property
    def total_changed(self) -> int:
        return sum(bar.changed for bar in self.bars)

    @property
    def total_found_words(self) -> str:
        return found_words(
            self.total_changed,
            sum(bar.new for bar in self.bars),
            sum(bar.removed for bar in self.bars),
            sum(bar.matches for bar in self.bars),
        )

    @property
    def total_errors(self) -> int:
        return sum(bar.errors for bar in self.bars)

    @property
    def total_matches(self) -> int:
        return sum(bar.matches for bar in self.bars)

    @property
    def total_unjudged(self) -> int:
        return sum(bar.unjudged for bar in self.bars)

    @property
    def total_errors_words(self) -> str:
        return errors_words(self.total_errors, self.total_unjudged)

    @property
    def total_noise(self) -> int:
        return sum(bar.noise for bar in self.bars)


def errors_words(errors: int, unjudged: int) -> str:
    """ "2 failed pages", "1 search result that could not be judged", or
    both: a search's results are not pages, and one the judge gave no
    verdict on did not fail."""
    pages = errors - unjudged
    parts = [f"{pages} failed page{'' if pages == 1 else 's'}"] if pages else []
    if unjudged:
        one = "search result that could not be judged"
        several = "search results that could not be judged"
        parts.append(f"{unjudged} {one if unjudged == 1 else several}")
    return ", ".join(parts) or "0 failed pages"


def found_words(found: int, new: int, removed: int, matches: int = 0) -> str:
    """What a chart counts as found, in words: "3 pages changed, 2 new,
    1 removed, 1 new match". A page seen for the first time is new, not
    changed; a web search's new match is neither."""
    changed = found - new - removed - matches
    parts = [f"{changed} page{'' if changed == 1 else 's'} changed"]
    if new:
        parts.append(f"{new} new")
    if removed:
        parts.append(f"{removed} removed")
    if matches:
        parts.append(search_words("alert", matches))
    return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class RecentCheck:
    """What a cell of the monitor list's history strip shows of a check."""

    status: str
    at: datetime  # started, else queued
    changed: int
    found_changes: bool  # pages changed, new or removed
    noise: int = 0  # of the changed pages, those judged unimportant
    new: int = 0  # pages seen for the first time
    removed: int = 0
    monitor_id: uuid.UUID | None = None
    pk: uuid.UUID | None = None
    matches: int = 0  # a web search's new matches, which are not new pages
    not_judged: int = 0  # of the changed pages, those the judge failed on

    @property
    def found_changes_that_matter(self) -> bool:
        """A change the judge did not call unimportant, as
        CheckQuerySet.with_changes_that_matter reads one: a check whose every
        change was judged noise is no change that matters."""
        return bool(
            self.changed > self.noise or self.new or self.removed or self.matches
        )

    def get_absolute_url(self) -> str:
        return check_path(self.monitor_id, self.pk)


def _count(value: Any) -> int:
    # Summary numbers come back as JSON text (PostgreSQL) or numbers (SQLite).
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


# Each monitor's newest checks straight from check_monitor_list_idx, however
# long its history: a LATERAL join, which the ORM cannot write.
_RECENT_SQL = """
SELECT c.monitor_id, c.status, COALESCE(c.started_at, c.created_at),
       c.summary ->> 'changed', c.summary ->> 'new', c.summary ->> 'removed',
       c.created_at, c.id, c.noise, c.summary -> 'search'
FROM unnest(%s::uuid[]) AS m(id)
CROSS JOIN LATERAL (
    SELECT * FROM checks_check WHERE monitor_id = m.id
    ORDER BY created_at DESC, id DESC LIMIT %s
) AS c
"""


def _recent_rows(monitor_ids: list[uuid.UUID], count: int) -> list[tuple]:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_RECENT_SQL, [monitor_ids, count])
            return cursor.fetchall()
    # Elsewhere (SQLite, for small installs) a window over the monitors'
    # checks picks them; it reads every check of these monitors.
    ranked = Check.objects.filter(monitor__in=monitor_ids).annotate(
        rank=Window(
            RowNumber(),
            partition_by=[F("monitor_id")],
            order_by=[F("created_at").desc(), F("id").desc()],
        )
    )
    return list(
        ranked.filter(rank__lte=count).values_list(
            "monitor_id",
            "status",
            Coalesce("started_at", "created_at"),
            KT("summary__changed"),
            KT("summary__new"),
            KT("summary__removed"),
            "created_at",
            "id",
            "noise",
            "summary__search",
        )
    )


def _search_of(value: Any) -> Any:
    # A summary's search counts come back as JSON text from the raw query on
    # PostgreSQL, already decoded through the ORM elsewhere.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def recent_per_monitor(
    monitor_ids: list[uuid.UUID], count: int
) -> dict[uuid.UUID, list[RecentCheck]]:
    """The last `count` checks of each monitor, oldest first, in one query
    that reads only the numbers a strip shows (whole check rows made the
    monitor list slow to build)."""
    by_monitor: dict[uuid.UUID, list[RecentCheck]] = defaultdict(list)
    if not monitor_ids:
        return by_monitor
    rows = _recent_rows(monitor_ids, count)
    rows.sort(key=lambda row: (row[6], row[7]))  # oldest first
    for monitor_id, status, at, changed, new, removed, _, pk, noise, search in rows:
        # A web search's new match is counted under `new` on the wire; the
        # strip tells it apart from new pages, as the chart does.
        summary = {"changed": changed, "new": new, "removed": removed}
        summary[SEARCH_KEY] = _search_of(search)
        pages, matches = page_counts(summary), search_counts(summary).get("alert", 0)
        found = bool(pages["changed"] or pages["new"] or pages["removed"] or matches)
        by_monitor[monitor_id].append(
            RecentCheck(
                status,
                at,
                pages["changed"],
                found,
                noise or 0,
                pages["new"],
                pages["removed"],
                monitor_id,
                pk,
                matches,
            )  # fmt: skip
        )
    return by_monitor


def with_not_judged(
    monitors: list[Monitor], recent: dict[uuid.UUID, list[RecentCheck]]
) -> dict[uuid.UUID, list[RecentCheck]]:
    """The strips with how many changes of each check the judge failed on,
    in one query; none unless a judging monitor has a check with a change
    not judged unimportant."""
    judging = {m.pk for m in monitors if m.judging}
    asked = [
        check.pk
        for monitor_id, checks in recent.items()
        if monitor_id in judging
        for check in checks
        if check.changed > check.noise
    ]
    counts = PageResult.objects.not_judged_per_check(asked)
    if not counts:
        return recent
    return {
        monitor_id: [
            replace(check, not_judged=counts[check.pk]) if check.pk in counts else check
            for check in checks
        ]
        for monitor_id, checks in recent.items()
    }


@dataclass(frozen=True)
class LastRan:
    """A monitor's newest check that looked at pages: what its row in the
    list says of it ("Check failed") and links to, whatever ran after."""

    monitor_id: uuid.UUID
    pk: uuid.UUID
    status: str

    @property
    def failed(self) -> bool:
        return self.status == Check.Status.FAILED

    def get_absolute_url(self) -> str:
        return check_path(self.monitor_id, self.pk)


def last_ran_per_monitor(monitor_ids: list[uuid.UUID]) -> dict[uuid.UUID, LastRan]:
    """Each monitor's newest check that looked at pages, the one the list's
    failing filter judges by (CheckQuerySet.monitors_failing). Read apart from
    the strip: a long check makes more slots skip than the strip holds."""
    if not monitor_ids:
        return {}
    return {
        monitor_id: LastRan(monitor_id, pk, status)
        for monitor_id, (pk, status) in Check.objects.last_ran(monitor_ids).items()
    }


def not_judged_last(
    monitors: list[Monitor], last_ran: dict[uuid.UUID, LastRan]
) -> dict[uuid.UUID, int]:
    """How many of the changes in each monitor's last check the judge failed
    on, by monitor (monitors with none left out). No query unless some
    judging monitor's last check has a change not judged unimportant."""
    newest = {
        last_ran[m.pk].pk: m.pk
        for m in monitors
        if m.judging
        and m.pk in last_ran
        and _count((m.last_check_summary or {}).get("changed")) > m.last_check_noise
    }
    counts = PageResult.objects.not_judged_per_check(list(newest))
    return {newest[check_id]: n for check_id, n in counts.items()}


def why_no_pages(
    monitors: list[Monitor], last_ran: dict[uuid.UUID, LastRan]
) -> dict[uuid.UUID, str]:
    """Why the last check of each of these monitors found no page (a crawl
    that robots.txt kept out), by monitor, in the words the check's own page
    gives; monitors whose check found pages, or says no reason, are left out.
    No query unless some monitor's last check found nothing."""
    newest = {
        last_ran[m.pk].pk: m.pk
        for m in monitors
        if m.last_check_summary
        and found_nothing(m.last_check_summary)
        and m.pk in last_ran
    }
    if not newest:
        return {}
    reasons = Crawl.objects.filter(check_run__in=list(newest)).reasons()
    return {newest[check_id]: reason for check_id, reason in reasons.items()}


def recent_checks(monitor: Monitor, count: int = CHART_CHECKS) -> list[Check]:
    """The monitor's last `count` finished checks, oldest first."""
    checks = (
        Check.objects.for_monitor(monitor)
        .filter(status__in=Check.FINISHED)
        .only(
            "id",
            "monitor_id",
            "status",
            "started_at",
            "created_at",
            "summary",
            "noise",
        )
        .order_by("-created_at", "-id")[:count]
    )
    return list(reversed(checks))


def _y(value: int, top: int) -> float:
    return TOP + PLOT_HEIGHT - PLOT_HEIGHT * value / top


def _marker(check: Check) -> str:
    if check.status == Check.Status.FAILED:
        return "failed"
    if check.status in (Check.Status.SKIPPED_OVERLAP, Check.Status.SKIPPED_NO_CREDITS):
        return "skipped"
    return ""


def check_chart(checks: list[Check]) -> Chart:
    """Bars of changed (meaningful, then judged unimportant) and failed
    pages per check, on a shared y axis."""
    counts = []
    for c in checks:
        # A web search's results are counted under the pages' counters on
        # the wire; here they are told apart (checks.summary).
        pages, results = page_counts(c.summary), search_counts(c.summary)
        changed = pages["changed"]
        noise = min(int(getattr(c, "noise", 0) or 0), changed)
        # Pages that appeared or went away are changes too: a first check's
        # new pages are not a flat zero; nor is a search's new match.
        found = changed - noise + pages["new"] + pages["removed"]
        matches, unjudged = results.get("alert", 0), results.get("skipped", 0)
        counts.append(
            (
                found + matches,
                noise,
                pages["error"] + unjudged,
                pages,
                matches,
                unjudged,
            )
        )
    top = max([sum(count[:3]) for count in counts] + [1])
    bars = []
    for index, (check, (changed, noise, errors, pages, matches, unjudged)) in enumerate(
        zip(checks, counts, strict=True)
    ):
        new, removed = pages["new"], pages["removed"]
        changed_y = _y(changed, top)
        noise_y = _y(changed + noise, top)
        errors_y = _y(changed + noise + errors, top)
        bars.append(
            Bar(
                check=check,
                x=LEFT + index * SLOT + (SLOT - BAR) // 2,
                changed=changed,
                errors=errors,
                changed_y=changed_y,
                changed_height=TOP + PLOT_HEIGHT - changed_y,
                errors_y=errors_y,
                errors_height=noise_y - errors_y,
                noise=noise,
                noise_y=noise_y,
                noise_height=changed_y - noise_y,
                marker="" if changed or noise or errors else _marker(check),
                new=new,
                removed=removed,
                matches=matches,
                unjudged=unjudged,
            )
        )
    middle = [(top // 2, _y(top // 2, top))] if top >= 4 else []
    # Always room for CHART_CHECKS bars, so a bar is as wide on every chart.
    width = LEFT + max(len(checks), CHART_CHECKS) * SLOT + 4
    return Chart(bars=bars, top=top, width=width, middle_ticks=middle)


# ---------------------------------------------------------------- the feed


@dataclass
class FeedEntry:
    """One check that found changes, with the first of its changed pages."""

    check: Check
    pages: list[PageResult] = field(default_factory=list)
    # Shown to the second: a neighbour in the feed reads the same minute.
    seconds: bool = False
    not_judged: int = 0  # of the check's changed pages, those the judge failed on

    @property
    def at(self) -> datetime:
        return self.check.started_at or self.check.created_at

    @property
    def more(self) -> int:
        summary = self.check.summary or {}
        total = sum(int(summary.get(status) or 0) for status in FEED_STATUSES)
        return max(total - len(self.pages), 0)


def feed_checks(
    team: Team, monitor: Monitor | None = None, *, that_matter: bool = False
) -> Any:
    """The team's checks that found changes (`that_matter`: changes the judge
    did not call unimportant), newest first (served by
    check_changes_recent_idx: walked newest first until a page is full)."""
    checks = Check.objects.filter(monitor__team=team, monitor__deleted_at__isnull=True)
    checks = checks.with_changes_that_matter() if that_matter else checks.with_changes()
    if monitor is not None:
        checks = checks.filter(monitor=monitor)
    return (
        checks.select_related("monitor")
        .defer("target_results", "notification_status")
        .order_by("-created_at", "-id")
    )


def feed_page(
    team: Team, page: int, monitor: Monitor | None = None, *, that_matter: bool = False
) -> tuple[list[FeedEntry], bool]:
    """(entries, has_more) of one page of the feed. Pages are counted without
    a COUNT over the team's whole history: one row more than a page says
    whether there is an older page."""
    start = (page - 1) * FEED_CHECKS_PER_PAGE
    checks = feed_checks(team, monitor, that_matter=that_matter)
    rows = list(checks[start : start + FEED_CHECKS_PER_PAGE + 1])
    has_more = len(rows) > FEED_CHECKS_PER_PAGE
    shown = rows[:FEED_CHECKS_PER_PAGE]
    not_judged = PageResult.objects.not_judged_per_check(
        [c.pk for c in shown if c.monitor.judging and c.changes_not_unimportant]
    )
    entries = [FeedEntry(c, not_judged=not_judged.get(c.pk, 0)) for c in shown]
    _attach_pages(entries)
    return entries, has_more


def _first_pages(checks: list[Check], per_check: int) -> Any:
    """The first `per_check` pages of each of these checks that differ from
    before, changed ones first, as one query."""
    order = Case(
        *(When(status=s, then=Value(i)) for i, s in enumerate(FEED_STATUSES)),
        output_field=IntegerField(),
    )
    return (
        PageResult.objects.filter(check_run__in=[check.pk for check in checks])
        .filter(status__in=FEED_STATUSES)
        .annotate(
            weight=order,
            rank=Window(
                RowNumber(),
                partition_by=[F("check_run_id")],
                order_by=[order.asc(), F("created_at").asc(), F("id").asc()],
            ),
        )
        .filter(rank__lte=per_check)
        .order_by("weight", "created_at", "id")
    )


def _group_pages(checks: list[Check], pages: Any) -> dict[uuid.UUID, list[PageResult]]:
    by_check = {check.pk: check for check in checks}
    grouped: dict[uuid.UUID, list[PageResult]] = defaultdict(list)
    for result in pages:
        result.check_run = by_check[result.check_run_id]  # no query per page
        grouped[result.check_run_id].append(result)
    return grouped


def _attach_pages(entries: list[FeedEntry]) -> None:
    """The first FEED_PAGES_PER_CHECK pages of each check that differ from
    before, changed ones first, in one query."""
    checks = [entry.check for entry in entries]
    if not checks:
        return
    pages = (
        _first_pages(checks, FEED_PAGES_PER_CHECK)
        .only(
            "id", "check_run_id", "url", "status", "verdict", "metadata", "created_at"
        )
        .with_last_titles()
    )
    grouped = _group_pages(checks, pages)
    for entry in entries:
        entry.pages = grouped[entry.check.pk]


# ---------------------------------------------------------------- Atom feeds

# A feed reader asks often: a feed lists the newest changes only, a bounded
# number of them, in three queries whatever the history holds.
ATOM_ENTRIES = 50
ATOM_PAGES_PER_CHECK = 10


def _changes_in(check: Check) -> int:
    summary = check.summary or {}
    return sum(_count(summary.get(status)) for status in FEED_STATUSES)


def _enough_checks(checks: list[Check]) -> list[Check]:
    """The newest of these checks that fill a feed, by their summaries: the
    pages of older ones would only be read to be left out."""
    chosen, entries = [], 0
    for check in checks:
        chosen.append(check)
        entries += min(_changes_in(check), ATOM_PAGES_PER_CHECK)
        if entries >= ATOM_ENTRIES:
            break
    return chosen


def atom_changes(team: Team, monitor: Monitor | None = None) -> list[PageResult]:
    """The newest pages found changed, new or removed (up to ATOM_ENTRIES,
    ATOM_PAGES_PER_CHECK of each check), newest check first, each with its
    check and monitor, and its diff (for the excerpt an entry shows)."""
    checks = _enough_checks(list(feed_checks(team, monitor)[:ATOM_ENTRIES]))
    if not checks:
        return []
    pages = (
        _first_pages(checks, ATOM_PAGES_PER_CHECK)
        .only(
            "id", "check_run_id", "url", "status", "verdict", "judgment",
            "packed_diff", "stored_diff", "previous_snapshot", "current_snapshot",
            "created_at",
        )
        # What a search result became (an entry names a new match so).
        .annotate(search_status=KT("metadata__searchStatus"))
        .with_judged_by()
    )  # fmt: skip
    grouped = _group_pages(checks, pages)
    listed = [page for check in checks for page in grouped[check.pk]]
    # Diffs packed against their snapshots read those in one query, not
    # one (and a deferred field's load) per entry.
    return list(PageResult.with_diffs(listed[:ATOM_ENTRIES]))
