"""Sending outbox rows: a drain claims many due rows at once, sends them side
by side, and records each attempt as it ends.

1. One claim for the batch: the due rows among the given ids, read with the
   relations their kinds use and locked with
   `select_for_update(skip_locked=True)` (PostgreSQL; SQLite's IMMEDIATE
   transactions serialise writers), then moved `pending -> sending` in one
   conditional UPDATE, so two drains holding the same ids never send a row
   twice. A check's monitor.check.completed is not claimed while one of its
   monitor.page events awaits its first answer (up to ORDER_WAIT).
2. Each kind's `prepare` reads the rest (secrets, consent) here, before any
   event loop runs, and returns an Attempt (checks.notify.kinds.outbound).
3. The attempts run on one event loop in a thread of their own, with one
   outbound client (each request with its own time-out) and a small thread
   pool for clients that block; this thread records outcomes as they arrive,
   in bulk when several are ready, so a receiver that hangs holds only its
   own row. Each row becomes `delivered`, `failed`, `cancelled`, or `pending`
   again with `next_attempt_at` pushed back (backoff + jitter, Retry-After
   honoured), only if this drain's claim still holds it. An attempt that
   sends to several people has this thread record each one as it is done
   with (`done_with`), before it goes on to the next.
4. Should the database go away while this drain claims, prepares or
   records (a restart, a failover), the drain logs one line and stops
   writing: attempts still running hear that their rows are no longer
   theirs (a team e-mail starts no other e-mail), and the rows not recorded
   keep the claim until the sweeper frees it after CLAIM_LEASE, so they are
   sent again; rows it could not claim stay due, for the sweeper to queue.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F

from checks import outages, shared_clock
from checks.notify import deliveries, emails, events, kinds, outbox, own, status
from checks.notify.kinds import ChannelKind
from checks.notify.kinds.base import mask_url
from checks.notify.kinds.outbound import Attempt, Done, Keeper, Outbound
from checks.notify.models import Delivery, DeliveryAttempt
from checks.notify.transports import DeliveryError, Sent
from monitors.models import Monitor
from teams.activity import SYSTEM, Kind, record

logger = logging.getLogger(__name__)

# Waits after attempt 1, 2, ...: the documented 1/5/15 minutes, then longer,
# giving up about 17 hours after the first attempt (7 attempts).
RETRY_DELAYS = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(hours=1),
    timedelta(hours=4),
    timedelta(hours=12),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
# Up to this share is added at random, so receivers that went down together
# are not hit by every retry at the same second. Never earlier than the table.
JITTER = 0.2
RETRY_AFTER_MAX = timedelta(hours=24)
# Longer than the drain task's hard time limit: a claim older than this
# belongs to a worker that died.
CLAIM_LEASE = timedelta(minutes=5)
# A check's monitor.check.completed waits until each of its monitor.page
# events has had its first answer, so a receiver that gathers pages until the
# check completes has them all by then. A page event still unanswered this
# long after the check finished (its message lost, a flood of pages) stops
# holding it back.
ORDER_WAIT = timedelta(minutes=10)
# Rows one drain claims at most: a batch must end well within the task's time
# limit even when its receivers all take their full time-out.
DRAIN_BATCH = 100
# What a kind's send reads; e-mails load their check when they build it.
_RELATIONS = ("channel__team", "monitor__team", "recipient")

Outcome = Sent | DeliveryError


def deliver(delivery_id: int) -> Delivery | None:
    """Claim, send and record one row. None when there was nothing to do
    (gone, not due, already claimed or finished)."""
    done = drain([delivery_id])
    return done[0] if done else None


def drain(delivery_ids: Sequence[int]) -> list[Delivery]:
    """Claim the due rows among `delivery_ids` (at most DRAIN_BATCH), send
    them side by side and record every attempt. Returns the rows attempted,
    with their new state."""
    now = shared_clock.now()
    rows: list[Delivery] = []
    try:
        rows = claim(delivery_ids, now)
        _send_and_record(rows, now)
    except outages.DATABASE_ERRORS as exc:
        if not outages.database_away(exc):
            raise  # a deadlock, a timeout: a fault with its traceback
        # The database went away (a restart, a failover, a session ended by
        # an administrator): routine, and it may still be away, so nothing
        # more is written. Rows not claimed stay due and the sweeper queues
        # them again; rows not recorded keep this drain's claim, which the
        # sweeper frees after CLAIM_LEASE: sent again, at least once.
        logger.warning(
            "A drain of %d deliveries lost its database connection; those not "
            "recorded are sent again later: %s",
            len(rows) or len(delivery_ids),
            str(exc).strip(),
        )
    return rows


def _send_and_record(rows: list[Delivery], now: datetime) -> None:
    attempts = [_prepare(row) for row in rows]
    by_id = {row.pk: row for row in rows}

    def keep(step: Keep) -> bool:
        return keep_done_with(by_id[step.delivery_id], step.accounts)

    with closing(_outcomes(attempts, keep)) as outcomes:
        for ready in outcomes:
            record_many([(rows[i], outcome, ms) for i, outcome, ms in ready], now)


def claim(delivery_ids: Sequence[int], now: datetime) -> list[Delivery]:
    """Move the due rows among `delivery_ids` to `sending`, claimed at `now`,
    and return them read with the relations their kinds use."""
    with transaction.atomic():
        due = list(
            Delivery.objects.due(now)
            .filter(pk__in=list(delivery_ids))
            .select_related(*_RELATIONS)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("pk")[:DRAIN_BATCH]
        )
        held = _held_back(due, now)
        rows = [row for row in due if row.pk not in held]
        if not rows:
            return []
        claimed = Delivery.objects.filter(
            pk__in=[row.pk for row in rows], status=Delivery.Status.PENDING
        ).update(
            status=Delivery.Status.SENDING,
            claimed_at=now,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    if claimed != len(rows):
        # Without row locks (SQLite) another drain took some first: ours are
        # the ones claimed at our moment.
        return list(
            Delivery.objects.filter(
                pk__in=[row.pk for row in rows],
                status=Delivery.Status.SENDING,
                claimed_at=now,
            )
            .select_related(*_RELATIONS)
            .order_by("pk")
        )
    for row in rows:
        row.status, row.claimed_at, row.updated_at = Delivery.Status.SENDING, now, now
        row.attempts += 1
    return rows


def _held_back(rows: list[Delivery], now: datetime) -> set[int]:
    """The monitor.check.completed webhooks among `rows` whose check still has
    a page event before its first answer (see ORDER_WAIT). Decided in the
    claim's transaction, with the rows locked; a page event answered after
    this queues its completed event again (_release_completed)."""

    def may_wait(row: Delivery) -> bool:
        return (
            row.kind == Delivery.Kind.WEBHOOK
            and row.event == events.CHECK_COMPLETED
            and row.created_at > now - ORDER_WAIT
        )

    checks = {row.check_run_id for row in rows if may_wait(row)}
    if not checks:
        return set()
    unanswered = set(
        Delivery.objects.webhooks()
        .filter(check_run_id__in=checks, event=events.PAGE)
        .before_first_answer()
        .values_list("check_run_id", flat=True)
    )
    return {row.pk for row in rows if may_wait(row) and row.check_run_id in unanswered}


def _sender(delivery: Delivery) -> ChannelKind:
    """Every row goes by its kind's class. A kind no longer registered
    cannot be sent."""
    kind = kinds.kind_for(delivery.kind)
    if kind is None:
        raise DeliveryError(
            f"Not sent: this Pagewatch does not know the kind {delivery.kind!r}.",
            permanent=True,
        )
    return kind


def _prepare(delivery: Delivery) -> Attempt:
    try:
        if delivery.channel is not None:
            own.refresh(delivery.channel, delivery.monitor)
        return _sender(delivery).prepare(delivery)
    except DeliveryError as error:
        return Done(error)
    except Exception as exc:
        if outages.database_away(exc):
            raise  # the database went away: the drain stops (see drain)
        # A bug must not leave the row claimed until the lease runs out.
        logger.exception("Delivery %s crashed", delivery.pk)
        return Done(DeliveryError(f"Internal error ({type(exc).__name__})."))


# --- Sending side by side ----------------------------------------------------------


Report = Callable[[int, Outcome, int], None]


@dataclass(frozen=True)
class Keep:
    """An attempt's word, before it ends, that its row is done with these
    accounts (Outbound.done_with); `answer` is set once this thread wrote it."""

    delivery_id: int
    accounts: tuple[int, ...]
    answer: Future[bool]


Ended = tuple[int, Outcome, int] | Keep


def _outcomes(
    attempts: list[Attempt], keep: Callable[[Keep], bool]
) -> Iterator[list[tuple[int, Outcome, int]]]:
    """(index, outcome, milliseconds) of every attempt, in groups as they end.

    The event loop runs in a thread of its own so this thread, which may use
    the database, records outcomes while slower sends go on, and writes what
    attempts keep (`keep`) as they go. An attempt waits for each Keep to be
    written before it goes on, so its Keeps come before its outcome."""
    if not attempts:
        return
    ended: queue.SimpleQueue[Ended] = queue.SimpleQueue()
    thread = threading.Thread(
        target=_send_all, args=(attempts, ended.put), name="drain", daemon=True
    )
    thread.start()
    left = len(attempts)
    # Taken from the queue, not yet dealt with.
    taken: list[Ended] = []
    try:
        while left:
            taken = [ended.get()]
            while True:
                try:
                    taken.append(ended.get_nowait())
                except queue.Empty:
                    break
            ready = []
            while taken:
                item = taken[0]
                if isinstance(item, Keep):
                    item.answer.set_result(keep(item))
                else:
                    ready.append(item)
                    left -= 1
                taken.pop(0)
            if ready:
                yield ready
    finally:
        # Stopped early (writing failed: the database went away), the
        # attempts still running are told their rows are no longer theirs,
        # so a team e-mail starts no other e-mail and no send thread waits
        # for an answer that never comes; their outcomes go unrecorded.
        while True:
            for item in taken:
                if isinstance(item, Keep):
                    if not item.answer.done():
                        item.answer.set_result(False)
                else:
                    left -= 1
            if not left:
                break
            taken = [ended.get()]
        thread.join()


def _send_all(attempts: list[Attempt], put: Callable[[Ended], None]) -> None:
    reported: set[int] = set()

    def report(index: int, outcome: Outcome, elapsed_ms: int) -> None:
        reported.add(index)
        put((index, outcome, elapsed_ms))

    def keep(delivery_id: int, accounts: tuple[int, ...]) -> Future[bool]:
        answer: Future[bool] = Future()
        put(Keep(delivery_id, accounts, answer))
        return answer

    try:
        asyncio.run(_gather(attempts, report, keep))
    except BaseException:
        logger.exception("The drain's event loop stopped")
    finally:
        # Every row gets an outcome, or the drain would wait forever.
        for index in range(len(attempts)):
            if index not in reported:
                put((index, DeliveryError("Internal error (the send was lost)."), 0))


async def _gather(attempts: list[Attempt], report: Report, keep: Keeper) -> None:
    async with Outbound(keep) as outbound:

        async def one(index: int, attempt: Attempt) -> None:
            started = time.monotonic()
            outcome: Outcome
            try:
                outcome = await attempt.run(outbound)
            except DeliveryError as error:
                outcome = error
            except Exception as exc:
                logger.exception("A send crashed")
                outcome = DeliveryError(f"Internal error ({type(exc).__name__}).")
            report(index, outcome, int((time.monotonic() - started) * 1000))

        await asyncio.gather(*(one(i, a) for i, a in enumerate(attempts)))


# --- Recording attempts ------------------------------------------------------------


def retry_delay(attempts: int, error: DeliveryError) -> timedelta | None:
    """How long to wait after a failed attempt number `attempts`; None = give up."""
    if error.permanent or attempts >= MAX_ATTEMPTS:
        return None
    base = RETRY_DELAYS[min(attempts, len(RETRY_DELAYS)) - 1]
    delay = base * (1 + random.uniform(0, JITTER))
    if error.retry_after is not None:
        delay = max(delay, min(error.retry_after, RETRY_AFTER_MAX))
    return delay


def _fields_after(
    delivery: Delivery, outcome: Outcome, now: datetime
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "last_status_code": outcome.status_code,
        "claimed_at": None,
        "updated_at": now,
    }
    if isinstance(outcome, Sent):
        return fields | {
            "status": Delivery.Status.DELIVERED,
            "delivered_at": now,
            "last_error": "",
        }
    delay = retry_delay(delivery.attempts, outcome)
    fields["last_error"] = outcome.message
    if delay is not None:
        return fields | {
            "status": Delivery.Status.PENDING,
            "next_attempt_at": now + delay,
            "queued_at": None,  # the sweeper queues it when due
        }
    return fields | {
        "status": Delivery.Status.CANCELLED
        if outcome.cancel
        else Delivery.Status.FAILED,
        "next_attempt_at": None,
    }


def _attempt_row(
    delivery: Delivery, outcome: Outcome, started_at: datetime, elapsed_ms: int
) -> DeliveryAttempt:
    ok = isinstance(outcome, Sent)
    return DeliveryAttempt(
        delivery=delivery,
        number=delivery.attempts,
        started_at=started_at,
        duration_ms=elapsed_ms,
        success=ok,
        status_code=outcome.status_code,
        response_body=outcome.response_body[: DeliveryAttempt.RESPONSE_MAX_CHARS],
        error="" if ok else outcome.message,
    )


def record_many(
    ended: list[tuple[Delivery, Outcome, int]], started_at: datetime
) -> None:
    """Record attempts that ended: their DeliveryAttempt rows in one INSERT,
    the delivered rows in one UPDATE per status code, the others one by one
    (each has its own retry time)."""
    now = shared_clock.now()
    delivered: dict[int | None, list[Delivery]] = defaultdict(list)
    failed: list[tuple[Delivery, DeliveryError, dict[str, Any]]] = []
    for delivery, outcome, _ in ended:
        if isinstance(outcome, Sent):
            delivered[outcome.status_code].append(delivery)
        else:
            failed.append((delivery, outcome, _fields_after(delivery, outcome, now)))
    with transaction.atomic():
        DeliveryAttempt.objects.bulk_create(
            _attempt_row(d, outcome, started_at, ms) for d, outcome, ms in ended
        )
        for code, rows in delivered.items():
            fields = _fields_after(rows[0], Sent(code), now)
            _still_ours(rows).update(**fields)
            for row in rows:
                _apply(row, fields)
        for delivery, error, fields in failed:
            _still_ours([delivery]).update(**fields)
            _apply(delivery, fields)
            if error.gone and delivery.monitor:
                disable_webhook(delivery.monitor, delivery.url, now)
    _after_attempts([delivery for delivery, _, _ in ended])


def keep_done_with(delivery: Delivery, accounts: Sequence[int]) -> bool:
    """Record, during an attempt, that `delivery` is done with `accounts`
    (people a team e-mail went to or whose address was refused), so no retry
    sends to them again, even after this worker is killed. Only while this
    drain's claim holds the row; False when it does not (or the row is gone)."""
    done = sorted({*delivery.done_with, *accounts})
    if not _still_ours([delivery]).update(
        done_with=done, updated_at=shared_clock.now()
    ):
        return False
    delivery.done_with = done
    return True


def _still_ours(rows: list[Delivery]) -> Any:
    """Only the holder of a claim may finish it (see the sweeper's lease).
    The rows of one drain share their claim's moment."""
    return Delivery.objects.filter(
        pk__in=[row.pk for row in rows],
        status=Delivery.Status.SENDING,
        claimed_at=rows[0].claimed_at,
    )


def _apply(delivery: Delivery, fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        setattr(delivery, name, value)


def in_notification_status(delivery: Delivery) -> bool:
    """Rows of the monitor's own Firecrawl fields make up notificationStatus."""
    kind = kinds.kind_for(delivery.kind)
    return kind is not None and kind.own_only


def _after_attempts(rows: list[Delivery]) -> None:
    """Once per check: release its held-back completed event after a page
    event's answer, and recompute its notificationStatus."""
    checks: dict[Any, bool] = {}
    for row in rows:
        if row.check_run_id and in_notification_status(row):
            checks[row.check_run_id] = (
                checks.get(row.check_run_id, False) or row.event == events.PAGE
            )
    for check_id, page_answered in checks.items():
        if page_answered:
            _release_completed(check_id)
        status.refresh_notification_status(check_id)


def _release_completed(check_id: Any) -> None:
    """After a page event's attempt: queue the check's held-back
    monitor.check.completed once no page event awaits its first answer. Runs
    after the attempt is committed, so of two page events ending together at
    least the later one sees both done."""
    rows = Delivery.objects.webhooks().filter(check_run_id=check_id)
    held = list(
        rows.filter(
            event=events.CHECK_COMPLETED, status=Delivery.Status.PENDING
        ).values_list("pk", flat=True)
    )
    if held and not rows.filter(event=events.PAGE).before_first_answer().exists():
        for pk in held:
            outbox.enqueue(pk)


def disable_webhook(monitor: Monitor, url: str, now: datetime) -> bool:
    """The receiver answered 410 Gone: clear the monitor's webhook (the API then
    shows `webhook: null`), drop its other pending deliveries and tell the
    team's members by e-mail. Only if the webhook still points at `url`."""
    cleared = Monitor.objects.filter(pk=monitor.pk, webhook__url=url).update(
        webhook=None, updated_at=now
    )
    if not cleared:
        return False
    monitor.webhook = None
    own.sync(monitor)
    Delivery.objects.webhooks().filter(
        monitor=monitor, url=url, status=Delivery.Status.PENDING
    ).update(
        status=Delivery.Status.CANCELLED,
        next_attempt_at=None,
        last_error="Not sent: the webhook was disabled after 410 Gone.",
        updated_at=now,
    )
    for email in sorted(monitor.team.member_emails()):
        deliveries.create_email(
            monitor,
            event=emails.WEBHOOK_DISABLED,
            email=email,
            url=url,
        )
    # The address in shape only: every member reads the log, viewers and
    # read-only keys too, and a hook address is often its receiver's secret.
    record(SYSTEM, monitor.team_id, Kind.WEBHOOK_DISABLED, monitor,
           reason="its receiver answered 410 Gone", url=mask_url(url))  # fmt: skip
    logger.info("Disabled the webhook of monitor %s after 410 Gone", monitor.pk)
    return True
