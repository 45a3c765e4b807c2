"""Dashboard view of a monitor's web searches: every result they alerted on,
newest first (or every result they have seen). Thin: the rows are the
search targets' SearchResultState (checks.search); lookups are scoped to the
signed-in person's team (monitors.dashboard.base.get_monitor_for)."""

from __future__ import annotations

import uuid

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from checks.models import SearchResultState
from monitors.dashboard.base import DashboardRequest, get_monitor_for, team_view
from monitors.target_kinds import TargetKind, kind_names
from monitors.unavailable import SEARCH, unavailable

RESULTS_PER_PAGE = 50
TEMPLATE = "monitors/search_results.html"


def _finds_results(kind: TargetKind) -> bool:
    return kind.finds_results


@require_GET
@team_view
def monitor_results(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    seen = request.GET.get("show") == "all"
    rows = SearchResultState.objects.filter(monitor=monitor)
    rows = rows.order_by("-last_seen_at", "-id") if seen else rows.alerted()
    # Only what is missing for web searches: the monitor's page says the rest.
    search_off = SEARCH in unavailable(monitor)
    context = {
        "monitor": monitor,
        "unavailable": [SEARCH] if search_off else [],
        "search_off": search_off,
        "show_all": seen,
        "searches": monitor.targets.filter(type__in=kind_names(_finds_results)),
        # Without a goal and a model every new result is reported, so the
        # page must not speak of results matching a goal.
        "judged": monitor.credits_judged,
        "results": Paginator(rows, RESULTS_PER_PAGE).get_page(request.GET.get("page")),
    }
    return render(request, TEMPLATE, context)
