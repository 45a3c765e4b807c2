from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from checks import api

# API views authenticate with API keys (DRF), not sessions.
urlpatterns = [
    path(
        "monitor/<str:monitor_id>/run",
        login_not_required(api.MonitorRunView.as_view()),
    ),
    path(
        "monitor/<str:monitor_id>/checks",
        login_not_required(api.MonitorCheckListView.as_view()),
    ),
    path(
        "monitor/<str:monitor_id>/checks/<str:check_id>",
        login_not_required(api.MonitorCheckDetailView.as_view()),
    ),
]
