"""Turn due monitors into checks: the scheduler's one job, and manual runs.

`dispatch_due_monitors(now)` runs every 10 s (Celery beat). Several dispatchers
may run at once (two beats by mistake, a slow tick overlapping the next): each
slot still gets exactly one check, because

* candidates are locked with FOR UPDATE SKIP LOCKED on PostgreSQL (a no-op on
  SQLite, whose IMMEDIATE transactions already serialise writers),
* each monitor is claimed with a conditional UPDATE that only succeeds while
  next_run_at still holds the slot being dispatched, and
* the one_check_per_slot unique constraint backs both up.

Spread: a monitor's check starts a small, fixed delay after its cron slot,
`sha256(monitor id)` mod min(interval / 2, SPREAD_CAP), so thousands of
monitors on `*/5 * * * *` do not all hit the workers (and their sites) in the
same second. The cap is 30 s: enough to flatten a tick's burst over three dispatch
ticks, small enough that a check never visibly lags its schedule, and the
interval/2 bound keeps the delay well inside short intervals. nextRunAt and
scheduledFor still show the cron slot itself.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Prefetch

from checks import notify
from checks.models import Check
from checks.runner import empty_summary
from monitors.models import Monitor, Target

logger = logging.getLogger(__name__)

SPREAD_CAP = timedelta(seconds=30)
# Monitors handled per transaction, and at most per tick: the rest wait for the
# next tick 10 s later, so one tick's work (and lock time) stays bounded.
BATCH_SIZE = 200
MAX_PER_TICK = 2000
OVERLAP_ERROR = "Previous monitor check is still running."


class RunRefused(Exception):
    """A manual run the API answers with 409; `check_id` names the running one."""

    def __init__(self, message: str, check_id: uuid.UUID | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.check_id = check_id


PAUSED_MESSAGE = "Monitor is paused. Resume it before running a check."
RUNNING_MESSAGE = "Monitor check is already running."


def spread(monitor_id: uuid.UUID, interval: timedelta) -> timedelta:
    """The fixed delay of this monitor's checks after each cron slot."""
    cap = min(interval / 2, SPREAD_CAP)
    cap_ms = int(cap.total_seconds() * 1000)
    if cap_ms <= 0:
        return timedelta(0)
    digest = hashlib.sha256(str(monitor_id).encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:4], "big") % cap_ms)


def estimated_credits(monitor: Monitor) -> int:
    """Upper bound of one check's credits. Only scrape targets run for now, so
    crawl and search targets (skipped) reserve nothing."""
    return sum(
        target.estimated_credits(judging=monitor.judging)
        for target in monitor.targets.all()
        if target.type == Target.Type.SCRAPE
    )


def enqueue(check_id: uuid.UUID) -> None:
    """Send the check to a worker once the transaction that created it commits.

    A lost message is not a lost check: the stale sweeper fails checks left
    queued, and the next slot runs normally.
    """

    def send() -> None:
        from checks.tasks import run_check_task

        try:
            run_check_task.delay(str(check_id))
        except Exception:
            logger.exception("Could not enqueue check %s", check_id)

    transaction.on_commit(send)


# --- Scheduled checks --------------------------------------------------------------


@dataclass(frozen=True)
class _Slot:
    monitor: Monitor
    slot: datetime  # the cron fire time being dispatched (monitor.next_run_at)
    following: datetime | None  # the next_run_at it advances to


def dispatch_due_monitors(now: datetime) -> int:
    """Create the checks of every monitor whose (spread) slot has come.

    Returns how many checks were created (queued and skipped_overlap alike).
    Cost grows with the number of due monitors only: the candidate query runs
    on the partial index monitor_due_idx.
    """
    created = 0
    # Monitors looked at this tick: those still inside their spread delay stay
    # due, and must not be fetched again by the next batch of the same tick.
    seen: set[uuid.UUID] = set()
    while created < MAX_PER_TICK and len(seen) < 2 * MAX_PER_TICK:
        done, looked_at = _dispatch_batch(now, exclude=seen)
        if not looked_at:
            break
        created += done
        seen |= looked_at
    return created


def _dispatch_batch(
    now: datetime, *, exclude: set[uuid.UUID]
) -> tuple[int, set[uuid.UUID]]:
    with transaction.atomic():
        candidates = list(
            Monitor.objects.due(now)
            .exclude(pk__in=exclude)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("next_run_at", "pk")
            .prefetch_related(
                Prefetch("targets", queryset=Target.objects.order_by("position"))
            )[:BATCH_SIZE]
        )
        ready = [slot for m in candidates if (slot := _safe_ready_slot(m, now))]
        in_flight = set(
            Check.objects.in_flight()
            .filter(monitor_id__in=[s.monitor.pk for s in ready])
            .values_list("monitor_id", flat=True)
        )
        done = sum(_dispatch_one(s, now, s.monitor.pk in in_flight) for s in ready)
    return done, {m.pk for m in candidates}


def _safe_ready_slot(monitor: Monitor, now: datetime) -> _Slot | None:
    # One unreadable schedule must not stall every other monitor's checks.
    try:
        return _ready_slot(monitor, now)
    except Exception:
        logger.exception("Cannot schedule monitor %s", monitor.pk)
        return None


def _ready_slot(monitor: Monitor, now: datetime) -> _Slot | None:
    slot = monitor.next_run_at
    assert slot is not None  # due() only returns monitors with a next run
    following = monitor.next_run_after(slot)
    interval = (following - slot) if following else timedelta(0)
    if slot + spread(monitor.pk, interval) > now:
        return None  # inside its spread delay; a later tick takes it
    # Skip missed slots (workers were down): one check, then back on schedule.
    return _Slot(monitor, slot, monitor.next_run_after(now))


def _dispatch_one(slot: _Slot, now: datetime, overlaps: bool) -> int:
    monitor = slot.monitor
    check = Check(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=slot.slot,
    )
    if overlaps:
        check.status = Check.Status.SKIPPED_OVERLAP
        check.finished_at = now
        check.error = OVERLAP_ERROR
        check.actual_credits = 0
    else:
        check.status = Check.Status.QUEUED
        check.estimated_credits = estimated_credits(monitor)
    check.summary = empty_summary()
    changes: dict = {"next_run_at": slot.following}
    if overlaps:
        changes["last_run_at"] = now  # lastRunAt counts skipped checks too
    else:
        changes["current_check_id"] = check.pk
    try:
        with transaction.atomic():
            claimed = Monitor.objects.filter(
                pk=monitor.pk,
                next_run_at=slot.slot,
                status=Monitor.Status.ACTIVE,
                deleted_at__isnull=True,
            ).update(**changes)
            if not claimed:
                return 0  # another dispatcher took this slot, or it was edited
            check.save(force_insert=True)
            if overlaps:
                notify.on_check_finished(check)
            else:
                enqueue(check.pk)
    except IntegrityError:
        # one_check_per_slot: this slot already has its check. Still move the
        # monitor past it, or it would stay due and hit this on every tick.
        logger.info("Slot %s of monitor %s already dispatched", slot.slot, monitor.pk)
        Monitor.objects.filter(pk=monitor.pk, next_run_at=slot.slot).update(
            next_run_at=slot.following
        )
        return 0
    return 1


# --- Manual checks ---------------------------------------------------------------


def queue_manual_check(monitor: Monitor) -> Check:
    """Queue a check now (POST /v2/monitor/{id}/run).

    Raises RunRefused when the monitor is paused or a check is in flight. The
    monitor row is locked first, so a manual run and a dispatcher (whose claim
    updates that row) can never both start a check for it.
    """
    with transaction.atomic():
        locked = (
            Monitor.objects.alive()
            .select_for_update()
            .filter(pk=monitor.pk)
            .prefetch_related("targets")
            .first()
        )
        if locked is None:
            raise Monitor.DoesNotExist
        if not locked.is_active:
            raise RunRefused(PAUSED_MESSAGE)
        running = Check.objects.in_flight().filter(monitor=locked).first()
        if running is not None:
            raise RunRefused(RUNNING_MESSAGE, running.pk)
        check = Check.objects.create(
            monitor=locked,
            trigger=Check.Trigger.MANUAL,
            status=Check.Status.QUEUED,
            estimated_credits=estimated_credits(locked),
            summary=empty_summary(),
        )
        Monitor.objects.filter(pk=locked.pk).update(current_check_id=check.pk)
        enqueue(check.pk)
    return check
