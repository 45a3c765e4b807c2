"""Putting outbox rows on the broker: a row is written in the transaction that
records its event and queued after that transaction commits.

A row alone goes out as one `deliver_task`; rows written together (a check
finishing: its own webhook, e-mails and every linked channel) go out as one
`drain_task` that sends them side by side (checks.notify.drain). Queueing never
raises: a row whose message was lost is queued again by the sweeper
(checks.notify.sweep) after REQUEUE_AFTER.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import transaction

from checks import outages, shared_clock
from checks.notify.models import Delivery

logger = logging.getLogger(__name__)

# A due row queued this long ago and still pending lost its broker message.
REQUEUE_AFTER = timedelta(minutes=5)
# The tasks of checks.notify.tasks, queued by name so that module imports this
# one and never the reverse.
DELIVER_TASK = "checks.notify.tasks.deliver_task"
DRAIN_TASK = "checks.notify.tasks.drain_task"
SWEEP_TASK = "checks.notify.tasks.sweep_deliveries_task"

# Rows created inside `together()`: queued as one task when it ends.
_together: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "outbox_together", default=None
)


def enqueue(delivery_id: int) -> None:
    """Put one delivery on the broker."""
    _send(DELIVER_TASK, delivery_id, [delivery_id])


def enqueue_many(delivery_ids: Sequence[int]) -> None:
    """Put deliveries on the broker as one task that sends them side by side
    (one alone goes as a plain deliver_task)."""
    ids = list(delivery_ids)
    if len(ids) == 1:
        enqueue(ids[0])
    elif ids:
        _send(DRAIN_TASK, ids, ids)


def _send(task: str, argument: Any, ids: list[int]) -> None:
    try:
        current_app.send_task(
            task, args=[argument], expires=REQUEUE_AFTER.total_seconds()
        )
    except Exception as exc:
        # The broker away is routine: its reason in one line, not a traceback
        # per batch; anything else with its traceback.
        outages.warn(
            logger, exc, "Could not queue deliveries %s; the sweeper will retry", ids
        )


def enqueue_on_commit(delivery_id: int) -> None:
    """Queue a row once the current transaction commits (with the other rows
    of a `together()` block, when inside one)."""
    batch = _together.get()
    if batch is not None:
        batch.append(delivery_id)
        return
    # Looked up at call time (not bound now), so tests can replace `enqueue`.
    transaction.on_commit(lambda: enqueue(delivery_id))


@contextlib.contextmanager
def together() -> Iterator[None]:
    """The rows created inside go on the broker as one task after commit.

    If the block raises, nothing is queued: its transaction is rolled back
    (a caller that swallows the error leaves the rows to the sweeper)."""
    if _together.get() is not None:  # already inside one: it queues ours
        yield
        return
    batch: list[int] = []
    token = _together.set(batch)
    try:
        yield
    finally:
        _together.reset(token)
    if batch:
        transaction.on_commit(lambda: enqueue_many(batch))


def create(**fields: Any) -> Delivery:
    """One outbox row, due now, queued after commit."""
    delivery = create_unqueued(**fields)
    enqueue_on_commit(delivery.pk)
    return delivery


def create_unqueued(**fields: Any) -> Delivery:
    """One outbox row, due now, that the caller sends itself at once (a test
    message whose answer it shows). Not put on the broker: a worker could take
    it first and leave the caller no answer to show. Marked as on its way, so
    the sweeper sends it only if the caller never did (REQUEUE_AFTER)."""
    now = shared_clock.now()
    return Delivery.objects.create(next_attempt_at=now, queued_at=now, **fields)


def create_many(rows: list[Delivery]) -> list[Delivery]:
    """Unsaved rows written in one INSERT, due now, queued after commit. Now
    by the database's clock, as the drain and the sweeper tell what is due:
    a worker's own clock ahead made its messages wait that long."""
    now = shared_clock.now()
    for row in rows:
        row.next_attempt_at = row.queued_at = now
    made = Delivery.objects.bulk_create(rows)
    if any(row.pk is None for row in made):  # a backend without RETURNING
        raise RuntimeError("The database did not return the new rows' ids.")
    for row in made:
        enqueue_on_commit(row.pk)
    return made
