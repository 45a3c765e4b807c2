"""How much a team's or a monitor's history takes in the database.

Counted from the rows themselves: page results (their diffs, metadata,
judgments and extractions) and the snapshots they and the baselines refer to.
A snapshot shared by several monitors (the same content) counts for each.
Meant for people deciding on retention, so a close figure is enough; the
team's total is cached for a while, since it reads every row of its history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q, QuerySet, Sum, TextField
from django.db.models.functions import Cast, Coalesce, Length

from checks.models import PageResult, PageState, Snapshot
from monitors.models import Monitor, Team

TEAM_CACHE_SECONDS = 600


@dataclass(frozen=True)
class Usage:
    monitor: Monitor
    results_bytes: int
    snapshot_bytes: int

    @property
    def total(self) -> int:
        return self.results_bytes + self.snapshot_bytes


def _sum(queryset: QuerySet, *expressions) -> int:  # type: ignore[type-arg]
    total = 0
    for index, expression in enumerate(expressions):
        value = queryset.aggregate(**{f"v{index}": Sum(Coalesce(expression, 0))})
        total += int(value[f"v{index}"] or 0)
    return total


def _json_length(field: str) -> Length:
    return Length(Cast(field, TextField()))


def results_bytes(pages: QuerySet[PageResult]) -> int:
    return _sum(
        pages,
        Length("packed_diff"),
        _json_length("stored_diff"),
        _json_length("metadata"),
        _json_length("judgment"),
        _json_length("extraction"),
    )


def snapshot_bytes(monitors: QuerySet[Monitor]) -> int:
    pages = PageResult.objects.filter(check_run__monitor__in=monitors)
    referred = (
        Q(pk__in=pages.values("current_snapshot"))
        | Q(pk__in=pages.values("previous_snapshot"))
        | Q(pk__in=PageState.objects.filter(monitor__in=monitors).values("snapshot"))
    )
    return _sum(Snapshot.objects.filter(referred), Length("data"))


def usage_of(monitor: Monitor) -> Usage:
    monitors = Monitor.objects.filter(pk=monitor.pk)
    pages = PageResult.objects.filter(check_run__monitor=monitor)
    return Usage(monitor, results_bytes(pages), snapshot_bytes(monitors))


def biggest_monitors(monitors: QuerySet[Monitor], top: int) -> list[Usage]:
    """The `top` monitors holding the most, biggest first."""
    usages = [usage_of(monitor) for monitor in monitors.order_by("pk")]
    return sorted(usages, key=lambda usage: usage.total, reverse=True)[:top]


@dataclass(frozen=True)
class TeamUsage:
    total: int
    # What the team's deleted monitors still hold: it goes only when each
    # has been deleted for its retentionDays (checks.retention).
    deleted_bytes: int


def _bytes_of(monitors: QuerySet[Monitor]) -> int:
    pages = PageResult.objects.filter(check_run__monitor__in=monitors)
    return results_bytes(pages) + snapshot_bytes(monitors)


def team_usage(team: Team) -> TeamUsage:
    """Everything the team's monitors keep, and the part of it that belongs to
    deleted ones (cached TEAM_CACHE_SECONDS)."""
    key = _team_key(team.pk)
    cached = cache.get(key)
    if isinstance(cached, list) and len(cached) == 2:
        return TeamUsage(int(cached[0]), int(cached[1]))
    monitors = Monitor.objects.filter(team=team)
    deleted = monitors.filter(deleted_at__isnull=False)
    usage = TeamUsage(
        _bytes_of(monitors), _bytes_of(deleted) if deleted.exists() else 0
    )
    cache.set(key, [usage.total, usage.deleted_bytes], TEAM_CACHE_SECONDS)
    return usage


def _team_key(team_id: Any) -> str:
    return f"storage:team:{team_id}"


def forget_team_usage(team_ids: Iterable[Any]) -> None:
    """These teams' history changed (a monitor deleted, history purged): their
    cached figure goes once that is committed. Not before, or a team page read
    meanwhile would cache the old figure again for TEAM_CACHE_SECONDS."""
    keys = [_team_key(team_id) for team_id in set(team_ids)]
    if keys:
        transaction.on_commit(lambda: cache.delete_many(keys))
