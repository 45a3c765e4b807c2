"""Acting on many monitors from the list at once: pause, resume, mute or
unmute their notifications, add or remove a tag, delete. Each action is one
query over the ticked monitors of the team (MonitorQuerySet), and one
activity entry per monitor it changed, written in one INSERT, as a single
edit writes one."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from checks import deleting
from monitors import rules
from monitors.dashboard.base import Action, DashboardRequest, _safe_next, team_view
from monitors.dashboard.muting import UNMUTE, mute_chosen
from monitors.models import Monitor, MonitorQuerySet, Tag
from teams.activity import Actor, Kind, record_each

# (what the person asked, what is said when done)
ACTIONS = {
    "pause": "paused",
    "resume": "resumed",
    "mute": "muted",
    "unmute": "unmuted",
    "add_tag": "tagged",
    "remove_tag": "untagged",
    "delete": "deleted",
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
    action = request.POST.get("action", "")
    chosen = _ticked(request)
    if action not in ACTIONS:
        messages.error(request, "Choose what to do with the ticked monitors.")
        return redirect(back)
    if not chosen.exists():
        messages.error(request, "Tick the monitors to act on first.")
        return redirect(back)
    actor, now = Actor.of(request), timezone.now()
    if action == "delete":
        if request.POST.get("confirmed") != "yes":
            return _confirm_delete(request, chosen, back)
        done = deleting.soft_delete_monitors(chosen, now)
        record_each(actor, request.team, Kind.MONITOR_DELETED, done)
    elif action == "pause":
        done = chosen.pause()
        record_each(actor, request.team, Kind.MONITOR_PAUSED, done)
    elif action == "resume":
        done = chosen.resume(now)
        record_each(actor, request.team, Kind.MONITOR_RESUMED, done)
    elif action in ("mute", "unmute"):
        choice = request.POST.get("mute", "") if action == "mute" else UNMUTE
        done, said = mute_chosen(request, chosen, choice)
        if not said:
            messages.error(request, "Choose how long to mute their notifications.")
            return redirect(back)
        messages.success(request, f"Notifications of {_counted(done)} {said}.")
        return redirect(back)
    else:
        name = rules.clean_tags([request.POST.get("tag", "")])
        problem = rules.tags_error(name) if name else "Enter the tag's name."
        if problem:
            messages.error(request, rules.curly_quotes(problem))
            return redirect(back)
        if action == "add_tag":
            done, full = chosen.add_tag(Tag.objects.named(request.team, name)[0])
            if full:
                messages.warning(request, _full(full))
        else:
            tag = Tag.objects.find(request.team, name[0])
            done = chosen.remove_tag(tag) if tag else []
        record_each(actor, request.team, Kind.MONITOR_EDITED, done, fields=["tags"])
    messages.success(request, f"{_counted(done)} {ACTIONS[action]}.")
    return redirect(back)


def _confirm_delete(
    request: DashboardRequest, chosen: MonitorQuerySet, back: str
) -> HttpResponse:
    """The single delete's confirmation, for many: what goes, and a second
    POST that says so."""
    context = {"monitors": list(chosen.order_by("name")), "next_url": back}
    return render(request, "monitors/monitor_bulk_confirm_delete.html", context)
