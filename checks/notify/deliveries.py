"""The notification outbox: every delivery, to a monitor's own webhook and
e-mail or to a team's channel, as a database row sent by its channel's kind
(checks.notify.kinds).

Lifecycle of a Delivery row:

1. Written in the transaction that records the event (checks.notify, called by
   the runner), or by a dashboard action; queued with `transaction.on_commit`.
2. `deliver(id)` (the Celery task's body) claims it with a conditional UPDATE
   (`pending` and due -> `sending`), so a task that runs twice, or two workers
   holding the same message, send at most once. A check's
   monitor.check.completed is not claimed while one of its monitor.page
   events awaits its first answer (up to ORDER_WAIT); that answer queues it.
   The kind sends; the attempt is recorded; the row becomes `delivered`,
   `failed`, `cancelled`, or `pending` again with `next_attempt_at` pushed back
   (backoff + jitter, Retry-After honoured).
3. `sweep()` (periodic) queues every due row that is not already on its way and
   frees claims whose worker died. Retries are queued by it too: no far-future
   ETAs live in the broker, so losing Redis only delays deliveries.

Delivery is at least once: a worker killed between the receiver's 2xx and our
commit sends again after the lease, with the same webhookId and webhook-id.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from checks.models import Check, PageResult
from checks.notify import emails, events, kinds, own
from checks.notify.kinds import ChannelKind
from checks.notify.kinds.firecrawl_webhook import FirecrawlWebhookKind
from checks.notify.models import Delivery, DeliveryAttempt
from checks.notify.transports import DeliveryError, Sent
from monitors.models import Channel, EmailRecipient, Monitor
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
# Longer than deliver_task's hard time limit: a claim older than this belongs
# to a worker that died.
CLAIM_LEASE = timedelta(minutes=5)
# A due row queued this long ago and still pending lost its broker message.
REQUEUE_AFTER = timedelta(minutes=5)
# A check's monitor.check.completed waits until each of its monitor.page
# events has had its first answer, so a receiver that gathers pages until the
# check completes has them all by then. A page event still unanswered this
# long after the check finished (its message lost, a flood of pages) stops
# holding it back.
ORDER_WAIT = timedelta(minutes=10)
SWEEP_BATCH = 500
# The tasks of checks.notify.tasks, queued by name so that module imports this
# one and never the reverse.
DELIVER_TASK = "checks.notify.tasks.deliver_task"
SWEEP_TASK = "checks.notify.tasks.sweep_deliveries_task"


# --- Queueing -------------------------------------------------------------------


def enqueue(delivery_id: int) -> None:
    """Put a delivery on the broker. Never raises: if the broker is down the row
    stays pending and the sweeper queues it again after REQUEUE_AFTER."""
    try:
        current_app.send_task(
            DELIVER_TASK, args=[delivery_id], expires=REQUEUE_AFTER.total_seconds()
        )
    except Exception:
        logger.warning(
            "Could not queue delivery %s; the sweeper will retry",
            delivery_id,
            exc_info=True,
        )


def _enqueue_on_commit(delivery_id: int) -> None:
    # Looked up at call time (not bound now), so tests can replace `enqueue`.
    transaction.on_commit(lambda: enqueue(delivery_id))


def _create(**fields: Any) -> Delivery:
    now = timezone.now()
    delivery = Delivery.objects.create(next_attempt_at=now, queued_at=now, **fields)
    _enqueue_on_commit(delivery.pk)
    return delivery


def _create_webhook(
    channel: Channel,
    check: Check | None,
    event: str,
    build: Callable[..., dict[str, Any]],
) -> Delivery:
    """One row to the monitor's own webhook; `build(webhook_id=, metadata=)`
    makes the payload, which is serialized once here so every retry sends the
    very same bytes."""
    config = channel.settings
    webhook_id = uuid.uuid4()
    payload = build(webhook_id=webhook_id, metadata=config.get("metadata"))
    return _create(
        kind=channel.kind,
        channel=channel,
        monitor_id=channel.owner_monitor_id,
        check_run=check,
        event=event,
        webhook_id=webhook_id,
        url=config["url"],
        body=events.serialize(payload),
    )


# --- Recording events (called inside the runner's transaction) -------------------


def record_page_result(page: PageResult) -> Delivery | None:
    """A `monitor.page` webhook for a page result, as the monitor's webhook
    channel wants (FirecrawlWebhookKind.wants_page)."""
    monitor = page.check_run.monitor
    channel = own.webhook_channel(monitor)
    if channel is None or not FirecrawlWebhookKind.wants_page(
        channel.settings, page.status
    ):
        return None
    return _create_webhook(
        channel,
        page.check_run,
        events.PAGE,
        lambda **kw: events.page_event(page, **kw),
    )


def record_check_finished(check: Check, *, write: bool = True) -> list[Delivery]:
    """`monitor.check.completed` (skipped checks too) and the change e-mails.

    Sets check.notification_status, and writes it to the row unless `write`
    is False (the caller saves the check with it). Idempotent per check: a
    second call finds the rows of the first.
    """
    monitor = check.monitor
    # One query tells both whether this ran before and whether any delivery
    # (a page webhook, say) exists to summarise.
    so_far = set(
        Delivery.objects.filter(check_run=check)
        .order_by()
        .values_list("event", flat=True)
        .distinct()
    )
    if so_far & {events.CHECK_COMPLETED, emails.NOTIFICATION}:
        return []
    created: list[Delivery] = []
    webhook = own.webhook_channel(monitor)
    if webhook is not None and events.wants(webhook.settings, events.CHECK_COMPLETED):
        created.append(
            _create_webhook(
                webhook,
                check,
                events.CHECK_COMPLETED,
                lambda **kw: events.check_completed_event(check, **kw),
            )
        )
    email_rows, email_status = _record_change_emails(check, monitor)
    created.extend(email_rows)
    if created or so_far:
        status = _compose_status(check.pk, {"email": email_status})
    else:  # no delivery row at all: nothing to count
        status = {"webhook": _idle_webhook_status(), "email": email_status}
    check.notification_status = status
    if write:
        Check.objects.filter(pk=check.pk).update(notification_status=status)
    return created


def _idle_webhook_status() -> dict[str, Any]:
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


def _idle_email_status() -> dict[str, Any]:
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


def _record_change_emails(
    check: Check, monitor: Monitor
) -> tuple[list[Delivery], dict[str, Any]]:
    status: dict[str, Any] = _idle_email_status()
    channel = own.email_channel(monitor)
    if channel is None or not channel.settings.get("enabled"):
        return [], status | {"reason": "disabled"}
    if check.status in (Check.Status.SKIPPED_OVERLAP, Check.Status.SKIPPED_NO_CREDITS):
        return [], status | {"reason": "skipped_check"}
    reason = emails.change_report(check).suppression_reason()
    if reason:
        return [], status | {"reason": reason}
    recipients = _subscriptions(monitor)
    status["pendingRecipients"] = sum(
        1 for r in recipients if r.status == EmailRecipient.Status.PENDING
    )
    status["unsubscribedRecipients"] = sum(
        1 for r in recipients if r.status == EmailRecipient.Status.UNSUBSCRIBED
    )
    confirmed = [r for r in recipients if r.status == EmailRecipient.Status.CONFIRMED]
    if not confirmed:
        return [], status | {"reason": "no_confirmed_recipients"}
    rows = [
        _create(
            kind=channel.kind,
            channel=channel,
            monitor=monitor,
            check_run=check,
            event=emails.NOTIFICATION,
            email=recipient.email,
            recipient=recipient,
        )
        for recipient in confirmed
    ]
    return rows, status | {
        "skipped": False,
        "queued": True,
        "recipients": [r.email for r in confirmed],
    }


def _subscriptions(monitor: Monitor) -> list[EmailRecipient]:
    """Who may get this monitor's e-mails, consent rows included.

    Explicit recipients are reconciled by Monitor.sync_email_recipients. With
    none, the team's members get mail, through `team` rows made here so each
    has an unsubscribe link that sticks.
    """
    if monitor.email_settings.get("recipients"):
        return monitor.recipient_subscriptions()
    rows = []
    for email in sorted(monitor.team.member_emails()):
        row, _ = EmailRecipient.objects.get_or_create(
            monitor=monitor,
            email=email,
            defaults={
                "status": EmailRecipient.Status.CONFIRMED,
                "source": EmailRecipient.Source.TEAM,
                "confirmed_at": timezone.now(),
            },
        )
        rows.append(row)
    return rows


# --- Consent e-mails --------------------------------------------------------------


def queue_confirmations(monitor: Monitor) -> list[Delivery]:
    """One confirmation e-mail to every pending address that never got one.

    Call after Monitor.sync_email_recipients (monitors.editing does). The
    conditional update makes it safe to call twice: one e-mail per address.
    """
    created = []
    now = timezone.now()
    pending = monitor.email_recipients.filter(
        status=EmailRecipient.Status.PENDING, confirmation_sent_at__isnull=True
    )
    for recipient in pending:
        claimed = EmailRecipient.objects.filter(
            pk=recipient.pk, confirmation_sent_at__isnull=True
        ).update(confirmation_sent_at=now)
        if claimed:
            recipient.confirmation_sent_at = now
            created.append(_confirmation(monitor, recipient))
    return created


def _create_email(monitor: Monitor, **fields: Any) -> Delivery:
    """An e-mail through the monitor's own e-mail channel (none yet for a
    notice to the team about a monitor that never had e-mail set)."""
    return _create(
        kind=own.EMAIL,
        channel=own.email_channel(monitor),
        monitor=monitor,
        **fields,
    )


def _confirmation(monitor: Monitor, recipient: EmailRecipient) -> Delivery:
    return _create_email(
        monitor,
        event=emails.CONFIRMATION,
        email=recipient.email,
        recipient=recipient,
    )


# --- Sending one attempt ----------------------------------------------------------


def deliver(delivery_id: int) -> Delivery | None:
    """Claim, send and record one attempt. Returns None when there was nothing
    to do (gone, not due, already claimed or finished)."""
    now = timezone.now()
    claimed = (
        Delivery.objects.due(now)
        .filter(pk=delivery_id)
        .exclude(_held_back(now))
        .update(
            status=Delivery.Status.SENDING,
            claimed_at=now,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    )
    if not claimed:
        return None
    delivery = Delivery.objects.select_related(
        "monitor__team", "check_run", "recipient", "channel__team"
    ).get(pk=delivery_id)
    started = time.monotonic()
    outcome: Sent | DeliveryError
    try:
        if delivery.channel is not None:
            own.refresh(delivery.channel, delivery.monitor)
        outcome = _sender(delivery).send(delivery)
    except DeliveryError as error:
        outcome = error
    except Exception as exc:
        # A bug must not leave the row claimed until the lease runs out.
        logger.exception("Delivery %s crashed", delivery_id)
        outcome = DeliveryError(f"Internal error ({type(exc).__name__}).")
    elapsed_ms = int((time.monotonic() - started) * 1000)
    _record(delivery, outcome, started_at=now, elapsed_ms=elapsed_ms)
    if delivery.check_run_id and _in_notification_status(delivery):
        if delivery.event == events.PAGE:
            _release_completed(delivery.check_run_id)
        refresh_notification_status(delivery.check_run_id)
    return delivery


def _in_notification_status(delivery: Delivery) -> bool:
    """Rows of the monitor's own Firecrawl fields make up notificationStatus."""
    kind = kinds.kind_for(delivery.kind)
    return kind is not None and kind.own_only


def _sender(delivery: Delivery) -> ChannelKind:
    """Every row goes by its kind's class (the channel's kind, the monitor's
    own webhook and e-mail included). A kind no longer registered cannot be
    sent."""
    kind = kinds.kind_for(delivery.kind)
    if kind is None:
        raise DeliveryError(
            f"Not sent: this Pagewatch does not know the kind {delivery.kind!r}.",
            permanent=True,
        )
    return kind


def _held_back(now: datetime) -> Q:
    """A monitor.check.completed webhook whose check still has a page event
    before its first answer (see ORDER_WAIT). Part of the claim, so it is
    decided in the same statement that claims."""
    first_answer_due = (
        Delivery.objects.webhooks()
        .filter(check_run=OuterRef("check_run"), event=events.PAGE)
        .before_first_answer()
    )
    return Q(
        kind=Delivery.Kind.WEBHOOK,
        event=events.CHECK_COMPLETED,
        created_at__gt=now - ORDER_WAIT,
    ) & Exists(first_answer_due)


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
            enqueue(pk)


def retry_delay(attempts: int, error: DeliveryError) -> timedelta | None:
    """How long to wait after a failed attempt number `attempts`; None = give up."""
    if error.permanent or attempts >= MAX_ATTEMPTS:
        return None
    base = RETRY_DELAYS[min(attempts, len(RETRY_DELAYS)) - 1]
    delay = base * (1 + random.uniform(0, JITTER))
    if error.retry_after is not None:
        delay = max(delay, min(error.retry_after, RETRY_AFTER_MAX))
    return delay


def _record(
    delivery: Delivery,
    outcome: Sent | DeliveryError,
    *,
    started_at: datetime,
    elapsed_ms: int,
) -> None:
    now = timezone.now()
    ok = isinstance(outcome, Sent)
    attempt = DeliveryAttempt(
        delivery=delivery,
        number=delivery.attempts,
        started_at=started_at,
        duration_ms=elapsed_ms,
        success=ok,
        status_code=outcome.status_code,
        response_body=outcome.response_body[: DeliveryAttempt.RESPONSE_MAX_CHARS],
        error="" if ok else outcome.message,
    )
    fields: dict[str, Any] = {
        "last_status_code": outcome.status_code,
        "claimed_at": None,
        "updated_at": now,
    }
    if isinstance(outcome, Sent):
        fields |= {
            "status": Delivery.Status.DELIVERED,
            "delivered_at": now,
            "last_error": "",
        }
    else:
        delay = retry_delay(delivery.attempts, outcome)
        fields["last_error"] = outcome.message
        if delay is not None:
            fields |= {
                "status": Delivery.Status.PENDING,
                "next_attempt_at": now + delay,
                "queued_at": None,  # the sweeper queues it when due
            }
        else:
            fields |= {
                "status": Delivery.Status.CANCELLED
                if outcome.cancel
                else Delivery.Status.FAILED,
                "next_attempt_at": None,
            }
    with transaction.atomic():
        attempt.save()
        # Only the holder of this claim may finish it (see sweep's lease).
        Delivery.objects.filter(
            pk=delivery.pk,
            status=Delivery.Status.SENDING,
            claimed_at=delivery.claimed_at,
        ).update(**fields)
        if isinstance(outcome, DeliveryError) and outcome.gone and delivery.monitor:
            disable_webhook(delivery.monitor, delivery.url, now)
    for name, value in fields.items():
        setattr(delivery, name, value)


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
        _create_email(
            monitor,
            event=emails.WEBHOOK_DISABLED,
            email=email,
            url=url,
        )
    record(SYSTEM, monitor.team_id, Kind.WEBHOOK_DISABLED, monitor,
           reason="its receiver answered 410 Gone", url=url)  # fmt: skip
    logger.info("Disabled the webhook of monitor %s after 410 Gone", monitor.pk)
    return True


# --- The sweeper ------------------------------------------------------------------


def sweep() -> int:
    """Free dead workers' claims and queue every due delivery not already on its
    way. Returns how many were queued. Run every minute by Celery beat."""
    now = timezone.now()
    _release_stale_claims(now)
    stale_queue = now - REQUEUE_AFTER
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
    for pk in due:
        enqueue(pk)
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
        if released and delivery.check_run_id and _in_notification_status(delivery):
            released_checks.add(delivery.check_run_id)
    # Once per check: a dead worker leaves many claims of one check's pages.
    for check_id in released_checks:
        refresh_notification_status(check_id)


# --- notificationStatus on the check ----------------------------------------------


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
        return _idle_webhook_status()
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
        "deliveredAt": _iso(last_delivered) if delivered else None,
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


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _compose_status(check_id: Any, current: dict[str, Any] | None) -> dict[str, Any]:
    current = current or {}
    email_base = current.get("email") or _idle_email_status()
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
        status = _compose_status(check_id, current)
        Check.objects.filter(pk=check_id).update(notification_status=status)


# --- Dashboard and admin actions --------------------------------------------------


def recent_deliveries(monitor: Monitor, limit: int = 20) -> list[Delivery]:
    """The monitor's latest deliveries, newest first, with their attempts."""
    return list(
        Delivery.objects.for_monitor(monitor)
        .select_related("check_run")
        .prefetch_related("attempt_log")
        .order_by("-created_at", "-id")[:limit]
    )


def send_test_event(monitor: Monitor) -> Delivery:
    """Queue a signed `monitor.test` event to the monitor's webhook, through
    the same outbox, policy and retries as real events."""
    with transaction.atomic():
        channel = own.webhook_channel(monitor)
        if channel is None or not events.wants(channel.settings, events.TEST):
            raise ValueError("This monitor has no webhook.")
        return _create_webhook(
            channel,
            None,
            events.TEST,
            lambda **kw: events.test_event(monitor, **kw),
        )


def retry_now(delivery: Delivery) -> bool:
    """Make a waiting or failed delivery due now and queue it. A failed one gets
    one more attempt (it fails again at once if that attempt fails)."""
    now = timezone.now()
    with transaction.atomic():
        updated = Delivery.objects.filter(
            pk=delivery.pk,
            status__in=(Delivery.Status.PENDING, Delivery.Status.FAILED),
        ).update(
            status=Delivery.Status.PENDING,
            next_attempt_at=now,
            queued_at=now,
            updated_at=now,
        )
        if updated:
            _enqueue_on_commit(delivery.pk)
    if updated:
        delivery.refresh_from_db()
    return bool(updated)
