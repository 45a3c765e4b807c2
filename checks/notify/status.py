"""A check's notificationStatus (the API's `notificationStatus`): what its
own webhook and e-mail deliveries came to, recomputed from their rows after
every attempt (checks.notify.drain) and when the check finishes
(checks.notify.deliveries)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Count

from checks import shared_clock
from checks.models import Check
from checks.notify import emails
from checks.notify.models import Delivery
from monitors.time_words import wire_time

# notificationStatus.email.reason of a check that started muted
# (Check.notifications_muted): nothing was sent for it, digests included.
MUTED = "muted"


def idle_webhook_status() -> dict[str, Any]:
    """notificationStatus.webhook of a check with no webhook delivery."""
    return {
        "attempted": False,
        "success": False,
        "delivered": False,
        "queued": False,
        "skipped": True,
        "statusCode": None,
        "error": None,
        "deliveredAt": None,
    }


def idle_email_status() -> dict[str, Any]:
    """notificationStatus.email before anything was sent."""
    return {
        "attempted": False,
        "success": False,
        "queued": False,
        "skipped": True,
        "reason": None,
        "recipients": [],
        "pendingRecipients": 0,
        "unsubscribedRecipients": 0,
        "error": None,
    }


def _counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = {status: 0 for status in Delivery.Status.values}
    for row in rows:
        counts[row["status"]] = row["n"]
    return counts


def _webhook_status(check_id: Any) -> dict[str, Any]:
    rows = Delivery.objects.webhooks().filter(check_run_id=check_id)
    counts = _counts(rows.values("status").annotate(n=Count("id")))
    total = sum(counts.values())
    if not total:
        return idle_webhook_status()
    latest = rows.filter(attempts__gt=0).order_by("-updated_at", "-id").first()
    failed = (
        rows.filter(status__in=(Delivery.Status.FAILED, Delivery.Status.CANCELLED))
        .order_by("-updated_at", "-id")
        .first()
    )
    delivered = counts[Delivery.Status.DELIVERED] == total
    last_delivered = (
        rows.filter(status=Delivery.Status.DELIVERED)
        .order_by("-delivered_at")
        .values_list("delivered_at", flat=True)
        .first()
    )
    error = None
    if failed is not None:
        error = failed.last_error or None
    elif latest is not None and not delivered:
        error = latest.last_error or None
    return {
        "attempted": latest is not None,
        "success": delivered,
        "delivered": delivered,
        "queued": bool(counts["pending"] + counts["sending"]),
        "skipped": False,
        "statusCode": latest.last_status_code if latest else None,
        "error": error,
        "deliveredAt": (
            wire_time(last_delivered) if delivered and last_delivered else None
        ),
        "deliveries": {
            "total": total,
            "delivered": counts["delivered"],
            "pending": counts["pending"] + counts["sending"],
            "failed": counts["failed"] + counts["cancelled"],
        },
    }


def _email_status(check_id: Any, base: dict[str, Any]) -> dict[str, Any]:
    rows = Delivery.objects.emails().filter(
        check_run_id=check_id, event=emails.NOTIFICATION
    )
    counts = _counts(rows.values("status").annotate(n=Count("id")))
    total = sum(counts.values())
    if not total:
        return base
    failed = (
        rows.filter(status__in=(Delivery.Status.FAILED, Delivery.Status.CANCELLED))
        .order_by("-updated_at", "-id")
        .first()
    )
    return base | {
        "attempted": rows.filter(attempts__gt=0).exists(),
        "success": counts["delivered"] == total,
        "queued": bool(counts["pending"] + counts["sending"]),
        "skipped": False,
        "recipients": sorted(rows.values_list("email", flat=True)),
        "error": (failed.last_error or None) if failed else None,
    }


def compose(check_id: Any, current: dict[str, Any] | None) -> dict[str, Any]:
    current = current or {}
    email_base = current.get("email") or idle_email_status()
    return {
        "webhook": _webhook_status(check_id),
        "email": _email_status(check_id, email_base),
    }


def refresh_notification_status(check_id: Any) -> None:
    """Recompute the check's notificationStatus from its delivery rows.

    Under a row lock (PostgreSQL; SQLite's IMMEDIATE transactions serialise
    writers anyway), so two workers finishing attempts at once cannot write
    each other's stale view.
    """
    with transaction.atomic():
        current = (
            Check.objects.select_for_update()
            .filter(pk=check_id)
            .values_list("notification_status", flat=True)
            .first()
        )
        status = compose(check_id, current)
        # A check's updatedAt moves whenever its notificationStatus does.
        Check.objects.filter(pk=check_id).update(
            notification_status=status, updated_at=shared_clock.now()
        )
