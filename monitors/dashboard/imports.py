"""The dashboard's Import and Export: thin views over monitors.moving.

Import is two steps: the form reads the source into an ImportRun and shows
its preview (what will be created, what will not and why, duplicates to
choose), judged at once when small, else by a task whose progress the page
polls (a service given by its address and key is always read by that task);
confirming imports exactly that preview, at once when small, else as a task
whose progress the page polls."""

from __future__ import annotations

import json
import uuid

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh, HttpResponseStopPolling

from monitors import moving
from monitors.dashboard.base import Action, DashboardRequest, team_view
from monitors.dashboard.forms.settings import ImportForm
from monitors.models import ImportRun
from monitors.moving import importing
from monitors.moving.exporting import export_csv, export_document

TEMPLATE = "monitors/import.html"
# What a request may carry beyond the file itself (the form's other fields).
_FORM_SLACK = 64 * 1024


def _too_large(request: DashboardRequest) -> bool:
    length = request.META.get("CONTENT_LENGTH") or "0"
    return length.isdigit() and int(length) > moving.max_bytes() + _FORM_SLACK


def get_run_for(request: DashboardRequest, pk: uuid.UUID) -> ImportRun:
    return get_object_or_404(ImportRun, team=request.team, pk=pk)


# A service's API key, typed in the form: never in an error report.
@sensitive_post_parameters("api_key")
@require_http_methods(["GET", "POST"])
@team_view(needs=Action.EDIT)
def import_start(request: DashboardRequest) -> HttpResponse:
    context = {"sources": moving.sources(), "max_mb": moving.max_bytes() // 2**20}
    if request.method == "GET":
        return render(request, TEMPLATE, context | {"form": ImportForm()})
    if _too_large(request):
        # Refused before Django reads the upload: no form data is parsed.
        form = ImportForm()
        context["refused"] = (
            f"The file is larger than {context['max_mb']} MB, the most Pagewatch "
            "imports."
        )
        return render(request, TEMPLATE, context | {"form": form}, status=413)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, TEMPLATE, context | {"form": form}, status=400)
    data = form.cleaned_data
    try:
        if data["file"] is None:
            # Read by the preview task: one or two requests per watch.
            run = importing.start_remote_preview(
                request.team, data["source"], data["url"], data["api_key"], request.user
            )
            return redirect("import-run", pk=run.pk)
        items = moving.read(
            data["source"], data=data["file"].read(), filename=data["file"].name
        )
    except moving.ImportRefused as exc:
        context["refused"] = exc.message
        # The parser's words alone do not say how to fix it: repeat what the
        # chosen tool's import needs.
        context["refused_source"] = context["sources"].get(data["source"])
        return render(request, TEMPLATE, context | {"form": form}, status=400)
    run = importing.start_preview(request.team, data["source"], items, request.user)
    return redirect("import-run", pk=run.pk)


# Rows shown first: what a person must look at in a long import (refused,
# skipped, carried over with changes) before what simply comes in.
_RESULT_FIRST = {"failed": 0, "not imported": 1, "duplicate": 2}


def _planned_first(item: moving.Planned) -> int:
    if not item.importable:
        return 0
    return 1 if item.duplicate else 2 if item.notes else 3


def _outcome_first(row: dict[str, object]) -> int:
    return _RESULT_FIRST.get(str(row["result"]), 3 if row["notes"] else 4)


def _run_context(run: ImportRun) -> dict[str, object]:
    previewed = run.status == run.Status.PREVIEWED
    items = sorted(
        importing.previewed_items(run) if previewed else [], key=_planned_first
    )
    report = sorted((run.report or {}).get("items", []), key=_outcome_first)
    # Skipped duplicates of an earlier watch of the same file, told apart
    # from those of a monitor the team has.
    repeated_skipped = sum(
        1 for i in report if i["result"] == "duplicate" and i.get("sameAddressAs")
    )
    return {
        "run": run,
        "items": items,
        "creatable": sum(1 for i in items if i.importable and not i.duplicate),
        "duplicates": sum(1 for i in items if i.importable and i.duplicate),
        "repeated": sum(1 for i in items if i.importable and i.same_address_as),
        "already": sum(
            1 for i in items if i.importable and i.duplicate and not i.same_address_as
        ),
        "refused": sum(1 for i in items if not i.importable),
        "new_channels": list(
            dict.fromkeys(
                c["name"] for i in items if i.importable for c in i.channels if c["new"]
            )
        ),
        "source_label": moving.sources()[run.source].label_in_sentence(),
        "report": report,
        "already_skipped": (run.report or {}).get("duplicates", 0) - repeated_skipped,
        "repeated_skipped": repeated_skipped,
    }


@require_GET
@team_view(needs=Action.EDIT)
def import_run(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    # The items (megabytes for thousands of watches) are read only by the
    # preview itself, not by each poll of a preview or an import under way.
    run = get_object_or_404(ImportRun.objects.defer("items"), team=request.team, pk=pk)
    if run.status == run.Status.PREPARING:
        # Ended here, where someone waits for it: no sweeper need run for a
        # preview nobody is looking at (retention removes it).
        run.give_up_preview_if_stale(timezone.now())
    if request.htmx and run.status == run.Status.PREVIEWED:
        # The preview being made is ready: it is the whole page, not a
        # fragment of it, so the page is loaded again.
        return HttpResponseClientRefresh()
    if request.htmx:
        html = render(request, TEMPLATE + "#progress", _run_context(run))
        return HttpResponseStopPolling(html.content) if run.is_finished else html
    return render(request, TEMPLATE, _run_context(run))


@require_POST
@team_view(needs=Action.EDIT)
def import_confirm(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    run = get_run_for(request, pk)
    chosen = request.POST.getlist("duplicate")
    try:
        importing.start_run(run, chosen, timezone.now())
    except importing.ImportNotQueued as not_queued:
        messages.error(request, not_queued.message)
    except importing.ImportPaused as paused:
        messages.warning(request, str(paused))
    return redirect("import-run", pk=run.pk)


@require_GET
@team_view
def export(request: DashboardRequest) -> HttpResponse:
    stamp = timezone.now().strftime("%Y-%m-%d")
    if request.GET.get("format") == "csv":
        response = HttpResponse(export_csv(request.team), content_type="text/csv")
        name = f"pagewatch-{request.team.slug}-{stamp}.csv"
    else:
        document = export_document(
            request.team,
            timezone.now(),
            webhooks=request.membership.can(Action.EDIT),
        )
        response = HttpResponse(
            json.dumps(document, indent=2, ensure_ascii=False),
            content_type="application/json",
        )
        name = f"pagewatch-{request.team.slug}-{stamp}.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
