from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView

from monitors.api import views

# API views authenticate with API keys, not sessions: the login middleware
# must leave them to DRF.
urlpatterns = [
    path("monitor", login_not_required(views.MonitorListView.as_view())),
    path(
        "monitor/<str:monitor_id>",
        login_not_required(views.MonitorDetailView.as_view()),
    ),
    path(
        "openapi.json",
        login_not_required(SpectacularJSONAPIView.as_view()),
        name="openapi",
    ),
    path(
        "docs",
        login_not_required(SpectacularRedocView.as_view(url_name="openapi")),
        name="api-docs",
    ),
]
