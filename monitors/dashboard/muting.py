"""Muting a monitor's notifications from its page: for an hour, until
the next 9:00 in the morning, for a week or until unmuted
(monitors.muting), and unmuting. The list's bulk actions mute many
(monitors.dashboard.monitor_bulk)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from monitors import bulk, clock, muting, rules
from monitors.dashboard.base import Action, DashboardRequest, get_monitor_for, team_view
from monitors.models import Monitor
from teams.activity import Actor

UNMUTE = "off"


def mute_context(monitor: Monitor) -> dict[str, Any]:
    """What the monitor page says of its mute, and the choices it offers."""
    until = monitor.mute_ends_at
    return {
        "mute_words": (
            muting.until_words(until, clock.team_zone(monitor.team)) if until else ""
        ),
        "mute_choices": muting.CHOICES,
    }


def mute_chosen(
    request: DashboardRequest, monitors: Any, choice: str
) -> tuple[list[Monitor], str]:
    """Mute (for the choice's time) or unmute these monitors of the team;
    the ones it changed, and how it is said ("" for a choice that is none).
    The work and its activity entries are monitors.bulk's, as the API's."""
    now = timezone.now()
    actor = Actor.of(request)
    if choice == UNMUTE:
        outcome = bulk.act(monitors, bulk.Action.UNMUTE, actor, request.team, now)
        return outcome.done, "unmuted"
    zone = clock.team_zone(request.team)
    until = muting.mute_end(choice, now, zone)
    if until is None or rules.mute_rule(until, now):
        return [], ""
    outcome = bulk.act(
        monitors, bulk.Action.MUTE, actor, request.team, now, until=until
    )
    return outcome.done, f"muted until {muting.until_words(until, zone)}"


@require_POST
@team_view(needs=Action.EDIT)
def monitor_mute(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    chosen = Monitor.objects.filter(pk=monitor.pk)
    done, said = mute_chosen(request, chosen, request.POST.get("mute", ""))
    if not said:
        messages.error(request, "Choose how long to mute its notifications.")
    elif done:
        messages.success(request, f"Notifications of “{monitor.name}” {said}.")
    return redirect(monitor.get_absolute_url())
