"""The monitor list and a monitor's own page: switching team, filtering,
pausing, the team's history, running a check now, following its progress,
deleting."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from checks import deleting, ignore_suggestions
from checks.ai import allowance, llm_available
from checks.ai.allowance import MonthUse
from checks.dispatch import QueueUnavailable, RunRefused
from checks.models import Check, PageResult, SearchResultState
from monitors import clock, history, muting, rules, running
from monitors import schedule as schedules
from monitors.dashboard.base import (
    CHECKS_PER_PAGE,
    MEANINGFUL,
    MONITORS_PER_PAGE,
    QUEUE_UNAVAILABLE_WORDS,
    RECENT_ACTIVITY,
    RECENT_ALERTS,
    Action,
    DashboardRequest,
    _attach_history,
    _fragment,
    _safe_next,
    get_check_for,
    get_monitor_for,
    team_view,
)
from monitors.dashboard.channels import described
from monitors.dashboard.context import switch_team
from monitors.dashboard.muting import mute_context
from monitors.editing import add_ignore_lines, update_monitor
from monitors.models import Monitor, Tag, Target
from monitors.unavailable import SEARCH, unavailable
from teams.activity import Actor, Kind, monitor_fields, record, record_monitor_change
from teams.models import Activity


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
    tag = request.GET.get("tag", "").strip()[: rules.TAG_NAME_MAX]
    if tag:
        monitors = monitors.tagged(tag)
    failing = "1" if request.GET.get("failing") in ("1", "on") else ""
    if failing:
        monitors = Check.objects.monitors_failing(monitors)
    return monitors, {"q": query, "status": status, "tag": tag, "failing": failing}


@require_GET
@team_view
def monitor_list(request: DashboardRequest) -> HttpResponse:
    monitors, filters = _filtered_monitors(request)
    paginator = Paginator(
        monitors.prefetch_related("targets", "tags").order_by("-created_at", "pk"),
        MONITORS_PER_PAGE,
    )
    page = paginator.get_page(request.GET.get("page"))
    _attach_history(list(page.object_list))
    has_any = paginator.count > 0 or Monitor.objects.for_team(request.team).exists()
    status_choices = [("", "All"), ("active", "Active"), ("paused", "Paused")]
    context = {
        "page": page,
        "filters": filters,
        "filtering": any(filters.values()),
        "team_has_monitors": has_any,
        "status_choices": status_choices,
        # The empty list names the status as the select shows it, not its value.
        "status_label": dict(status_choices)[filters["status"]],
        "team_tags": list(Tag.objects.for_team(request.team).in_use()),
        "tag_name_max": rules.TAG_NAME_MAX,
        "mute_choices": muting.CHOICES,
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
            response, "announce", {"message": f"“{monitor.name}” {done}."}
        )
    messages.success(request, f"“{monitor.name}” {done}.")
    return redirect(_safe_next(request, reverse("monitor-list")))


# ---------------------------------------------------------------- monitor page


def _latest_check(monitor: Monitor) -> Check | None:
    """The check the run card shows: one on its way (with its progress), else
    the last one's outcome, so the page opens on what was found last."""
    return Check.objects.for_monitor(monitor).order_by("-created_at").first()


def _chart_context(monitor: Monitor) -> dict[str, Any]:
    return {"chart": history.check_chart(history.recent_checks(monitor))}


def _noise_context(monitor: Monitor) -> dict[str, Any]:
    """Suggested lines to ignore: read from the last checks' diffs, so only
    for the whole page, never for the parts htmx refreshes as checks run."""
    return {
        "noise_suggestions": ignore_suggestions.suggestions_for(monitor),
        "noise_checks": ignore_suggestions.CHECKS_LOOKED_AT,
    }


def _monitor_context(request: DashboardRequest, monitor: Monitor) -> dict[str, Any]:
    now = timezone.now()
    try:
        credits: int | None = monitor.estimated_credits_per_month(now)
    except schedules.ScheduleError:
        credits = None
    history = Check.objects.for_monitor(monitor)
    meaningful_only = request.GET.get("changes") == MEANINGFUL
    if meaningful_only:
        history = history.with_changes_that_matter()
    checks = Paginator(
        history.defer("target_results", "notification_status").order_by(
            "-created_at", "-id"
        ),
        CHECKS_PER_PAGE,
    ).get_page(request.GET.get("page"))
    # For the whole page at once, so no row asks on its own.
    not_judged = (
        PageResult.objects.not_judged_per_check(
            [c.pk for c in checks.object_list if c.changes_not_unimportant]
        )
        if monitor.judging
        else {}
    )
    for c in checks.object_list:
        c.not_judged = not_judged.get(c.pk, 0)
    searches = any(t.kind and t.kind.finds_results for t in monitor.targets.all())
    missing = unavailable(monitor)
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
        "running_check": _latest_check(monitor),
        "recipients": monitor.recipient_subscriptions(),
        # The team channels it sends to; its own (webhook, e-mail) have rows
        # of their own on the page.
        "channels": described(list(monitor.channels.shared()), monitor.team),
        # Who paused, edited or ran it lately ("Paused by Ana, 2 hours ago").
        "activity": list(
            Activity.objects.filter(team=monitor.team_id, monitor=monitor)[
                :RECENT_ACTIVITY
            ]
        ),
        "unavailable": missing,
        "search_off": SEARCH in missing,
        "model_configured": llm_available(),
        **_ai_use_context(monitor),
        **_chart_context(monitor),
        **mute_context(monitor),
    }


def _ai_use_context(monitor: Monitor) -> dict[str, Any]:
    """This month's AI use of the monitor, and why its calls are held (its
    team's allowance used up) when it makes any; nothing without a model."""
    if not llm_available():
        return {}
    now = timezone.now()
    held = None
    if allowance.asks_the_model(monitor):
        held = allowance.used_up(monitor.team_id, now)
    return {"ai_use": MonthUse.of_monitor(monitor, now), "ai_held": held}


@require_GET
@team_view
def monitor_detail(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    template = _fragment(
        request,
        "monitors/monitor_detail.html",
        {"check-history", "run-status", "changes-chart"},
    )
    context = _monitor_context(request, monitor)
    if "#" not in template:
        context |= _noise_context(monitor)
    return render(request, template, context)


# Where the monitor's page says what "Ignore these lines" did: where its offer
# was, which the keyboard is put back on (see monitors/monitor_detail.html).
IGNORED_SAID_AT = "noise"


@require_POST
@team_view(needs=Action.EDIT)
def monitor_ignore_lines(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    """The "Ignore these lines" button: the suggested entries the page showed
    (sent back with it) added to the monitor's lines to ignore."""
    monitor = get_monitor_for(request, pk)
    before = monitor_fields(monitor)
    added = request.POST.getlist("entry")[: rules.IGNORE_LINES_MAX + 1]
    try:
        add_ignore_lines(monitor, added, timezone.now())
    except ValueError as problem:
        messages.error(request, f"Nothing was added: {problem}", IGNORED_SAID_AT)
        context = _monitor_context(request, monitor) | _noise_context(monitor)
        return render(request, "monitors/monitor_detail.html", context, status=400)
    record_monitor_change(Actor.of(request), before, monitor)
    messages.success(
        request, "Those lines are ignored from the next check on.", IGNORED_SAID_AT
    )
    return redirect(monitor.get_absolute_url())


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
        check = running.run_one(monitor, Actor.of(request))
    except RunRefused as refused:
        check = Check.objects.filter(monitor=monitor, pk=refused.check_id).first()
        error = None if check else refused.message
    except QueueUnavailable:
        error = QUEUE_UNAVAILABLE_WORDS
    except Monitor.DoesNotExist:
        raise Http404("Monitor not found") from None
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
        deleting.soft_delete_monitor(monitor, timezone.now())
        record(Actor.of(request), request.team, Kind.MONITOR_DELETED, monitor)
        messages.success(request, f"“{monitor.name}” deleted.")
        return redirect("monitor-list")
    # What goes with it, in the words of the confirmation.
    check_count = Check.objects.for_monitor(monitor).count()
    context = {"monitor": monitor, "check_count": check_count}
    return render(request, "monitors/monitor_confirm_delete.html", context)
