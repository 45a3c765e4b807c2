"""Acting on many monitors from the list at once: pause, resume, mute or
unmute their notifications, add or remove a tag, delete, check now. The
ticked monitors and what to say; the work is monitors.bulk's, which the API's
POST /v2/monitor/bulk shares, and muting's (monitors.dashboard.muting), whose
choices of how long are the dashboard's own."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from monitors import bulk, rules
from monitors.dashboard import runs_said
from monitors.dashboard.base import Action, DashboardRequest, _safe_next, team_view
from monitors.dashboard.muting import UNMUTE, mute_chosen
from monitors.models import Monitor, MonitorQuerySet
from teams.activity import Actor

# Where the list shows what a bulk action did: beside the bar that did it,
# where the keyboard is put back (see monitors/monitor_list.html).
SAID_AT = "bulk"

# (what the person asked, what is said when done)
ACTIONS = {
    bulk.Action.PAUSE: "paused",
    bulk.Action.RESUME: "resumed",
    bulk.Action.ADD_TAG: "tagged",
    bulk.Action.REMOVE_TAG: "untagged",
    bulk.Action.DELETE: "deleted",
}


def _ticked(request: DashboardRequest) -> MonitorQuerySet:
    """The team's live monitors among those ticked ("select all shown" ticks
    every row the page listed). Ids that are not the team's monitors (another
    team's, deleted, not an id at all) are left out: they look like nothing."""
    wanted = request.POST.getlist("monitor")
    if request.POST.get("all_shown"):
        wanted += request.POST.getlist("shown")
    ids = set()
    for value in wanted:
        try:
            ids.add(uuid.UUID(value))
        except ValueError:
            continue
    return Monitor.objects.for_team(request.team).filter(pk__in=ids)


def _counted(monitors: list[Monitor]) -> str:
    count = len(monitors)
    return f"{count} monitor{'s' if count != 1 else ''}"


def _full(monitors: list[Monitor]) -> str:
    they = "it already has" if len(monitors) == 1 else "they already have"
    return f"{_counted(monitors)} skipped: {they} {rules.MONITOR_TAGS_MAX} tags."


@require_POST
@team_view(needs=Action.EDIT)
def monitor_bulk(request: DashboardRequest) -> HttpResponse:
    back = _safe_next(request, reverse("monitor-list"))
    chosen = _ticked(request)
    asked = request.POST.get("action", "")
    if asked not in ACTIONS and asked not in ("mute", "unmute", bulk.Action.RUN):
        messages.error(request, "Choose what to do with the ticked monitors.", SAID_AT)
        return redirect(back)
    if not chosen.exists():
        messages.error(request, "Tick the monitors to act on first.", SAID_AT)
        return redirect(back)
    if asked in ("mute", "unmute"):
        return _mute(request, chosen, back)
    if asked == bulk.Action.RUN:
        if chosen.count() > bulk.IDS_MAX:
            messages.error(
                request, f"Tick at most {bulk.IDS_MAX} monitors at a time.", SAID_AT
            )
            return redirect(back)
        return _run(request, chosen, back)
    action = bulk.Action(asked)
    tag = None
    if action == bulk.Action.DELETE and request.POST.get("confirmed") != "yes":
        return _confirm_delete(request, chosen, back)
    if action.takes_tag:
        tag, problem = bulk.tag_problem(request.POST.get("tag", ""))
        if problem:
            messages.error(request, rules.curly_quotes(problem), SAID_AT)
            return redirect(back)
    outcome = bulk.act(
        chosen, action, Actor.of(request), request.team, timezone.now(), tag
    )
    if outcome.full:
        messages.warning(request, _full(outcome.full), SAID_AT)
    messages.success(request, f"{_counted(outcome.done)} {ACTIONS[action]}.", SAID_AT)
    return redirect(back)


def _mute(
    request: DashboardRequest, chosen: MonitorQuerySet, back: str
) -> HttpResponse:
    """Mute (for the time chosen beside the bar) or unmute the ticked ones."""
    asked = request.POST.get("action")
    choice = request.POST.get("mute", "") if asked == "mute" else UNMUTE
    done, said = mute_chosen(request, chosen, choice)
    if not said:
        messages.error(request, "Choose how long to mute their notifications.", SAID_AT)
    else:
        messages.success(request, f"Notifications of {_counted(done)} {said}.", SAID_AT)
    return redirect(back)


def _run(request: DashboardRequest, chosen: MonitorQuerySet, back: str) -> HttpResponse:
    """Check now: a check of each ticked monitor, as its own "Run now" would
    start; which were left alone, and why, said beside it."""
    outcome = bulk.act(
        chosen, bulk.Action.RUN, Actor.of(request), request.team, timezone.now()
    )
    assert outcome.runs is not None
    for level, words in runs_said.said(outcome.runs):
        messages.add_message(request, level, words, SAID_AT)
    return redirect(back)


def _confirm_delete(
    request: DashboardRequest, chosen: MonitorQuerySet, back: str
) -> HttpResponse:
    """The single delete's confirmation, for many: what goes, and a second
    POST that says so."""
    context = {"monitors": list(chosen.order_by("name")), "next_url": back}
    return render(request, "monitors/monitor_bulk_confirm_delete.html", context)
