"""Checks (one run of a monitor), their page results, and the snapshots and
baselines that change detection compares against.

State transitions are written with update_fields and conditional updates so
several workers and dispatchers can run side by side (see checks.runner and
checks.dispatch)."""

from __future__ import annotations

import hashlib
import uuid
import zlib
from datetime import datetime

from django.db import models
from django.db.models import Q

from monitors.models import Monitor


class CheckQuerySet(models.QuerySet["Check"]):
    def for_monitor(self, monitor: Monitor) -> CheckQuerySet:
        return self.filter(monitor=monitor)

    def in_flight(self) -> CheckQuerySet:
        return self.filter(status__in=Check.IN_FLIGHT)

    def stale(self, queued_before: datetime, running_before: datetime) -> CheckQuerySet:
        """Checks a lost worker left behind; served by check_in_flight_idx."""
        return self.filter(
            Q(status=Check.Status.QUEUED, created_at__lt=queued_before)
            | Q(status=Check.Status.RUNNING, heartbeat_at__lt=running_before)
        )


class Check(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        COMPLETED = "completed"
        PARTIAL = "partial"
        FAILED = "failed"
        SKIPPED_OVERLAP = "skipped_overlap"
        SKIPPED_NO_CREDITS = "skipped_no_credits"

    class Trigger(models.TextChoices):
        SCHEDULED = "scheduled"
        MANUAL = "manual"

    class Billing(models.TextChoices):
        NOT_APPLICABLE = "not_applicable"
        RESERVED = "reserved"
        CONFIRMED = "confirmed"
        RELEASED = "released"
        FAILED = "failed"

    IN_FLIGHT = (Status.QUEUED, Status.RUNNING)
    FINISHED = (
        Status.COMPLETED,
        Status.PARTIAL,
        Status.FAILED,
        Status.SKIPPED_OVERLAP,
        Status.SKIPPED_NO_CREDITS,
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE, related_name="checks")
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    scheduled_for = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written by the worker while it runs; the stale sweeper reads it.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Deliveries of this check's task; bounded so a poison check cannot loop.
    attempts = models.PositiveSmallIntegerField(default=0)
    pages_total = models.PositiveIntegerField(default=0)
    pages_done = models.PositiveIntegerField(default=0)
    estimated_credits = models.PositiveIntegerField(default=0)
    reserved_credits = models.PositiveIntegerField(default=0)
    actual_credits = models.PositiveIntegerField(null=True, blank=True)
    billing_status = models.CharField(
        max_length=16, choices=Billing.choices, default=Billing.NOT_APPLICABLE
    )
    summary = models.JSONField(default=dict, blank=True)
    target_results = models.JSONField(null=True, blank=True)
    notification_status = models.JSONField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CheckQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["monitor", "-created_at"], name="check_monitor_list_idx"),
            # Used by checks.runner.fail_stale_checks: only in-flight rows matter.
            models.Index(
                fields=["status", "created_at"],
                name="check_in_flight_idx",
                condition=Q(status__in=["queued", "running"]),
            ),
        ]
        constraints = [
            # One check per scheduled slot, however many dispatchers race.
            models.UniqueConstraint(
                fields=["monitor", "scheduled_for"],
                condition=Q(trigger="scheduled"),
                name="one_check_per_slot",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_status_display()} check of {self.monitor_id}"

    def get_absolute_url(self) -> str:
        return f"/monitors/{self.monitor_id}/checks/{self.pk}/"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class Snapshot(models.Model):
    """Extracted page content, stored once per distinct content (by hash) and
    compressed, so an unchanged page costs no new storage."""

    content_hash = models.CharField(max_length=64, unique=True)
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"snapshot {self.content_hash[:12]} ({self.size} bytes)"

    @staticmethod
    def hash_text(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    @classmethod
    def store(cls, text: str) -> Snapshot:
        digest = cls.hash_text(text)
        snapshot = cls.objects.filter(content_hash=digest).first()
        if snapshot is None:
            raw = text.encode()
            snapshot, _ = cls.objects.get_or_create(
                content_hash=digest,
                defaults={"data": zlib.compress(raw, 6), "size": len(raw)},
            )
        return snapshot

    @property
    def text(self) -> str:
        return zlib.decompress(bytes(self.data)).decode()


class PageState(models.Model):
    """The baseline of one URL of one target: the last good content that the
    next check compares against. Never deleted by retention."""

    class Presence(models.TextChoices):
        ACTIVE = "active"
        REMOVED = "removed"

    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE, related_name="page_states")
    target_id = models.UUIDField()
    url = models.URLField(max_length=2048)
    # Hash of the URL: a unique index over 2048-char URLs is not portable.
    url_hash = models.CharField(max_length=64)
    snapshot = models.ForeignKey(
        Snapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    normalized_hash = models.CharField(max_length=64, blank=True)
    scrape_id = models.UUIDField(null=True, blank=True)
    presence = models.CharField(
        max_length=16, choices=Presence.choices, default=Presence.ACTIVE
    )
    fetched_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "target_id", "url_hash"], name="one_state_per_page"
            )
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.presence})"

    @staticmethod
    def hash_url(url: str) -> str:
        return hashlib.sha256(url.encode()).hexdigest()


class PageResult(models.Model):
    """One page's outcome in one check (MonitorCheckPage on the wire)."""

    class Status(models.TextChoices):
        SAME = "same"
        CHANGED = "changed"
        NEW = "new"
        REMOVED = "removed"
        ERROR = "error"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    check_run = models.ForeignKey(Check, on_delete=models.CASCADE, related_name="pages")
    target_id = models.UUIDField()
    url = models.URLField(max_length=2048)
    status = models.CharField(max_length=16, choices=Status.choices)
    previous_scrape_id = models.UUIDField(null=True, blank=True)
    current_scrape_id = models.UUIDField(null=True, blank=True)
    previous_snapshot = models.ForeignKey(
        Snapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    current_snapshot = models.ForeignKey(
        Snapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # {"text": unified diff, "json": parse-diff AST}; null unless changed.
    diff = models.JSONField(null=True, blank=True)
    # Escaped side-by-side HTML rendered by the worker for the dashboard.
    diff_html = models.TextField(blank=True)
    judgment = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["check_run", "status"], name="page_check_status_idx"),
            models.Index(fields=["check_run", "created_at"], name="page_check_order_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.url}: {self.status}"

    def get_absolute_url(self) -> str:
        return f"/monitors/{self.check_run.monitor_id}/checks/{self.check_run_id}/pages/{self.pk}/"

    @property
    def is_meaningful(self) -> bool | None:
        if self.status != self.Status.CHANGED or not self.judgment:
            return None
        return bool(self.judgment.get("meaningful"))
