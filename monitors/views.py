"""Dashboard views: thin, typed functions over the models, the forms and the
shared workflows (monitors.editing, checks.dispatch).

Every object is looked up through the current team (monitors.context); another
team's monitor, check or page answers 404 exactly like a missing one. htmx
requests get a fragment of the page's own template ("page.html#fragment").
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, available_timezones

from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import Paginator
from django.db.models import Max, Min, Q, TextField
from django.db.models.functions import Cast
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.utils.text import capfirst
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from checks.ai import llm_available
from checks.browser.executable import available as browser_available
from checks.captures import screenshot_links
from checks.content import (
    ExtractionError,
    mark_quotes,
    render_inline,
    render_side_by_side,
    strip_noise,
)
from checks.content.marked import mark_quoted, marked_html
from checks.content.readable import readable_html
from checks.dispatch import QueueUnavailable, RunRefused, queue_manual_check
from checks.models import Check, PageResult, PageState, SearchResultState
from checks.summary import SEARCH_WORDS
from monitors import clock, history, rules
from monitors import schedule as schedules
from monitors.context import current_membership, switch_team
from monitors.editing import update_monitor
from monitors.forms import ApiKeyForm, MonitorForm, split_schedule
from monitors.models import ApiKey, Membership, Monitor, Target, Team
from monitors.schedule_words import CUSTOM_SCHEDULE, describe
from monitors.search_provider import in_plain_words
from monitors.target_kinds import kind_for
from monitors.unavailable import unavailable
from teams.activity import Actor, Kind, monitor_fields, record, record_monitor_change
from teams.models import Activity

if TYPE_CHECKING:
    from django_htmx.middleware import HtmxDetails

MONITORS_PER_PAGE = 25
CHECKS_PER_PAGE = 20
PAGES_PER_PAGE = 100
# Alerted search results shown on a monitor's page (all: monitor-results).
RECENT_ALERTS = 10
RECENT_ACTIVITY = 5
HISTORY_LENGTH = 14
PREVIEW_RUNS = 3
SCHEDULE_UNUSABLE = "Not a schedule we can use yet."
ZONE_UNKNOWN = "Not a time zone we know yet."
# Run now while the broker (Redis) is down: the check was withdrawn.
QUEUE_UNAVAILABLE_WORDS = (
    "The check could not be started: Pagewatch cannot reach its task queue "
    "right now. Please try again in a moment."
)
# The filter value for "meaningful changes only" (pages, and checks in history):
# changes the judge called meaningful, never those nobody judged.
MEANINGFUL = "meaningful"
# The filter values of search results, by what became of them ("search-alert").
SEARCH_FILTER = "search-"
# The filter value for a check's changed pages without a verdict.
NOT_JUDGED = "not_judged"
# Snapshots can be megabytes; a browser tab should not have to render all of it.
SNAPSHOT_DISPLAY_CHARS = 200_000


class DashboardRequest(HttpRequest):
    """What the dashboard views can rely on (set by middleware and team_view)."""

    user: AbstractBaseUser
    htmx: HtmxDetails
    team: Team
    membership: Membership


View = Callable[..., HttpResponse]
Action = Membership.Action
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def forbidden(
    request: HttpRequest, membership: Membership, action: str
) -> HttpResponse:
    """403 in plain words: what the person's role lets them do, and who can
    change it."""
    owners = (
        Membership.objects.filter(team_id=membership.team_id, role="owner")
        .select_related("user")
        .order_by("user__username")
    )
    context = {
        "role_words": membership.role_words,
        "wanted": Action(action).label,
        "owners": [m.user for m in owners[:5]],
    }
    return render(request, "monitors/forbidden.html", context, status=403)


def team_view(
    view: View | None = None,
    *,
    needs: str = Action.VIEW,
    to_change: str | None = None,
) -> Any:
    """Resolve the current team and the person's role in it first; people in
    no team get a friendly page, people whose role does not allow the action
    a 403 page that says so, before the view has changed anything.

    `needs` is asked of every request; `to_change`, when given, of requests
    that may change something (POST and the like) only: a page everyone may
    read whose form only some may send."""

    def decorate(view: View) -> View:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            membership = current_membership(request)
            if membership is None:
                return render(request, "monitors/no_team.html", status=403)
            wanted = needs
            if to_change is not None and request.method not in SAFE_METHODS:
                wanted = to_change
            if not membership.can(wanted):
                return forbidden(request, membership, wanted)
            request.team = membership.team  # type: ignore[attr-defined]
            request.membership = membership  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        wrapper.team_action = (needs, to_change)  # type: ignore[attr-defined]
        return wrapper

    return decorate(view) if view is not None else decorate


# ---------------------------------------------------------------- lookups


def get_monitor_for(request: DashboardRequest, pk: uuid.UUID) -> Monitor:
    """The current team's live monitor, or 404 — another team's monitor looks
    exactly like a missing one."""
    monitor = (
        Monitor.objects.for_team(request.team)
        .prefetch_related("targets")
        .filter(pk=pk)
        .first()
    )
    if monitor is None:
        raise Http404("Monitor not found")
    return monitor


def get_check_for(
    request: DashboardRequest, pk: uuid.UUID, check_id: uuid.UUID
) -> Check:
    monitor = get_monitor_for(request, pk)
    check = Check.objects.filter(monitor=monitor, pk=check_id).first()
    if check is None:
        raise Http404("Check not found")
    check.monitor = monitor  # already fetched, with its targets
    return check


def get_page_for(
    request: DashboardRequest, pk: uuid.UUID, check_id: uuid.UUID, page_id: uuid.UUID
) -> PageResult:
    check = get_check_for(request, pk, check_id)
    page = (
        PageResult.objects.select_related("previous_snapshot", "current_snapshot")
        .filter(check_run=check, pk=page_id)
        .first()
    )
    if page is None:
        raise Http404("Page not found")
    page.check_run = check
    return page


def _fragment(request: DashboardRequest, template: str, fragments: set[str]) -> str:
    """The template, or one of its fragments when htmx asks for that target."""
    target = request.htmx.target if request.htmx else None
    return f"{template}#{target}" if target in fragments else template


def _safe_next(request: HttpRequest, fallback: str) -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return fallback


def _attach_history(monitors: list[Monitor]) -> None:
    """Give each monitor its most recent checks (oldest first) in one query."""
    recent = history.recent_per_monitor([m.pk for m in monitors], HISTORY_LENGTH)
    for monitor in monitors:
        monitor.recent_checks = recent.get(monitor.pk, [])  # type: ignore[attr-defined]


# ---------------------------------------------------------------- teams


@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    team = switch_team(request, request.POST.get("team"))
    if team is None:
        messages.error(request, "You are not a member of that team.")
    else:
        messages.success(request, f"Now showing {team.name}.")
    # Objects on the current page belong to the previous team: start at the list.
    return redirect("monitor-list")


# ---------------------------------------------------------------- monitor list


def _matching_monitor_ids(query: str) -> Any:
    """Ids of monitors whose name, addresses or search words contain `query`
    (any case), as a UNION of two index-friendly queries: on PostgreSQL each
    expression is served by a trigram index (monitors migration 0003), where
    an OR across the two tables read every monitor and every target."""
    by_name = Monitor.objects.filter(name__icontains=query).values("pk")
    by_target = (
        Target.objects.annotate(
            urls_text=Cast("urls", TextField()),
            queries_text=Cast("queries", TextField()),
        )
        .filter(
            Q(urls_text__icontains=query)
            | Q(url__icontains=query)
            | Q(queries_text__icontains=query)
        )
        .values("monitor_id")
    )
    return by_name.union(by_target)


def _filtered_monitors(request: DashboardRequest) -> tuple[Any, dict[str, str]]:
    query = request.GET.get("q", "").strip()[:200]
    status = request.GET.get("status", "")
    monitors = Monitor.objects.for_team(request.team)
    if query:
        monitors = monitors.filter(pk__in=_matching_monitor_ids(query))
    if status in Monitor.Status.values:
        monitors = monitors.filter(status=status)
    else:
        status = ""
    return monitors, {"q": query, "status": status}


@require_GET
@team_view
def monitor_list(request: DashboardRequest) -> HttpResponse:
    monitors, filters = _filtered_monitors(request)
    paginator = Paginator(
        monitors.prefetch_related("targets").order_by("-created_at", "pk"),
        MONITORS_PER_PAGE,
    )
    page = paginator.get_page(request.GET.get("page"))
    _attach_history(list(page.object_list))
    has_any = paginator.count > 0 or Monitor.objects.for_team(request.team).exists()
    context = {
        "page": page,
        "filters": filters,
        "filtering": any(filters.values()),
        "team_has_monitors": has_any,
        "status_choices": [("", "All"), ("active", "Active"), ("paused", "Paused")],
    }
    template = _fragment(request, "monitors/monitor_list.html", {"results"})
    response = render(request, template, context)
    if template.endswith("#results"):
        found = f"{paginator.count} monitor{'s' if paginator.count != 1 else ''} found."
        trigger_client_event(response, "announce", {"message": found})
    return response


@require_POST
@team_view(needs=Action.EDIT)
def monitor_toggle(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    """Pause or resume. The button says which, so a double click is harmless."""
    monitor = get_monitor_for(request, pk)
    wanted = request.POST.get("status")
    if wanted not in Monitor.Status.values:
        wanted = Monitor.Status.PAUSED if monitor.is_active else Monitor.Status.ACTIVE
    before = monitor_fields(monitor)
    update_monitor(monitor, {"status": wanted}, timezone.now())
    record_monitor_change(Actor.of(request), before, monitor)
    done = "paused" if wanted == Monitor.Status.PAUSED else "resumed"
    if request.htmx:
        _attach_history([monitor])
        context = {"monitor": monitor, "next_url": request.htmx.current_url_abs_path}
        response = render(request, "monitors/monitor_list.html#monitor-row", context)
        # static/js/app.js reads this aloud through the page's live region.
        return trigger_client_event(
            response, "announce", {"message": f"{monitor.name} {done}."}
        )
    messages.success(request, f"{monitor.name} {done}.")
    return redirect(_safe_next(request, reverse("monitor-list")))


# ---------------------------------------------------------------- create / edit


def _touched(request: HttpRequest) -> set[str] | None:
    """Field names the person has typed in (sent by static/js/app.js)."""
    if "_touched" not in request.POST:
        return None
    return {name for name in request.POST["_touched"].split(",") if name}


@functools.cache
def _timezones() -> list[str]:
    return sorted(available_timezones() - {"localtime", "posixrules", "Factory"})


def _form_context(
    form: MonitorForm, monitor: Monitor | None, **extra: Any
) -> dict[str, Any]:
    preview = schedule_preview_context(
        str(form.main["schedule"].value() or ""),
        str(form.main["timezone"].value() or ""),
        timezone.now(),
    )
    if (getattr(form, "errors", None) or {}).get("schedule"):
        # The field's own message says why, right below: not said twice.
        preview = {"preview_said_below": True}
    return {
        "form": form,
        "monitor": monitor,
        "model_configured": llm_available(),
        "browser_installed": browser_available(),
        "timezones": _timezones(),
        **preview,
        **extra,
    }


def _edit_form(request: DashboardRequest, monitor: Monitor | None) -> HttpResponse:
    template = "monitors/monitor_form.html"
    if request.method != "POST":
        form = MonitorForm(monitor=monitor, team=request.team)
        return render(request, template, _form_context(form, monitor))
    form = MonitorForm(request.POST, monitor=monitor, team=request.team)
    add, remove = request.POST.get("add_target"), request.POST.get("remove_target")
    if add or remove:
        # The no-JavaScript way to add or remove a target row.
        form.change_rows(add=add, remove=remove)
        return render(request, template, _form_context(form, monitor))
    if not form.is_valid():
        context = _form_context(form, monitor, show_summary=True)
        return render(request, template, context, status=400)
    before = monitor_fields(monitor) if monitor else None
    saved = form.save(request.team, timezone.now())
    if before is None:
        record(Actor.of(request), request.team, Kind.MONITOR_CREATED, saved)
    else:
        record_monitor_change(Actor.of(request), before, saved)
    messages.success(request, f"“{saved.name}” saved.")
    return redirect("monitor-detail", pk=saved.pk)


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.EDIT)
def monitor_create(request: DashboardRequest) -> HttpResponse:
    return _edit_form(request, None)


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.EDIT)
def monitor_edit(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    return _edit_form(request, get_monitor_for(request, pk))


@require_POST
@team_view(needs=Action.EDIT)
def monitor_validate(
    request: DashboardRequest, pk: uuid.UUID | None = None
) -> HttpResponse:
    """Inline validation: the same serializer run as on submit, answered with
    every field's error slot as an out-of-band swap."""
    monitor = get_monitor_for(request, pk) if pk else None
    form = MonitorForm(request.POST, monitor=monitor, team=request.team)
    form.is_valid()
    visible = form.visible_errors(_touched(request))
    slots = [
        (slot, visible.get(slot, []), form.controls_for(slot)) for slot in form.slots()
    ]
    return render(request, "monitors/monitor_form.html#validation", {"slots": slots})


@require_GET
@team_view(needs=Action.EDIT)
def target_row(request: DashboardRequest) -> HttpResponse:
    """A new, empty target row for the form (htmx "Add target" buttons)."""
    kind = request.GET.get("add_target") or request.GET.get("type") or ""
    context = {"target": MonitorForm.blank_target(kind)}
    return render(request, "monitors/monitor_form.html#target-row", context)


def schedule_preview_context(schedule: str, zone: str, now: datetime) -> dict[str, Any]:
    cron, text = split_schedule(schedule)
    if cron is None and text is None:
        return {"preview_empty": True}
    try:
        parsed = schedules.normalize_schedule(cron, text, zone or None, now=now)
    except schedules.ScheduleError as exc:
        # The reason is the field's own error, right beside it: not said twice.
        zone_wrong = exc.code == rules.TIMEZONE_UNKNOWN.code
        return {"preview_error": ZONE_UNKNOWN if zone_wrong else SCHEDULE_UNUSABLE}
    runs = schedules.next_runs(parsed, now, PREVIEW_RUNS)
    zone_info = ZoneInfo(parsed.timezone)
    today = now.astimezone(zone_info).date()
    times = []
    for run in runs:
        local = run.astimezone(zone_info)
        times.append(
            f"{local:%H:%M}"
            if local.date() == today
            else f"{local:%a %d %b} {local:%H:%M}"
        )
    return {
        "preview": parsed,
        "preview_words": describe(parsed) or CUSTOM_SCHEDULE,
        "preview_runs": times,
    }


@require_GET
@team_view(needs=Action.EDIT)
def schedule_preview(request: DashboardRequest) -> HttpResponse:
    context = schedule_preview_context(
        request.GET.get("schedule", "")[:200],
        request.GET.get("timezone", "")[:64],
        timezone.now(),
    )
    return render(request, "monitors/monitor_form.html#schedule-preview", context)


# ---------------------------------------------------------------- monitor page


def _in_flight_check(monitor: Monitor) -> Check | None:
    return (
        Check.objects.for_monitor(monitor).in_flight().order_by("-created_at").first()
    )


def _chart_context(monitor: Monitor) -> dict[str, Any]:
    return {"chart": history.check_chart(history.recent_checks(monitor))}


def _monitor_context(request: DashboardRequest, monitor: Monitor) -> dict[str, Any]:
    now = timezone.now()
    try:
        credits: int | None = monitor.estimated_credits_per_month(now)
    except schedules.ScheduleError:
        credits = None
    history = Check.objects.for_monitor(monitor)
    meaningful_only = request.GET.get("changes") == MEANINGFUL
    if meaningful_only:
        history = history.with_meaningful_changes()
    checks = Paginator(
        history.defer("target_results", "notification_status").order_by(
            "-created_at", "-id"
        ),
        CHECKS_PER_PAGE,
    ).get_page(request.GET.get("page"))
    searches = any(t.type == Target.Type.SEARCH for t in monitor.targets.all())
    return {
        "monitor": monitor,
        "credits_per_month": credits,
        # The stream of results its web searches alerted on, newest first.
        "alerted_results": (
            SearchResultState.objects.filter(monitor=monitor).alerted()[:RECENT_ALERTS]
            if searches
            else None
        ),
        "meaningful_only": meaningful_only,
        "checks": checks,
        "running_check": _in_flight_check(monitor),
        "recipients": monitor.recipient_subscriptions(),
        # Who paused, edited or ran it lately ("Paused by Ana, 2 hours ago").
        "activity": list(
            Activity.objects.filter(team=monitor.team_id, monitor=monitor)[
                :RECENT_ACTIVITY
            ]
        ),
        "unavailable": unavailable(monitor),
        "model_configured": llm_available(),
        **_chart_context(monitor),
    }


@require_GET
@team_view
def monitor_detail(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    template = _fragment(
        request,
        "monitors/monitor_detail.html",
        {"check-history", "run-status", "changes-chart"},
    )
    return render(request, template, _monitor_context(request, monitor))


# ---------------------------------------------------------------- history


def _page_number(request: HttpRequest) -> int:
    try:
        return max(1, min(int(request.GET.get("page", 1)), 10_000))
    except ValueError:
        return 1


@require_GET
@team_view
def team_history(request: DashboardRequest) -> HttpResponse:
    """Every check of the team that found changes, newest first; with
    ?monitor=<id>, one monitor's, with its chart."""
    monitor = None
    wanted = request.GET.get("monitor", "")
    if wanted:
        try:
            monitor = get_monitor_for(request, uuid.UUID(wanted))
        except ValueError:
            raise Http404("Monitor not found") from None
    number = _page_number(request)
    that_matter = request.GET.get("show") == "matter"
    entries, has_more = history.feed_page(
        request.team, number, monitor, that_matter=that_matter
    )
    # A monitor's own history keeps its zone; the team's reads in one zone.
    zone = (
        monitor.schedule_timezone
        if monitor
        else clock.viewer_zone(request, request.team)
    )
    seconds = clock.shared_minutes((e.at for e in entries), zone)
    for entry, shared in zip(entries, seconds, strict=True):
        entry.seconds = shared
    context = {
        "monitor": monitor,
        "clock": zone,
        "clock_choices": [] if monitor else clock.zones_to_offer(request.team, zone),
        "that_matter": that_matter,
        "entries": entries,
        "page_number": number,
        "has_more": has_more,
        **(_chart_context(monitor) if monitor else {}),
    }
    return render(request, "monitors/history.html", context)


@require_POST
@team_view(needs=Action.EDIT)
def monitor_run(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    """Run now: queue a manual check, then show its progress."""
    monitor = get_monitor_for(request, pk)
    error, check = None, None
    try:
        check = queue_manual_check(monitor)
    except RunRefused as refused:
        check = Check.objects.filter(monitor=monitor, pk=refused.check_id).first()
        error = None if check else refused.message
    except QueueUnavailable:
        error = QUEUE_UNAVAILABLE_WORDS
    except Monitor.DoesNotExist:
        raise Http404("Monitor not found") from None
    else:
        record(Actor.of(request), request.team, Kind.MONITOR_RUN, monitor)
    if request.htmx:
        context = {"monitor": monitor, "running_check": check, "run_error": error}
        response = render(request, "monitors/monitor_detail.html#run-status", context)
        if check is None:
            return response
        # The check history lists the queued check at once, not "No checks yet".
        return trigger_client_event(response, "checkStarted")
    if check is None:
        messages.error(request, error or "The check could not be started.")
        return redirect(monitor.get_absolute_url())
    messages.success(request, "Check started.")
    return redirect(check.get_absolute_url())


@require_GET
@team_view
def check_progress(
    request: DashboardRequest, pk: uuid.UUID, check_id: uuid.UUID
) -> HttpResponse:
    """Polled every second while a check runs; 286 stops the polling."""
    check = get_check_for(request, pk, check_id)
    if not request.htmx:
        return redirect(check.get_absolute_url())
    context = {
        "monitor": check.monitor,
        "running_check": check,
        # Polled from the check's own page too, which needs no link to itself.
        "on_check_page": _shown_on(request, check.get_absolute_url()),
    }
    html = render_to_string("monitors/monitor_detail.html#run-status", context, request)
    if not check.is_finished:
        return HttpResponse(html)
    # Other regions (history, page list) listen for this and reload themselves.
    return trigger_client_event(HttpResponseStopPolling(html), "checkFinished")


def _shown_on(request: DashboardRequest, path: str) -> bool:
    """Whether the page htmx asks from is `path` (whatever its query string,
    and behind a proxy whose scheme or host Django does not see)."""
    return urlsplit(request.htmx.current_url or "").path == path


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.EDIT)
def monitor_delete(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    if request.method == "POST":
        monitor.soft_delete(timezone.now())
        record(Actor.of(request), request.team, Kind.MONITOR_DELETED, monitor)
        messages.success(request, f"{monitor.name} deleted.")
        return redirect("monitor-list")
    return render(request, "monitors/monitor_confirm_delete.html", {"monitor": monitor})


# ---------------------------------------------------------------- checks and pages


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
        NOT_JUDGED,
        *search_filters,
    ):
        status = ""
    pages = (
        check.pages.defer("packed_diff", "stored_diff", "extraction")
        .with_last_titles()
        .changes_first()
    )
    if status == MEANINGFUL:
        pages = pages.meaningful_changes()
    elif status == NOT_JUDGED:
        pages = pages.unjudged_changes()
    elif status in search_filters:
        pages = pages.filter(metadata__searchStatus=search_filters[status])
    elif status:
        # Search results have filters of their own, in their own words.
        pages = pages.filter(status=status).exclude(metadata__has_key="searchStatus")
    chips = [("", "All", sum(counts.values()) + sum(found.values()))]
    # Verdicts are shown where the monitor judges or the check was judged;
    # there a change without one is said to be not judged, never meaningful.
    verdicts = check.monitor.judging or check.pages.exclude(verdict="").exists()
    unjudged = check.pages.unjudged_changes().count() if verdicts else 0
    if verdicts:
        chips.append(
            (MEANINGFUL, "Meaningful changes", check.pages.meaningful_changes().count())
        )
    if unjudged or (verdicts and status == NOT_JUDGED):
        chips.append((NOT_JUDGED, "Not judged", unjudged))
    chips += [
        (f"{SEARCH_FILTER}{s}", capfirst(SEARCH_WORDS[s][2]), found[s])
        for s in SEARCH_WORDS
        if found[s] or status == f"{SEARCH_FILTER}{s}"
    ]
    # A check of web searches only speaks of matches, not of pages.
    searched_only = bool(found) and not counts
    chips += [
        (value, label, counts.get(value, 0))
        for value, label in (
            ("changed", "Changed"),
            ("new", "New"),
            ("removed", "Removed"),
            ("error", "Errors"),
            ("same", "Unchanged"),
        )
        if not searched_only or counts.get(value) or status == value
    ]
    context = {
        "monitor": check.monitor,
        "check": check,
        "running_check": check if not check.is_finished else None,
        "status": status,
        "chips": chips,
        "verdicts": verdicts,
        "unjudged": unjudged,
        "pages": Paginator(pages, PAGES_PER_PAGE).get_page(request.GET.get("page")),
        "skipped_targets": _skipped_targets(check),
        "kind_parts": _kind_parts(check),
    }
    template = _fragment(request, "checks/check_detail.html", {"page-results"})
    return render(request, template, context)


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
    """Every page a crawl target has found, with when it was first and last
    seen (within the history kept) and whether it is still there."""
    monitor = get_monitor_for(request, pk)
    target = get_object_or_404(
        Target, pk=target_id, monitor=monitor, type=Target.Type.CRAWL
    )
    rows = (
        PageResult.objects.filter(check_run__monitor=monitor, target_id=target.pk)
        .exclude(status=PageResult.Status.REMOVED)
        .values("url")
        .annotate(first_seen=Min("created_at"), last_seen=Max("created_at"))
        .order_by("url")
    )
    removed = set(
        PageState.objects.filter(
            monitor=monitor, target_id=target.pk, presence=PageState.Presence.REMOVED
        ).values_list("url", flat=True)
    )
    context = {
        "monitor": monitor,
        "target": target,
        "pages": Paginator(rows, PAGES_PER_PAGE).get_page(request.GET.get("page")),
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
    if comparable and page.status == PageResult.Status.CHANGED and text_diff:
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
    history = (
        PageResult.objects.filter(
            check_run__monitor=check.monitor, target_id=page.target_id, url=page.url
        )
        .select_related("check_run")
        .defer("packed_diff", "stored_diff", "metadata", "judgment")
        .order_by("-created_at")[:30]
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
        "diff_html": mark_safe(  # noqa: S308
            mark_quoted(html, quotes) if layout == "text" else mark_quotes(html, quotes)
        ),
        "change_count": html.count('id="change-'),
        "field_rows": _field_rows(page, quotes),
        "before": before,
        "before_cut": before_cut,
        "after": after,
        "after_cut": after_cut,
        **_readable("before", before),
        **_readable("after", after),
        "history": history,
        **screenshot_links(page),
    }
    template = _fragment(request, "checks/page_diff.html", {"diff-region"})
    return render(request, template, context)


# ---------------------------------------------------------------- API keys


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


@require_http_methods(["GET", "POST"])
@team_view(to_change=Action.MANAGE)
def api_keys(request: DashboardRequest) -> HttpResponse:
    new_key = None
    form = ApiKeyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        key, new_key = ApiKey.issue(
            request.team,
            name=form.cleaned_data["name"],
            created_by=request.user,
            scope=form.cleaned_data["scope"],
        )
        record(Actor.of(request), request.team, Kind.KEY_CREATED,
               name=key.name, scope=key.scope)  # fmt: skip
        form = ApiKeyForm()
    keys = ApiKey.objects.filter(team=request.team).select_related("created_by")
    context = {"form": form, "keys": keys, "new_key": new_key}
    response = render(request, "monitors/api_keys.html", context)
    if new_key:
        # The key is shown exactly once: never from a cache or the back button.
        response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.MANAGE)
def api_key_revoke(request: DashboardRequest, key_id: int) -> HttpResponse:
    key = ApiKey.objects.filter(team=request.team, pk=key_id).first()
    if key is None:
        raise Http404("API key not found")
    if request.method == "POST":
        if key.is_active:
            key.revoke()
            record(Actor.of(request), request.team, Kind.KEY_REVOKED, name=key.name)
        messages.success(request, f"Key {key.display_prefix} revoked.")
        return redirect("api-keys")
    return render(request, "monitors/api_key_confirm_revoke.html", {"key": key})
