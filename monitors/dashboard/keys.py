"""The team's API keys: creating and revoking them."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from monitors.dashboard.base import Action, DashboardRequest, team_view
from monitors.dashboard.forms.settings import ApiKeyForm
from monitors.models import ApiKey
from teams.activity import Actor, Kind, record


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
    # Revoking is the only action on a key: with no active key there is
    # nothing to act on, so the page leaves out the Actions column.
    revocable = any(key.is_active for key in keys)
    context = {"form": form, "keys": keys, "new_key": new_key, "revocable": revocable}
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
