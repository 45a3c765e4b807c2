"""How much a team's or a monitor's history takes in the database.

Counted from the rows themselves: page results (their diffs, metadata,
judgments and extractions) and the snapshots they and the baselines refer to.
A snapshot shared by several monitors (the same content) counts for each.
Meant for people deciding on retention, so a close figure is enough; the
team's total is cached for a while, since it reads every row of its history.
The database's own size (`database_bytes`, `table_bytes`) is what the disk
holds, free pages and indexes included: what an operator alerts on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q, QuerySet, Sum, TextField
from django.db.models.functions import Cast, Coalesce, Length
from django.utils import timezone

from checks.models import Capture, Check, PageResult, PageState, Snapshot
from monitors.models import Monitor, Team

# How old a team's figure may be before the team page measures it again.
TEAM_CACHE_SECONDS = 600
_FRESH = timedelta(seconds=TEAM_CACHE_SECONDS)
_EPOCH = datetime.fromtimestamp(0, tz=UTC)
# How long a measured figure stays in the (shared) cache: far longer than it is
# fresh, so /metrics, which never measures, still has one for every team while
# the periodic measuring works its way round them.
TEAM_KEPT_SECONDS = 7 * 24 * 3600
# Teams measured per run of the periodic task, stalest first: each reads all of
# its team's history, so a run stays short whatever the number of teams.
TEAMS_MEASURED_PER_RUN = 20
# The tables history lives in, sized on PostgreSQL for /metrics.
HISTORY_MODELS = (Check, PageResult, Snapshot, Capture)


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
    measured_at: datetime
    # The team's history changed after it was measured (forget_team_usage):
    # the figure is kept, and served, until it is measured again.
    stale: bool = False

    def fresh(self, now: datetime) -> bool:
        return not self.stale and now - self.measured_at < _FRESH

    @property
    def due_since(self) -> datetime:
        """Its place in the periodic measuring's queue: a stale figure goes
        before every one merely old."""
        return _EPOCH if self.stale else self.measured_at


def _bytes_of(monitors: QuerySet[Monitor]) -> int:
    pages = PageResult.objects.filter(check_run__monitor__in=monitors)
    return results_bytes(pages) + snapshot_bytes(monitors)


def _key(team_id: int) -> str:
    return f"storage:team:{team_id}"


def _generation_key(team_id: int) -> str:
    # Counts the team's marks of staleness: a measurement writes its figure
    # only if none happened while it read the history.
    return f"storage:team:{team_id}:generation"


def _claim_key(team_id: int) -> str:
    return f"storage:measuring:{team_id}"


def measure_team(team_id: int, now: datetime) -> TeamUsage:
    """Reads every row of the team's history, and keeps the figure in the
    cache every web process and worker shares, unless the history was marked
    changed (forget_team_usage) meanwhile: what it read may be from before
    the change, so the figure stays marked stale, to be measured again. The
    check and the write are two cache round trips, not one: a change marked
    between them still loses its mark, a window of a moment instead of a
    whole measurement."""
    generation = cache.get(_generation_key(team_id), 0)
    monitors = Monitor.objects.filter(team_id=team_id)
    deleted = monitors.filter(deleted_at__isnull=False)
    usage = TeamUsage(
        _bytes_of(monitors), _bytes_of(deleted) if deleted.exists() else 0, now
    )
    if cache.get(_generation_key(team_id), 0) == generation:
        cache.set(
            _key(team_id),
            [usage.total, usage.deleted_bytes, now.timestamp()],
            TEAM_KEPT_SECONDS,
        )
    return usage


def measured_usage(team_ids: Iterable[int]) -> dict[int, TeamUsage]:
    """The last figure measured for each of these teams, however old, in one
    round trip to the cache; a team never measured (or measured before the
    figure carried its time) is left out."""
    keys = {_key(team_id): team_id for team_id in team_ids}
    found = {}
    for key, value in cache.get_many(list(keys)).items():
        if isinstance(value, list) and len(value) in (3, 4):
            total, deleted, at, *stale = value
            found[keys[key]] = TeamUsage(
                int(total),
                int(deleted),
                datetime.fromtimestamp(at, tz=UTC),
                stale=bool(stale and stale[0]),
            )
    return found


def team_usage(team: Team) -> TeamUsage:
    """Everything the team's monitors keep, and the part of it that belongs to
    deleted ones, measured at most TEAM_CACHE_SECONDS ago."""
    now = timezone.now()
    usage = measured_usage([team.pk]).get(team.pk)
    if usage is not None and usage.fresh(now):
        return usage
    return measure_team(team.pk, now)


def forget_team_usage(team_ids: Iterable[int]) -> None:
    """These teams' history changed (a monitor deleted, history purged): once
    that is committed their figure is marked stale, kept with the time it
    was measured, so /metrics goes on serving the last one (a series that
    vanished would set off absent() alerts, a time of 0 those on its age)
    and says it is stale, the team page measures again, and the periodic
    measuring takes them right after the teams never measured. Not before the
    commit, or a page read meanwhile would measure the old history again for
    TEAM_CACHE_SECONDS; a measurement under way meanwhile keeps its figure
    to itself (measure_team)."""
    ids = sorted(set(team_ids))
    if ids:
        transaction.on_commit(lambda: _mark_stale(ids))


def _mark_stale(team_ids: list[int]) -> None:
    for team_id in team_ids:
        cache.add(_generation_key(team_id), 0, TEAM_KEPT_SECONDS)
        cache.incr(_generation_key(team_id))
    known = cache.get_many([_key(team_id) for team_id in team_ids])
    cache.set_many(
        {
            key: [*value[:3], 1]
            for key, value in known.items()
            if isinstance(value, list) and len(value) in (3, 4)
        },
        TEAM_KEPT_SECONDS,
    )


def measure_stale_teams(now: datetime, limit: int = TEAMS_MEASURED_PER_RUN) -> int:
    """Measures the teams whose figure is missing, marked stale or older than
    TEAM_CACHE_SECONDS, never measured first, then the oldest, at most
    `limit` of them; returns how many. Runs may overlap (one is sent every
    minute and a big team takes longer): each claims a team before reading
    its history, and one finding a team claimed goes on to the next."""
    team_ids = list(Team.objects.values_list("pk", flat=True))
    known = measured_usage(team_ids)
    never = datetime.min.replace(tzinfo=UTC)
    stale = sorted(
        (known[team_id].due_since if team_id in known else never, team_id)
        for team_id in team_ids
        if team_id not in known or not known[team_id].fresh(now)
    )
    measured = 0
    for _, team_id in stale:
        if measured == limit:
            break
        # Held at most TEAM_CACHE_SECONDS should a worker die mid-way.
        if not cache.add(_claim_key(team_id), 1, TEAM_CACHE_SECONDS):
            continue
        try:
            measure_team(team_id, now)
        finally:
            cache.delete(_claim_key(team_id))
        measured += 1
    return measured


def database_bytes() -> int:
    """What the whole database takes on disk (SQLite: its pages, free ones
    included, since the file does not shrink without VACUUM)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_database_size(current_database())")
        else:
            cursor.execute(
                "SELECT page_count * page_size"
                " FROM pragma_page_count(), pragma_page_size()"
            )
        return int(cursor.fetchone()[0])


def table_bytes() -> dict[str, int]:
    """What each history table takes with its indexes and TOAST, in one query
    on PostgreSQL; nothing on SQLite, which cannot tell it cheaply."""
    if connection.vendor != "postgresql":
        return {}
    tables = [model._meta.db_table for model in HISTORY_MODELS]
    sizes = ", ".join(["pg_total_relation_size(%s::regclass)"] * len(tables))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sizes}", tables)
        return dict(zip(tables, map(int, cursor.fetchone()), strict=True))
