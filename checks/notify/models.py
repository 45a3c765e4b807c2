"""The notification outbox: one row per notification to one destination,
and one per attempt at sending it.

Written by checks.notify.deliveries in the same transaction as the event it
announces, sent after commit by checks.notify.tasks, swept again while pending."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from functools import cached_property
from urllib.parse import urlsplit

from django.db import models
from django.db.models import Q

from checks import shared_clock
from checks.bulk_delete import delete_rows
from monitors.models import Monitor


class DeliveryQuerySet(models.QuerySet["Delivery"]):
    def webhooks(self) -> DeliveryQuerySet:
        """The monitor's own Firecrawl webhook rows (not a team channel's)."""
        return self.filter(kind=Delivery.Kind.WEBHOOK)

    def emails(self) -> DeliveryQuerySet:
        """The monitor's own e-mails: change reports and consent mails."""
        return self.filter(kind=Delivery.Kind.EMAIL)

    def to_channels(self) -> DeliveryQuerySet:
        """Rows for the channels a monitor is linked to (and digests), not its
        own Firecrawl webhook and e-mail."""
        return self.exclude(kind__in=Delivery.Kind.values)

    def for_monitor(self, monitor: Monitor) -> DeliveryQuerySet:
        return self.filter(monitor=monitor)

    def due(self, now: datetime) -> DeliveryQuerySet:
        """Pending rows whose next attempt has come; served by delivery_open_idx."""
        return self.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)

    def discard(self) -> int:
        """Delete these rows in two statements, their attempts first: the
        attempts keep delete() off Django's fast path, and it would read
        every row's id into Python first. Filter them on what deleting does
        not change (their monitor, check or channel)."""
        DeliveryAttempt.objects.filter(delivery__in=self.values("pk")).delete()
        return delete_rows(self)

    def before_first_answer(self) -> DeliveryQuerySet:
        """Rows whose first attempt has not ended: never tried, or being tried
        for the first time."""
        return self.filter(
            Q(status=Delivery.Status.PENDING, attempts=0)
            | Q(status=Delivery.Status.SENDING, attempts=1)
        )


class Delivery(models.Model):
    """One notification to one destination (a webhook URL or one e-mail address).

    The row is the outbox entry, the retry state and the history at once:
    claimed with a conditional update before every attempt, so running the
    same task twice never sends twice; each attempt is a DeliveryAttempt row.
    """

    class Kind(models.TextChoices):
        """The kinds (checks.notify.kinds) of a monitor's own Firecrawl fields,
        whose rows make up a check's notificationStatus. Any other kind is a
        channel's. A team channel of kind `webhook` is not the monitor's."""

        WEBHOOK = "firecrawl_webhook"
        EMAIL = "email"

    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for next_attempt_at
        SENDING = "sending"  # claimed by a worker (lease: claimed_at)
        DELIVERED = "delivered"
        FAILED = "failed"  # retries exhausted or a permanent error
        CANCELLED = "cancelled"  # the destination went away before sending

    # A kind of checks.notify.kinds, the channel's.
    kind = models.CharField(max_length=32)
    # The channel this goes to: a monitor's own webhook and e-mail are
    # channels too (owner_monitor). None only for an e-mail to a team's
    # members about a monitor that has no e-mail channel, and rows whose
    # monitor's channel is gone.
    channel = models.ForeignKey(
        "monitors.Channel",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="deliveries",
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    # None for a digest, which speaks of many monitors.
    monitor = models.ForeignKey(
        Monitor,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="deliveries",
    )
    check_run = models.ForeignKey(
        "checks.Check",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="deliveries",
    )
    # monitor.page, monitor.check.completed, monitor.test; for e-mail
    # email.notification, email.confirmation, email.webhook_disabled.
    event = models.CharField(max_length=64)
    # Stable across retries: the payload's webhookId and the webhook-id header.
    webhook_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Webhooks: where, and the exact JSON text sent on every attempt.
    url = models.URLField(max_length=2048, blank=True)
    body = models.TextField(blank=True)
    # E-mail: the address, and its consent row when there is one.
    email = models.EmailField(max_length=254, blank=True)
    recipient = models.ForeignKey(
        "monitors.EmailRecipient",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deliveries",
    )
    # A message to several people (a team e-mail): the accounts (user ids)
    # it is done with, sent to or refused by their mail server, written as
    # each e-mail goes, so a retry (after a killed worker too) sends only to
    # the others and nobody gets it twice.
    done_with = models.JSONField(default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Last time a task for this row was put on the broker; the sweeper queues
    # it again when it is still due long after (the message was lost).
    queued_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # On the database's clock in a worker, as the check it tells of
    # (checks.shared_clock).
    created_at = models.DateTimeField(default=shared_clock.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        indexes = [
            # Used by checks.notify.sweep (due rows, stale claims):
            # only open rows are indexed, so the index stays small as history
            # grows.
            models.Index(
                fields=["next_attempt_at"],
                name="delivery_open_idx",
                condition=Q(status__in=["pending", "sending"]),
            ),
            # Used by checks.notify.deliveries.recent_deliveries (dashboard).
            models.Index(
                fields=["monitor", "-created_at"], name="delivery_monitor_idx"
            ),
            # Used by checks.notify.status.refresh_notification_status.
            models.Index(fields=["check_run", "kind"], name="delivery_check_idx"),
        ]

    def __str__(self) -> str:
        # A webhook's host only: a hook URL is often its receiver's
        # credential, and this names the row in the admin and in logs.
        to = self.destination
        if self.url:
            try:
                to = urlsplit(self.url).hostname or "a webhook"
            except ValueError:
                to = "a webhook"
        return f"{self.event} to {to} ({self.status})"

    @property
    def destination(self) -> str:
        """Where this went: the monitor's own webhook and e-mail name the URL
        or address of this row, a channel its name. An e-mail names its
        address even when it also holds a URL (the one telling the team a
        webhook was turned off names that webhook)."""
        if self.url or self.email or not self.channel_id:
            return self.email or self.url
        return self.channel.name

    @cached_property
    def page_event(self) -> tuple[str, str] | None:
        """(url, status) of the page a monitor.page delivery carries, read
        from the body it signs; None for other events (or an unreadable body),
        so a list of deliveries can say which page each one was about."""
        if self.event != "monitor.page":
            return None
        try:
            item = json.loads(self.body)["data"][0]
            return str(item["url"]), str(item["status"])
        except (ValueError, LookupError, TypeError):
            return None


class _KindManager(models.Manager["Delivery"]):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def get_queryset(self) -> DeliveryQuerySet:
        return DeliveryQuerySet(self.model, using=self._db).filter(kind=self.kind)


class _ChannelManager(models.Manager["Delivery"]):
    def get_queryset(self) -> DeliveryQuerySet:
        return DeliveryQuerySet(self.model, using=self._db).to_channels()


class WebhookDelivery(Delivery):
    """The webhook rows of the outbox (admin and dashboard lists)."""

    objects = _KindManager(Delivery.Kind.WEBHOOK)

    class Meta:
        proxy = True
        verbose_name_plural = "webhook deliveries"


class EmailDelivery(Delivery):
    """The e-mail rows of the outbox (admin and dashboard lists)."""

    objects = _KindManager(Delivery.Kind.EMAIL)

    class Meta:
        proxy = True
        verbose_name_plural = "e-mail deliveries"


class ChannelDelivery(Delivery):
    """The rows of the outbox that go to a team's channels (admin)."""

    objects = _ChannelManager()

    class Meta:
        proxy = True
        verbose_name_plural = "channel deliveries"


class DeliveryAttempt(models.Model):
    """One try at sending a Delivery, kept for the dashboard and the admin."""

    RESPONSE_MAX_CHARS = 1024

    delivery = models.ForeignKey(
        Delivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    success = models.BooleanField(default=False)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # The first RESPONSE_MAX_CHARS characters of the receiver's answer; shown
    # escaped, never rendered.
    response_body = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["delivery", "number"]

    def __str__(self) -> str:
        outcome = "ok" if self.success else (self.error or self.status_code)
        return f"attempt {self.number} (delivery #{self.delivery_id}): {outcome}"
