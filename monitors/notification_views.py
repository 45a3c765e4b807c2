"""Dashboard views for a monitor's notifications: recent deliveries with their
attempts, "send test event" and "retry now". Thin: the workflow lives in
checks.notify.deliveries; lookups are scoped to the signed-in person's team
(monitors.views.get_monitor_for), so another team's ids answer 404."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from checks.models import Delivery
from checks.notify import deliveries
from monitors.views import DashboardRequest, get_monitor_for, team_view

TEMPLATE = "monitors/monitor_deliveries.html"


def _list(request: DashboardRequest, monitor, *, status: int = 200) -> HttpResponse:
    template = f"{TEMPLATE}#delivery-list" if request.htmx else TEMPLATE
    context = {
        "monitor": monitor,
        "deliveries": deliveries.recent_deliveries(monitor, limit=50),
    }
    return render(request, template, context, status=status)


@require_GET
@team_view
def monitor_deliveries(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    return _list(request, get_monitor_for(request, pk))


@require_POST
@team_view
def webhook_test(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    try:
        deliveries.send_test_event(monitor)
    except ValueError:
        messages.error(request, "This monitor has no webhook to test.")
    else:
        messages.success(request, "Test event queued; it appears below once sent.")
    if request.htmx:
        return _list(request, monitor)
    return redirect(reverse("monitor-deliveries", args=[monitor.pk]))


@require_POST
@team_view
def delivery_retry(
    request: DashboardRequest, pk: uuid.UUID, delivery_id: int
) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    delivery = Delivery.objects.filter(monitor=monitor, pk=delivery_id).first()
    if delivery is None:
        raise Http404("Delivery not found")
    if deliveries.retry_now(delivery):
        messages.success(request, "Retrying now.")
    else:
        messages.info(request, "This delivery cannot be retried.")
    if request.htmx:
        return _list(request, monitor)
    return redirect(reverse("monitor-deliveries", args=[monitor.pk]))
