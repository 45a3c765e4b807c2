"""One check and its pages: the check's results, a site's pages, and the
change of one page (diff, readable text, judged fields)."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any, cast

from django.core.paginator import Paginator
from django.db.models import Max, Min
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe
from django.utils.text import capfirst
from django.views.decorators.http import require_GET

from checks.captures import screenshot_links
from checks.content import (
    ExtractionError,
    mark_quotes,
    render_inline,
    render_side_by_side,
    strip_noise,
)
from checks.content.marked import mark_quoted, marked_html, number_changes
from checks.content.readable import readable_html
from checks.models import Check, PageResult, PageState
from checks.notify.reports import NOT_MEANINGFUL, finished_suppression_reason
from checks.summary import SEARCH_WORDS
from monitors.dashboard.base import (
    JUDGED_NOISE,
    MEANINGFUL,
    NOT_JUDGED,
    PAGES_PER_PAGE,
    SEARCH_FILTER,
    SNAPSHOT_DISPLAY_CHARS,
    DashboardRequest,
    _fragment,
    get_check_for,
    get_monitor_for,
    get_page_for,
    team_view,
)
from monitors.dashboard.page_compare import comparison
from monitors.models import Target
from monitors.search_provider import in_plain_words
from monitors.target_kinds import kind_for, kind_names


@require_GET
@team_view
def check_detail(
    request: DashboardRequest, pk: uuid.UUID, check_id: uuid.UUID
) -> HttpResponse:
    check = get_check_for(request, pk, check_id)
    counts, found = check.pages.outcome_counts()
    search_filters = {f"{SEARCH_FILTER}{s}": s for s in SEARCH_WORDS}
    status = request.GET.get("status", "")
    if status not in (
        *PageResult.Status.values,
        MEANINGFUL,
        JUDGED_NOISE,
        NOT_JUDGED,
        *search_filters,
    ):
        status = ""
    # Verdicts are shown where the monitor judges or the check was judged;
    # there a change without one is said to be not judged, and counts as
    # meaningful, as it does for the channels.
    verdicts = check.monitor.judging or check.pages.exclude(verdict="").exists()
    unjudged = check.pages.unjudged_changes().count() if verdicts else 0
    # Told by the rule the report e-mails and channels follow, from what the
    # check stored when it finished: never every page row of a large crawl.
    only_noise = (
        verdicts
        and check.is_finished
        and check.noise > 0
        and finished_suppression_reason(check) == NOT_MEANINGFUL
    )
    pages = _filtered_pages(check, status, search_filters)
    looked_at = sum(counts.values()) + sum(found.values())
    context = {
        "looked_at": looked_at,
        "every_page_failed": check.is_finished
        and looked_at > 0
        and counts.get(PageResult.Status.ERROR, 0) == looked_at,
        "monitor": check.monitor,
        "check": check,
        "running_check": check if not check.is_finished else None,
        "status": status,
        "chips": _chips(check, status, counts, found, verdicts, unjudged),
        "verdicts": verdicts,
        "unjudged": unjudged,
        "only_noise": only_noise,
        "pages": Paginator(pages, PAGES_PER_PAGE).get_page(request.GET.get("page")),
        "skipped_targets": _skipped_targets(check),
        "kind_parts": _kind_parts(check),
    }
    template = _fragment(
        request, "checks/check_detail.html", {"check-head", "page-results"}
    )
    return render(request, template, context)


def _filtered_pages(check: Check, status: str, search_filters: dict[str, str]) -> Any:
    """The check's page results under the chosen filter, changes first."""
    pages = (
        check.pages.defer("packed_diff", "stored_diff", "extraction")
        .with_last_titles()
        .changes_first()
    )
    if status == MEANINGFUL:
        return pages.changes_that_matter()
    if status == JUDGED_NOISE:
        return pages.judged_unimportant()
    if status == NOT_JUDGED:
        return pages.unjudged_changes()
    if status in search_filters:
        return pages.filter(metadata__searchStatus=search_filters[status])
    if status:
        # Search results have filters of their own, in their own words.
        return pages.filter(status=status).exclude(metadata__has_key="searchStatus")
    return pages


def _chips(
    check: Check,
    status: str,
    counts: Counter[str],
    found: Counter[str],
    verdicts: bool,
    unjudged: int,
) -> list[tuple[str, str, int]]:
    """The filter chips above the results: value, words and count of each."""
    chips = [("", "All", sum(counts.values()) + sum(found.values()))]
    if verdicts:
        chips.append(
            (
                MEANINGFUL,
                "Meaningful changes",
                check.pages.changes_that_matter().count(),
            )
        )
    # The changes that do not matter, counted apart: "Changed" counts them too.
    noise = check.pages.judged_unimportant().count() if verdicts else 0
    if noise or (verdicts and status == JUDGED_NOISE):
        chips.append((JUDGED_NOISE, "Judged unimportant", noise))
    if unjudged or (verdicts and status == NOT_JUDGED):
        chips.append((NOT_JUDGED, "Not judged", unjudged))
    chips += [
        (f"{SEARCH_FILTER}{s}", capfirst(SEARCH_WORDS[s][2]), found[s])
        for s in SEARCH_WORDS
        if found[s] or status == f"{SEARCH_FILTER}{s}"
    ]
    # Only results the check has: a row of zeros above a failed check reads
    # like something to click. The chosen one stays, so it can be left.
    chips += [
        (value, label, counts.get(value, 0))
        for value, label in (
            ("changed", "Changed"),
            ("new", "New"),
            ("removed", "Removed"),
            ("error", "Errors"),
            ("same", "Unchanged"),
        )
        if counts.get(value) or status == value
    ]
    return chips


def _skipped_targets(check: Check) -> list[tuple[Target | None, dict[str, Any]]]:
    """The targets a check recorded as skipped (crawl and search targets in
    this version), each with its target result: a check that found nothing
    wrong must still say what it did not look at. The target is None when it
    was removed from the monitor since."""
    results = [
        result
        for result in check.target_results or []
        if isinstance(result, dict) and result.get("skipped")
    ]
    if not results:
        return []
    targets = {str(target.pk): target for target in check.monitor.targets.all()}
    return [
        (targets.get(str(result.get("targetId"))), result | {"words": _words(result)})
        for result in results
    ]


def _words(result: dict[str, Any]) -> str:
    """A skipped target's reason for the dashboard: no setting names."""
    return in_plain_words(str(result.get("reason") or ""))


def _kind_parts(
    check: Check,
) -> list[tuple[Target | None, dict[str, Any], str]]:
    """The targets a check ran whose kind has a part on the check page (a
    crawl's pages found, a web search's results), each with its target
    result as its kind completes it, and that part's template."""
    targets = {str(target.pk): target for target in check.monitor.targets.all()}
    parts = []
    for result in check.target_results or []:
        if not isinstance(result, dict) or result.get("skipped"):
            continue
        kind = kind_for(str(result.get("type")))
        if kind is None or kind.check_template is None:
            continue
        target = targets.get(str(result.get("targetId")))
        parts.append((target, kind.check_result(check, result), kind.check_template))
    return parts


@require_GET
@team_view
def site_pages(
    request: DashboardRequest, pk: uuid.UUID, target_id: uuid.UUID
) -> HttpResponse:
    """Every page a target that finds its pages (a crawl) has found, with
    when it was first and last seen (within the history kept) and whether it
    is still there."""
    monitor = get_monitor_for(request, pk)
    found_by = kind_names(lambda kind: kind.finds_pages)
    target = get_object_or_404(Target, pk=target_id, monitor=monitor, type__in=found_by)
    # Read by target alone, as a page's history is (PageResultQuerySet.history_of):
    # the target is this monitor's, and page_target_url_idx serves it.
    results = PageResult.objects.filter(target_id=target.pk)
    # A page found but never loaded (a link to a 404) is not "on the site".
    rows = (
        results.exclude(status=PageResult.Status.REMOVED)
        .values("url")
        .annotate(first_seen=Min("created_at"), last_seen=Max("created_at"))
        .order_by("url")
    )
    pages = Paginator(rows, PAGES_PER_PAGE).get_page(request.GET.get("page"))
    # The latest outcome of the pages shown only: worked out inside the
    # grouping it was worked out again for every result of every page, and
    # counting the pages did it all once more.
    latest = results.latest_status_of([row["url"] for row in pages])
    for row in pages:
        row["latest_status"] = latest.get(row["url"])
    removed = set(
        PageState.objects.filter(
            monitor=monitor, target_id=target.pk, presence=PageState.Presence.REMOVED
        ).values_list("url", flat=True)
    )
    context = {
        "monitor": monitor,
        "target": target,
        "pages": pages,
        "removed": removed,
    }
    return render(request, "checks/site_pages.html", context)


def _display_text(snapshot: Any) -> tuple[str | None, bool]:
    if snapshot is None:
        return None, False
    try:
        text = snapshot.text
    except (ValueError, ExtractionError):  # a damaged row: say so, not a 500
        return "(This version of the page could not be read.)", False
    return text[:SNAPSHOT_DISPLAY_CHARS], len(text) > SNAPSHOT_DISPLAY_CHARS


def _readable(name: str, text: str | None) -> dict[str, Any]:
    """The Text view of one copy: `<name>_html` and `<name>_html_cut`."""
    if text is None:
        return {}
    html, cut = readable_html(text)
    # checks.content.readable escapes everything the page wrote and emits no
    # link, image, attribute or raw HTML of its own making from page text.
    return {f"{name}_html": mark_safe(html), f"{name}_html_cut": cut}  # noqa: S308


@require_GET
@team_view
def page_diff(
    request: DashboardRequest, pk: uuid.UUID, check_id: uuid.UUID, page_id: uuid.UUID
) -> HttpResponse:
    page = get_page_for(request, pk, check_id, page_id)
    check = page.check_run
    # The page's text with its changes marked, unless the Markdown is asked for.
    layout = request.GET.get("view")
    layout = layout if layout in ("split", "inline") else "text"
    before, before_cut = _display_text(page.previous_snapshot)
    after, after_cut = _display_text(page.current_snapshot)
    comparable = before is not None and after is not None
    text_diff = page.field_changes == {} or bool((page.diff or {}).get("text"))
    text_cut = False
    compared = comparison(page, request.GET.get("compare", "").strip(), layout)
    # While an older version is compared with, the check's own changes are
    # hidden: not built at all.
    shown = "compare_html" not in compared
    if shown and comparable and page.status == PageResult.Status.CHANGED and text_diff:
        # Compared as the check compared them: the monitor's ignored lines out.
        ignored = check.monitor.ignore_lines or []
        old = strip_noise(cast(str, before), ignored)
        new = strip_noise(cast(str, after), ignored)
        if layout == "text":
            html, _, text_cut = marked_html(old, new)
        else:
            render_diff = render_inline if layout == "inline" else render_side_by_side
            html = render_diff(old, new)
    else:
        html = ""
    quotes = _quotes(page) if page.is_judged else []
    if layout == "text":
        # Anchors for "previous / next change", after the quotes are marked
        # (which look for the page's own tags, bare).
        html, change_count = number_changes(mark_quoted(html, quotes))
    else:
        html, change_count = mark_quotes(html, quotes), html.count('id="change-')
    history = (
        PageResult.objects.history_of(page)
        .select_related("check_run")
        .defer("packed_diff", "stored_diff", "metadata", "judgment")
        .with_judged_by()[:30]
    )
    context = {
        "monitor": check.monitor,
        "check": check,
        "page": page,
        "layout": layout,
        "text_cut": text_cut,
        # checks.content escapes every piece of page text before wrapping it in its
        # own tags, so this — and only this — page-derived HTML may be marked
        # safe. The template still puts it under hx-disable.
        "diff_html": mark_safe(html),  # noqa: S308
        "change_count": change_count,
        "field_rows": _field_rows(page, quotes),
        "before": before,
        "before_cut": before_cut,
        "after": after,
        "after_cut": after_cut,
        **_readable("before", before),
        **_readable("after", after),
        "history": history,
        **screenshot_links(page),
        **compared,
    }
    template = _fragment(request, "checks/page_diff.html", {"diff-region"})
    return render(request, template, context)


# ---------------------------------------------------------------- judged fields


def _quotes(page: PageResult) -> list[str]:
    """The text the judge cited as meaningful (verbatim in the diff)."""
    changes = (page.judgment or {}).get("meaningfulChanges") or []
    return [
        quote
        for change in changes
        if isinstance(change, dict)
        for quote in (change.get("before"), change.get("after"))
        if isinstance(quote, str)
    ]


def _field_rows(page: PageResult, quotes: list[str]) -> list[dict[str, Any]]:
    """JSON mode's changed fields as before/after rows; a row the judge cited
    is marked."""
    cited = " ".join(quotes)
    return [
        {
            "path": path,
            "before": change.get("previous"),
            "after": change.get("current"),
            "matters": bool(cited) and f"{path}:" in cited,
        }
        for path, change in page.field_changes.items()
        if isinstance(change, dict)
    ]
