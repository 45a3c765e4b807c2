"""Checks: one run of a monitor, from its claim to its summary and credits.

A check's lifecycle lives here as conditional updates, so several workers, a
redelivered message and the stale sweeper can race without double work:

    queued --claim()--> running --finish()--> completed | partial | failed
                           |  \\--fail()----> failed  (crash, time limit, lost)
                           \\--reserve_credits()--> skipped_no_credits

checks.runner drives it (and announces each end through checks.notify)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import models, transaction
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    Max,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, TruncMonth
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property

from checks import shared_clock
from checks.errors import ErrorKind
from checks.models.pages import PageResult
from checks.notify.models import Delivery
from monitors.models import Monitor, Team
from monitors.target_kinds import TargetFailure, failures_in, kind_for

SUMMARY_KEYS = ("totalPages", "same", "changed", "new", "removed", "error")
# Kept beside the wire counters for the dashboard and e-mails, never sent on
# the wire: a web search's results by what became of them (searchStatus of
# checks.search.stage), so they are counted in their own words. Written only
# when a check searched.
SEARCH_KEY = "search"


# (status, creditsUsed, verdict, error_kind, searchStatus) of each page
# result of a check.
Tally = list[tuple[str, Any, str, str, Any]]


def empty_summary() -> dict[str, int]:
    return dict.fromkeys(SUMMARY_KEYS, 0)


def month_start(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


class CheckQuerySet(models.QuerySet["Check"]):
    def for_monitor(self, monitor: Monitor) -> CheckQuerySet:
        return self.filter(monitor=monitor)

    def changed_since(self, moment: datetime) -> CheckQuerySet:
        """Those queued, started, finished or otherwise written after
        `moment` (updated_at, set at every write: heartbeats, notification
        status and billing too); served by check_updated_idx."""
        return self.filter(updated_at__gt=moment)

    def last_looked_at_pages(self, count: int) -> list[Any]:
        """Ids of the newest `count` checks that compared pages (completed or
        partial), newest first; served by check_monitor_list_idx."""
        done = self.filter(status__in=(Check.Status.COMPLETED, Check.Status.PARTIAL))
        return list(
            done.order_by("-created_at", "-id").values_list("pk", flat=True)[:count]
        )

    def in_flight(self) -> CheckQuerySet:
        return self.filter(status__in=Check.IN_FLIGHT)

    def _newest_ran(self, field: str) -> Subquery:
        """`field` of the newest check of the outer monitor row that looked at
        pages: one under way or skipped (overlap, no credits) neither ends nor
        starts a failing spell, as channels read it (checks.notify.channels).
        One subquery per monitor row, served by check_monitor_list_idx."""
        return Subquery(
            self.filter(monitor=OuterRef("pk"), status__in=Check.RAN)
            .order_by("-created_at", "-id")
            .values(field)[:1]
        )

    def monitors_failing(
        self, monitors: models.QuerySet[Monitor]
    ) -> models.QuerySet[Monitor]:
        """Those of `monitors` whose last check failed (the newest that looked
        at pages), so the monitor list stays one query."""
        return monitors.alias(last_ran=self._newest_ran("status")).filter(
            last_ran=Check.Status.FAILED
        )

    def last_ran(
        self, monitor_ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, tuple[uuid.UUID, str]]:
        """(id, status) of the newest check that looked at pages of each of
        these monitors, by monitor: the check monitors_failing judges by, so a
        row of the list says what its failing filter decided. One query."""
        rows = (
            Monitor.objects.filter(pk__in=monitor_ids)
            .annotate(ran_id=self._newest_ran("id"))
            .annotate(ran_status=self._newest_ran("status"))
            .filter(ran_id__isnull=False)
            .values_list("pk", "ran_id", "ran_status")
        )
        return {pk: (ran_id, status) for pk, ran_id, status in rows}

    def discard(self) -> None:
        """Delete these checks (the admin's way to clear out a runaway one, and
        the history of a monitor deleted there), first letting go of the
        monitors they run for, so none is left pointing at a check that is
        gone. Their page results and deliveries, the long tables, go in a few
        statements of their own: delete() would read every one of them into
        Python first. Filter the checks on what deleting does not change
        (ids, monitor, age): each statement reads them again."""
        checks = self.values("pk")
        with transaction.atomic():
            Monitor.objects.filter(current_check_id__in=checks).update(
                current_check_id=None
            )
            PageResult.objects.filter(check_run__in=checks).discard()
            Delivery.objects.filter(check_run__in=checks).discard()
            self.only("pk").delete()

    def with_changes(self) -> CheckQuerySet:
        """Checks that found pages changed, new or removed (served newest
        first by check_changes_recent_idx)."""
        return self.filter(found_changes=True)

    def stale(self, queued_before: datetime, running_before: datetime) -> CheckQuerySet:
        """Checks a lost worker left behind; served by check_in_flight_idx."""
        return self.filter(
            Q(status=Check.Status.QUEUED, created_at__lt=queued_before)
            | Q(status=Check.Status.RUNNING, heartbeat_at__lt=running_before)
        )

    def lock(self, pk: Any, *statuses: str) -> Check | None:
        """The check with its monitor, its row locked until the transaction
        ends, if it is in one of `statuses`: what finishing and failing start
        from, so a check is ended once whoever races to end it."""
        return (
            self.select_for_update(of=("self",))
            .select_related("monitor")
            .filter(pk=pk, status__in=statuses)
            .first()
        )

    def with_changes_that_matter(self) -> CheckQuerySet:
        """Checks that found a change the judge did not call unimportant: a
        page new or removed, or more changed pages than were judged noise
        (where nobody judged, every change counts). The checks a channel told
        of meaningful changes only hears of, and the dashboard's "meaningful
        changes" (PageResultQuerySet.changes_that_matter is one check's
        share)."""
        changed = Cast(KT("summary__changed"), IntegerField())
        matter = (
            Q(changed_pages__gt=F("noise"))
            | Q(summary__new__gt=0)
            | Q(summary__removed__gt=0)
        )
        return self.with_changes().alias(changed_pages=changed).filter(matter)

    def credits_used(self, team: Team, now: datetime) -> int:
        """Credits a team has used in the current UTC calendar month: actual
        credits of checks finished this month, plus those still reserved."""
        checks = self.filter(monitor__team=team)
        spent = checks.filter(finished_at__gte=month_start(now)).aggregate(
            total=Sum("actual_credits")
        )["total"]
        held = checks.filter(billing_status=Check.Billing.RESERVED).aggregate(
            total=Sum("reserved_credits")
        )["total"]
        return (spent or 0) + (held or 0)

    def credits_by_month(self, team: Team, now: datetime) -> dict[datetime, int]:
        """Credits a team has used in each UTC calendar month (the billing
        period of `credits_used`) its checks finished in, oldest first; the
        current month always, counted as `credits_used` counts it. Only the
        checks still kept count: those pruned for retention took theirs along."""
        months = (
            self.filter(monitor__team=team, actual_credits__isnull=False)
            .filter(finished_at__lt=month_start(now))
            .annotate(month=TruncMonth("finished_at", tzinfo=UTC))
            .values("month")
            .annotate(total=Sum("actual_credits"))
            .order_by("month")
        )
        used = {row["month"]: row["total"] for row in months}
        used[month_start(now)] = self.credits_used(team, now)
        return used

    def queue_status(self, team: Team) -> dict[str, Any]:
        """A team's checks waiting and running, and when one last completed,
        in one query (the Firecrawl CLI's `--status` and the SDKs'
        `get_queue_status`)."""
        return self.filter(monitor__team=team).aggregate(
            running=Count("pk", filter=Q(status=Check.Status.RUNNING)),
            waiting=Count("pk", filter=Q(status=Check.Status.QUEUED)),
            last_success=Max("finished_at", filter=Q(status=Check.Status.COMPLETED)),
        )


def check_path(monitor_id: Any, check_id: Any) -> str:
    """A check's page in the dashboard, from the two ids alone (lists that
    read numbers, not Check rows, link to it too)."""
    return reverse("check-detail", kwargs={"pk": monitor_id, "check_id": check_id})


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
    # Finished having looked at pages: not skipped.
    RAN = (Status.COMPLETED, Status.PARTIAL, Status.FAILED)
    FINISHED = (
        Status.COMPLETED,
        Status.PARTIAL,
        Status.FAILED,
        Status.SKIPPED_OVERLAP,
        Status.SKIPPED_NO_CREDITS,
    )
    NO_CREDITS_MESSAGE = "Monitor check skipped: insufficient credits."

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: check_monitor_list_idx starts with the monitor.
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="checks", db_index=False
    )
    status = models.CharField(
        max_length=24, choices=Status.choices, default=Status.QUEUED
    )
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    scheduled_for = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written by every batch while it runs; the stale sweeper reads it.
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
    # Whether the summary counts a page changed, new or removed: computed by
    # the database and stored, so the team's history can walk an index of
    # just these checks instead of sorting every check of the team.
    # Changed pages the goal judge called not meaningful: the dashboard tells
    # these apart from the changes that matter (0 where judging is off).
    noise = models.PositiveIntegerField(default=0)
    found_changes = models.GeneratedField(
        expression=Q(summary__changed__gt=0)
        | Q(summary__new__gt=0)
        | Q(summary__removed__gt=0),
        output_field=models.BooleanField(),
        db_persist=True,
    )
    target_results = models.JSONField(null=True, blank=True)
    notification_status = models.JSONField(null=True, blank=True)
    # Whether its monitor's notifications were muted when it started (claimed
    # from the queue, or made already ended): decided once, so a check's
    # events are all told or all not, whoever mutes or unmutes meanwhile
    # (checks.notify.muted and the digests read it).
    notifications_muted = models.BooleanField(default=False)
    error = models.TextField(null=True, blank=True)
    # On the database's clock in a worker, as started_at and finished_at are
    # (checks.shared_clock): set where it changes, not by auto_now.
    created_at = models.DateTimeField(default=shared_clock.now, editable=False)
    updated_at = models.DateTimeField(default=shared_clock.now, editable=False)

    objects = CheckQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["monitor", "-created_at"], name="check_monitor_list_idx"
            ),
            models.Index(fields=["-created_at"], name="check_recent_idx"),
            # Used by the team's history feed (monitors.history.feed_checks):
            # walked newest first, across all of a team's monitors, until a
            # page is full; only checks that found changes are in it.
            models.Index(
                fields=["-created_at", "-id"],
                name="check_changes_recent_idx",
                condition=Q(found_changes=True),
            ),
            # Used by MonitorQuerySet.changed_since (the API's `updatedSince`):
            # the few checks written since a client's last sync, in any team.
            models.Index(fields=["updated_at"], name="check_updated_idx"),
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
        # Names the check in the admin's titles, links and delete lists: its
        # time says which one it is, where the monitor's id said nothing.
        when = self.scheduled_for or self.created_at
        at = f" of {timezone.localtime(when):%Y-%m-%d %H:%M %Z}" if when else ""
        return f"{self.get_status_display()} check{at}"

    def get_absolute_url(self) -> str:
        return check_path(self.monitor_id, self.pk)

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    @property
    def changes_not_unimportant(self) -> int:
        """Changed pages the judge did not call unimportant: meaningful, or
        never judged (CheckQuerySet.with_changes_that_matter counts them)."""
        try:
            changed = int((self.summary or {}).get("changed") or 0)
        except (TypeError, ValueError):
            return 0
        return max(0, changed - self.noise)

    @cached_property
    def not_judged(self) -> int:
        """Changed pages the judge failed on (reported like any change). A
        list of checks sets it for all at once (not_judged_per_check)."""
        if not self.changes_not_unimportant or not self.is_finished:
            return 0
        return PageResult.objects.not_judged_per_check([self.pk]).get(self.pk, 0)

    # --- Lifecycle ---------------------------------------------------------------

    def claim(self, now: datetime, reclaim_after: timedelta) -> bool:
        """queued -> running, or take over a running check whose worker
        stopped heart-beating for `reclaim_after`. False when someone else
        has it. Re-reads the row (with monitor and team) when it succeeds.

        Leaving the queue it takes the monitor's mute as it is now; one taken
        over keeps the mute it started with."""
        muted = Exists(Monitor.objects.filter(pk=OuterRef("monitor_id")).muted(now))
        updated = (
            Check.objects.filter(pk=self.pk)
            .filter(
                Q(status=self.Status.QUEUED)
                | Q(status=self.Status.RUNNING, heartbeat_at__lt=now - reclaim_after)
            )
            .update(
                status=self.Status.RUNNING,
                started_at=Coalesce("started_at", now),
                # In the same statement, so claiming stays one query.
                notifications_muted=Case(
                    When(Q(status=self.Status.QUEUED) & muted, then=Value(True)),
                    When(status=self.Status.QUEUED, then=Value(False)),
                    default=F("notifications_muted"),
                ),
                heartbeat_at=now,
                updated_at=now,
            )
        )
        if updated:
            self.refresh_from_db(
                from_queryset=Check.objects.select_related("monitor__team")
            )
        return bool(updated)

    def reserve_credits(self, now: datetime) -> bool:
        """Hold the estimated credits when the team has an allowance; False
        (and the check ends as skipped_no_credits) when they do not fit.

        The team row is locked so two checks of one team cannot both take the
        last credits (on SQLite the IMMEDIATE transaction serialises writers)."""
        if self.billing_status == self.Billing.RESERVED:
            return True  # taken over: reserved on the first claim
        if self.monitor.team.credit_allowance is None:
            return True  # unlimited: billing_status stays not_applicable
        with transaction.atomic():
            team = Team.objects.select_for_update().get(pk=self.monitor.team_id)
            if team.credit_allowance is None:  # lifted meanwhile
                return True
            remaining = team.credit_allowance - Check.objects.credits_used(team, now)
            if self.estimated_credits > remaining:
                self._end(
                    now,
                    status=self.Status.SKIPPED_NO_CREDITS,
                    error=self.NO_CREDITS_MESSAGE,
                    summary=empty_summary(),
                    actual_credits=0,
                )
                Monitor.objects.filter(pk=self.monitor_id).check_ended(self.pk, now)
                return False
            self.reserved_credits = self.estimated_credits
            self.billing_status = self.Billing.RESERVED
            self.updated_at = now
            self.save(
                update_fields=["reserved_credits", "billing_status", "updated_at"]
            )
        return True

    def heartbeat(self, now: datetime) -> bool:
        """Say the check is alive; False when it is no longer running."""
        return bool(
            Check.objects.filter(pk=self.pk, status=self.Status.RUNNING).update(
                heartbeat_at=now, updated_at=now
            )
        )

    def tally(self) -> Tally:
        """(status, creditsUsed, verdict, error_kind, searchStatus) of each
        page result, in one query that leaves the rest of each page's metadata
        in the database."""
        return list(
            PageResult.objects.filter(check_run_id=self.pk).values_list(
                "status",
                KT("metadata__creditsUsed"),
                "verdict",
                "error_kind",
                KT("metadata__searchStatus"),
            )
        )

    @staticmethod
    def noise_in(tally: Tally) -> int:
        """Changed pages the judge called not meaningful."""
        return sum(
            1
            for status, _, verdict, *_ in tally
            if status == PageResult.Status.CHANGED
            and verdict == PageResult.Verdict.NOISE
        )

    @staticmethod
    def summarize(tally: Tally) -> dict[str, Any]:
        counts = Counter(status for status, *_ in tally)
        summary: dict[str, Any] = empty_summary()
        for status, count in counts.items():
            summary[status] = count
        summary["totalPages"] = sum(counts.values())
        searched = Counter(found for *_, found in tally if found)
        if searched:
            summary[SEARCH_KEY] = dict(searched)
        return summary

    def credits_for(self, tally: Tally, now: datetime) -> int:
        """Sum of the pages' creditsUsed; removed pages are free, and so are
        same pages when the monitor's interval qualifies (unchangedPagesFree),
        pages still gone after `removed` included: fetched, and unchanged."""
        monitor = self.monitor
        same_free = monitor.deleted_at is None and monitor.unchanged_pages_free(now)
        total = 0
        for status, credits, *_ in tally:
            if status == PageResult.Status.REMOVED:
                continue
            if status == PageResult.Status.SAME and same_free:
                continue
            # PostgreSQL hands the JSON number over as text, SQLite as a number.
            if isinstance(credits, str):
                credits = int(credits) if credits.isdecimal() else None
            total += credits if isinstance(credits, int) else 0
        return total

    def target_failures(self) -> list[TargetFailure]:
        """The targets that failed their part of this check (a web search
        that could not be run), as their kinds word it in targetResults."""
        return failures_in(self.target_results)

    @classmethod
    def outcome(
        cls,
        summary: dict[str, int],
        failures: Sequence[str] = (),
        *,
        unjudged: int = 0,
    ) -> tuple[str, str | None]:
        """(status, error) of a check that looked at all its pages: failed
        when not one page could be checked, partial when some could not. A
        target that failed (`failures`, its reasons) counts as one whose
        pages could not be checked, and its reason is the error's. Search
        results are counted apart from pages, as the dashboard counts them:
        when every one in error is one the model could not judge (`unjudged`
        of them), the error says so in a search's words."""
        errors, total = summary["error"], summary["totalPages"]
        if not errors and not failures:
            return cls.Status.COMPLETED, None
        searched = summary.get(SEARCH_KEY)
        found = sum(searched.values()) if isinstance(searched, dict) else 0
        skipped = searched.get("skipped", 0) if isinstance(searched, dict) else 0
        could = "judged against the goal" if skipped == unjudged else "checked"
        parts = [
            cls._not_checked(errors - skipped, total - found, "page", "checked"),
            cls._not_checked(skipped, found, "search result", could),
        ]
        status = cls.Status.FAILED if errors == total else cls.Status.PARTIAL
        return status, " ".join([*failures, *filter(None, parts)]).strip()

    @staticmethod
    def _not_checked(errors: int, total: int, noun: str, could: str) -> str:
        """ "2 of 5 pages could not be checked." ("" when all could be)."""
        if not errors:
            return ""
        if errors < total:
            return f"{errors} of {total} {noun}s could not be {could}."
        if total == 1:
            return f"The {noun} could not be {could}."
        return f"None of the {total} {noun}s could be {could}."

    @property
    def search_results_total(self) -> int:
        """Of `pages_total`, the results its web searches found (the rest are
        pages), as their targetResults lines count them."""
        total = 0
        for result in self.target_results or []:
            if not isinstance(result, dict) or result.get("skipped"):
                continue
            kind = kind_for(str(result.get("type") or ""))
            count = result.get("resultCount")
            if kind is not None and kind.finds_results and isinstance(count, int):
                total += max(count, 0)
        return total

    def search_credits(self) -> int:
        """The flat credits its targets' lines record, as Firecrawl bills them:
        a search's searching, per raw result across queries, and judging, per
        judged result."""
        total = 0
        for result in self.target_results or []:
            if not isinstance(result, dict):
                continue
            for key in ("searchCredits", "judgeCredits"):
                value = result.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    total += max(value, 0)
        return total

    def finish(
        self, now: datetime, announce: Callable[[Check], None] | None = None
    ) -> None:
        """running -> completed | partial | failed, with summary, credits and the
        monitor's fields. The caller holds the row locked while running
        (CheckQuerySet.lock). `announce(check)`, called once the check holds
        its final fields, may set more of them (notification_status), which
        are written with the rest."""
        tally = self.tally()
        summary = self.summarize(tally)
        failures = [failure.reason for failure in self.target_failures()]
        unjudged = sum(1 for *_, kind, _ in tally if kind == ErrorKind.NOT_JUDGED)
        self.status, self.error = self.outcome(summary, failures, unjudged=unjudged)
        self.summary = summary
        self.noise = self.noise_in(tally)
        self.actual_credits = self.credits_for(tally, now) + self.search_credits()
        if self.billing_status == self.Billing.RESERVED:
            self.billing_status = (
                self.Billing.RELEASED
                if self.status == self.Status.FAILED
                else self.Billing.CONFIRMED
            )
        self.finished_at = self.heartbeat_at = self.updated_at = now
        if announce is not None:
            announce(self)
        self.save(
            update_fields=[
                "status", "error", "summary", "noise", "actual_credits",
                "billing_status", "finished_at", "heartbeat_at",
                "notification_status", "updated_at",
            ]
        )  # fmt: skip
        Monitor.objects.filter(pk=self.monitor_id).check_ended(
            self.pk, now, summary, self.noise
        )

    def fail(self, message: str, now: datetime) -> None:
        """End an in-flight check as failed (crash, time limit, lost, given
        up); the caller holds the row locked while in flight. Pages recorded
        so far stay and are counted; the reservation is released and nothing
        is charged."""
        billing = self.billing_status
        if billing == self.Billing.RESERVED:
            billing = self.Billing.RELEASED
        tally = self.tally()
        summary = self.summarize(tally)
        self._end(
            now,
            status=self.Status.FAILED,
            error=message,
            summary=summary,
            noise=self.noise_in(tally),
            actual_credits=0,
            billing_status=billing,
        )
        self.batches.open().end()
        Monitor.objects.filter(pk=self.monitor_id).check_ended(
            self.pk, now, summary, self.noise
        )

    def _end(self, now: datetime, **fields: Any) -> None:
        fields |= {"finished_at": now, "updated_at": now}
        Check.objects.filter(pk=self.pk).update(**fields)
        for name, value in fields.items():
            setattr(self, name, value)
