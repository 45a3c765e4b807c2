"""The outbox's sweeper, run every minute by Celery beat: frees the claims of
workers that died and queues every due row not already on its way (retries
included: no far-future ETAs live in the broker, so losing Redis only delays
deliveries). Due rows go out in drains of up to DRAIN_BATCH rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q

from checks import shared_clock
from checks.notify import outbox, status
from checks.notify.drain import (
    CLAIM_LEASE,
    DRAIN_BATCH,
    MAX_ATTEMPTS,
    in_notification_status,
)
from checks.notify.models import Delivery, DeliveryAttempt

SWEEP_BATCH = 500


def sweep() -> int:
    """Free dead workers' claims and queue every due delivery not already on its
    way. Returns how many were queued. Run every minute by Celery beat."""
    now = shared_clock.now()
    _release_stale_claims(now)
    stale_queue = now - outbox.REQUEUE_AFTER
    # Every retry is queued from here, so a receiver that was down for a
    # while leaves a full batch: one UPDATE for it, not one per row. The rows
    # are locked (PostgreSQL; SQLite's IMMEDIATE transaction serialises
    # writers), so two sweepers never queue the same row twice.
    with transaction.atomic():
        due = list(
            Delivery.objects.due(now)
            .filter(Q(queued_at__isnull=True) | Q(queued_at__lte=stale_queue))
            .select_for_update(skip_locked=True)
            .order_by("next_attempt_at")
            .values_list("pk", flat=True)[:SWEEP_BATCH]
        )
        Delivery.objects.filter(pk__in=due).update(queued_at=now)
    for start in range(0, len(due), DRAIN_BATCH):
        outbox.enqueue_many(due[start : start + DRAIN_BATCH])
    return len(due)


def _release_stale_claims(now: datetime) -> None:
    stale = Delivery.objects.filter(
        status=Delivery.Status.SENDING, claimed_at__lt=now - CLAIM_LEASE
    ).order_by("claimed_at")[:SWEEP_BATCH]
    released_checks: set[Any] = set()
    for delivery in stale:
        exhausted = delivery.attempts >= MAX_ATTEMPTS
        with transaction.atomic():
            released = Delivery.objects.filter(
                pk=delivery.pk,
                status=Delivery.Status.SENDING,
                claimed_at=delivery.claimed_at,
            ).update(
                status=Delivery.Status.FAILED if exhausted else Delivery.Status.PENDING,
                next_attempt_at=None if exhausted else now,
                queued_at=None,
                claimed_at=None,
                last_error="The worker stopped during this attempt.",
                updated_at=now,
            )
            if released:
                DeliveryAttempt.objects.create(
                    delivery=delivery,
                    number=delivery.attempts,
                    started_at=delivery.claimed_at or now,
                    error="The worker stopped during this attempt.",
                )
        if released and delivery.check_run_id and in_notification_status(delivery):
            released_checks.add(delivery.check_run_id)
    # Once per check: a dead worker leaves many claims of one check's pages.
    for check_id in released_checks:
        status.refresh_notification_status(check_id)
