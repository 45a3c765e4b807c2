"""Checks (one run of a monitor), their page batches and results, and the
snapshots and baselines that change detection compares against.

A check's lifecycle lives here as conditional updates, so several workers, a
redelivered message and the stale sweeper can race without double work:

    queued --claim()--> running --finish()--> completed | partial | failed
                           |  \\--fail()----> failed  (crash, time limit, lost)
                           \\--reserve_credits()--> skipped_no_credits

checks.runner drives it (and announces each end through checks.notify)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

from django.db import models, transaction
from django.db.models import (
    Case,
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
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from checks.content import (
    SOURCE_HTML,
    SOURCE_MARKDOWN,
    Pack,
    diff_ast,
    diff_reference,
    markdown_of,
    pack_diff,
    pack_snapshot,
    packed_against,
    unpack,
    unpack_diff,
)
from checks.errors import ErrorKind
from monitors.models import Monitor, Team

SUMMARY_KEYS = ("totalPages", "same", "changed", "new", "removed", "error")
# Kept beside the wire counters for the dashboard and e-mails, never sent on
# the wire: a web search's results by what became of them (searchStatus of
# checks.search.stage), so they are counted in their own words. Written only
# when a check searched.
SEARCH_KEY = "search"
# The order a check's pages are listed in: what changed first.
CHANGES_FIRST = ("changed", "new", "removed", "error", "same")


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

    def in_flight(self) -> CheckQuerySet:
        return self.filter(status__in=Check.IN_FLIGHT)

    def discard(self) -> None:
        """Delete these checks (the admin's way to clear out a runaway one),
        first letting go of the monitors they run for, so none is left
        pointing at a check that is gone."""
        with transaction.atomic():
            ids = list(self.values_list("pk", flat=True))
            Monitor.objects.filter(current_check_id__in=ids).update(
                current_check_id=None
            )
            Check.objects.filter(pk__in=ids).delete()

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
        (where judging is off, every change counts)."""
        changed = Cast(KT("summary__changed"), IntegerField())
        matter = (
            Q(changed_pages__gt=F("noise"))
            | Q(summary__new__gt=0)
            | Q(summary__removed__gt=0)
        )
        return self.with_changes().alias(changed_pages=changed).filter(matter)

    def with_meaningful_changes(self) -> CheckQuerySet:
        """Checks with at least one change the judge called meaningful (the
        dashboard's "meaningful changes only"): not those whose changes nobody
        judged; served by page_check_status_idx."""
        pages = PageResult.objects.filter(check_run=OuterRef("pk"))
        return self.filter(Exists(pages.meaningful_changes()))

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
    error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

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

    # --- Lifecycle ---------------------------------------------------------------

    def claim(self, now: datetime, reclaim_after: timedelta) -> bool:
        """queued -> running, or take over a running check whose worker
        stopped heart-beating for `reclaim_after`. False when someone else
        has it. Re-reads the row (with monitor and team) when it succeeds."""
        updated = (
            Check.objects.filter(pk=self.pk)
            .filter(
                Q(status=self.Status.QUEUED)
                | Q(status=self.Status.RUNNING, heartbeat_at__lt=now - reclaim_after)
            )
            .update(
                status=self.Status.RUNNING,
                started_at=Coalesce("started_at", now),
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
            self.save(update_fields=["reserved_credits", "billing_status"])
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
    def only_search_failed(tally: Tally) -> bool:
        kinds = {kind for status, _, _, kind, _ in tally if status == "error"}
        return kinds == {ErrorKind.SEARCH_FAILED}

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
                credits = int(credits) if credits.isdigit() else None
            total += credits if isinstance(credits, int) else 0
        return total

    @classmethod
    def outcome(cls, summary: dict[str, int]) -> tuple[str, str | None]:
        """(status, error) of a check that looked at all its pages: failed
        when not one page could be checked, partial when some could not."""
        errors, total = summary["error"], summary["totalPages"]
        if not errors:
            return cls.Status.COMPLETED, None
        if errors == total:
            if total == 1:
                return cls.Status.FAILED, "The page could not be checked."
            return cls.Status.FAILED, f"None of the {total} pages could be checked."
        return cls.Status.PARTIAL, f"{errors} of {total} pages could not be checked."

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
        self.status, self.error = self.outcome(summary)
        if self.status == self.Status.FAILED and self.only_search_failed(tally):
            # No page was involved: what failed is the web search itself.
            self.error = "The web search failed, so this check found nothing new."
        self.summary = summary
        self.noise = self.noise_in(tally)
        self.actual_credits = self.credits_for(tally, now) + self.search_credits()
        if self.billing_status == self.Billing.RESERVED:
            self.billing_status = (
                self.Billing.RELEASED
                if self.status == self.Status.FAILED
                else self.Billing.CONFIRMED
            )
        self.finished_at = self.heartbeat_at = now
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
        CheckBatch.objects.filter(check_run_id=self.pk).open().update(
            status=CheckBatch.Status.ENDED
        )
        Monitor.objects.filter(pk=self.monitor_id).check_ended(
            self.pk, now, summary, self.noise
        )

    def _end(self, now: datetime, **fields: Any) -> None:
        fields |= {"finished_at": now, "updated_at": now}
        Check.objects.filter(pk=self.pk).update(**fields)
        for name, value in fields.items():
            setattr(self, name, value)


class CheckBatchQuerySet(models.QuerySet["CheckBatch"]):
    def open(self) -> CheckBatchQuerySet:
        return self.filter(status__in=CheckBatch.OPEN)

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
        first, now = (0 if last is None else last + 1), timezone.now()
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


class Crawl(models.Model):
    """One crawl target's crawl within one check (checks.crawl): what it has
    found so far, whether it was cut short, and the robots.txt it obeys.

    Rows of CrawlPage are the frontier: every URL admitted to this crawl, once
    (the unique key is the URL as checks.crawl.scope folds it). Both are
    written in the transaction that plans or admits pages, so a crawl whose
    worker dies is resumed from the same frontier."""

    check_run = models.ForeignKey(
        Check, on_delete=models.CASCADE, related_name="crawls", db_index=False
    )
    target_id = models.UUIDField()
    # robots.txt of the start host as fetched when the check was planned
    # (empty: none, or ignored); other hosts' are fetched as they are met.
    robots = models.TextField(blank=True)
    found = models.PositiveIntegerField(default=0)
    # Why the crawl did not reach everything ("" when it did): such a crawl
    # reports no removed pages.
    truncated = models.CharField(max_length=255, blank=True)
    # Set by the one worker that records the removed pages, at the end.
    closed = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["check_run", "target_id"], name="one_crawl_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"crawl of target {self.target_id} in check {self.check_run_id}"

    @property
    def public_id(self) -> uuid.UUID:
        """The crawl's id in the API, a UUID as Firecrawl's are. One crawl per
        target per check, so it is made from both: stable, and no column."""
        return uuid.uuid5(self.check_run_id, str(self.target_id))


class CrawlPage(models.Model):
    crawl = models.ForeignKey(
        Crawl, on_delete=models.CASCADE, related_name="pages", db_index=False
    )
    key = models.CharField(max_length=64)
    url = models.URLField(max_length=2048)
    depth = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["crawl", "key"], name="one_page_per_key")
        ]

    def __str__(self) -> str:
        return self.url


class SearchRun(models.Model):
    """One search target's search within one check (checks.search): what the
    provider found, merged and cut to the target's rules, and whether every
    query was answered. Written when the check is planned, so each batch
    knows its results' titles, snippets and matched queries."""

    check_run = models.ForeignKey(
        Check, on_delete=models.CASCADE, related_name="searches", db_index=False
    )
    target_id = models.UUIDField()
    provider = models.CharField(max_length=16)
    # [{url, key, title, snippet, publishedAt, queries}], in the order kept.
    results = models.JSONField(default=list)
    # Results the provider returned across queries, before any filter (what
    # search credits are counted on).
    raw_count = models.PositiveIntegerField(default=0)
    # Why a query failed ("" when every query was answered), and the address
    # its error page is recorded under.
    failure = models.TextField(blank=True)
    endpoint = models.URLField(max_length=2048, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["check_run", "target_id"], name="one_search_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"search of target {self.target_id} in check {self.check_run_id}"


class SearchResultStateQuerySet(models.QuerySet["SearchResultState"]):
    def alerted(self) -> SearchResultStateQuerySet:
        """Results that alerted, newest first; served by search_alerted_idx."""
        return self.filter(alerted_at__isnull=False).order_by("-alerted_at", "-id")


class SearchResultState(models.Model):
    """What one search target knows of one result (by canonical URL): the
    search target's baseline. A result alerts once; a verdict holds while
    the goal and queries it was given under (goal_version) stay the same.
    Never deleted by retention, like PageState."""

    class Status(models.TextChoices):
        ALERTED = "alerted"
        IGNORED = "ignored"  # judged not relevant to the goal
        WATCHING = "watching"  # relevant, but the judge was not confident
        SKIPPED = "skipped"  # no verdict: the page or the judge failed

    # No index of its own: one_state_per_result starts with the monitor.
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="search_results", db_index=False
    )
    target_id = models.UUIDField()
    # SHA-256 of the canonical URL (checks.search.canonical).
    key = models.CharField(max_length=64)
    url = models.URLField(max_length=2048)
    title = models.CharField(max_length=500, blank=True)
    snippet = models.TextField(blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    queries = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    goal_version = models.CharField(max_length=32, blank=True)
    judgment = models.JSONField(null=True, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    alerted_at = models.DateTimeField(null=True, blank=True)
    # The check that alerted (no foreign key: retention may delete it).
    alert_check_id = models.UUIDField(null=True, blank=True)

    objects = SearchResultStateQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "target_id", "key"], name="one_state_per_result"
            )
        ]
        indexes = [
            # Used by the dashboard's stream of alerted results of a monitor
            # (SearchResultStateQuerySet.alerted).
            models.Index(
                fields=["monitor", "-alerted_at"],
                name="search_alerted_idx",
                condition=Q(alerted_at__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.status})"

    UPSERT_FIELDS = (
        "url", "title", "snippet", "published_at", "queries", "status",
        "goal_version", "judgment", "last_seen_at", "alerted_at", "alert_check_id",
    )  # fmt: skip

    @classmethod
    def upsert(cls, states: list[SearchResultState]) -> None:
        """Insert these results' states or update the stored ones (first_seen_at
        stays as it was): one INSERT ... ON CONFLICT DO UPDATE."""
        cls.objects.bulk_create(
            states,
            update_conflicts=True,
            unique_fields=["monitor", "target_id", "key"],
            update_fields=cls.UPSERT_FIELDS,
        )


class Snapshot(models.Model):
    """Extracted page content, stored once per distinct content (by hash) and
    compressed, so an unchanged page costs no new storage.

    `format` says what `data` holds: Markdown, or an HTML page's source
    (cleaned HTML, see checks.extract.markdown_of) whose Markdown `text`
    derives on read."""

    class Format(models.TextChoices):
        MARKDOWN = SOURCE_MARKDOWN, "Markdown"
        HTML = SOURCE_HTML, "Cleaned HTML"

    content_hash = models.CharField(max_length=64)
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    format = models.CharField(
        max_length=16, choices=Format.choices, default=Format.MARKDOWN
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # A constraint rather than unique=True, which on PostgreSQL adds a
            # second, LIKE-pattern index that no query uses and every insert
            # pays for.
            models.UniqueConstraint(
                fields=["content_hash"], name="one_snapshot_per_content"
            )
        ]

    def __str__(self) -> str:
        return f"snapshot {self.content_hash[:12]} ({self.size} bytes)"

    @classmethod
    def store(cls, text: str, source_format: str = SOURCE_MARKDOWN) -> Snapshot:
        """The snapshot of `text`, inserted unless it exists."""
        pack = pack_snapshot(text, source_format)
        return cls.objects.get(pk=cls.store_many([pack])[pack[0]])

    @classmethod
    def store_many(cls, packs: Iterable[Pack]) -> dict[str, int]:
        """Ids by content hash of (content hash, compressed data, size,
        format) packs (checks.content.pack_snapshot), inserted where missing.

        ON CONFLICT DO UPDATE of an unchanged column rather than DO NOTHING:
        the database then returns the id of an existing row as well (where it
        cannot, one SELECT finds them)."""
        rows = {pack[0]: pack for pack in packs}
        if not rows:
            return {}
        snapshots = cls.objects.bulk_create(
            [
                cls(content_hash=digest, data=data, size=size, format=source_format)
                for digest, data, size, source_format in rows.values()
            ],
            update_conflicts=True,
            unique_fields=["content_hash"],
            update_fields=["size"],
        )
        ids = {s.content_hash: s.pk for s in snapshots if s.pk is not None}
        if len(ids) < len(rows):
            ids |= cls.ids(set(rows) - set(ids))
        return ids

    @classmethod
    def ids(cls, hashes: Iterable[str]) -> dict[str, int]:
        """Ids by content hash of existing snapshots."""
        return dict(
            cls.objects.filter(content_hash__in=set(hashes)).values_list(
                "content_hash", "id"
            )
        )

    @classmethod
    def packed(cls, ids: Iterable[int]) -> dict[int, tuple[bytes, str]]:
        """(compressed data, format) by id: baselines a check compares with."""
        return {
            pk: (bytes(data), source_format)
            for pk, data, source_format in cls.objects.filter(
                pk__in=set(ids)
            ).values_list("id", "data", "format")
        }

    @property
    def source(self) -> str:
        """The stored text as it is (see `format`)."""
        return unpack(bytes(self.data))

    @property
    def text(self) -> str:
        """The page's Markdown. Raises checks.extract.ExtractionError when an
        HTML source cannot be converted."""
        return markdown_of(self.format, self.source)


class Capture(models.Model):
    """A screenshot or a PDF the browser took, stored once per content (by
    SHA-256) in its own compressed format (PNG, JPEG, PDF), served through
    signed, expiring links (checks.captures)."""

    content_hash = models.CharField(max_length=64)
    media_type = models.CharField(max_length=32)
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["content_hash"], name="one_capture_per_content"
            )
        ]

    def __str__(self) -> str:
        return f"{self.media_type} {self.content_hash[:12]} ({self.size} bytes)"

    @classmethod
    def store_many(cls, shots: Iterable[Any]) -> dict[str, int]:
        """Ids by content hash of these Shots (checks.browser.result), inserted
        where missing (see Snapshot.store_many)."""
        rows = {shot.digest: shot for shot in shots}
        if not rows:
            return {}
        captures = cls.objects.bulk_create(
            [
                cls(
                    content_hash=digest,
                    media_type=shot.media_type,
                    data=shot.data,
                    size=len(shot.data),
                )
                for digest, shot in rows.items()
            ],
            update_conflicts=True,
            unique_fields=["content_hash"],
            update_fields=["size"],
        )
        ids = {c.content_hash: c.pk for c in captures if c.pk is not None}
        missing = set(rows) - set(ids)
        if missing:
            ids |= dict(
                cls.objects.filter(content_hash__in=missing).values_list(
                    "content_hash", "id"
                )
            )
        return ids


class PageState(models.Model):
    """The baseline of one URL of one target: the last good content that the
    next check compares against. Never deleted by retention."""

    class Presence(models.TextChoices):
        ACTIVE = "active"
        REMOVED = "removed"

    # No index of its own: one_state_per_page starts with the monitor.
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="page_states", db_index=False
    )
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
    # When this content may be served again for scrapeOptions.maxAge/minAge;
    # null when it was fetched with storeInCache: false (checks.runner).
    cached_at = models.DateTimeField(null=True, blank=True)
    # Page metadata of that fetch (title, statusCode...), replayed on a cache hit.
    metadata = models.JSONField(default=dict, blank=True)
    # What lets the next check skip work (checks.pages): the hash of the body
    # as fetched and of the scrapeOptions it was extracted with (the same
    # bytes under the same options are never extracted again), and the
    # server's validators for a conditional request (304: no body at all).
    body_hash = models.CharField(max_length=64, blank=True)
    options_hash = models.CharField(max_length=64, blank=True)
    etag = models.CharField(max_length=512, blank=True)
    last_modified = models.CharField(max_length=64, blank=True)
    # What the model made of this content (checks.ai.stage), reused while the
    # page's text stays the same: {"json": {"key", "value"}, "summary": {...}},
    # each keyed by what was asked (schema and prompt).
    derived = models.JSONField(default=dict, blank=True)
    # "browser" once a plain fetch of this page was found built by scripts
    # (checks.browser.detect): later checks go straight to the browser.
    fetcher = models.CharField(max_length=8, blank=True)
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

    UPSERT_FIELDS = (
        "url", "snapshot", "normalized_hash", "scrape_id", "presence",
        "fetched_at", "cached_at", "metadata", "body_hash", "options_hash",
        "etag", "last_modified", "derived", "fetcher", "updated_at",
    )  # fmt: skip

    @classmethod
    def upsert(cls, states: list[PageState]) -> None:
        """Insert these baselines, or update the existing row of each page
        (monitor, target_id, url_hash): one INSERT ... ON CONFLICT DO UPDATE."""
        cls.objects.bulk_create(
            states,
            update_conflicts=True,
            unique_fields=["monitor", "target_id", "url_hash"],
            update_fields=cls.UPSERT_FIELDS,
        )

    @property
    def has_baseline(self) -> bool:
        """Content the next good fetch is compared with."""
        return self.presence == self.Presence.ACTIVE and self.snapshot_id is not None

    @property
    def is_removed(self) -> bool:
        """Reported removed by an earlier check and not seen since."""
        return self.presence == self.Presence.REMOVED

    @property
    def is_cacheable(self) -> bool:
        """May answer scrapeOptions.maxAge/minAge."""
        return self.has_baseline and self.cached_at is not None


class PageResultQuerySet(models.QuerySet["PageResult"]):
    def changes_first(self) -> PageResultQuerySet:
        """Changed pages first, then new, removed, failed and unchanged ones,
        each in the order they were checked."""
        order = Case(
            *(
                When(status=status, then=Value(rank))
                for rank, status in enumerate(CHANGES_FIRST)
            ),
            default=Value(len(CHANGES_FIRST)),
            output_field=models.IntegerField(),
        )
        return self.order_by(order, "created_at", "id")

    def with_last_titles(self) -> PageResultQuerySet:
        """`last_title` on removed pages: the title the page had when it was
        last there, kept on its baseline, since what answers now (a 404, or
        nothing) has none."""
        state_title = PageState.objects.filter(
            monitor_id=OuterRef("check_run__monitor_id"),
            target_id=OuterRef("target_id"),
            url=OuterRef("url"),
        ).values(title=KT("metadata__title"))[:1]
        return self.annotate(
            last_title=Case(
                When(status=PageResult.Status.REMOVED, then=Subquery(state_title)),
                default=Value(None),
                output_field=models.TextField(null=True),
            )
        )

    def linked_but_gone(self) -> dict[str, int]:
        """Per target id: removed pages that a crawl still found a link to
        (they answered 404 or 410), which it counts among the pages found."""
        rows = (
            self.filter(status=PageResult.Status.REMOVED, status_code__isnull=False)
            .order_by()
            .values_list("target_id")
            .annotate(n=models.Count("id"))
        )
        return {str(target_id): n for target_id, n in rows}

    def outcome_counts(self) -> tuple[Counter[str], Counter[str]]:
        """(pages by status, search results by searchStatus) in one query:
        a search result is counted only under its own outcome."""
        pages: Counter[str] = Counter()
        found: Counter[str] = Counter()
        rows = (
            self.order_by()
            .values_list("status", KT("metadata__searchStatus"))
            .annotate(n=models.Count("id"))
        )
        for status, search_status, n in rows:
            if search_status:
                found[search_status] += n
            else:
                pages[status] += n
        return pages, found

    def meaningful_changes(self) -> PageResultQuerySet:
        """Changed pages, and new search matches, the judge called meaningful:
        what the dashboard calls a meaningful change. A change without a
        verdict is not one, though notifications still treat it as one
        (checks.notify.emails)."""
        return self.filter(
            status__in=(PageResult.Status.CHANGED, PageResult.Status.NEW),
            verdict=PageResult.Verdict.MEANINGFUL,
        )

    def unjudged_changes(self) -> PageResultQuerySet:
        """Changed pages without a verdict: the judge failed open, or did not
        run (no goal then, or judging off)."""
        return self.filter(status=PageResult.Status.CHANGED).exclude(
            verdict__in=(PageResult.Verdict.MEANINGFUL, PageResult.Verdict.NOISE)
        )


def _as_derived(diff: dict[str, Any] | None) -> dict[str, Any] | None:
    """A diff stored before diffs were packed, answered as a packed one is: its
    parse-diff AST derived from its text again, key order and all (PostgreSQL
    keeps JSON objects with their keys reordered)."""
    if not isinstance(diff, dict) or not isinstance(diff.get("text"), str):
        return diff
    found = diff.get("json")
    if not (isinstance(found, dict) and "files" in found):
        return diff
    text = diff["text"]
    rest = {k: v for k, v in diff.items() if k not in ("text", "json")}
    return {"text": text, "json": diff_ast(text), **rest}


class PageResult(models.Model):
    """One page's outcome in one check (MonitorCheckPage on the wire)."""

    class Status(models.TextChoices):
        SAME = "same"
        CHANGED = "changed"
        NEW = "new"
        REMOVED = "removed"
        ERROR = "error"

    # What a page that is gone answers, as Firecrawl does: `removed` once, then
    # `same` while it stays gone (checks.pages).
    GONE_STATUS_CODES = frozenset({404, 410})

    class Verdict(models.TextChoices):
        """What the goal judge made of a changed page (checks.ai.judge)."""

        NONE = "", "judge did not run"
        MEANINGFUL = "meaningful", "meaningful"
        NOISE = "noise", "not meaningful"
        # Failed open (no model, an error, no usable answer): the judgment
        # says meaningful with low confidence, and it is no verdict.
        NOT_JUDGED = "not_judged", "not judged"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: page_check_status_idx starts with the check.
    check_run = models.ForeignKey(
        Check, on_delete=models.CASCADE, related_name="pages", db_index=False
    )
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
    # What kind of failure `error` is, for code and plain words to go by; ""
    # on pages without an error and on rows written before kinds existed.
    error_kind = models.CharField(
        max_length=32, blank=True, default="", choices=ErrorKind.choices()
    )
    metadata = models.JSONField(default=dict, blank=True)
    # The diff ({"text": unified diff, "json": parse-diff AST or JSON mode's
    # field diff}; `diff` below) of a changed page, compressed, the AST left
    # to be derived from the text: about the size of a compressed snapshot.
    packed_diff = models.BinaryField(null=True, blank=True)
    # Rows written before diffs were packed keep theirs here, read as they are.
    stored_diff = models.JSONField(null=True, blank=True, db_column="diff")
    judgment = models.JSONField(null=True, blank=True)
    verdict = models.CharField(
        max_length=16, choices=Verdict.choices, default=Verdict.NONE, blank=True
    )
    # JSON extraction monitoring: the page's full extraction (snapshot.json).
    extraction = models.JSONField(null=True, blank=True)
    # The `summary` format: a short summary of the page by the model.
    summary = models.TextField(null=True, blank=True)
    # Screenshots and PDFs of this result (its metadata names them by hash):
    # what keeps them from retention's purge of unreferenced captures.
    captures = models.ManyToManyField(Capture, related_name="pages", blank=True)
    # How the screenshot differs from the previous one (the changed places as
    # boxes, how much they cover, and the two captures compared), kept the
    # first time it is shown (checks.captures.visual_change_of).
    visual_change = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PageResultQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["check_run", "status"], name="page_check_status_idx"),
            models.Index(
                fields=["check_run", "created_at"], name="page_check_order_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url}: {self.status}"

    def get_absolute_url(self) -> str:
        check = self.check_run
        return f"/monitors/{check.monitor_id}/checks/{check.pk}/pages/{self.pk}/"

    @classmethod
    def says_still_gone(cls, status: str, status_code: int | None) -> bool:
        """Whether a result with this status and HTTP status is a page that was
        reported removed before and still answers 404/410: `same` on the
        wire, since nothing changed, but not an unchanged page to a reader."""
        return status == cls.Status.SAME and status_code in cls.GONE_STATUS_CODES

    @property
    def is_still_gone(self) -> bool:
        return self.says_still_gone(self.status, self.status_code)

    @property
    def diff(self) -> dict[str, Any] | None:
        """The page's diff, as the API and messages show it; None unless the
        page changed."""
        packed = self.packed_diff
        if packed is None:
            return _as_derived(self.stored_diff)
        cached = self.__dict__.get("_unpacked")
        if cached is None or cached[0] is not packed:
            snapshots = {}
            if packed_against(bytes(packed)):
                ids = (self.previous_snapshot_id, self.current_snapshot_id)
                snapshots = Snapshot.packed(pk for pk in ids if pk)
            cached = (packed, self._unpacked_diff(snapshots))
            self.__dict__["_unpacked"] = cached
        return cached[1]

    @diff.setter
    def diff(self, value: dict[str, Any] | None) -> None:
        self.packed_diff, self.stored_diff = pack_diff(value), None

    def set_diff(self, value: dict[str, Any] | None, reference: bytes | None) -> None:
        """The diff, packed against the two snapshots it compares
        (checks.content.diff_reference) when `reference` is given."""
        self.packed_diff, self.stored_diff = pack_diff(value, reference), None
        self.__dict__["_unpacked"] = (self.packed_diff, value)

    @classmethod
    def with_diffs(cls, pages: Sequence[PageResult]) -> Sequence[PageResult]:
        """`pages` with their diffs unpacked, the snapshots their diffs were
        packed against read in one query."""
        ids = {
            pk
            for page in pages
            if page.packed_diff is not None and packed_against(bytes(page.packed_diff))
            for pk in (page.previous_snapshot_id, page.current_snapshot_id)
            if pk
        }
        snapshots = Snapshot.packed(ids) if ids else {}
        for page in pages:
            if page.packed_diff is not None:
                page.__dict__["_unpacked"] = (
                    page.packed_diff,
                    page._unpacked_diff(snapshots),
                )
        return pages

    def _unpacked_diff(
        self, snapshots: dict[int, tuple[bytes, str]]
    ) -> dict[str, Any] | None:
        packed = bytes(self.packed_diff or b"")
        if not packed_against(packed):
            return unpack_diff(packed)

        def text(pk: int | None) -> str:
            try:
                return unpack(snapshots[pk][0]) if pk in snapshots else ""
            except ValueError:
                return ""

        reference = diff_reference(
            text(self.previous_snapshot_id), text(self.current_snapshot_id)
        )
        try:
            return unpack_diff(packed, reference)
        except ValueError:
            return None  # a snapshot it was packed against is gone, and it too

    @property
    def is_meaningful(self) -> bool | None:
        """isMeaningful on the wire: set only when the judge ran on a changed
        page. Not judged counts as meaningful (the judge fails open)."""
        if self.status != self.Status.CHANGED or not self.judgment:
            return None
        return bool(self.judgment.get("meaningful"))

    @property
    def counts_as_meaningful(self) -> bool:
        """A change that matters to a reader (the feeds' mark), one page's
        share of CheckQuerySet.with_changes_that_matter: the judge called it
        meaningful, or nobody judged it -- judging is off for its monitor, or
        the judge failed open, as is_meaningful does. Only a change judged
        noise does not."""
        return self.status == self.Status.CHANGED and self.is_meaningful is not False

    @property
    def is_judged(self) -> bool:
        """A real verdict, not the fail-open one ("not judged")."""
        return self.verdict in (self.Verdict.MEANINGFUL, self.Verdict.NOISE)

    @property
    def field_changes(self) -> dict[str, Any]:
        """JSON mode's field diff ({path: {previous, current}}), {} otherwise
        (the Markdown diff's "json" is a parse-diff AST, not fields)."""
        fields = (self.diff or {}).get("json") if isinstance(self.diff, dict) else None
        if not isinstance(fields, dict) or "files" in fields:
            return {}
        return fields

    @property
    def screenshot(self) -> str | None:
        """The content hash of this result's screenshot (the format's)."""
        digest = (self.metadata or {}).get("screenshot")
        return digest if isinstance(digest, str) else None

    def previous_screenshot(self) -> str | None:
        """The screenshot of the latest earlier result of this page that has
        one: what the visual change view compares with."""
        earlier = (
            PageResult.objects.filter(
                check_run__monitor_id=self.check_run.monitor_id,
                target_id=self.target_id,
                url=self.url,
                created_at__lt=self.created_at,
                metadata__has_key="screenshot",
            )
            .order_by("-created_at")
            .values_list("metadata__screenshot", flat=True)
            .first()
        )
        return earlier if isinstance(earlier, str) else None


# --- Notification outbox ------------------------------------------------------
# Written by checks.notify.deliveries in the same transaction as the event it
# announces, sent after commit by checks.notify.tasks, swept again while pending.


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
        Check,
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
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Last time a task for this row was put on the broker; the sweeper queues
    # it again when it is still due long after (the message was lost).
    queued_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        indexes = [
            # Used by checks.notify.deliveries.sweep (due rows, stale claims):
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
            # Used by checks.notify.deliveries.refresh_notification_status.
            models.Index(fields=["check_run", "kind"], name="delivery_check_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.destination} ({self.status})"

    @property
    def destination(self) -> str:
        """Where this went: the monitor's own webhook and e-mail name the URL
        or address of this row, a channel its name."""
        if self.url or self.email or not self.channel_id:
            return self.url or self.email
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


class Heartbeat(models.Model):
    """When a part of the service last showed it was alive, for /healthz and
    /metrics: the workers serving the check queue, and the scheduler's
    dispatch tick. One row per part, overwritten."""

    WORKER = "worker"
    SCHEDULER = "scheduler"

    name = models.CharField(max_length=32, primary_key=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.seen_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def beat(cls, name: str, now: datetime) -> None:
        cls.objects.update_or_create(name=name, defaults={"seen_at": now})

    @classmethod
    def last_seen(cls) -> dict[str, datetime]:
        return dict(cls.objects.values_list("name", "seen_at"))
