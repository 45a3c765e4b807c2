"""Benchmark 1: end-to-end check throughput against a plain concurrent fetch.

Per repetition, with a fresh monitor of PAGES URLs and a fresh page generation
(so no snapshot from an earlier repetition can be reused):

* baseline: the same URLs fetched with a plain httpx.AsyncClient, as many at a
  time as the runner may fetch from one host (min(FETCH_CONCURRENCY,
  FETCH_PER_HOST_CONCURRENCY): all pages live on 127.0.0.1), bodies read and
  decoded, client creation included (the runner builds its client per check);
* first check: `checks.runner.run(check)` on a queued manual check, every page
  new (claim, fetch, extract, hash, snapshot, page result, baseline, finish);
* the server switches to variant 1 (20 % of pages edited, every page's ads
  and timestamps rotated), the baseline is fetched again, then a second check
  runs: 10 pages changed (unified diff, AST, side-by-side HTML), 40 same;
* a third check of the same content: all 50 same, the common case of a
  monitor whose pages did not change since the last check.

pages/s = PAGES / wall time; ratio = runner pages/s / baseline pages/s.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench.env import ROOT

if TYPE_CHECKING:  # Django models: importable only after django.setup()
    from checks.models import Check
    from monitors.models import Monitor, Team

PAGES = 50
LATENCY_MS = 50
LATENCY_REPS = 2


class PageServer:
    """bench/server.py in a subprocess; stopped on exit."""

    def __init__(self, pages: int = PAGES) -> None:
        self.pages = pages
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.server", "--pages", str(pages)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"bench server did not start (said {line!r})")
        self.base_url = f"http://127.0.0.1:{line}"
        self._control = httpx.Client(base_url=self.base_url, trust_env=False)

    def urls(self) -> list[str]:
        return [f"{self.base_url}/articles/{i}" for i in range(self.pages)]

    def show(self, generation: int, variant: int, delay_ms: int = 0) -> None:
        response = self._control.get(
            "/__control/set",
            params={"gen": generation, "variant": variant, "delay_ms": delay_ms},
            timeout=60,
        )
        response.raise_for_status()

    def cpu_seconds(self) -> float:
        return float(self._control.get("/__control/stats").json()["cpu"])

    def stop(self) -> None:
        if hasattr(self, "_control"):
            self._control.close()
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)

    def __enter__(self) -> PageServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# --- Baseline ----------------------------------------------------------------------


async def _fetch_all(urls: list[str], concurrency: int) -> int:
    limits = httpx.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency
    )
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(limits=limits, trust_env=False, timeout=30) as client:

        async def one(url: str) -> int:
            async with gate:
                response = await client.get(url)
                response.raise_for_status()
                return len(response.content)

        return sum(await asyncio.gather(*(one(url) for url in urls)))


def baseline_fetch(urls: list[str], concurrency: int) -> tuple[float, int]:
    """(seconds, decoded bytes) for a plain concurrent fetch of `urls`."""
    started = time.perf_counter()
    size = asyncio.run(_fetch_all(urls, concurrency))
    return time.perf_counter() - started, size


# --- The runner --------------------------------------------------------------------


def _team() -> Team:
    from monitors.models import Team

    team, _ = Team.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    return team


def make_monitor(urls: list[str], name: str) -> Monitor:
    from monitors.models import Monitor, Target

    monitor = Monitor.objects.create(team=_team(), name=name, schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=urls)
    return monitor


def run_check(
    monitor: Monitor, profile: cProfile.Profile | None = None
) -> tuple[float, Check]:
    """(seconds, finished check) for one real check of `monitor`."""
    from checks import runner
    from checks.dispatch import queue_manual_check

    check = queue_manual_check(monitor)
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    try:
        check = runner.run(check)
    finally:
        if profile is not None:
            profile.disable()
    return time.perf_counter() - started, check


@dataclass
class Throughput:
    concurrency: int
    pages: int
    baseline_s: list[float] = field(default_factory=list)
    first_s: list[float] = field(default_factory=list)
    second_s: list[float] = field(default_factory=list)
    # A third check with nothing changed since the second (no plain-loop reps).
    unchanged_s: list[float] = field(default_factory=list)
    server_cpu_share: list[float] = field(default_factory=list)
    # The same measured with LATENCY_MS of simulated network latency per page.
    latency_baseline_s: list[float] = field(default_factory=list)
    latency_first_s: list[float] = field(default_factory=list)
    latency_second_s: list[float] = field(default_factory=list)
    bytes_per_page: int = 0
    summaries: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def pps(self, seconds: list[float]) -> float:
        return self.pages / statistics.median(seconds)


def _expect(
    result: Throughput, check: Check, new: int, changed: int, same: int
) -> None:
    summary = check.summary or {}
    result.summaries.append(summary)
    wanted = {"new": new, "changed": changed, "same": same, "error": 0}
    got = {key: summary.get(key) for key in wanted}
    if check.status != "completed" or got != wanted:
        result.problems.append(
            f"check {check.pk}: status {check.status}, summary {got}, wanted {wanted}"
        )


def _repetition(
    server: PageServer,
    result: Throughput,
    generation: int,
    delay_ms: int,
    into: tuple[list[float], list[float], list[float]],
    unchanged: list[float] | None = None,
) -> None:
    """A baseline fetch and a check, for variant 0 (all new) then variant 1;
    with `unchanged`, one more check of variant 1 (all same) timed into it."""
    urls = server.urls()
    changed = len(range(0, len(urls), 5))
    baseline_s, first_s, second_s = into
    monitor = make_monitor(urls, f"throughput {generation}")
    for variant in (0, 1):
        server.show(generation, variant, delay_ms)
        seconds, size = baseline_fetch(urls, result.concurrency)
        baseline_s.append(seconds)
        result.bytes_per_page = size // len(urls)
        cpu_before = server.cpu_seconds()
        seconds, check = run_check(monitor)
        result.server_cpu_share.append((server.cpu_seconds() - cpu_before) / seconds)
        if variant == 0:
            first_s.append(seconds)
            _expect(result, check, new=len(urls), changed=0, same=0)
        else:
            second_s.append(seconds)
            _expect(result, check, new=0, changed=changed, same=len(urls) - changed)
    if unchanged is not None:
        seconds, check = run_check(monitor)
        unchanged.append(seconds)
        _expect(result, check, new=0, changed=0, same=len(urls))


def measure(server: PageServer, reps: int, first_generation: int = 1) -> Throughput:
    from django.conf import settings

    concurrency = min(
        int(settings.FETCH_CONCURRENCY), int(settings.FETCH_PER_HOST_CONCURRENCY)
    )
    urls = server.urls()
    result = Throughput(concurrency=concurrency, pages=len(urls))
    # Warm-up: imports, the first connection, lexbor/markdown initialisation.
    server.show(first_generation - 1, 0)
    baseline_fetch(urls, concurrency)
    run_check(make_monitor(urls[:5], "warm-up"))
    plain = (result.baseline_s, result.first_s, result.second_s)
    for rep in range(reps):
        _repetition(
            server, result, first_generation + rep, 0, plain, result.unchanged_s
        )
    slow = (result.latency_baseline_s, result.latency_first_s, result.latency_second_s)
    for rep in range(LATENCY_REPS):
        _repetition(server, result, first_generation + reps + rep, LATENCY_MS, slow)
    return result


def profile_second_check(server: PageServer, generation: int, out: Path) -> str:
    """cProfile one first and one second check (worker thread only); write the
    full listing to `out`, return the top of it."""
    urls = server.urls()
    profile = cProfile.Profile()
    monitor = make_monitor(urls, "profiled")
    server.show(generation, 0)
    run_check(monitor, profile)
    server.show(generation, 1)
    run_check(monitor, profile)
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumulative").print_stats(60)
    out.write_text(stream.getvalue())
    top = io.StringIO()
    pstats.Stats(profile, stream=top).sort_stats("tottime").print_stats(12)
    return top.getvalue()


# Names looked up in checks.runner at call time: wrapping them there attributes
# the worker thread's wall time without touching the runner's code. Decoding,
# extraction, hashing, Markdown and diffs run in checks.analysis's process pool
# (CHECK_CPU_WORKERS), and compare() on the fetcher's thread: waiting for them
# counts as "other".
PHASES = {
    "conclude": "conclude: outcome from the pool's analysis",
    "reconciled": "reconciled: outcome of a page whose source changed",
    "record_many": "record: one DB transaction per batch of ready pages",
}


def attribute(server: PageServer, generation: int) -> dict[str, dict[str, tuple]]:
    """(wall, CPU) seconds per phase of a first and a second check, measured on
    the worker thread. "total" is the whole run(); the rest of it is claim,
    planning, waiting for fetches and finish."""
    from checks import runner
    from checks.models import Snapshot

    urls = server.urls()
    monitor = make_monitor(urls, "attributed")
    originals = {name: getattr(runner, name) for name in PHASES}
    original_store = Snapshot.__dict__["store_many"]
    spent: dict[str, tuple[float, float]] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                before = spent.get(name, (0.0, 0.0))
                spent[name] = (
                    before[0] + time.perf_counter() - wall,
                    before[1] + time.thread_time() - cpu,
                )

        return wrapper

    phases: dict[str, dict[str, tuple]] = {}
    try:
        for name, function in originals.items():
            setattr(runner, name, timed(name, function))
        Snapshot.store_many = classmethod(  # type: ignore[method-assign]
            timed("store", original_store.__func__)
        )
        for label, variant in (("first", 0), ("second", 1)):
            server.show(generation, variant)
            spent.clear()
            cpu = time.thread_time()
            seconds, _ = run_check(monitor)
            phases[label] = dict(spent, total=(seconds, time.thread_time() - cpu))
    finally:
        for name, function in originals.items():
            setattr(runner, name, function)
        Snapshot.store_many = original_store  # type: ignore[method-assign]
    return phases


def _process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of a process on this machine (Linux), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_by_place(server: PageServer, generation: int) -> dict[str, dict[str, float]]:
    """CPU seconds per place of a first and a second check: the worker thread,
    the worker process's other threads (fetcher, pool feeders), the analysis
    pool's processes, the PostgreSQL backend (when it runs on this machine)
    and the page server. Every place shares the same CPUs."""
    from django.db import connection

    from checks import analysis

    urls = server.urls()
    monitor = make_monitor(urls, "cpu by place")
    run_check(make_monitor(urls[:2], "pool warm-up"))  # the pool exists now
    executor = analysis._state.executor
    pool_pids = list(getattr(executor, "_processes", None) or {})
    backend = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]

    def sample() -> dict[str, float | None]:
        pool = [_process_cpu(pid) for pid in pool_pids]
        return {
            "thread": time.thread_time(),
            "process": _self_cpu(),
            "pool": None if None in pool else sum(pool),  # type: ignore[arg-type]
            "database": _process_cpu(backend) if backend else None,
            "server": server.cpu_seconds(),
        }

    places: dict[str, dict[str, float]] = {}
    for label, variant in (("first", 0), ("second", 1)):
        server.show(generation, variant)
        before = sample()
        seconds, _ = run_check(monitor)
        after = sample()
        spent = {
            key: after[key] - before[key]  # type: ignore[operator]
            for key in before
            if before[key] is not None and after[key] is not None
        }
        spent["threads"] = spent.pop("process") - spent["thread"]
        places[label] = spent | {"wall": seconds}
    return places


def child_check(base_url: str, generation: int, pages: int = PAGES) -> dict:
    """In a fresh process: a first and a second check of `pages` pages."""
    control = httpx.Client(base_url=base_url, trust_env=False)
    urls = [f"{base_url}/articles/{i}" for i in range(pages)]
    monitor = make_monitor(urls, "memory")
    timings = []
    for variant in (0, 1):
        control.get(
            "/__control/set", params={"gen": generation, "variant": variant}, timeout=60
        ).raise_for_status()
        seconds, check = run_check(monitor)
        timings.append({"seconds": seconds, "summary": check.summary})
    return {"checks": timings}


def to_json(result: Throughput) -> str:
    return json.dumps(result.__dict__, default=str)
