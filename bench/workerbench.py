"""Checks run by real Celery workers, measured from the outside.

The bench only uses the engine's public seams: it creates Team/Monitor/Target
rows, queues a check with `checks.dispatch.queue_manual_check` (which sends
`checks.tasks.run_check_task` to the broker), and polls `Check.status` until
the check has finished. The work happens in `celery -A config worker
--pool=prefork` processes started here, against the bench's PostgreSQL
database and Redis broker (bench.env), so whatever the engine does inside a
worker (threads, pools, more tasks) is measured as users run it.

What is measured, per check (`Sample`): wall time from queueing to the
finished status, the CPU time of the worker's whole process tree (procs.py),
and for information the page server's CPU time. PostgreSQL's is not counted:
its backends come and go with the worker's connections, and the same server's
other databases (other people's tests) would blur a figure read from all its
processes. The baseline (`Fetch`) is a plain concurrent httpx fetch of the
same pages, with the worker's concurrency limits, in this process.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bench import procs
from bench.env import ROOT, BenchEnv, BenchError

if TYPE_CHECKING:  # Django models: importable only after django.setup()
    from checks.models import Check
    from monitors.models import Monitor

PAGES = 200
LATENCY_MS = 50
BIG_TARGETS = 20  # the scaling check: 20 targets of PAGES / 4 URLs, 1,000 pages
CHECK_TIMEOUT = 300.0  # seconds a check may take before the bench gives up
START_TIMEOUT = 90.0  # seconds a worker or the service may take to start
POLL_SECONDS = 0.02  # between two reads of Check.status


# --- The page server ----------------------------------------------------------------


class PageServer:
    """bench/server.py in its own process, on `hosts` loopback addresses."""

    def __init__(self, hosts: int) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.server", "--hosts", str(hosts)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        try:
            self.origins: list[str] = json.loads(line)
        except ValueError:
            self.stop()
            raise BenchError(f"bench server did not start (said {line!r})") from None
        self._control = httpx.Client(base_url=self.origins[0], trust_env=False)

    def urls(self, count: int, hosts: int) -> list[str]:
        """Pages 0..count-1, page i on the (i % hosts)-th address: a fetcher
        that takes URLs in order uses every host at once."""
        return [f"{self.origins[i % hosts]}/articles/{i}" for i in range(count)]

    def show(
        self,
        pages: int,
        generation: int,
        variant: int,
        edited: bool = False,
        delay_ms: int = 0,
        scripted: bool = False,
    ) -> None:
        """Serve `pages` pages: text from (generation, edited), chrome from
        variant (bench.pages); `scripted`: as an app whose script builds the
        article in the browser (bench.pages.app_page)."""
        params = {"pages": pages, "gen": generation, "variant": variant}
        params |= {"edited": int(edited), "delay_ms": delay_ms}
        params |= {"scripted": int(scripted)}
        self._control.get(
            "/__control/set", params=params, timeout=120
        ).raise_for_status()

    def show_site(self, pages: int, generation: int, delay_ms: int = 0) -> None:
        """Serve the `pages`-page site of bench.site (built on first use)."""
        params = {"pages": pages, "gen": generation, "delay_ms": delay_ms}
        self._control.get(
            "/__control/site", params=params, timeout=300
        ).raise_for_status()

    def cpu_seconds(self) -> float:
        return float(self._control.get("/__control/stats").json()["cpu"])

    def stop(self) -> None:
        if hasattr(self, "_control"):
            self._control.close()
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


# --- Workers and the service ----------------------------------------------------------


def _answering_workers(names: list[str] | None) -> list[str]:
    from config.celery import app

    replies = app.control.ping(destination=names, timeout=0.5)
    return [name for reply in replies for name in reply]


class Worker(procs.Group):
    """`celery -A config worker --pool=prefork --concurrency=N`, as the
    Procfile starts it; ready once it answers a ping."""

    def __init__(
        self,
        env: BenchEnv,
        concurrency: int,
        queues: str | None = None,
        pool: str = "prefork",
    ) -> None:
        self.concurrency = concurrency
        self.name = f"bench-{concurrency}-{os.getpid()}-{queues or 'all'}"
        self.name += f"@{socket.gethostname()}"
        command = [str(Path(sys.executable).with_name("celery")), "-A", "config"]
        command += ["worker", f"--pool={pool}", f"--concurrency={concurrency}"]
        command += ["--loglevel=INFO", "-n", self.name]
        if queues:
            command.append(f"--queues={queues}")
        # SIGQUIT: Celery's cold shutdown; an idle worker's warm one takes ~6 s.
        log = env.var_dir / f"worker-{concurrency}-{time.monotonic_ns()}.log"
        super().__init__(command, log, ROOT, stop_signal=signal.SIGQUIT)
        try:
            self.wait_until(
                lambda: bool(_answering_workers([self.name])),
                f"worker --concurrency={concurrency}",
                START_TIMEOUT,
            )
        except BaseException:
            self.stop()
            raise

    def pss(self) -> dict[str, float]:
        """PSS in MB of the main process and of all the others (prefork
        children and what they start)."""
        out: dict[str, float] = defaultdict(float)
        for pid in procs.tree(self.pid):
            role = "main" if pid == self.pid else "children"
            out[role] += procs.pss_mb(pid)
        return dict(out)


SERVICE_ROLES = (
    ("valkey-server", "valkey"),
    ("gunicorn", "gunicorn"),
    ("hostname=upkeep@", "upkeep"),
    ("hostname=browser@", "browser"),
    (" beat", "beat"),
    (" worker", "worker"),
)


class Service(procs.Group):
    """The whole service as `make run` starts it: `python -m config.run -f
    Procfile` (the embedded Valkey, web, the worker with the scheduler), on
    a free port and the bench's PostgreSQL, with `settings` (environment
    variables) added. Its broker is its own Valkey, as with `make run` (no
    REDIS_URL): checks are queued through its API."""

    def __init__(self, env: BenchEnv, settings: dict[str, str] | None = None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "config.run", "-f", "Procfile"]
        environ = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        environ |= {"HOST": "127.0.0.1", "PORT": str(port), **(settings or {})}
        # config.run gives its processes up to 30 s to stop; SIGINT is its
        # Ctrl-C.
        super().__init__(
            command, env.var_dir / "service.log", ROOT, environ, signal.SIGINT, 40
        )
        try:
            self.wait_until(self._ready, "make run's service", START_TIMEOUT)
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        """Once /healthz says every part works: its worker has answered a
        heartbeat and its scheduler has ticked."""
        try:
            answer = httpx.get(f"{self.base_url}/healthz", timeout=5, trust_env=False)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def pss(self) -> dict[str, float]:
        """PSS in MB per Procfile entry (with all its processes), and the
        process manager's own."""
        children: dict[int, list[int]] = defaultdict(list)
        for pid in procs.tree(self.pid):
            children[procs.parent(pid)].append(pid)
        out: dict[str, float] = {"manager": procs.pss_mb(self.pid)}
        for top in children[self.pid]:
            pids = procs.tree(top)
            line = procs.command_line(top)
            # The Procfile's entries by what only their command says (the
            # worker's --queues=celery,upkeep names the upkeep queue too).
            role = next((name for mark, name in SERVICE_ROLES if mark in line), "other")
            out[role] = out.get(role, 0.0) + sum(map(procs.pss_mb, pids))
        return out


# --- Checks -----------------------------------------------------------------------


def run_check_through_api(monitor: Monitor, service: Service) -> Check:
    """Run now through the service's API (it queues on its own broker), and
    wait until its worker has finished the check."""
    from checks.models import Check
    from monitors.models import ApiKey

    _, key = ApiKey.issue(monitor.team, name="bench")
    answer = httpx.post(
        f"{service.base_url}/v2/monitor/{monitor.pk}/run",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
        trust_env=False,
    )
    if answer.status_code not in (200, 202):
        raise BenchError(f"Run now answered {answer.status_code}: {answer.text}")
    check_id = answer.json()["data"]["id"]
    deadline = time.perf_counter() + CHECK_TIMEOUT
    while (status := _status(check_id)) not in Check.FINISHED:
        service.check_alive(f"check {check_id}")
        if time.perf_counter() > deadline:
            raise BenchError(f"check {check_id} still {status}:\n{service.log_tail()}")
        time.sleep(POLL_SECONDS)
    return Check.objects.get(pk=check_id)


def make_monitor(name: str, targets: list[list[str]]) -> Monitor:
    """A monitor with one scrape target per URL list (no schedule is due: the
    bench queues every check itself)."""
    from monitors.models import Monitor, Target, Team

    team, _ = Team.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    monitor = Monitor.objects.create(team=team, name=name, schedule_cron="0 * * * *")
    for position, urls in enumerate(targets):
        Target.objects.create(
            monitor=monitor, position=position, type=Target.Type.SCRAPE, urls=urls
        )
    return monitor


@dataclass
class Sample:
    """One check: wall seconds, and CPU seconds of the worker's process tree
    and of the page server."""

    seconds: float
    worker_cpu: float
    server_cpu: float
    check: Check


def run_check(monitor: Monitor, worker: procs.Group, server: PageServer) -> Sample:
    """Queue a check of `monitor` and wait until `worker` has finished it."""
    from checks.dispatch import queue_manual_check
    from checks.models import Check

    server_cpu = server.cpu_seconds()
    worker_cpu = procs.tree_cpu_seconds(worker.pid)
    started = time.perf_counter()
    check = queue_manual_check(monitor)
    deadline = started + CHECK_TIMEOUT
    while (status := _status(check.pk)) not in Check.FINISHED:
        worker.check_alive(f"check {check.pk}")
        if time.perf_counter() > deadline:
            raise BenchError(
                f"check {check.pk} still {status} after {CHECK_TIMEOUT:g} s;"
                f" worker log:\n{worker.log_tail()}"
            )
        time.sleep(POLL_SECONDS)
    seconds = time.perf_counter() - started
    worker_cpu = procs.tree_cpu_seconds(worker.pid) - worker_cpu
    check.refresh_from_db()
    return Sample(seconds, worker_cpu, server.cpu_seconds() - server_cpu, check)


def _status(check_id: object) -> str:
    from checks.models import Check

    return Check.objects.filter(pk=check_id).values_list("status", flat=True).get()


def warm_up(worker: Worker, server: PageServer, problems: list[str]) -> None:
    """One small check per prefork child at once, so every child has imported
    and initialised what a check needs before anything is measured."""
    from checks.dispatch import queue_manual_check

    server.show(10, generation=0, variant=0)
    urls = server.urls(10, len(server.origins))
    monitors = [make_monitor(f"warm-up {n}", [urls]) for n in range(worker.concurrency)]
    checks = [queue_manual_check(monitor) for monitor in monitors]
    deadline = time.perf_counter() + CHECK_TIMEOUT
    for check in checks:
        while _status(check.pk) in ("queued", "running"):
            if time.perf_counter() > deadline:
                raise BenchError(f"warm-up check not done:\n{worker.log_tail()}")
            time.sleep(POLL_SECONDS)
        expect(check, problems, new=10)


def expect(check: Check, problems: list[str], **counts: int) -> None:
    """Note a check that did not find what the pages say it should."""
    check.refresh_from_db()
    summary = check.summary or {}
    wanted = {"new": 0, "changed": 0, "same": 0, "error": 0} | counts
    got = {key: summary.get(key) for key in wanted}
    if check.status != "completed" or got != wanted:
        problems.append(
            f"check {check.pk}: status {check.status}, summary {got}, wanted {wanted}"
        )


# --- The baseline ---------------------------------------------------------------------


@dataclass
class Fetch:
    seconds: float
    cpu: float  # of this process
    bytes_per_page: int


def fetch_limits() -> tuple[int, int]:
    """The worker's fetch concurrency: in all, and per host."""
    from django.conf import settings

    return int(settings.FETCH_CONCURRENCY), int(settings.FETCH_PER_HOST_CONCURRENCY)


def hosts_needed() -> int:
    """Hosts the 200 pages are spread over, so the per-host limit does not
    decide the baseline's or the worker's speed on its own."""
    total, per_host = fetch_limits()
    return max(1, math.ceil(total / per_host))


async def _fetch_all(urls: list[str], total: int, per_host: int) -> int:
    limits = httpx.Limits(max_connections=total, max_keepalive_connections=total)
    gate = asyncio.Semaphore(total)
    hosts: dict[str, asyncio.Semaphore] = defaultdict(
        lambda: asyncio.Semaphore(per_host)
    )
    async with httpx.AsyncClient(limits=limits, trust_env=False, timeout=30) as client:

        async def one(url: str) -> int:
            async with hosts[httpx.URL(url).host], gate:
                response = await client.get(url)
                response.raise_for_status()
                return len(response.content)

        return sum(await asyncio.gather(*(one(url) for url in urls)))


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def baseline_fetch(urls: list[str], processes: int = 1) -> Fetch:
    """A plain program's fetch of `urls` (client created, bodies decoded),
    with the limits of a worker with that many fetching processes (each has
    its own)."""
    total, per_host = (limit * processes for limit in fetch_limits())
    cpu, started = _own_cpu(), time.perf_counter()
    size = asyncio.run(_fetch_all(urls, total, per_host))
    seconds = time.perf_counter() - started
    return Fetch(seconds, _own_cpu() - cpu, size // len(urls))


# --- Benchmarks ---------------------------------------------------------------------

# The checks of one series, in order: what the server shows before each,
# as (variant, edited), and what the check must find.
SERIES: dict[str, tuple[tuple[int, bool] | None, str]] = {
    "first": ((0, False), "new"),
    "unchanged": ((1, False), "same"),  # chrome rotated, text the same
    "identical": (None, "same"),  # the very same bytes again
    "rewritten": ((2, True), "changed"),  # every article edited
    # Every article replaced by new text of the same vocabulary: nothing of
    # a page's text is left to match (an article generation of its own).
    "replaced": ((2, False), "changed"),
    # The replaced pages again, byte for byte: with the checks before, every
    # page is checked 1 new + 3 unchanged + 2 rewritten times.
    "settled": (None, "same"),
}
REPLACED_GENERATION = 10_000


def database_bytes() -> int:
    """The bench database's size (tables, TOAST and indexes)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return int(cursor.fetchone()[0])


@dataclass
class Series:
    """Samples of the SERIES checks over the repetitions, and the baseline's."""

    pages: int
    checks: dict[str, list[Sample]] = field(default_factory=lambda: defaultdict(list))
    baseline: list[Fetch] = field(default_factory=list)
    # How much each check grew the database, and each repetition in all.
    grew: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    growth: list[int] = field(default_factory=list)

    def median(self, name: str, what: Callable[[Sample], float]) -> float:
        return statistics.median(what(sample) for sample in self.checks[name])

    def ms_per_page(self, name: str, what: Callable[[Sample], float]) -> float:
        return self.median(name, what) * 1000 / self.pages

    def spread(self, name: str, what: Callable[[Sample], float]) -> tuple[float, float]:
        """(lowest, highest) of `what` over the repetitions."""
        values = [what(sample) for sample in self.checks[name]]
        return min(values), max(values)

    def pages_per_second(self, name: str) -> float:
        return self.pages / self.median(name, lambda s: s.seconds)

    @property
    def baseline_ms_per_page(self) -> float:
        return statistics.median(f.cpu for f in self.baseline) * 1000 / self.pages

    @property
    def baseline_pages_per_second(self) -> float:
        return self.pages / statistics.median(f.seconds for f in self.baseline)


def run_series(
    worker: Worker,
    server: PageServer,
    pages: int,
    reps: int,
    delay_ms: int,
    first_generation: int,
    problems: list[str],
) -> Series:
    """Per repetition, on a fresh monitor and fresh article texts: the
    SERIES checks, each after a baseline fetch of what the server shows."""
    series = Series(pages)
    urls = server.urls(pages, len(server.origins))
    for rep in range(reps):
        generation = first_generation + rep
        monitor = make_monitor(f"series {generation}", [urls])
        start = database_bytes()
        for name, (shown, finds) in SERIES.items():
            if shown is not None:
                variant, edited = shown
                text = generation + REPLACED_GENERATION * (name == "replaced")
                server.show(pages, text, variant, edited, delay_ms)
            series.baseline.append(baseline_fetch(urls))
            before = database_bytes()
            sample = run_check(monitor, worker, server)
            series.grew[name].append(database_bytes() - before)
            expect(sample.check, problems, **{finds: pages})
            series.checks[name].append(sample)
        series.growth.append(database_bytes() - start)
    return series


def run_big_checks(
    worker: Worker,
    server: PageServer,
    pages_per_target: int,
    generations: list[int],
    problems: list[str],
) -> list[float]:
    """Seconds of a first check of BIG_TARGETS x `pages_per_target` pages, all
    on 127.0.0.1, at LATENCY_MS, once per generation (fresh texts, fresh
    monitor)."""
    pages = BIG_TARGETS * pages_per_target
    urls = server.urls(pages, hosts=1)
    targets = [
        urls[n * pages_per_target : (n + 1) * pages_per_target]
        for n in range(BIG_TARGETS)
    ]
    seconds = []
    for generation in generations:
        server.show(pages, generation, 0, delay_ms=LATENCY_MS)
        sample = run_check(make_monitor(f"big {generation}", targets), worker, server)
        expect(sample.check, problems, new=pages)
        seconds.append(sample.seconds)
    return seconds
