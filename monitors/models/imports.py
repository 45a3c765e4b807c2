"""Imports of monitors from other tools: one row per import into a team."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from monitors.models.teams import Team


class ImportRunQuerySet(models.QuerySet["ImportRun"]):
    def ended_before(self, cutoff: datetime) -> ImportRunQuerySet:
        """Runs nobody needs any more: finished, previewed and never
        confirmed, or a preview never made, before the cutoff. A queued or
        running import is kept."""
        return self.filter(created_at__lt=cutoff).exclude(
            status__in=[ImportRun.Status.QUEUED, ImportRun.Status.RUNNING]
        )

    def give_up_stale_previews(self, now: datetime) -> int:
        """Previews no worker made in time, ended as the page would end them
        (ImportRun.give_up_preview_if_stale), so that a service's API key
        does not outlive the stale time when nobody opens the page: a worker
        killed outright while reading never forgets it itself. Returns how
        many were given up."""
        stale = self.filter(ImportRun.stale_preview(now)).defer("items")
        given_up = sum(run.give_up_preview_if_stale(now) for run in stale)
        # A key on a run no longer preparing is read by nobody (nothing should
        # leave one). One still preparing is its worker's until the worker
        # falls silent: however long the preview waited in the queue before.
        self.exclude(status=ImportRun.Status.PREPARING).exclude(remote_key="").update(
            remote_url="", remote_key=""
        )
        return given_up

    def stalled(self, now: datetime) -> ImportRunQuerySet:
        """Imports no worker has moved for STALLED_AFTER: running (its worker
        killed, its message gone with it until Redis' visibility timeout, or
        the database away for longer than its attempts last), or queued, for
        the first time or again by the stale sweep, and that message lost (the
        broker restarted without persistence, a worker killed before acking).
        A queued run counts from when it was queued (progressed_at), and only
        after QUEUED_STALLED_AFTER: its message may just be waiting behind
        others in a busy queue, where sending it again would add to the queue."""

        def idle_since(cutoff: datetime) -> Q:
            return Q(progressed_at__lt=cutoff) | Q(
                progressed_at=None, created_at__lt=cutoff
            )

        running = Q(status=ImportRun.Status.RUNNING) & idle_since(
            now - ImportRun.STALLED_AFTER
        )
        queued = Q(status=ImportRun.Status.QUEUED) & idle_since(
            now - ImportRun.QUEUED_STALLED_AFTER
        )
        return self.filter(running | queued)


class ImportRun(models.Model):
    """One import into a team: the watches read from the source, judged for
    the preview (preparing → previewed, by a task when many), the planned
    items the preview showed (each the create body it becomes, or why not),
    then, once confirmed, how far the import has got and its report. Large
    imports run as a task that claims the row (queued → running) with a
    conditional update."""

    class Status(models.TextChoices):
        PREPARING = "preparing"
        PREVIEW_FAILED = "preview_failed"
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
    # A service read by its address rather than a file: its address and API
    # key, for the preview task that reads it. The key is kept only until
    # that task has used it (cleared when reading ends, succeeded or failed)
    # and is never shown; Pagewatch has no encryption at rest, so it is not
    # kept a moment longer than reading takes.
    remote_url = models.CharField(max_length=2048, blank=True)
    remote_key = models.CharField(max_length=512, blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PREVIEWED
    )
    # monitors.moving.base.Planned.to_state() of every item, in order.
    items = models.JSONField(default=list)
    # Refs of the duplicates chosen to be imported all the same.
    chosen_duplicates = models.JSONField(default=list, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    # The monitors made so far, by the item's index: written in the same
    # transaction as them, so an import taken up again (redelivered, or
    # retried after a database outage) makes none of them twice.
    made = models.JSONField(default=dict, blank=True)
    # Deliveries of the import task that took the run (bounded: MAX_ATTEMPTS),
    # and when the run last moved (claimed, or monitors made), which the
    # stale sweep reads. A preview's worker beats here too (started, watches
    # read or judged): a preview is stale when it falls silent.
    attempts = models.PositiveSmallIntegerField(default=0)
    progressed_at = models.DateTimeField(null=True, blank=True)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When a preview task last took the run (start_preview_task): the task's
    # time limit counts from there, so its give-up time does too.
    started_at = models.DateTimeField(null=True, blank=True)
    # How many times a preview task has taken the run: its message is handed
    # out again when its worker dies (acks_late), so a watch list that kills
    # the worker would otherwise be read for ever, its key kept.
    preview_attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ImportRunQuerySet.as_manager()

    # A preview whose worker has given no sign of life (its start, or
    # watches read or judged) for this long will not be made: the preview
    # task's time limit (12 minutes) is below it, so that worker died. One no
    # worker started this long after the upload waited for one in vain (its
    # message lost, or every worker busy that long). The page says so rather
    # than polling for ever. Time spent waiting in the queue does not count
    # against a worker that then starts it.
    PREVIEW_GIVEN_UP_AFTER = timedelta(minutes=15)
    # Deliveries of a preview task beyond this many are not started: each
    # earlier one stopped its worker (out of memory, most likely). Its
    # message in start_preview_task says "three times".
    PREVIEW_ATTEMPTS = 3

    # An import is made by at most this many deliveries of its task; one more
    # (its worker killed again, or the database still away) ends it.
    MAX_ATTEMPTS = 3
    # A running import that has not moved for this long has no worker: the
    # task's time limit ends any attempt well before, and a retry after a
    # database outage comes a minute after the last.
    STALLED_AFTER = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 5 * 60)
    # A queued import has no worker yet: its message is lost, or waiting its
    # turn behind a busy queue. Sent again (and, out of attempts, ended as
    # never started) only at this slower pace.
    QUEUED_STALLED_AFTER = timedelta(hours=2)
    DATABASE_LOST = "the server lost its database"
    WORKER_LOST = "the worker making them stopped {} times"
    STALLED = "Pagewatch lost its worker or its database while making them"
    NEVER_STARTED = (
        "The import did not start: Pagewatch sent it to its workers several "
        "times and none of them made it. No monitors were made. Please import "
        "the list again, or ask whoever runs Pagewatch to check its workers and "
        "task queue."
    )

    class Superseded(Exception):
        """Another attempt has taken the run over (the stale sweep queued it
        again, or its message was handed out twice): this one stops, the
        batch it was making rolled back, so no monitor is made twice."""

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import from {self.source} into {self.team} ({self.status})"

    def get_absolute_url(self) -> str:
        return f"/import/{self.pk}/"

    @property
    def is_finished(self) -> bool:
        return self.status in (
            self.Status.DONE,
            self.Status.FAILED,
            self.Status.PREVIEW_FAILED,
        )

    @property
    def is_reading(self) -> bool:
        """Whether its preview is still reading the service it comes from
        (the address is forgotten with the key once reading ends)."""
        return self.status == self.Status.PREPARING and bool(self.remote_url)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100

    def claim(self, *, again: bool = False, now: datetime | None = None) -> bool:
        """queued → running, for exactly one worker. With `again` (its message
        handed out again once the worker that had it is gone, or a retry
        after a database outage) a running run is taken over too, or it
        would say "running" for ever: for MAX_ATTEMPTS deliveries in all,
        each going on from the monitors made before (`made`). The attempt's
        number is its token: an attempt taken over writes nothing more
        (record_made raises Superseded, finish does nothing)."""
        claimable = models.Q(status=self.Status.QUEUED)
        if again:
            claimable |= models.Q(
                status=self.Status.RUNNING, attempts__lt=self.MAX_ATTEMPTS
            )
        claimed = ImportRun.objects.filter(claimable, pk=self.pk).update(
            status=self.Status.RUNNING,
            attempts=models.F("attempts") + 1,
            progressed_at=now or timezone.now(),
        )
        if claimed:
            self.refresh_from_db(fields=["status", "attempts", "made", "done"])
        return bool(claimed)

    @property
    def out_of_attempts(self) -> bool:
        return self.status == self.Status.RUNNING and (
            self.attempts >= self.MAX_ATTEMPTS
        )

    def record_made(self, made: dict[int, str], now: datetime) -> None:
        """These monitors are made (call it in their transaction). Only the
        worker that claimed the run writes it, so the whole map is written;
        read again here, as a batch rolled back after it was recorded must
        not be counted."""
        run = ImportRun.objects.filter(pk=self.pk)
        whole = run.values_list("made", flat=True).get() | {
            str(index): pk for index, pk in made.items()
        }
        # The row is locked from here to the batch's commit: an attempt that
        # takes the run over waits for it, then reads these monitors as made.
        if not self._mine().update(made=whole, progressed_at=now):
            raise self.Superseded(f"import {self.pk}: attempt {self.attempts}")
        self.made = whole

    def _mine(self) -> ImportRunQuerySet:
        """The row while this attempt still holds it."""
        return ImportRun.objects.filter(
            pk=self.pk, status=self.Status.RUNNING, attempts=self.attempts
        )

    def queue_again(self, now: datetime) -> bool:
        """A stalled run (ImportRunQuerySet.stalled) is queued again, once
        whatever the number of sweeps, to go on from `made`; the attempt that
        stalled, if it is alive after all, is superseded. A run stalled while
        queued lost its message: that message counts as an attempt, or runs
        whose messages keep vanishing would be sent again for ever. (When one
        did reach a worker, its claim counts again: such a run may get one
        delivery fewer, never one more.)"""
        lost = self.status == self.Status.QUEUED
        queued = ImportRun.objects.filter(
            pk=self.pk,
            status=self.status,
            attempts=self.attempts,
            attempts__lt=self.MAX_ATTEMPTS,
            progressed_at=self.progressed_at,
        ).update(
            status=self.Status.QUEUED,
            progressed_at=now,
            attempts=F("attempts") + int(lost),
        )
        if queued:
            self.status, self.progressed_at = self.Status.QUEUED, now
            self.attempts += int(lost)
        return bool(queued)

    @property
    def to_make(self) -> int:
        """How many monitors the confirmed import makes, as previewed."""
        chosen = set(self.chosen_duplicates)
        return sum(
            1
            for s in self.items
            if s.get("validated") is not None
            and (not s.get("duplicate") or s["ref"] in chosen)
        )

    def stop_part_way(self, why: str, now: datetime) -> bool:
        """running → failed, saying how far it got and why, in words for the
        Import page; the monitors made stay."""
        made = len(self.made)
        message = (
            f"Stopped part way after {made:,} of {max(made, self.to_make):,} "
            f"monitors were made: {why}. The monitors made are kept; import "
            "again to add the rest: those already made show as “Already "
            "monitored” and are skipped."
        )
        return self._end(message, now)

    def never_started(self, now: datetime) -> bool:
        """queued → failed, for a run whose every message was lost before a
        worker made any of its monitors (the stale sweep gave up)."""
        return self._end(self.NEVER_STARTED, now)

    def _end(self, message: str, now: datetime) -> bool:
        self._forget_notification_urls()
        stopped = ImportRun.objects.filter(
            pk=self.pk, status__in=[self.Status.RUNNING, self.Status.QUEUED]
        ).update(
            status=self.Status.FAILED, error=message, finished_at=now, items=self.items
        )
        if stopped:
            self.status, self.error, self.finished_at = (
                self.Status.FAILED,
                message,
                now,
            )
        return bool(stopped)

    def show_preview(self, items: list[dict[str, Any]]) -> bool:
        """preparing → previewed with the judged items, unless the run was
        given up meanwhile (or another delivery of the task got there first)."""
        shown = ImportRun.objects.filter(pk=self.pk, status=self.Status.PREPARING)
        if not shown.update(status=self.Status.PREVIEWED, items=items, done=0):
            return False
        self.status, self.items, self.done = self.Status.PREVIEWED, items, 0
        return True

    @classmethod
    def stale_preview(cls, now: datetime) -> Q:
        """Rows of a preview past its give-up time: PREVIEW_GIVEN_UP_AFTER
        from its worker's last sign of life (progressed_at), or from the
        upload while never started."""
        cutoff = now - cls.PREVIEW_GIVEN_UP_AFTER
        return Q(status=cls.Status.PREPARING) & (
            Q(progressed_at__lt=cutoff)
            | Q(progressed_at=None, started_at__lt=cutoff)
            | Q(progressed_at=None, started_at=None, created_at__lt=cutoff)
        )

    def start_preview_task(self, now: datetime) -> bool:
        """A preview task takes a preparing run, counting the attempt: its
        give-up time counts from now. False when the run is no longer
        preparing, or when earlier attempts stopped their worker
        PREVIEW_ATTEMPTS times: the preview is failed then, its key gone."""
        started = ImportRun.objects.filter(
            pk=self.pk,
            status=self.Status.PREPARING,
            preview_attempts__lt=self.PREVIEW_ATTEMPTS,
        ).update(
            started_at=now,
            progressed_at=now,
            preview_attempts=F("preview_attempts") + 1,
        )
        if not started:
            # A no-op unless still preparing (given up or made meanwhile).
            self.fail_preview(
                "The preview stopped its worker three times before it was done, "
                "most likely for want of memory. Nothing was imported. Please "
                "start again with fewer watches, or ask whoever runs Pagewatch "
                "to give its workers more memory.",
                now,
            )
            return False
        self.started_at = self.progressed_at = now
        self.preview_attempts += 1
        return True

    def fail_preview(
        self, message: str, now: datetime, only_if: Q | None = None
    ) -> bool:
        """preparing → preview_failed, with words for the page. What it read
        goes with it, in the same update: a service's key, and the items,
        whose notification URLs hold secrets (as finish and fail forget
        them) and which nothing reads once no preview will be made."""
        failed = ImportRun.objects.filter(
            only_if or Q(), pk=self.pk, status=self.Status.PREPARING
        ).update(
            status=self.Status.PREVIEW_FAILED,
            error=message,
            finished_at=now,
            items=[],
            remote_url="",
            remote_key="",
        )
        if failed:
            self.status, self.error, self.finished_at = (
                self.Status.PREVIEW_FAILED,
                message,
                now,
            )
            self.items = []
            self.remote_url = self.remote_key = ""
        return bool(failed)

    def record_reading(self, done: int, total: int, now: datetime) -> None:
        """How many of the service's watches its preview has read so far:
        its worker's sign of life too (`now` on the database's clock, as the
        sweep that reads it is)."""
        ImportRun.objects.filter(pk=self.pk).update(
            done=done, total=total, progressed_at=now
        )
        self.done, self.total, self.progressed_at = done, total, now

    def finish_reading(self, items: list[dict[str, Any]]) -> bool:
        """The service's watches read, not judged yet: kept in place of its
        address and key, unless the run was given up meanwhile."""
        kept = ImportRun.objects.filter(pk=self.pk, status=self.Status.PREPARING)
        if not kept.update(
            items=items, total=len(items), done=0, remote_url="", remote_key=""
        ):
            return False
        self.items, self.total, self.done = items, len(items), 0
        self.remote_url = self.remote_key = ""
        return True

    def forget_remote_key(self) -> None:
        """Reading has ended, however it ended: the key goes, whatever the
        run's status (a run given up while it was read included)."""
        kept = ImportRun.objects.filter(pk=self.pk)
        kept.exclude(remote_key="", remote_url="").update(remote_url="", remote_key="")
        self.remote_url = self.remote_key = ""

    def given_up_words(self) -> str:
        """Why a preview past its give-up time ended, for its page: a run
        that was reading a service says its key is gone."""
        if self.started_at:
            words = (
                "The preview was not finished: the worker making it stopped "
                "before it was done"
            )
        else:
            words = (
                "The preview was not made in time: Pagewatch's workers did not "
                "get to it"
            )
        if self.is_reading:
            words += ", and the API key given for the service has been forgotten"
        return words + ". Please start again."

    def give_up_preview_if_stale(self, now: datetime) -> bool:
        """A preview no worker made in time is ended, so its page stops
        waiting; a task that comes after all leaves it so (show_preview).
        Judged again in the update itself: a worker may have started it since
        this row was read."""
        since = self.progressed_at or self.started_at or self.created_at
        if since >= now - self.PREVIEW_GIVEN_UP_AFTER:
            return False
        return self.fail_preview(
            self.given_up_words(), now, only_if=self.stale_preview(now)
        )

    def record_progress(self, done: int, now: datetime) -> None:
        """How many items its preview has judged so far: its worker's sign of
        life too (`now` on the database's clock, as the sweep that reads it
        is)."""
        ImportRun.objects.filter(pk=self.pk).update(done=done, progressed_at=now)
        self.done, self.progressed_at = done, now

    def record_import_progress(self, done: int, now: datetime) -> None:
        """How many items the import has gone through, and that it moved."""
        self._mine().update(done=done, progressed_at=now)
        self.done = done

    def finish(self, report: dict[str, Any], now: datetime) -> bool:
        """running → done with its report, unless another attempt has taken
        the run over (its report is the one kept)."""
        self._forget_notification_urls()
        if not self._mine().update(
            status=self.Status.DONE,
            report=report,
            finished_at=now,
            done=self.total,
            items=self.items,
        ):
            return False
        self.status, self.report, self.finished_at = self.Status.DONE, report, now
        self.done = self.total
        return True

    def fail(self, message: str, now: datetime) -> None:
        self._forget_notification_urls()
        if self._mine().update(
            status=self.Status.FAILED, error=message, finished_at=now, items=self.items
        ):
            self.status, self.error, self.finished_at = self.Status.FAILED, message, now

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
