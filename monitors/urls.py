"""Dashboard routes (HTML, signed-in people) and the sign-in pages.

Everything here needs a session (LoginRequiredMiddleware) except Django's own
sign-in and password-reset views, which mark themselves as public."""

from __future__ import annotations

from django.urls import include, path

from monitors import views

monitor = "monitors/<uuid:pk>/"
check = monitor + "checks/<uuid:check_id>/"

urlpatterns = [
    path("", views.monitor_list, name="monitor-list"),
    path("monitors/new/", views.monitor_create, name="monitor-create"),
    path("monitors/new/validate/", views.monitor_validate, name="monitor-validate-new"),
    path("monitors/target-row/", views.target_row, name="target-row"),
    path("monitors/schedule-preview/", views.schedule_preview, name="schedule-preview"),
    path(monitor, views.monitor_detail, name="monitor-detail"),
    path(monitor + "edit/", views.monitor_edit, name="monitor-edit"),
    path(monitor + "edit/validate/", views.monitor_validate, name="monitor-validate"),
    path(monitor + "toggle/", views.monitor_toggle, name="monitor-toggle"),
    path(monitor + "run/", views.monitor_run, name="monitor-run"),
    path(monitor + "delete/", views.monitor_delete, name="monitor-delete"),
    path(check, views.check_detail, name="check-detail"),
    path(check + "progress/", views.check_progress, name="check-progress"),
    path(check + "pages/<uuid:page_id>/", views.page_diff, name="page-diff"),
    path("history/", views.team_history, name="team-history"),
    path("settings/api-keys/", views.api_keys, name="api-keys"),
    path(
        "settings/api-keys/<int:key_id>/revoke/",
        views.api_key_revoke,
        name="api-key-revoke",
    ),
    path("settings/team/", views.team_members, name="team-members"),
    path("team/switch/", views.team_switch, name="team-switch"),
    # login, logout, password_change*, password_reset* (templates/registration/)
    path("accounts/", include("django.contrib.auth.urls")),
]
