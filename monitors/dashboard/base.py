"""What every dashboard page stands on: the request it can rely on, the team
and role check (team_view), lookups through the current team, fragments.

Every object is looked up through the current team (monitors.dashboard.context);
another team's monitor, check or page answers 404 exactly like a missing one.
htmx requests get a fragment of the page's own template ("page.html#fragment")."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from checks.models import Check, PageResult
from monitors import clock, history
from monitors.dashboard.context import current_membership
from monitors.models import Membership, Monitor, Team

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
QUEUE_DOWN_WORDS = (
    "Pagewatch cannot reach its task queue right now. Please try again in a moment."
)
QUEUE_UNAVAILABLE_WORDS = f"The check could not be started: {QUEUE_DOWN_WORDS}"
# The filter value for "meaningful changes only" (pages, and checks in history):
# every change but those the judge called unimportant, as the channels count.
MEANINGFUL = "meaningful"
# The filter values of search results, by what became of them ("search-alert").
SEARCH_FILTER = "search-"
# The filter value for a check's changed pages without a verdict.
NOT_JUDGED = "not_judged"
# The filter value for a check's changes the judge called unimportant.
JUDGED_NOISE = "noise"
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
    a 403 page that says so, before the view has changed anything. The
    page is made on the team's clock (Team.time_zone).

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
            # Team-wide times (activity, keys, invitations, deliveries) read
            # on the team's clock; a monitor's times name its zone themselves.
            with timezone.override(clock.team_zone(membership.team)):
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
        .with_last_titles()
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
    """Give each monitor its most recent checks (oldest first) in one query,
    its last check that looked at pages, how many of that check's changes
    the judge failed on, and why that check found no page when it found
    none."""
    ids = [m.pk for m in monitors]
    recent = history.with_not_judged(
        monitors, history.recent_per_monitor(ids, HISTORY_LENGTH)
    )
    last_ran = history.last_ran_per_monitor(ids)
    no_pages = history.why_no_pages(monitors, last_ran)
    not_judged = history.not_judged_last(monitors, last_ran)
    for monitor in monitors:
        monitor.last_check_not_judged = not_judged.get(monitor.pk, 0)  # type: ignore[attr-defined]
        monitor.recent_checks = recent.get(monitor.pk, [])  # type: ignore[attr-defined]
        monitor.last_ran = last_ran.get(monitor.pk)  # type: ignore[attr-defined]
        monitor.why_no_pages = no_pages.get(monitor.pk, "")  # type: ignore[attr-defined]
