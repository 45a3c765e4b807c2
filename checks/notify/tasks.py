"""Thin Celery tasks for the notification outbox (checks.notify.drain sends,
checks.notify.sweep sweeps).

Tasks take ids and re-read the rows; a missing, finished or not-yet-due row is
skipped, so a duplicated or replayed message is harmless. drain_task sends the
rows written together (a finished check's) side by side; deliver_task is the
same for one row. Retries
are not Celery retries: a failed attempt stores `next_attempt_at` and the
sweeper queues the row again when it is due.

checks.notify.outbox queues by name, so only the worker imports this module. The two
outbox tasks also answer to the names the previous release queued them by
(`checks.notification_tasks.*`), so a message waiting in the broker across an
upgrade still runs; CHANGELOG says when those names go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task

from checks import shared_clock
from checks.notify import digests, drain, outbox, sweep
from checks.outages import skipped_while_away

# The hard limits stay well below drain.CLAIM_LEASE, so a claim that outlives
# them really belongs to a dead worker. One attempt is a 10 s webhook POST, a
# 30 s Apprise send or one SMTP conversation (its 30 s time-out); a drain's
# attempts run side by side, a few of the blocking ones at a time.
DELIVER_TIME_LIMIT = 90
DRAIN_TIME_LIMIT = 180
SWEEP_TIME_LIMIT = 120


DELIVER_OPTIONS: dict[str, Any] = {
    "time_limit": DELIVER_TIME_LIMIT,
    "soft_time_limit": DELIVER_TIME_LIMIT - 15,
    "acks_late": True,
    "ignore_result": True,
}
DRAIN_OPTIONS: dict[str, Any] = DELIVER_OPTIONS | {
    "time_limit": DRAIN_TIME_LIMIT,
    "soft_time_limit": DRAIN_TIME_LIMIT - 15,
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


@shared_task(name=outbox.DELIVER_TASK, **DELIVER_OPTIONS)
@_also_as("checks.notification_tasks.deliver_task", **DELIVER_OPTIONS)
def deliver_task(delivery_id: int) -> None:
    drain.deliver(delivery_id)


@shared_task(name=outbox.DRAIN_TASK, **DRAIN_OPTIONS)
def drain_task(delivery_ids: list[int]) -> int:
    return len(drain.drain(delivery_ids))


@shared_task(name=outbox.SWEEP_TASK, **SWEEP_OPTIONS)
@_also_as("checks.notification_tasks.sweep_deliveries_task", **SWEEP_OPTIONS)
def sweep_deliveries_task() -> int:
    with skipped_while_away("The deliveries sweep"):
        return sweep.sweep()
    return 0


@shared_task(name="checks.notify.tasks.queue_digests_task", **SWEEP_OPTIONS)
def queue_digests_task() -> int:
    # Each channel's digest is claimed and made in one transaction, so one
    # the outage cut short is made by the next run. On the database's clock,
    # as the changes it tells are stamped (checks.shared_clock).
    with skipped_while_away("Making digests"):
        return len(digests.queue_due(shared_clock.now()))
    return 0
