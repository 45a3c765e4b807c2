"""Retention: forget checks older than their monitor's retentionDays.

`purge_expired(now)` runs hourly. It deletes finished checks created before
now - retentionDays (their page results first, a batch a transaction), then
snapshots, screenshots and PDFs no longer referenced by anything, activity
log entries older than their team keeps them (Team.activity_retention_days),
messages that belong to no check (digests, test messages, consent e-mails)
as long, the AI model's use older than this month and the twelve before
(AI_USE_MONTHS_KEPT: a year back to compare with), and dashboard sign-ins
past their age (Django keeps those rows until told to clear them). A page's
baseline (PageState.snapshot) is never deleted while its monitor lives: it
is what the next check compares against, however old it is. A monitor
deleted (by the dashboard or the API, which only mark it) goes for good once
it has been deleted for its retentionDays, its history first as expired
checks go, then it with its baselines: nothing else would ever remove what
it left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.deletion import ProtectedError
from django.db.models.functions import Coalesce

from checks import storage
from checks.deleting import (
    BATCH_SIZE,
    MAX_BATCHES_PER_RUN,
    delete_monitors,
    discard_pages,
)
from checks.models import (
    AIUse,
    Capture,
    Check,
    Delivery,
    PageResult,
    PageState,
    Snapshot,
    month_start,
)
from monitors.models import ImportRun, Monitor, MonitorChannel, Team
from teams.models import Activity

logger = logging.getLogger(__name__)

DELETED_MONITORS_PER_BATCH = 10
# A snapshot younger than this is never purged: a running check may have just
# stored it and not yet committed the page result that refers to it.
SNAPSHOT_GRACE = timedelta(hours=1)
# An import's preview and report (they hold the source's watches, snapshots
# included) are kept this long; the monitors it made stay, of course.
IMPORT_RUNS_KEPT = timedelta(days=7)
# The AI model's use is kept for this calendar month and as many before it.
AI_USE_MONTHS_KEPT = 12


@dataclass
class Purged:
    checks: int = 0
    snapshots: int = 0
    captures: int = 0
    activity: int = 0
    monitors: int = 0
    deliveries: int = 0
    ai_use: int = 0


def purge_expired(now: datetime) -> Purged:
    purged = Purged()
    retention_values = (
        Monitor.objects.order_by().values_list("retention_days", flat=True).distinct()
    )
    for days in sorted(set(retention_values)):
        purged.checks += _purge_checks(days, now - timedelta(days=days))
        purged.monitors += _purge_deleted_monitors(days, now - timedelta(days=days))
    before = now - SNAPSHOT_GRACE
    purged.snapshots = _purge_orphans(lambda: orphan_snapshots(before), "snapshot")
    purged.captures = _purge_orphans(lambda: orphan_captures(before), "capture")
    ImportRun.objects.ended_before(now - IMPORT_RUNS_KEPT).delete()
    activity_days = (
        Team.objects.order_by()
        .values_list("activity_retention_days", flat=True)
        .distinct()
    )
    for days in sorted(set(activity_days)):
        purged.activity += _purge_activity(days, now - timedelta(days=days))
        purged.deliveries += _purge_loose_deliveries(days, now - timedelta(days=days))
    purged.ai_use = _purge_ai_use(ai_use_kept_from(now))
    call_command("clearsessions")
    if any(vars(purged).values()):
        logger.info(
            "Retention purged %s checks, %s snapshots, %s screenshots or PDFs, "
            "%s activity entries, %s deleted monitors, %s messages of no check "
            "and %s rows of AI use",
            purged.checks,
            purged.snapshots,
            purged.captures,
            purged.activity,
            purged.monitors,
            purged.deliveries,
            purged.ai_use,
        )
    return purged


def expired_checks(days: int, cutoff: datetime) -> QuerySet[Check]:
    """Finished checks of monitors keeping `days` days, created before cutoff.
    In-flight checks are never purged, whatever their age, nor changes a
    digest of the monitor's has still to tell (a weekly digest of a monitor
    keeping 2 days): they wait for it. A digest tells a change by when its
    page was found, not when its check began, so a check that began before
    a digest's time and found pages after it waits for the next digest: it
    is measured by its newest page (page_check_order_idx finds it)."""
    newest_page = (
        PageResult.objects.filter(check_run=OuterRef("pk"))
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    untold = MonitorChannel.objects.filter(
        monitor=OuterRef("monitor_id"),
        channel__digest_since__lte=OuterRef("last_page_at"),
    ).exclude(channel__digest="")
    return (
        Check.objects.filter(
            monitor__retention_days=days,
            created_at__lt=cutoff,
            status__in=Check.FINISHED,
        )
        .alias(last_page_at=Coalesce(Subquery(newest_page), "created_at"))
        .exclude(Q(found_changes=True) & Exists(untold))
    )


def _in_batches(
    rows: QuerySet[Any],
    order: str,
    delete: Callable[[list[Any]], object],
    size: int = BATCH_SIZE,
) -> int:
    """Delete `rows` oldest (by `order`) first, `size` primary keys per call of
    `delete`, at most MAX_BATCHES_PER_RUN batches; returns how many went."""
    deleted = 0
    for _ in range(MAX_BATCHES_PER_RUN):
        ids = list(rows.order_by(order).values_list("pk", flat=True)[:size])
        if not ids:
            break
        delete(ids)
        deleted += len(ids)
    return deleted


def _purge_checks(days: int, cutoff: datetime) -> int:
    return _purge_history(expired_checks(days, cutoff))


def _purge_history(checks: QuerySet[Check]) -> int:
    """Delete `checks`, oldest first, and how many went. A crawl's check holds
    thousands of pages, so their pages go first, BATCH_SIZE a transaction
    (locks held for a moment, never for a whole batch of checks); then the
    checks, with what little else they hold (deliveries a statement each).
    Each run does at most MAX_BATCHES_PER_RUN transactions of pages; the next
    one goes on where it stopped."""
    teams = list(
        checks.order_by().values_list("monitor__team_id", flat=True).distinct()
    )
    try:
        return _purge_pages_then_checks(checks)
    finally:
        # However far this run got, these teams' storage figures are no
        # longer true: dropped once it is over, or a team page read meanwhile
        # would cache a figure between the two again.
        storage.forget_team_usage(teams)


def _purge_pages_then_checks(checks: QuerySet[Check]) -> int:
    pages = PageResult.objects.filter(check_run__in=checks.values("pk"))
    if not discard_pages(pages, size=BATCH_SIZE, batches=MAX_BATCHES_PER_RUN):
        return 0
    return _in_batches(
        checks, "created_at", lambda ids: Check.objects.filter(pk__in=ids).discard()
    )


def deleted_monitors_past_retention(days: int, cutoff: datetime) -> QuerySet[Monitor]:
    """Monitors keeping `days` days that were deleted before cutoff, with no
    check in flight (a stuck one is ended by the stale-check sweep first)."""
    return Monitor.objects.filter(retention_days=days, deleted_at__lt=cutoff).exclude(
        Exists(Check.objects.in_flight().filter(monitor=OuterRef("pk")))
    )


def _purge_deleted_monitors(days: int, cutoff: datetime) -> int:
    gone = deleted_monitors_past_retention(days, cutoff)
    _purge_history(Check.objects.filter(monitor__in=gone.values("pk")))
    if Check.objects.filter(monitor__in=gone.values("pk")).exists():
        return 0  # the next run goes on with their history
    # A few at a time: each may still hold a crawl's worth of baselines.
    return _in_batches(
        deleted_monitors_past_retention(days, cutoff),
        "deleted_at",
        lambda ids: delete_monitors(Monitor.objects.filter(pk__in=ids)),
        size=DELETED_MONITORS_PER_BATCH,
    )


def _purge_activity(days: int, cutoff: datetime) -> int:
    return _in_batches(
        Activity.objects.expired(days, cutoff),
        "at",
        lambda ids: Activity.objects.filter(pk__in=ids).delete(),
    )


def expired_loose_deliveries(days: int, cutoff: datetime) -> QuerySet[Delivery]:
    """Messages that belong to no check (digests, test messages, confirmation
    and "webhook turned off" e-mails), done with before cutoff, of teams
    keeping their activity log `days` days: a check's go with the check, but
    these went only with their channel, monitor or team."""
    team_keeps = Q(channel__team__activity_retention_days=days) | Q(
        channel__isnull=True, monitor__team__activity_retention_days=days
    )
    return Delivery.objects.filter(
        team_keeps,
        check_run__isnull=True,
        created_at__lt=cutoff,
        status__in=(
            Delivery.Status.DELIVERED,
            Delivery.Status.FAILED,
            Delivery.Status.CANCELLED,
        ),
    )


def _purge_loose_deliveries(days: int, cutoff: datetime) -> int:
    def delete(ids: list[Any]) -> None:
        with transaction.atomic():
            Delivery.objects.filter(pk__in=ids).discard()

    return _in_batches(expired_loose_deliveries(days, cutoff), "created_at", delete)


def ai_use_kept_from(now: datetime) -> datetime:
    """The first moment of the oldest month of AI use kept."""
    start = month_start(now)
    months = start.year * 12 + start.month - 1 - AI_USE_MONTHS_KEPT
    return start.replace(year=months // 12, month=months % 12 + 1)


def _purge_ai_use(cutoff: datetime) -> int:
    return _in_batches(
        AIUse.objects.filter(created_at__lt=cutoff),
        "created_at",
        lambda ids: AIUse.objects.filter(pk__in=ids).delete(),
    )


def orphan_snapshots(created_before: datetime) -> QuerySet[Snapshot]:
    """Snapshots that no baseline and no remaining page result refers to."""
    return Snapshot.objects.filter(created_at__lt=created_before).filter(
        ~Exists(PageState.objects.filter(snapshot=OuterRef("pk"))),
        ~Exists(PageResult.objects.filter(previous_snapshot=OuterRef("pk"))),
        ~Exists(PageResult.objects.filter(current_snapshot=OuterRef("pk"))),
    )


def _purge_orphans(orphans: Callable[[], QuerySet[Any]], what: str) -> int:
    """Delete what `orphans()` finds, a batch at a time. Each batch is
    re-checked and locked before its delete, skipping the rows a check holds:
    a check storing that content again locks them one by one as it goes, and
    a purge that waited for one while holding the rest of its batch could
    deadlock with it. A row skipped now is taken by a later run if it is
    still an orphan then. Should a check refer to one anyway, the delete
    fails, not the check."""
    deleted = 0
    for _ in range(MAX_BATCHES_PER_RUN):
        ids = list(orphans().order_by("pk").values_list("pk", flat=True)[:BATCH_SIZE])
        if not ids:
            break
        try:
            with transaction.atomic():
                free = (
                    orphans()
                    .filter(pk__in=ids)
                    .select_for_update(skip_locked=True, of=("self",))
                )
                count, _ = (
                    orphans()
                    .filter(pk__in=list(free.values_list("pk", flat=True)))
                    .delete()
                )
        except (IntegrityError, ProtectedError):
            logger.info("A %s became referenced while purging; next run retries", what)
            break
        if not count:
            break  # every one of them held by a check
        deleted += count
    return deleted


def orphan_captures(created_before: datetime) -> QuerySet[Capture]:
    """Screenshots and PDFs no remaining page result refers to."""
    return Capture.objects.filter(created_at__lt=created_before, pages__isnull=True)
