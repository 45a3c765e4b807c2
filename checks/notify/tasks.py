"""Thin Celery tasks for the notification outbox (checks.notify.deliveries does
the work).

Tasks take ids and re-read the row; a missing, finished or not-yet-due row makes
deliver_task a no-op, so a duplicated or replayed message is harmless. Retries
are not Celery retries: a failed attempt stores `next_attempt_at` and the
sweeper queues the row again when it is due.

Deliveries queues by name, so only the worker imports this module. The two
outbox tasks also answer to the names the previous release queued them by
(`checks.notification_tasks.*`), so a message waiting in the broker across an
upgrade still runs; CHANGELOG says when those names go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.utils import timezone

from checks.notify import deliveries, digests

# The hard limit stays well below deliveries.CLAIM_LEASE, so a claim that
# outlives it really belongs to a dead worker. One attempt is a 10 s webhook
# POST or one SMTP conversation (30 s timeout).
DELIVER_TIME_LIMIT = 90
SWEEP_TIME_LIMIT = 120


DELIVER_OPTIONS: dict[str, Any] = {
    "time_limit": DELIVER_TIME_LIMIT,
    "soft_time_limit": DELIVER_TIME_LIMIT - 15,
    "acks_late": True,
    "ignore_result": True,
}
SWEEP_OPTIONS: dict[str, Any] = {
    "time_limit": SWEEP_TIME_LIMIT,
    "soft_time_limit": SWEEP_TIME_LIMIT - 15,
    "ignore_result": True,
}


def _also_as(legacy_name: str, **options: Any) -> Callable:
    """Register the function under the name it had before as well, with the
    same options, for the messages queued before an upgrade."""

    def register(fun: Callable) -> Callable:
        shared_task(name=legacy_name, **options)(fun)
        return fun

    return register


@shared_task(name=deliveries.DELIVER_TASK, **DELIVER_OPTIONS)
@_also_as("checks.notification_tasks.deliver_task", **DELIVER_OPTIONS)
def deliver_task(delivery_id: int) -> None:
    deliveries.deliver(delivery_id)


@shared_task(name=deliveries.SWEEP_TASK, **SWEEP_OPTIONS)
@_also_as("checks.notification_tasks.sweep_deliveries_task", **SWEEP_OPTIONS)
def sweep_deliveries_task() -> int:
    return deliveries.sweep()


@shared_task(name="checks.notify.tasks.queue_digests_task", **SWEEP_OPTIONS)
def queue_digests_task() -> int:
    return len(digests.queue_due(timezone.now()))
