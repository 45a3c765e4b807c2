"""Benchmark 4: `dispatch_due_monitors(now)` with 10 000 due among 100 000.

Data (one scrape target per monitor, then ANALYZE): DUE active monitors whose
slot passed 10-20 minutes ago (past any spread delay), PAUSED paused ones, and
the rest active with their next run 5 minutes to 5 hours ahead, all on
`*/5 * * * *`. The due and paused monitors and 5 000 of the others are made with
bulk_create; the other 80 000 are copies of those 5 000 made inside the
database (see populate()).

* Baseline (due): the plain query for the same due set,
  `SELECT id FROM monitors_monitor WHERE status = 'active' AND deleted_at IS NULL
  AND next_run_at <= now` (the partial index's own predicate), all rows fetched.
* Drain: `dispatch_due_monitors(now)` called until it returns 0. One call stops
  at dispatch.MAX_PER_TICK checks, so 10 000 due take several beat ticks; each
  tick is timed. Enqueueing is real: Celery messages go to `make run`'s
  embedded Valkey (config/valkey.py) in the bench's temporary directory,
  nothing consumes them, and their count is checked against the checks created.
  The broker's share is measured apart: one more tick after a reset with
  `checks.dispatch.enqueue_many` (which the dispatcher calls once per batch)
  replaced by a no-op counter, and BROKER_PROBE `.delay()` calls on their own.
* Zero due: after the drain every monitor's next run is in the future; the same
  call then has nothing to do. Baseline (all): reading every monitor once
  (`SELECT id, next_run_at FROM monitors_monitor`), the cost a scheduler that
  scans the table would pay on every tick.
* EXPLAIN of the dispatcher's candidate query, with 10 000 due and with 0 due.

It runs in a child process of bench/run.py (`python -m bench.dispatchbench`,
which prints the result as JSON), set up without REDIS_URL so that Celery uses
an embedded Valkey of its own under PAGEWATCH_VAR_DIR, where the messages can
be counted, while the workers of the other benchmarks use Redis.
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis import Redis

TOTAL = 100_000
DUE = 10_000
PAUSED = 5_000
CRON = "*/5 * * * *"
TEMPLATES = 5_000  # later monitors made by bulk_create; copied up to TOTAL
MAX_TICKS = 12
BROKER_PROBE = 300


@dataclass
class DispatchResult:
    total: int
    due: int
    populate_s: float = 0.0
    baseline_due_s: float = 0.0
    baseline_all_s: float = 0.0
    drains: list[list[tuple[float, int]]] = field(default_factory=list)
    zero_due_s: float = 0.0
    messages: int = 0
    broker_per_message_s: float = 0.0
    noop_tick_s: float = 0.0  # one tick with enqueue_many replaced by a counter
    noop_tick_created: int = 0
    created: int = 0
    explain_due: str = ""
    explain_zero: str = ""
    max_per_tick: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def drain_s(self) -> float:
        return statistics.median(sum(t for t, _ in ticks) for ticks in self.drains)

    @property
    def worst_tick_s(self) -> float:
        return max(t for ticks in self.drains for t, _ in ticks)

    @property
    def full_ticks(self) -> list[float]:
        """Times of the ticks that hit MAX_PER_TICK."""
        return [t for ticks in self.drains for t, n in ticks if n >= self.max_per_tick]


def populate(now: datetime) -> None:
    """DUE + PAUSED + TEMPLATES monitors (and targets) through bulk_create, then
    the remaining "later" monitors copied from the templates inside the
    database: bulk_create of all 100 000 (and their targets) costs ~40 s of
    Django row preparation on this machine, which would eat the whole budget
    of `make bench` without changing what the dispatcher sees."""
    from monitors.models import Monitor, Target, Team

    team = Team.objects.create(name="Dispatch bench", slug="dispatch-bench")
    monitors, targets = [], []
    for i in range(DUE + PAUSED + TEMPLATES):
        if i < DUE:
            status, name = Monitor.Status.ACTIVE, f"due-{i}"
            next_run = now - timedelta(minutes=10, seconds=i % 600)
        elif i < DUE + PAUSED:
            status, name, next_run = Monitor.Status.PAUSED, f"paused-{i}", None
        else:
            status, name = Monitor.Status.ACTIVE, "later"
            next_run = now + timedelta(minutes=5 + i % 295)
        monitor = Monitor(
            id=uuid.uuid4(),
            team=team,
            name=name,
            status=status,
            schedule_cron=CRON,
            next_run_at=next_run,
        )
        monitors.append(monitor)
        targets.append(
            Target(
                id=uuid.uuid4(),
                monitor=monitor,
                type=Target.Type.SCRAPE,
                urls=[f"https://example.com/page/{i}"],
            )
        )
    Monitor.objects.bulk_create(monitors, batch_size=2_000)
    Target.objects.bulk_create(targets, batch_size=2_000)
    copies = (TOTAL - len(monitors)) // TEMPLATES
    for _ in range(copies):
        _copy_later_monitors()
    _analyze()


def _new_uuid_sql() -> str:
    from django.db import connection

    if connection.vendor == "postgresql":
        return "gen_random_uuid()"
    return "lower(hex(randomblob(16)))"  # how Django stores UUIDs on SQLite


def _columns(model: type, *, skip: tuple[str, ...]) -> list[str]:
    return [
        f.column
        for f in model._meta.concrete_fields  # type: ignore[attr-defined]
        if f.column not in skip and not f.generated
    ]


def _copy_later_monitors() -> None:
    """TEMPLATES more "later" monitors, each with a copy of a template's target.

    Every column is copied from the template rows (the column lists come from
    the models), so fields added later are carried along."""
    from django.db import connection

    from monitors.models import Monitor, Target

    new_id = _new_uuid_sql()
    # feed_token is unique: each copy gets a token of its own (random hex).
    new_token = f"replace(CAST({new_id} AS text), '-', '')"
    monitor_cols = _columns(Monitor, skip=("id", "name", "feed_token"))
    target_cols = _columns(Target, skip=("id", "monitor_id"))
    m_list = ", ".join(monitor_cols)
    t_list = ", ".join(f"t.{c}" for c in target_cols)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO monitors_monitor (id, name, feed_token, {m_list}) "
            f"SELECT {new_id}, 'later-copy', {new_token}, {m_list}"
            " FROM monitors_monitor "
            "WHERE name = 'later'"
        )
        cursor.execute(
            f"INSERT INTO monitors_target (id, monitor_id, {', '.join(target_cols)}) "
            f"SELECT {new_id}, m.id, {t_list} FROM monitors_monitor m "
            "CROSS JOIN (SELECT * FROM monitors_target LIMIT 1) t "
            "WHERE m.name = 'later-copy' AND NOT EXISTS "
            "(SELECT 1 FROM monitors_target x WHERE x.monitor_id = m.id)"
        )
        cursor.execute(
            "UPDATE monitors_monitor SET name = 'later-copied' "
            "WHERE name = 'later-copy'"
        )


def _analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("monitors_monitor", "monitors_target", "checks_check"):
            cursor.execute(f"ANALYZE {table}")


def _median_seconds(sql: str, params: list, repeats: int) -> float:
    from django.db import connection

    samples = []
    with connection.cursor() as cursor:
        for _ in range(repeats):
            started = time.perf_counter()
            cursor.execute(sql, params)
            cursor.fetchall()
            samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _explain(now: datetime) -> str:
    from django.db import transaction

    from checks.dispatch import BATCH_SIZE
    from monitors.models import Monitor

    query = (
        Monitor.objects.due(now)
        .select_for_update(skip_locked=True, of=("self",))
        .order_by("next_run_at", "pk")[:BATCH_SIZE]
    )
    with transaction.atomic():
        return query.explain()


def uses_due_index(plan: str) -> bool:
    full_scan = "Seq Scan on monitors_monitor" in plan or (
        "SCAN monitors_monitor" in plan and "USING" not in plan
    )
    return "monitor_due_idx" in plan and not full_scan


def plan_summary(plan: str) -> str:
    """The plan's scan lines, compactly."""
    keep = ("Scan", "SCAN", "SEARCH", "Limit", "LockRows", "Sort")
    lines = [
        line.strip(" ->") for line in plan.splitlines() if any(k in line for k in keep)
    ]
    return " / ".join(lines)


def _reset_due(now: datetime) -> None:
    """Put the due monitors back as they were before a drain."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM checks_check WHERE trigger = 'scheduled'")
        cursor.execute(
            "UPDATE monitors_monitor SET next_run_at = %s, current_check_id = NULL,"
            " last_run_at = NULL WHERE name LIKE 'due-%%'",
            [now - timedelta(minutes=10)],
        )
    _analyze()


QUEUE = "celery"


def _messages(broker: Redis) -> int:
    return int(broker.llen(QUEUE))


def _clear_messages(broker: Redis) -> None:
    broker.delete(QUEUE)


def _broker_seconds_per_message(broker: Redis) -> float:
    from checks.tasks import run_check_task

    started = time.perf_counter()
    for _ in range(BROKER_PROBE):
        run_check_task.delay(str(uuid.uuid4()))
    seconds = (time.perf_counter() - started) / BROKER_PROBE
    _clear_messages(broker)
    return seconds


def measure(now: datetime, broker: Redis, drains: int = 1) -> DispatchResult:
    from checks import dispatch
    from checks.models import Check

    result = DispatchResult(total=TOTAL, due=DUE, max_per_tick=dispatch.MAX_PER_TICK)
    started = time.perf_counter()
    populate(now)
    result.populate_s = time.perf_counter() - started

    due_sql = (
        "SELECT id FROM monitors_monitor WHERE status = 'active'"
        " AND deleted_at IS NULL AND next_run_at <= %s"
    )
    result.baseline_due_s = _median_seconds(due_sql, [now], 5)
    result.explain_due = _explain(now)

    for attempt in range(drains):
        if attempt:
            _reset_due(now)
        _clear_messages(broker)
        ticks = []
        for _ in range(MAX_TICKS):
            tick_started = time.perf_counter()
            created = dispatch.dispatch_due_monitors(now)
            ticks.append((time.perf_counter() - tick_started, created))
            if not created:
                break
        result.drains.append(ticks)
        result.created = sum(n for _, n in ticks)
        result.messages = _messages(broker)
        queued = Check.objects.filter(trigger="scheduled", status="queued").count()
        if result.created != DUE or queued != DUE or result.messages != DUE:
            result.problems.append(
                f"drain {attempt + 1}: {result.created} created, {queued} queued, "
                f"{result.messages} messages; wanted {DUE} each"
            )

    _analyze()
    result.explain_zero = _explain(now)
    samples = []
    for _ in range(5):
        tick_started = time.perf_counter()
        created = dispatch.dispatch_due_monitors(now)
        samples.append(time.perf_counter() - tick_started)
        if created:
            result.problems.append(f"{created} checks created with nothing due")
    result.zero_due_s = statistics.median(samples)
    result.baseline_all_s = _median_seconds(
        "SELECT id, next_run_at FROM monitors_monitor", [], 3
    )
    result.broker_per_message_s = _broker_seconds_per_message(broker)
    result.noop_tick_s, result.noop_tick_created = _tick_without_broker(now)
    return result


def _tick_without_broker(now: datetime) -> tuple[float, int]:
    """One more tick over the reset due set, `enqueue_many` swapped for a
    counter: what the dispatcher costs without the broker."""
    from checks import dispatch

    _reset_due(now)
    sent: list[uuid.UUID] = []
    original = dispatch.enqueue_many
    dispatch.enqueue_many = sent.extend  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        created = dispatch.dispatch_due_monitors(now)
        return time.perf_counter() - started, created
    finally:
        dispatch.enqueue_many = original


def main() -> None:
    from django.utils import timezone
    from redis import Redis

    from bench.brokerbench import embedded_in
    from bench.env import setup_django
    from config import valkey

    setup_django()
    var = valkey.var_dir_of(os.environ)
    with embedded_in(var):
        broker = Redis.from_url(valkey.url(var))
        print(json.dumps(asdict(measure(timezone.now(), broker))))


if __name__ == "__main__":
    main()
