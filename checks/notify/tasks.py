"""Thin Celery tasks for the notification outbox (checks.notify.deliveries does
the work).

Tasks take ids and re-read the row; a missing, finished or not-yet-due row makes
deliver_task a no-op, so a duplicated or replayed message is harmless. Retries
are not Celery retries: a failed attempt stores `next_attempt_at` and the
sweeper queues the row again when it is due.

The names are spelled out and predate this module's place (messages already in
a broker and the beat schedule use them); deliveries queues by name, so only
the worker imports this module.
"""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from checks.notify import deliveries, digests

# The hard limit stays well below deliveries.CLAIM_LEASE, so a claim that
# outlives it really belongs to a dead worker. One attempt is a 10 s webhook
# POST or one SMTP conversation (30 s timeout).
DELIVER_TIME_LIMIT = 90
SWEEP_TIME_LIMIT = 120


@shared_task(
    name=deliveries.DELIVER_TASK,
    time_limit=DELIVER_TIME_LIMIT,
    soft_time_limit=DELIVER_TIME_LIMIT - 15,
    acks_late=True,
    ignore_result=True,
)
def deliver_task(delivery_id: int) -> None:
    deliveries.deliver(delivery_id)


@shared_task(
    name=deliveries.SWEEP_TASK,
    time_limit=SWEEP_TIME_LIMIT,
    soft_time_limit=SWEEP_TIME_LIMIT - 15,
    ignore_result=True,
)
def sweep_deliveries_task() -> int:
    return deliveries.sweep()


@shared_task(
    name="checks.notify.tasks.queue_digests_task",
    time_limit=SWEEP_TIME_LIMIT,
    soft_time_limit=SWEEP_TIME_LIMIT - 15,
    ignore_result=True,
)
def queue_digests_task() -> int:
    return len(digests.queue_due(timezone.now()))
