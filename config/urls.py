from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from config import views
from teams.signin_views import admin_sign_in

urlpatterns = [
    path("favicon.ico", views.favicon, name="favicon"),
    path("admin/login/", admin_sign_in, name="admin-sign-in"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("v2/", include("monitors.api.urls")),
    path("", include("teams.urls")),
    path("", include("monitors.dashboard.urls")),
]

handler400 = "config.views.bad_request"
handler403 = "config.views.forbidden"
handler404 = "config.views.not_found"
handler500 = "config.views.server_error"
