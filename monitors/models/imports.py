"""Imports of monitors from other tools: one row per import into a team."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models

from monitors.models.teams import Team


class ImportRunQuerySet(models.QuerySet["ImportRun"]):
    def ended_before(self, cutoff: datetime) -> ImportRunQuerySet:
        """Runs nobody needs any more: finished, or previewed and never
        confirmed, before the cutoff. A queued or running import is kept."""
        return self.filter(created_at__lt=cutoff).exclude(
            status__in=[ImportRun.Status.QUEUED, ImportRun.Status.RUNNING]
        )


class ImportRun(models.Model):
    """One import into a team: the planned items a preview showed (each the
    create body it becomes, or why not), then, once confirmed, how far the
    import has got and its report. Large imports run as a task that claims
    the row (queued → running) with a conditional update."""

    class Status(models.TextChoices):
        PREVIEWED = "previewed"
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="imports")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # The API key that sent an import through the API: the activity log
    # names it as the maker of the monitors.
    api_key = models.ForeignKey(
        "monitors.ApiKey",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    source = models.CharField(max_length=32)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PREVIEWED
    )
    # monitors.moving.base.Planned.to_state() of every item, in order.
    items = models.JSONField(default=list)
    # Refs of the duplicates chosen to be imported all the same.
    chosen_duplicates = models.JSONField(default=list, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ImportRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import from {self.source} into {self.team} ({self.status})"

    def get_absolute_url(self) -> str:
        return f"/import/{self.pk}/"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100

    def claim(self, *, worker_lost: bool = False) -> bool:
        """queued → running, for exactly one worker. With `worker_lost` (its
        message handed out again: Celery does that only once the worker that
        had it is gone) a running run is taken over too, or it would say
        "running" for ever; what that worker made is a duplicate now, which
        the import skips unless it was chosen."""
        statuses = [self.Status.QUEUED]
        if worker_lost:
            statuses.append(self.Status.RUNNING)
        claimed = ImportRun.objects.filter(pk=self.pk, status__in=statuses).update(
            status=self.Status.RUNNING
        )
        if claimed:
            self.status = self.Status.RUNNING
        return bool(claimed)

    def record_progress(self, done: int) -> None:
        ImportRun.objects.filter(pk=self.pk).update(done=done)
        self.done = done

    def finish(self, report: dict[str, Any], now: datetime) -> None:
        self.status, self.report, self.finished_at = self.Status.DONE, report, now
        self.done = self.total
        self._forget_notification_urls()
        self.save(update_fields=["status", "report", "finished_at", "done", "items"])

    def fail(self, message: str, now: datetime) -> None:
        self.status, self.error, self.finished_at = self.Status.FAILED, message, now
        self._forget_notification_urls()
        self.save(update_fields=["status", "error", "finished_at", "items"])

    def _forget_notification_urls(self) -> None:
        """An Apprise URL holds the service's secret: once the run is over
        nothing reads it again, so it is not kept the days a run is (the
        channels' names stay, as the report shows them)."""
        for state in self.items:
            state["notify_urls"] = []
            state["channels"] = [
                {k: v for k, v in channel.items() if k != "url"}
                for channel in state.get("channels") or []
            ]
