"""Dashboard views for notifications: a monitor's recent deliveries with their
attempts, "send a test message" and "retry now"; the team's webhook signing secret
(shown and rotated after a confirmation step). Thin: the workflow lives in
checks.notify.deliveries and on Team; lookups are scoped to the signed-in
person's team (monitors.dashboard.base.get_monitor_for), so another team's ids answer
404."""

from __future__ import annotations

import logging
import uuid

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import (
    require_GET,
    require_http_methods,
    require_POST,
)

from checks.models import Delivery
from checks.notify import deliveries
from monitors.dashboard.base import Action, DashboardRequest, get_monitor_for, team_view
from monitors.models import WEBHOOK_SECRET_GRACE
from teams.activity import Actor, Kind, record

logger = logging.getLogger(__name__)

TEMPLATE = "monitors/monitor_deliveries.html"
SIGNING_TEMPLATE = "monitors/webhook_secret.html"


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
@team_view(needs=Action.EDIT)
def webhook_test(request: DashboardRequest, pk: uuid.UUID) -> HttpResponse:
    monitor = get_monitor_for(request, pk)
    try:
        deliveries.send_test_event(monitor)
    except ValueError:
        messages.error(request, "This monitor has no webhook to test.")
    else:
        messages.success(request, "Test message queued; it appears below once sent.")
    if request.htmx:
        return _list(request, monitor)
    return redirect(reverse("monitor-deliveries", args=[monitor.pk]))


@require_POST
@team_view(needs=Action.EDIT)
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


# ---------------------------------------------------------------- signing secret

# Session key: the team whose secret was just made new, to show it once.
JUST_ROTATED = "pagewatch_webhook_secret_rotated"


def _secret_shown(
    request: DashboardRequest, secret: str, *, rotated: bool = False
) -> HttpResponse:
    context = {"step": "shown", "secret": secret, "rotated": rotated}
    response = render(request, SIGNING_TEMPLATE, context)
    response["Cache-Control"] = "no-store"  # never from a cache or the back button
    return response


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.MANAGE)
def webhook_secret_show(request: DashboardRequest) -> HttpResponse:
    """GET asks for confirmation; only the POST shows the secret (made now if
    the team has none), so a link preview or a glance at history never does.
    The one exception is the redirect right after *Make a new secret*, which
    shows the new secret once (its POST asked for confirmation already)."""
    if request.method == "GET":
        if request.session.pop(JUST_ROTATED, None) == request.team.pk:
            logger.info(
                "New webhook secret of team %s shown to user %s",
                request.team.pk,
                request.user.pk,
            )
            return _secret_shown(request, request.team.webhook_secret, rotated=True)
        return render(request, SIGNING_TEMPLATE, {"step": "confirm-show"})
    secret = request.team.ensure_webhook_secret()
    logger.info(
        "Webhook secret of team %s shown to user %s", request.team.pk, request.user.pk
    )
    return _secret_shown(request, secret)


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.MANAGE)
def webhook_secret_rotate(request: DashboardRequest) -> HttpResponse:
    if request.method == "GET":
        grace_hours = int(WEBHOOK_SECRET_GRACE.total_seconds() // 3600)
        context = {"step": "confirm-rotate", "grace_hours": grace_hours}
        return render(request, SIGNING_TEMPLATE, context)
    request.team.rotate_webhook_secret()
    record(Actor.of(request), request.team, Kind.SECRET_ROTATED)
    logger.info(
        "Webhook secret of team %s rotated by user %s", request.team.pk, request.user.pk
    )
    # Shown after a redirect, once: reloading the answer to the POST would make
    # yet another secret, and the one receivers still use would stop signing.
    request.session[JUST_ROTATED] = request.team.pk
    return redirect("webhook-secret-show")
