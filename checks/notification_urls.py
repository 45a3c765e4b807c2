"""Dashboard routes for a monitor's webhook and e-mail deliveries (signed-in)."""

from __future__ import annotations

from django.urls import path

from checks import notification_views as views

monitor = "monitors/<uuid:pk>/deliveries/"

urlpatterns = [
    path(monitor, views.monitor_deliveries, name="monitor-deliveries"),
    path(monitor + "test/", views.webhook_test, name="monitor-webhook-test"),
    path(
        monitor + "<int:delivery_id>/retry/",
        views.delivery_retry,
        name="delivery-retry",
    ),
]
