"""A check's pages in batches: the unit of work one Celery task does."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import F, Max, Q

from checks import shared_clock
from checks.models.check import Check


class CheckBatchQuerySet(models.QuerySet["CheckBatch"]):
    def open(self) -> CheckBatchQuerySet:
        return self.filter(status__in=CheckBatch.OPEN)

    def end(self) -> int:
        """End these batches, their check having ended first (failed)."""
        return self.update(status=CheckBatch.Status.ENDED)

    def lost(self, now: datetime, stale_after: timedelta) -> CheckBatchQuerySet:
        """Batches whose worker stopped heart-beating, or whose message was
        never taken (queued long ago); served by check_batch_open_idx."""
        return self.filter(
            Q(status=CheckBatch.Status.RUNNING, heartbeat_at__lt=now - stale_after)
            | Q(
                status=CheckBatch.Status.PENDING,
                heartbeat_at__lt=now - CheckBatch.REQUEUE_AFTER,
            )
        )

    def append(
        self, check: Check, refs: Sequence[Any], *, size: int, uses_browser: bool
    ) -> list[CheckBatch]:
        """New batches of `size` pages (refs, PageJob.ref) numbered after the
        check's last one. The caller holds the check's row locked, so two
        workers adding batches at once cannot pick the same numbers."""
        last = self.filter(check_run=check).aggregate(n=Max("number"))["n"]
        first, now = (0 if last is None else last + 1), shared_clock.now()
        return self.bulk_create(
            CheckBatch(
                check_run=check,
                number=first + n,
                pages=list(refs[start : start + size]),
                heartbeat_at=now,
                uses_browser=uses_browser,
            )
            for n, start in enumerate(range(0, len(refs), size))
        )


class CheckBatch(models.Model):
    """Up to CHECK_BATCH_SIZE pages of one check: the unit of work one Celery
    task does, so a big check spreads over every worker on every machine.

    `pages` lists [target id, url, scrape id] in the order checked. The row is
    claimed with a conditional update; heartbeat_at is the time it was queued
    (pending) or last showed life (running)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        ENDED = "ended"  # its check ended first (failed)

    OPEN = (Status.PENDING, Status.RUNNING)
    # A pending batch whose message was not taken this long after it was sent
    # is sent again (the broker may have lost it; a duplicate does nothing).
    REQUEUE_AFTER = timedelta(minutes=10)

    check_run = models.ForeignKey(
        Check, on_delete=models.CASCADE, related_name="batches", db_index=False
    )
    number = models.PositiveIntegerField()
    pages = models.JSONField(default=list)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    # Claims of this batch by a worker; bounded so a poison page cannot loop.
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Its pages are fetched with the browser: it is queued on BROWSER_QUEUE,
    # for workers that run one (checks.runner.enqueue_batches).
    uses_browser = models.BooleanField(default=False)

    objects = CheckBatchQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "check batches"
        ordering = ["check_run", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["check_run", "number"], name="one_batch_per_number"
            )
        ]
        indexes = [
            # Used by checks.runner.fail_stale_checks: only open batches.
            models.Index(
                fields=["heartbeat_at"],
                name="check_batch_open_idx",
                condition=Q(status__in=["pending", "running"]),
            )
        ]

    def __str__(self) -> str:
        return f"batch {self.number} of check {self.check_run_id} ({self.status})"

    def claim(self, now: datetime, reclaim_after: timedelta) -> bool:
        """pending -> running, or take over a running batch whose worker went
        quiet for `reclaim_after`; counts the attempt."""
        updated = (
            CheckBatch.objects.filter(pk=self.pk)
            .filter(
                Q(status=self.Status.PENDING)
                | Q(status=self.Status.RUNNING, heartbeat_at__lt=now - reclaim_after)
            )
            .update(
                status=self.Status.RUNNING,
                attempts=F("attempts") + 1,
                heartbeat_at=now,
            )
        )
        if updated:
            self.refresh_from_db(fields=["status", "attempts", "heartbeat_at"])
        return bool(updated)

    def complete(self) -> bool:
        return bool(
            CheckBatch.objects.filter(pk=self.pk, status=self.Status.RUNNING).update(
                status=self.Status.DONE
            )
        )
