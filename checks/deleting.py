"""Deleting monitors, teams and channels for good, with everything they recorded: the
admin's delete (the dashboard and the API only mark a monitor deleted, with
soft_delete_monitor).

Django's delete() reads into Python every row it cascades to that it cannot
delete in one statement, and page results and deliveries are such rows (their
links to captures and their attempts keep them off its fast path): a monitor
with 200 checks of 500 pages took seconds to delete, past the web server's
time-out for a longer history. So the long tables go first, a few statements
each (CheckQuerySet.discard), and delete() then takes what is left: a handful
of rows per monitor, and the relations it keeps itself (the activity log's
entries let go of the monitor and keep its name, channel links).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from checks import storage
from checks.models import Check, Delivery, PageResult
from monitors.models import Channel, Monitor, MonitorChannel, Team

# Rows deleted per transaction, so locks stay short and a huge backlog is worked
# off over several runs instead of one long transaction.
BATCH_SIZE = 500
MAX_BATCHES_PER_RUN = 200


def discard_pages(
    pages: QuerySet[PageResult],
    *,
    size: int | None = None,
    batches: int | None = MAX_BATCHES_PER_RUN,
    hand_over: bool = True,
) -> bool:
    """Delete `pages` `size` (BATCH_SIZE) a transaction (locks held for a
    moment, never for a whole history), at most `batches` transactions
    (None: until none is left); True when none is left. `hand_over` keeps,
    for the pages that stay, the screenshots they are compared with
    (retention's case: nothing stays when a monitor goes)."""
    size = size or BATCH_SIZE
    done = 0
    while batches is None or done < batches:
        # Unordered: the first BATCH_SIZE found, not a sort of them all.
        ids = list(pages.order_by().values_list("pk", flat=True)[:size])
        if not ids:
            return True
        if hand_over:
            # Before, not inside, the delete's transaction: a lookup per page
            # with screenshots, and what it keeps is kept whatever follows.
            PageResult.objects.filter(pk__in=ids).hand_over_screenshots()
        with transaction.atomic():
            PageResult.objects.filter(pk__in=ids).discard()
        done += 1
    return not pages.exists()


def soft_delete_monitor(monitor: Monitor, now: datetime) -> None:
    """The dashboard's and the API's delete: the monitor is marked deleted and
    its history kept for its retention days, now counted as a deleted
    monitor's in its team's storage figure, which is marked stale."""
    monitor.soft_delete(now)
    storage.forget_team_usage([monitor.team_id])


def soft_delete_monitors(monitors: QuerySet[Monitor], now: datetime) -> list[Monitor]:
    """soft_delete_monitor for many at once (the monitor list's "Delete"),
    in one update; the ones it deleted."""
    deleted = monitors.soft_delete(now)  # type: ignore[attr-defined]
    storage.forget_team_usage(sorted({m.team_id for m in deleted}))
    return deleted


def delete_history(monitors: QuerySet[Monitor]) -> None:
    """The first half of the admin's delete (delete_for_good): the monitors'
    page results, then their checks, BATCH_SIZE a transaction each. Their
    teams' storage figures are marked stale even when it fails part way:
    the batches that went are gone for good."""
    rows = list(monitors.values_list("pk", "team_id"))
    ids = [pk for pk, _ in rows]
    checks = Check.objects.filter(monitor__in=ids)
    try:
        discard_pages(
            PageResult.objects.filter(check_run__monitor__in=ids),
            batches=None,
            hand_over=False,
        )
        while pks := list(checks.order_by().values_list("pk", flat=True)[:BATCH_SIZE]):
            Check.objects.filter(pk__in=pks).discard()
    finally:
        storage.forget_team_usage(team_id for _, team_id in rows)


def delete_for_good(monitors: QuerySet[Monitor], rows: Callable[[], Any]) -> None:
    """The admin's delete of monitors or of whole teams: the monitors'
    history first, a batch a transaction (in one transaction a monitor with
    100,000 page results held its locks, and its checks' workers and the
    scheduler, for the whole delete); then `rows()`, the monitors or teams
    themselves with what is left and their log entries, in one transaction.
    Before, not after: deleting the rows cascades to the checks, which would
    all go in that one transaction again. A failure part way leaves the rows
    whole and unlogged, less some history, as a retention run cut short
    does; deleting them again takes the rest."""
    delete_history(monitors)
    with transaction.atomic():
        rows()


def delete_monitors(monitors: QuerySet[Monitor]) -> None:
    with transaction.atomic():
        rows = list(monitors.values_list("pk", "team_id"))
        ids = [pk for pk, _ in rows]
        Check.objects.filter(monitor__in=ids).discard()
        # A test message or a consent e-mail belongs to no check.
        Delivery.objects.filter(monitor__in=ids).discard()
        Monitor.objects.filter(pk__in=ids).delete()
        storage.forget_team_usage(team_id for _, team_id in rows)


def delete_teams(teams: QuerySet[Team]) -> None:
    with transaction.atomic():
        ids = list(teams.values_list("pk", flat=True))
        delete_monitors(Monitor.objects.filter(team__in=ids))
        # A digest speaks of many monitors and belongs to none of them.
        Delivery.objects.filter(channel__team__in=ids).discard()
        Team.objects.filter(pk__in=ids).delete()


def delete_channels(channels: QuerySet[Channel]) -> None:
    """The channels, their deliveries, and their place in every monitor that
    sent to them: those monitors' `channels` change, so their updatedAt
    moves (a sync by updatedSince sees them)."""
    with transaction.atomic():
        ids = list(channels.values_list("pk", flat=True))
        linked = MonitorChannel.objects.filter(channel__in=ids).values("monitor_id")
        Monitor.objects.filter(pk__in=linked).update(updated_at=timezone.now())
        Delivery.objects.filter(channel__in=ids).discard()
        Channel.objects.filter(pk__in=ids).delete()
