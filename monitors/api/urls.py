from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from monitors.api import activity, channels, checks, moving, team, views

# API views authenticate with API keys, not sessions: the login middleware
# must leave them to DRF.
urlpatterns = [
    path("monitor", login_not_required(views.MonitorListView.as_view())),
    path(
        "monitor/<str:monitor_id>",
        login_not_required(views.MonitorDetailView.as_view()),
    ),
    path(
        "monitor/<str:monitor_id>/run",
        login_not_required(checks.MonitorRunView.as_view()),
    ),
    path(
        "monitor/<str:monitor_id>/checks",
        login_not_required(checks.MonitorCheckListView.as_view()),
    ),
    path(
        "monitor/<str:monitor_id>/checks/<str:check_id>",
        login_not_required(checks.MonitorCheckDetailView.as_view()),
    ),
    path("import", login_not_required(moving.ImportView.as_view())),
    path(
        "import/<str:import_id>",
        login_not_required(moving.ImportDetailView.as_view()),
    ),
    path("export", login_not_required(moving.ExportView.as_view())),
    path("activity", login_not_required(activity.ActivityListView.as_view())),
    path("team/credit-usage", login_not_required(team.CreditUsageView.as_view())),
    path("team/queue-status", login_not_required(team.QueueStatusView.as_view())),
    path("channels", login_not_required(channels.ChannelListView.as_view())),
    path(
        "channels/<str:channel_id>",
        login_not_required(channels.ChannelDetailView.as_view()),
    ),
    path(
        "channels/<str:channel_id>/test",
        login_not_required(channels.ChannelTestView.as_view()),
    ),
    path(
        "openapi.json",
        login_not_required(SpectacularJSONAPIView.as_view()),
        name="openapi",
    ),
    # Swagger UI with its start-up script served as a file (the "split" view)
    # and our own page around it: nothing inline, nothing from a CDN, so the
    # page works under the site's Content-Security-Policy and offline.
    path(
        "docs",
        login_not_required(
            SpectacularSwaggerSplitView.as_view(
                url_name="openapi", template_name="api/docs.html"
            )
        ),
        name="api-docs",
    ),
]
