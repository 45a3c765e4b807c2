"""Turn due monitors into checks: the scheduler's one job, and manual runs.

`dispatch_due_monitors(now)` runs every 10 s (Celery beat). Several dispatchers
may run at once (two beats by mistake, a slow tick overlapping the next): each
slot still gets exactly one check, because

* candidates are locked with FOR UPDATE SKIP LOCKED on PostgreSQL (a no-op on
  SQLite, whose IMMEDIATE transactions already serialise writers),
* a monitor's check is only made while next_run_at still holds the slot being
  dispatched (read again under the lock), and
* the one_check_per_slot unique constraint backs both up.

Work is done per batch of BATCH_SIZE monitors, in one transaction and a fixed
number of statements: the locked SELECT, one in-flight lookup, the slots read
again under lock, one bulk INSERT of the checks (conflicts ignored, then read
back), one UPDATE that moves the batch's monitors past their slots, and after
COMMIT one broker connection for all the batch's messages. A slot that already
has its check (the constraint) only costs that monitor its check: it is moved
past the slot and the others go ahead.

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
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import (
    Case,
    DateTimeField,
    F,
    OuterRef,
    Prefetch,
    Subquery,
    UUIDField,
    Value,
    When,
)
from kombu.exceptions import OperationalError

from checks import notify, outages, shared_clock
from checks.models import Check, empty_summary
from checks.runner import RUN_CHECK_TASK
from monitors.models import Monitor, Target

logger = logging.getLogger(__name__)

SPREAD_CAP = timedelta(seconds=30)
# Monitors handled per transaction (and rows locked at once), and checks created
# at most per tick; the rest wait for the next tick, or for the one follow-up
# tick a capped tick asks for (dispatch_tick). A full tick stays well inside
# the beat interval, leaving room for a busy machine.
# TICK_TIME_BUDGET is the hard stop: no new batch starts after it.
BATCH_SIZE = 200
MAX_PER_TICK = 2000
DISPATCH_EVERY_SECONDS = float(settings.DISPATCH_EVERY_SECONDS)
TICK_TIME_BUDGET = 0.4 * DISPATCH_EVERY_SECONDS  # seconds
DISPATCH_TASK = "checks.tasks.dispatch_due_monitors_task"
OVERLAP_ERROR = "Previous monitor check is still running."


class RunRefused(Exception):
    """A manual run the API answers with 409 and `code`; `check_id` names the
    running one."""

    def __init__(
        self, message: str, code: str, check_id: uuid.UUID | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.check_id = check_id


PAUSED_MESSAGE = "Monitor is paused. Resume it before running a check."
RUNNING_MESSAGE = "Monitor check is already running."
# RunRefused's codes (the API's `code`).
PAUSED_CODE = "MONITOR_PAUSED"
RUNNING_CODE = "CHECK_ALREADY_RUNNING"


class QueueUnavailable(Exception):
    """A manual run the broker (Redis) could not take: the check was withdrawn
    and nothing runs; the API answers 503, the dashboard says so."""

    message = (
        "Checks cannot be started right now: the task queue (Redis) is not "
        "reachable. Try again in a moment."
    )


def spread(monitor_id: uuid.UUID, interval: timedelta) -> timedelta:
    """The fixed delay of this monitor's checks after each cron slot."""
    cap = min(interval / 2, SPREAD_CAP)
    cap_ms = int(cap.total_seconds() * 1000)
    if cap_ms <= 0:
        return timedelta(0)
    digest = hashlib.sha256(str(monitor_id).encode()).digest()
    return timedelta(milliseconds=int.from_bytes(digest[:4], "big") % cap_ms)


def estimated_credits(monitor: Monitor) -> int:
    """Upper bound of one check's credits (targets checks skip count 0)."""
    return monitor.estimated_credits_per_run()


def enqueue_many(check_ids: Iterable[uuid.UUID]) -> None:
    """Send the checks to workers once the transaction that created them
    commits: one on_commit callback, and one producer (one broker connection)
    for all the messages, instead of one of each per check.

    A lost message is not a lost check: the stale sweeper sends a check left
    queued again (or ends it, after STALE_QUEUED_AFTER), and the next slot
    runs normally.
    """
    ids = [str(check_id) for check_id in check_ids]
    if not ids:
        return
    transaction.on_commit(lambda: _send(ids))


def _unsent(ids: list[str], sent: int) -> str:
    first = ids[sent] if sent < len(ids) else "-"
    return f"{len(ids) - sent} of {len(ids)} checks (from {first})"


def _send(ids: list[str]) -> int:
    """Publish run messages for `ids`; how many went out (never raises)."""
    sent = 0
    try:
        with current_app.producer_or_acquire() as producer:
            for check_id in ids:
                current_app.send_task(
                    RUN_CHECK_TASK, args=[check_id], producer=producer
                )
                sent += 1
    except (OSError, OperationalError) as exc:
        # The producer already retried (Celery's publish retry policy): the
        # broker is unreachable, so the rest would fail the same way. One
        # line: an outage logs this on every tick and every Run now.
        logger.error("Could not enqueue %s: %s", _unsent(ids, sent), exc)
    except Exception:
        logger.exception("Could not enqueue %s", _unsent(ids, sent))
    return sent


# --- Scheduled checks --------------------------------------------------------------


@dataclass(frozen=True)
class _Slot:
    monitor: Monitor
    slot: datetime  # the cron fire time being dispatched (monitor.next_run_at)
    following: datetime | None  # the next_run_at it advances to


@dataclass(frozen=True)
class _Claim:
    """One monitor's claim of its slot, and the check it creates if it wins."""

    slot: _Slot
    check: Check
    overlaps: bool  # a check is in flight: this one is skipped_overlap

    @property
    def monitor(self) -> Monitor:
        return self.slot.monitor


def dispatch_due_monitors(now: datetime) -> int:
    """Create the checks of every monitor whose (spread) slot has come.

    Returns how many checks were created (queued and skipped_overlap alike).
    Cost grows with the number of due monitors only: the candidate query runs
    on the partial index monitor_due_idx.
    """
    return _dispatch(now)[0]


def dispatch_tick(now: datetime, *, may_follow_up: bool) -> int:
    """What the periodic task runs: `dispatch_due_monitors`, and when the tick
    stopped at MAX_PER_TICK or TICK_TIME_BUDGET with monitors possibly still
    due, one follow-up tick queued at once (if `may_follow_up`), so a backlog
    drains at up to two ticks per beat interval instead of one. Follow-ups do
    not follow up themselves, so at most one extra dispatcher runs beside beat's,
    and the message expires after one beat interval like beat's own."""
    created, capped = _dispatch(now)
    if capped and may_follow_up:
        try:
            current_app.send_task(
                DISPATCH_TASK,
                kwargs={"follow_up": True},
                expires=DISPATCH_EVERY_SECONDS,
            )
        except Exception as exc:
            # The broker away is routine: one line; the next tick goes on.
            outages.warn(logger, exc, "Could not queue a follow-up dispatch tick")
    return created


def _dispatch(now: datetime) -> tuple[int, bool]:
    """(checks created, whether the tick stopped before running out of work)."""
    deadline = time.monotonic() + TICK_TIME_BUDGET
    created = looked = 0
    # Monitors looked at this tick but left due (inside their spread delay, an
    # unreadable schedule): the next batch of the same tick must not fetch them
    # again. Dispatched monitors are no longer due, so they need no exclusion.
    passed: set[uuid.UUID] = set()
    while True:
        done, candidates, moved = _dispatch_batch(now, exclude=passed)
        if not candidates:
            return created, False
        created += done
        looked += len(candidates)
        passed |= candidates - moved
        if (
            created >= MAX_PER_TICK
            or looked >= 2 * MAX_PER_TICK
            or time.monotonic() >= deadline
        ):
            return created, True


def _dispatch_batch(
    now: datetime, *, exclude: set[uuid.UUID]
) -> tuple[int, set[uuid.UUID], set[uuid.UUID]]:
    """One transaction: (checks created, monitors looked at, monitors moved
    past their slot)."""
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
        claims = [
            claim
            for s in ready
            if (claim := _safe_claim(s, now, s.monitor.pk in in_flight))
        ]
        created, moved = _dispatch_claims(claims, now)
    return created, {m.pk for m in candidates}, moved


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


def _safe_claim(slot: _Slot, now: datetime, overlaps: bool) -> _Claim | None:
    # Likewise one monitor whose check cannot be built (unreadable targets).
    try:
        return _Claim(slot, _new_check(slot, now, overlaps), overlaps)
    except Exception:
        logger.exception("Cannot build the check of monitor %s", slot.monitor.pk)
        return None


def _new_check(slot: _Slot, now: datetime, overlaps: bool) -> Check:
    monitor = slot.monitor
    check = Check(
        monitor=monitor,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=slot.slot,
        # A skipped check ends here; a queued one decides again when claimed.
        notifications_muted=monitor.is_muted(now),
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
    return check


def _dispatch_claims(claims: list[_Claim], now: datetime) -> tuple[int, set[uuid.UUID]]:
    """Claim, insert, notify and enqueue a batch, inside its transaction.

    Returns (checks created, monitors moved past their slot)."""
    won = _still_holding_their_slot(claims)
    if not won:
        return 0, set()
    # one_check_per_slot may refuse some rows (the slot already has its check):
    # ignore those conflicts instead of failing the batch, then read back which
    # checks exist. Their pks were made here, so nothing else can have them.
    Check.objects.bulk_create([c.check for c in won], ignore_conflicts=True)
    inserted = set(
        Check.objects.filter(pk__in=[c.check.pk for c in won]).values_list(
            "pk", flat=True
        )
    )
    created = [c for c in won if c.check.pk in inserted]
    _move_past_slots(won, created, now)
    queued: list[uuid.UUID] = []
    for claim in won:
        if claim.check.pk not in inserted:
            logger.info(
                "Slot %s of monitor %s already dispatched",
                claim.slot.slot,
                claim.monitor.pk,
            )
        elif claim.overlaps:
            notify.on_check_finished(claim.check)
        else:
            queued.append(claim.check.pk)
    enqueue_many(queued)
    return len(inserted), {c.monitor.pk for c in won}


def _still_holding_their_slot(claims: list[_Claim]) -> list[_Claim]:
    """The claims whose monitor is still active, alive and at the slot being
    dispatched, read again under FOR UPDATE (a no-op on SQLite, whose IMMEDIATE
    transaction already shuts out other writers): nothing can move these rows
    before this transaction moves them past their slot."""
    if not claims:
        return []
    slots = dict(
        Monitor.objects.alive()
        .filter(pk__in=[c.monitor.pk for c in claims], status=Monitor.Status.ACTIVE)
        .select_for_update()
        .values_list("pk", "next_run_at")
    )
    return [c for c in claims if slots.get(c.monitor.pk) == c.slot.slot]


def _move_past_slots(won: list[_Claim], created: list[_Claim], now: datetime) -> None:
    """One UPDATE for the batch: every claimed monitor moves past its slot; a
    queued check becomes its monitor's current check, and a skipped one counts
    as a run (lastRunAt counts skipped checks) and leaves the current check
    alone. A slot that already had its check changes nothing else, or the
    monitor would stay due and hit that slot again on every tick."""
    by_following: dict[datetime | None, list[uuid.UUID]] = {}
    for claim in won:
        by_following.setdefault(claim.slot.following, []).append(claim.monitor.pk)
    skipped = [c.monitor.pk for c in created if c.overlaps]
    queued = [c.monitor.pk for c in created if not c.overlaps]
    # The check made for the slot the row still holds (the SET expressions
    # read the row as it was), found through one_check_per_slot's index.
    slot_check = Check.objects.filter(
        monitor_id=OuterRef("pk"),
        scheduled_for=OuterRef("next_run_at"),
        trigger=Check.Trigger.SCHEDULED,
    ).order_by()
    Monitor.objects.filter(pk__in=[c.monitor.pk for c in won]).update(
        next_run_at=Case(
            *(
                When(pk__in=ids, then=Value(following))
                for following, ids in by_following.items()
            ),
            output_field=DateTimeField(),
        ),
        last_run_at=Case(
            When(pk__in=skipped, then=Value(now)),
            default=F("last_run_at"),
            output_field=DateTimeField(),
        ),
        current_check_id=Case(
            When(pk__in=queued, then=Subquery(slot_check.values("pk")[:1])),
            default=F("current_check_id"),
            output_field=UUIDField(),
        ),
    )


# --- Manual checks ---------------------------------------------------------------


def queue_manual_check(monitor: Monitor) -> Check:
    """Queue a check now (POST /v2/monitor/{id}/run).

    Raises RunRefused when the monitor is paused or a check is in flight. The
    monitor row is locked first, so a manual run and a dispatcher (whose claim
    updates that row) can never both start a check for it.

    Raises QueueUnavailable (after COMMIT, where the message is sent) when the
    broker cannot take it: someone is waiting for this check, so it is
    withdrawn and they are told, rather than left queued until the broker is
    back and the sweeper sends it again (scheduled checks are).
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
            raise RunRefused(PAUSED_MESSAGE, PAUSED_CODE)
        running = Check.objects.in_flight().filter(monitor=locked).first()
        if running is not None:
            raise RunRefused(RUNNING_MESSAGE, RUNNING_CODE, running.pk)
        check = Check.objects.create(
            monitor=locked,
            trigger=Check.Trigger.MANUAL,
            status=Check.Status.QUEUED,
            estimated_credits=estimated_credits(locked),
            summary=empty_summary(),
            notifications_muted=locked.is_muted(shared_clock.now()),
        )
        Monitor.objects.filter(pk=locked.pk).update(current_check_id=check.pk)
        enqueue(check.pk)
    return check


def enqueue(check_id: uuid.UUID) -> None:
    """Send a manual check to a worker once its transaction commits; when the
    broker cannot take it, withdraw it and raise QueueUnavailable."""
    transaction.on_commit(lambda: _send_or_withdraw(check_id))


def _send_or_withdraw(check_id: uuid.UUID) -> None:
    if _send([str(check_id)]):
        return
    with transaction.atomic():
        # Only while still queued: a message that did reach the broker before
        # the error may already have been taken by a worker.
        queued = Check.objects.filter(pk=check_id, status=Check.Status.QUEUED)
        monitor_id = queued.values_list("monitor_id", flat=True).first()
        if monitor_id is None or not queued.delete()[0]:
            return
        Monitor.objects.filter(pk=monitor_id, current_check_id=check_id).update(
            current_check_id=None
        )
    raise QueueUnavailable(QueueUnavailable.message)
