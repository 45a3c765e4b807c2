"""Prometheus metrics (GET /metrics), computed from the database at scrape
time: every web process on every machine answers the same, with nothing to
share between them, and a restart resets nothing. Counters count rows, so
the retention purge lowers them, which Prometheus's rate() reads as a reset.
Queue depths come from the broker."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from itertools import product

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, Q, Sum
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from redis.exceptions import RedisError

from checks import health, runner, storage
from checks.models import AIUse, Check, Delivery, Heartbeat, PageResult, SearchRun
from checks.notify import kinds
from monitors.models import Monitor, Team

logger = logging.getLogger(__name__)

CHECK_DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800)
QUEUE_WAIT_BUCKETS = (0.1, 0.5, 1, 5, 15, 60, 300, 900)


class DatabaseCollector(Collector):
    def __init__(self, now: datetime) -> None:
        self.now = now

    def collect(self) -> Iterator[Metric]:
        yield from self._checks()
        yield from self._pages()
        yield self._counter(
            "pagewatch_deliveries",
            "Notification deliveries, by kind and outcome",
            ["kind", "outcome"],
            Delivery.objects.values_list("kind", "status").annotate(n=Count("pk")),
            product(
                [kind.name for kind in kinds.own_kinds() + kinds.all_kinds()],
                Delivery.Status.values,
            ),
        )
        yield from self._model_calls()
        yield from self._scheduler()
        yield from self._storage()
        yield from self._queues()

    def _counter(
        self,
        name: str,
        documentation: str,
        labels: list[str],
        rows: object,
        known: Iterable[tuple[str, ...]],
    ) -> CounterMetricFamily:
        # Every known combination is rendered, at 0 until a row has it:
        # Prometheus sees no increase() in a series whose first sample is
        # already 1, so an alert on the first failure needs the series before.
        counts = dict.fromkeys(known, 0)
        for *values, count in rows:
            counts[tuple(str(v) for v in values)] = count
        family = CounterMetricFamily(name, documentation, labels=labels)
        for values, count in counts.items():
            family.add_metric(list(values), count)
        return family

    def _pages(self) -> Iterator[Metric]:
        # One pass over the page results for both families: by status, and
        # the changed ones by verdict.
        rows = list(
            PageResult.objects.values_list("status", "verdict")
            .annotate(n=Count("pk"))
            .order_by()
        )
        by_status: dict[str, int] = {}
        for status, _, n in rows:
            by_status[status] = by_status.get(status, 0) + n
        yield self._counter(
            "pagewatch_pages",
            "Page results recorded, by status",
            ["status"],
            by_status.items(),
            product(PageResult.Status.values),
        )
        # The label says what people were told: a change that matters, one
        # judged unimportant (noise), one the judge failed on (reported like
        # any change), or one no judge looked at (judging off: it counts).
        words = {
            PageResult.Verdict.MEANINGFUL: "meaningful",
            PageResult.Verdict.NOISE: "noise",
            PageResult.Verdict.NOT_JUDGED: "not_judged",
            PageResult.Verdict.NONE: "not_judging",
        }
        yield self._counter(
            "pagewatch_changes",
            "Changed pages, by what the goal judge made of them",
            ["verdict"],
            [
                (words.get(verdict, verdict), n)
                for status, verdict, n in rows
                if status == PageResult.Status.CHANGED
            ],
            [(word,) for word in words.values()],
        )

    def _checks(self) -> Iterator[Metric]:
        yield self._counter(
            "pagewatch_checks",
            "Checks, by status and trigger",
            ["status", "trigger"],
            Check.objects.values_list("status", "trigger").annotate(n=Count("pk")),
            product(Check.Status.values, Check.Trigger.values),
        )
        yield _histogram(
            "pagewatch_check_duration_seconds",
            "How long finished checks ran, start to finish",
            Check.objects.filter(finished_at__isnull=False, started_at__isnull=False),
            F("finished_at") - F("started_at"),
            CHECK_DURATION_BUCKETS,
        )
        yield _histogram(
            "pagewatch_check_queue_wait_seconds",
            "How long checks waited in the queue before a worker started them",
            Check.objects.filter(started_at__isnull=False),
            F("started_at") - F("created_at"),
            QUEUE_WAIT_BUCKETS,
        )

    def _model_calls(self) -> Iterator[Metric]:
        yield from self._ai_use()
        judged = PageResult.objects.exclude(verdict=PageResult.Verdict.NONE)
        yield _pair(
            "pagewatch_judge_calls",
            "Changed pages the goal judge was asked about",
            judged.count(),
            judged.filter(verdict=PageResult.Verdict.NOT_JUDGED).count(),
        )
        yield _pair(
            "pagewatch_search_calls",
            "Searches of search targets",
            SearchRun.objects.count(),
            SearchRun.objects.exclude(failure="").count(),
        )
        browser = CounterMetricFamily(
            "pagewatch_browser_pages", "Pages shown in the browser", labels=[]
        )
        browser.add_metric([], PageResult.objects.filter(**_BROWSER).count())
        yield browser
        crashes = CounterMetricFamily(
            "pagewatch_browser_failures",
            "Pages the browser could not show (unavailable, crashed)",
            labels=[],
        )
        crashes.add_metric([], PageResult.objects.filter(error_kind="browser").count())
        yield crashes

    def _ai_use(self) -> Iterator[Metric]:
        # One query over checks.models.AIUse: rows outlive checks (the month's
        # figures), so these fall only when a team is deleted.
        by_kind = AIUse.objects.by_kind()
        kinds = AIUse.Kind.values
        yield self._counter(
            "pagewatch_ai_tokens",
            "Tokens the AI model's answers reported, by kind of call and part"
            " (prompt: what it read; completion: what it wrote)",
            ["kind", "part"],
            [
                (kind, part, row[part])
                for kind, row in by_kind.items()
                for part in ("prompt", "completion")
            ],
            product(kinds, ("prompt", "completion")),
        )
        yield self._counter(
            "pagewatch_ai_requests",
            "Requests the AI model answered, by kind of call and whether the"
            " answer reported its tokens (some compatible servers do not)",
            ["kind", "tokens"],
            [
                (kind, told, n)
                for kind, row in by_kind.items()
                for told, n in (
                    ("reported", row["requests"] - row["unmeasured"]),
                    ("unreported", row["unmeasured"]),
                )
            ],
            product(kinds, ("reported", "unreported")),
        )

    def _scheduler(self) -> Iterator[Metric]:
        due = Monitor.objects.due(self.now).aggregate(
            n=Count("pk"), oldest=Min("next_run_at")
        )
        waiting = GaugeMetricFamily(
            "pagewatch_monitors_due_not_dispatched",
            "Active monitors whose next run has come but has no check yet",
        )
        waiting.add_metric([], due["n"])
        yield waiting
        lag = GaugeMetricFamily(
            "pagewatch_scheduler_lag_seconds",
            "How long the longest-waiting due monitor has waited (0: none waits)",
        )
        oldest = due["oldest"]
        lag.add_metric([], (self.now - oldest).total_seconds() if oldest else 0.0)
        yield lag
        seen = GaugeMetricFamily(
            "pagewatch_last_seen_seconds",
            "Seconds since each part last showed it was alive",
            labels=["part"],
        )
        for name, at in Heartbeat.last_seen().items():
            seen.add_metric([name], (self.now - at).total_seconds())
        yield seen

    def _storage(self) -> Iterator[Metric]:
        # Measuring a team reads every row of its history: a thousand teams
        # measured every 15 s in every web process would be most of the
        # database's work. A scrape reads only the figures last measured, one
        # query for the teams and one cache round trip for all of them, shared
        # by every process on every machine; the periodic measure-team-storage
        # task re-measures the stale ones, a few per run, and the team page its
        # own. A team never measured yet has no series until then.
        team_ids = Team.objects.values_list("pk", flat=True)
        try:
            measured = storage.measured_usage(team_ids)
        except (RedisError, OSError) as error:
            # Redis down is when the other series are wanted most.
            logger.warning(
                "Metrics: no team storage figures, the cache is unreachable: %s",
                error,
            )
            measured = {}
        history = GaugeMetricFamily(
            "pagewatch_team_history_bytes",
            "Bytes a team's history takes (checks.storage), by team id",
            labels=["team"],
        )
        deleted = GaugeMetricFamily(
            "pagewatch_team_deleted_history_bytes",
            "Of that, bytes of deleted monitors' history, kept for their"
            " retention days",
            labels=["team"],
        )
        at = GaugeMetricFamily(
            "pagewatch_team_history_measured_timestamp_seconds",
            "When each team's history was last measured (Unix time)",
            labels=["team"],
        )
        stale = GaugeMetricFamily(
            "pagewatch_team_history_stale",
            "1 while a team's history has changed since it was last measured"
            " (the figure served is then older than it)",
            labels=["team"],
        )
        for team_id, usage in sorted(measured.items()):
            history.add_metric([str(team_id)], usage.total)
            deleted.add_metric([str(team_id)], usage.deleted_bytes)
            at.add_metric([str(team_id)], usage.measured_at.timestamp())
            stale.add_metric([str(team_id)], int(usage.stale))
        yield from (history, deleted, at, stale)
        database = GaugeMetricFamily(
            "pagewatch_database_bytes", "Bytes the whole database takes on disk"
        )
        database.add_metric([], storage.database_bytes())
        yield database
        tables = GaugeMetricFamily(
            "pagewatch_database_table_bytes",
            "Bytes each history table takes with its indexes (PostgreSQL only)",
            labels=["table"],
        )
        for table, size in storage.table_bytes().items():
            tables.add_metric([table], size)
        yield tables

    def _queues(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "pagewatch_queue_depth", "Messages waiting on each queue", labels=["queue"]
        )
        # Asked first in one ping: kombu retries each queue for seconds, and
        # a scrape slower than Prometheus's time-out loses every series just
        # when the outage makes them wanted.
        error = health.broker_error()
        if error is not None:
            logger.warning(
                "Metrics: no queue depths, the broker is unreachable: %s", error
            )
            yield depth
            return
        for queue in settings.CELERY_TASK_QUEUES:
            waiting = runner.waiting_messages(queue.name)
            if waiting is not None:
                depth.add_metric([queue.name], waiting)
        yield depth


_BROWSER = {"metadata__fetchedWith": "browser"}


def _pair(name: str, documentation: str, calls: int, failures: int) -> Metric:
    family = CounterMetricFamily(name, documentation, labels=["outcome"])
    family.add_metric(["ok"], calls - failures)
    family.add_metric(["failed"], failures)
    return family


def _histogram(
    name: str,
    documentation: str,
    rows: object,
    length: object,
    buckets: tuple[float, ...],
) -> HistogramMetricFamily:
    """A histogram of `length` (a duration expression) over `rows`, counted
    in one query."""
    rows = rows.annotate(length=ExpressionWrapper(length, output_field=DurationField()))
    counts = rows.aggregate(
        total=Count("pk"),
        sum=Sum("length"),
        **{
            f"le{i}": Count("pk", filter=Q(length__lte=timedelta(seconds=bound)))
            for i, bound in enumerate(buckets)
        },
    )
    family = HistogramMetricFamily(name, documentation)
    family.add_metric(
        [],
        [(str(float(b)), counts[f"le{i}"]) for i, b in enumerate(buckets)]
        + [("+Inf", counts["total"])],
        sum_value=counts["sum"].total_seconds() if counts["sum"] else 0.0,
    )
    return family
