"""The notification outbox's rows: what a recorded event writes (the
monitor's own webhook events and change e-mails, consent e-mails), and the
dashboard's actions on rows. A team's channels' rows are checks.notify.channels'.

Lifecycle of a Delivery row:

1. Written here in the transaction that records the event (checks.notify,
   called by the runner), or by a dashboard action; queued after commit
   (checks.notify.outbox), a finished check's rows together as one task.
2. A drain (checks.notify.drain) claims due rows with one conditional UPDATE
   (`pending` and due -> `sending`), so a task that runs twice, or two workers
   holding the same message, send at most once. A check's
   monitor.check.completed is not claimed while one of its monitor.page
   events awaits its first answer (up to ORDER_WAIT); that answer queues it.
   The kinds send side by side; the attempts are recorded; each row becomes
   `delivered`, `failed`, `cancelled`, or `pending` again with
   `next_attempt_at` pushed back (backoff + jitter, Retry-After honoured).
3. The sweeper (checks.notify.sweep, periodic) queues every due row that is
   not already on its way and frees claims whose worker died. Retries are
   queued by it too: no far-future ETAs live in the broker, so losing Redis
   only delays deliveries.

Delivery is at least once: a worker killed between the receiver's 2xx and our
commit sends again after the lease, with the same webhookId and webhook-id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from checks import shared_clock
from checks.models import Check, PageResult
from checks.notify import emails, events, own
from checks.notify import status as notification_status
from checks.notify.kinds.firecrawl_webhook import FirecrawlWebhookKind
from checks.notify.models import Delivery
from checks.notify.outbox import create as _create
from checks.notify.outbox import enqueue_on_commit
from config import mail
from monitors.models import Channel, EmailRecipient, Monitor

# --- Recording events (called inside the runner's transaction) -------------------


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
        status = notification_status.compose(check.pk, {"email": email_status})
    else:  # no delivery row at all: nothing to count
        status = {
            "webhook": notification_status.idle_webhook_status(),
            "email": email_status,
        }
    check.notification_status = status
    if write:
        Check.objects.filter(pk=check.pk).update(
            notification_status=status, updated_at=shared_clock.now()
        )
    return created


def record_muted(check: Check, *, write: bool = True) -> None:
    """A check of a muted monitor: no delivery, and its notificationStatus
    says why (digests leave out the changes of checks so marked)."""
    status = {
        "webhook": notification_status.idle_webhook_status(),
        "email": notification_status.idle_email_status()
        | {"reason": notification_status.MUTED},
    }
    check.notification_status = status
    if write:
        Check.objects.filter(pk=check.pk).update(
            notification_status=status, updated_at=shared_clock.now()
        )


def _record_change_emails(
    check: Check, monitor: Monitor
) -> tuple[list[Delivery], dict[str, Any]]:
    status: dict[str, Any] = notification_status.idle_email_status()
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
    status |= {
        "skipped": False,
        "queued": True,
        "recipients": [r.email for r in confirmed],
    }
    # Written to the log, these count as delivered: say that none leaves.
    if not_sent := mail.not_sent_reason():
        status["notSent"] = not_sent
    return rows, status


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


def create_email(monitor: Monitor, **fields: Any) -> Delivery:
    """An e-mail through the monitor's own e-mail channel (none yet for a
    notice to the team about a monitor that never had e-mail set)."""
    return _create(
        kind=own.EMAIL,
        channel=own.email_channel(monitor),
        monitor=monitor,
        **fields,
    )


def _confirmation(monitor: Monitor, recipient: EmailRecipient) -> Delivery:
    return create_email(
        monitor,
        event=emails.CONFIRMATION,
        email=recipient.email,
        recipient=recipient,
    )


# --- Dashboard and admin actions --------------------------------------------------


def recent_deliveries(monitor: Monitor, limit: int = 20) -> list[Delivery]:
    """The monitor's latest deliveries, newest first, with their attempts."""
    return list(
        Delivery.objects.for_monitor(monitor)
        # The channel names a delivery that went to no address of its own.
        .select_related("check_run", "channel")
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
            enqueue_on_commit(delivery.pk)
    if updated:
        delivery.refresh_from_db()
    return bool(updated)
