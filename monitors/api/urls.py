from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from monitors.api import (
    activity,
    bulk,
    channels,
    checks,
    documents,
    moving,
    team,
    views,
)
from monitors.api.base import ApiView

# OPTIONS is refused, in the error envelope, like any method a path lacks
# (the OpenAPI document describes the API), so no answer's Allow offers it.
METHODS = [name for name in ApiView.http_method_names if name != "options"]


def api(view: type[ApiView], **initkwargs: Any) -> Callable[..., Any]:
    """The view as the API serves it. API views authenticate with API keys,
    not sessions: the login middleware must leave them to DRF. Every one is
    an ApiView (the key judged first, errors always in the envelope)."""
    return login_not_required(view.as_view(http_method_names=METHODS, **initkwargs))


urlpatterns = [
    path("monitor", api(views.MonitorListView)),
    # Before the monitor's own path, which would take "bulk" for an id.
    path("monitor/bulk", api(bulk.MonitorBulkView)),
    path(
        "monitor/<str:monitor_id>",
        api(views.MonitorDetailView),
    ),
    path(
        "monitor/<str:monitor_id>/run",
        api(checks.MonitorRunView),
    ),
    path(
        "monitor/<str:monitor_id>/checks",
        api(checks.MonitorCheckListView),
    ),
    path(
        "monitor/<str:monitor_id>/checks/<str:check_id>",
        api(checks.MonitorCheckDetailView),
    ),
    path("import", api(moving.ImportView)),
    path(
        "import/<str:import_id>",
        api(moving.ImportDetailView),
    ),
    path("export", api(moving.ExportView)),
    path("activity", api(activity.ActivityListView)),
    path("team/credit-usage", api(team.CreditUsageView)),
    path("team/credit-usage/historical", api(team.CreditUsageHistoricalView)),
    path("team/token-usage", api(team.TokenUsageView)),
    path("team/token-usage/historical", api(team.TokenUsageHistoricalView)),
    path("team/queue-status", api(team.QueueStatusView)),
    path("channels", api(channels.ChannelListView)),
    path(
        "channels/<str:channel_id>",
        api(channels.ChannelDetailView),
    ),
    path(
        "channels/<str:channel_id>/test",
        api(channels.ChannelTestView),
    ),
    path(
        "openapi.json",
        api(documents.OpenApiDocumentView),
        name="openapi",
    ),
    path(
        "docs",
        api(
            documents.DocsView,
            url_name="openapi",
            template_name="api/docs.html",
        ),
        name="api-docs",
    ),
]
