"""Creating and editing a monitor: the form page, live validation, one more
target row, and the preview of the next runs of a schedule."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from checks.ai import llm_available
from checks.browser.executable import available as browser_available
from monitors import rules
from monitors import schedule as schedules
from monitors.dashboard.base import (
    PREVIEW_RUNS,
    SCHEDULE_UNUSABLE,
    ZONE_UNKNOWN,
    Action,
    DashboardRequest,
    get_monitor_for,
    team_view,
)
from monitors.dashboard.forms.fields import split_schedule
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.models import Monitor, Tag
from monitors.schedule_words import CUSTOM_SCHEDULE, describe
from monitors.unavailable import missing_services
from teams.activity import Actor, Kind, monitor_fields, record, record_monitor_change

# ---------------------------------------------------------------- create / edit


def _touched(request: HttpRequest) -> set[str] | None:
    """Field names the person has typed in (sent by static/js/app.js)."""
    if "_touched" not in request.POST:
        return None
    return {name for name in request.POST["_touched"].split(",") if name}


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
        "missing": missing_services(),
        "timezones": schedules.zone_names(),
        "team_tags": list(Tag.objects.for_team(form.team).in_use())
        if form.team
        else [],
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
    actor = Actor.of(request)
    saved = form.save(request.team, timezone.now(), by=actor.person_name)
    if before is None:
        record(actor, request.team, Kind.MONITOR_CREATED, saved)
    else:
        record_monitor_change(actor, before, saved)
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
    context = {"target": MonitorForm.blank_target(kind), "missing": missing_services()}
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
    moments = [run.astimezone(zone_info) for run in runs]
    # Across a clock change the same wall time can come twice (02:30, 02:00,
    # 02:30 when autumn repeats an hour): each time then names its clock.
    clocks = len({local.utcoffset() for local in moments}) > 1
    times = []
    for local in moments:
        time = f"{local:%H:%M}" + (f" {local:%Z}" if clocks else "")
        times.append(time if local.date() == today else f"{local:%a %d %b} {time}")
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
