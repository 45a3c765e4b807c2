"""`make bench`: what Pagewatch costs its users, written to bench/RESULTS.md.

Checks run in real Celery workers (`celery -A config worker --pool=prefork`)
against a bench PostgreSQL database and Redis, on pages served from loopback,
and are measured from the outside: CPU time of all the worker's processes,
wall time at a realistic page latency, how that time shrinks with a second
worker process, and memory. Every value comes with a baseline measured in the
same run on the same machine, and the ratio is what counts. See
bench/README.md.

    .venv/bin/python bench/run.py                            # everything
    .venv/bin/python bench/run.py --only cpu --reps 1 --pages 40   # dev loop

Benchmarks are not tests: nothing here fails the build. A missed target is a
**FAIL** in the results, with the numbers to start from.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import env as bench_env  # noqa: E402
from bench.report import Row, Section, ratio_text, render, seconds  # noqa: E402

if TYPE_CHECKING:
    from bench.dispatchbench import DispatchResult
    from bench.servebench import Serving
    from bench.workerbench import PageServer, Series

BENCHMARKS = (
    "cpu", "throughput", "scaling", "memory", "diff", "dispatch", "lists", "serving",
    "crawl", "browser", "import", "broker", "channels",
)  # fmt: skip
BROKER_TARGET = 1.2
# Realistic edits: no worse than before diffs were rendered on demand (6.85).
CPU_TARGET_MS = {"unchanged": 3.0, "rewritten": 6.85, "replaced": 9.0}
# A page's stored change against its compressed snapshot.
CHANGE_BYTES_TARGET = 2.0
# The whole database's growth over one series (1 new + 3 unchanged + 2
# rewritten checks of every page); changedetection.io's datastore: 15 MB.
SERIES_MB_TARGET = 20.0
THROUGHPUT_TARGET = 0.9
SCALING_TARGET = 1.6
PSS_TARGET_MB = 160.0
SERVICE_PSS_TARGET_MB = {"busy": 200.0, "idle": 170.0}
# After the service has started, before its idle PSS is read.
SETTLE_SECONDS = 5.0
DIFF_TARGET = 10.0
DIFF_SCALING_TARGET = 2.5
ZERO_DUE_TARGET = 0.1
SERVING_P95_TARGET = 20.0
TICK_TARGET = 0.5
LIST_TARGETS = {"api": 3.0, "dashboard": 4.0, "search": 4.0, "activity": 4.0}
IMPORT_TARGET = 0.5
# Channels: a change told to 10 channels against one webhook; a drained
# delivery against a plain POST; the others' p95 beside a hanging channel.
FAN_OUT_TARGET = 1.5
DRAIN_TARGET = 3.0
HANG_TARGET = 1.1
# changedetection.io 0.60.10 as issue #16 measured it on this kind of machine
# (report.REFERENCE): CPU per page, and the PSS of its whole process.
REFERENCE_CPU = {
    "first": "101 ms",
    "unchanged": "13.1 ms",
    "rewritten": "86 ms",
    "replaced": "57–86 ms",
}
REFERENCE_PSS = "102–107 MB (its whole process)"
CHECKS = {
    "first": "first check, {pages} new pages",
    "unchanged": "unchanged recheck (chrome rotated)",
    "identical": "recheck of byte-identical pages",
    "rewritten": "recheck, every page rewritten",
    "replaced": "recheck, every page fully rewritten",
    "settled": "recheck of byte-identical pages after the rewrites",
}
# First article generation of each benchmark: no two checks see the same texts.
GENERATIONS = {"cpu": 100, "throughput": 200, "memory": 300, "scaling": 400}


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"


# --- Checks in workers ---------------------------------------------------------------


def _change_bytes(check: object) -> tuple[float, float]:
    """Mean bytes the diff of a changed page of `check` takes, and the mean
    size of its compressed snapshot."""
    from django.db.models import Avg
    from django.db.models.functions import Length

    from checks.models import PageResult

    found = PageResult.objects.filter(check_run=check, status="changed").aggregate(
        diff=Avg(Length("packed_diff")),
        snapshot=Avg(Length("current_snapshot__data")),
    )
    return float(found["diff"] or 0), float(found["snapshot"] or 1)


def _diff_reads(series: Series) -> list[Row]:
    """p50 of opening a fully rewritten page's diff in the dashboard and of
    reading it through the API, in this process, against a trivial page."""
    from django.test import Client

    from bench import listbench
    from checks.models import PageResult
    from monitors.models import ApiKey

    check = series.checks["replaced"][-1].check
    page = check.pages.filter(status=PageResult.Status.CHANGED).first()
    assert page is not None
    team = check.monitor.team
    _, raw_key = ApiKey.issue(team, name="diff bench")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {raw_key}"}
    api, web = Client(), Client()
    web.force_login(listbench._member(team, "diff-bench"))
    detail = f"/v2/monitor/{check.monitor_id}/checks/{check.pk}"
    (trivial, _), *reads = listbench._medians(
        (web, "/settings/team/", {}),
        (web, page.get_absolute_url(), {}),
        (api, f"{detail}?limit=1", bearer),
        (api, detail, bearer),
    )
    names = (
        "Dashboard diff view of a fully rewritten page, p50",
        "API check detail, 1 fully rewritten page with its diff, p50",
        "API check detail, first 25 fully rewritten pages with their diffs, p50",
    )
    return [
        Row(
            name,
            f"{seconds(trivial)} (the team page, a trivial page)",
            seconds(value),
            value / trivial,
            "",
            None,
        )
        for name, (value, _) in zip(names, reads, strict=True)
    ]


def bench_cpu(series: Series, rows: list[Row]) -> Section:
    base = series.baseline_ms_per_page
    for name in ("first", "unchanged", "rewritten", "replaced"):
        value = series.ms_per_page(name, lambda s: s.worker_cpu)
        target = CPU_TARGET_MS.get(name)
        rows.append(
            Row(
                f"CPU per page, {CHECKS[name].format(pages=series.pages)}, loopback",
                f"{_ms(base)} (plain httpx fetch)",
                _ms(value),
                value / base,
                f"≤ {target:g} ms" if target else "",
                value <= target if target else None,
                REFERENCE_CPU[name],
            )
        )
    for name in ("rewritten", "replaced"):
        stored, snapshots = _change_bytes(series.checks[name][-1].check)
        ratio = stored / snapshots
        rows.append(
            Row(
                f"Bytes stored per changed page, {CHECKS[name].format(pages=1)}",
                f"{snapshots / 1000:.1f} KB (its compressed snapshot)",
                f"{stored / 1000:.1f} KB",
                ratio,
                f"≤ {CHANGE_BYTES_TARGET:g}",
                ratio <= CHANGE_BYTES_TARGET,
            )
        )
    for name in ("rewritten", "replaced"):
        _, snapshots = _change_bytes(series.checks[name][-1].check)
        added = statistics.median(series.grew[name]) / series.pages
        rows.append(
            Row(
                f"Database growth per changed page, {CHECKS[name].format(pages=1)}",
                f"{snapshots / 1000:.1f} KB (its compressed snapshot)",
                f"{added / 1000:.1f} KB",
                added / snapshots,
                f"≤ {CHANGE_BYTES_TARGET:g}",
                added / snapshots <= CHANGE_BYTES_TARGET,
            )
        )
    growth_mb = statistics.median(series.growth) / 1e6
    rows.append(
        Row(
            f"Database growth, {series.pages} pages × (1 new + 3 unchanged"
            " + 2 rewritten) checks",
            "15 MB (changedetection.io's datastore, issue #31)",
            f"{growth_mb:.1f} MB",
            growth_mb / 15,
            f"≤ {SERIES_MB_TARGET:g} MB",
            growth_mb <= SERIES_MB_TARGET,
        )
    )
    rows.extend(_diff_reads(series))
    loopback = series.pages_per_second("first")
    rows.append(
        Row(
            f"Throughput, first check of {series.pages} pages, loopback",
            f"{series.baseline_pages_per_second:.0f} pages/s (plain httpx)",
            f"{loopback:.0f} pages/s",
            loopback / series.baseline_pages_per_second,
            "",
            None,
        )
    )
    kb = series.baseline[0].bytes_per_page / 1000
    section = Section("1. CPU per page")
    section.add(
        f"{series.pages} article pages of ~{kb:.0f} KB (nav, cookie banner,"
        " sidebar, in-article ads, share bar, footer, ad iframes, pixels;"
        " served gzip, no added latency) checked by a worker"
        " started as the Procfile starts it (`--concurrency=2`). CPU time of"
        " all its processes (the Celery main process, its prefork children and"
        " anything they start, exited ones included), per page, median of"
        f" {len(series.checks['first'])} repetitions, each on a fresh monitor"
        " with fresh article texts. The baseline is a plain concurrent httpx"
        " fetch of the same pages in the bench process (client creation and"
        " gzip decoding included), before each check.",
        "",
        "| Check | Worker CPU per page | (lowest–highest) | Wall time | Pages/s"
        " | Page server CPU per page |",
        "|---|---|---|---|---|---|",
    )
    for name, label in CHECKS.items():
        low, high = series.spread(name, lambda s: s.worker_cpu * 1000 / series.pages)
        section.add(
            f"| {label.format(pages=series.pages)} |"
            f" {_ms(series.ms_per_page(name, lambda s: s.worker_cpu))} |"
            f" {low:.2f}–{high:.2f} |"
            f" {series.median(name, lambda s: s.seconds):.3f} s |"
            f" {series.pages_per_second(name):.0f} |"
            f" {_ms(series.ms_per_page(name, lambda s: s.server_cpu))} |"
        )
    fetch_seconds = statistics.median(f.seconds for f in series.baseline)
    section.add(
        f"| baseline: plain httpx fetch | {_ms(base)} | — | {fetch_seconds:.3f} s |"
        f" {series.baseline_pages_per_second:.0f} | — |",
        "",
        "- The unchanged recheck serves the same article texts with new chrome"
        " (ad ids, nonces, the footer's timestamp, the sidebar's order), as real"
        " pages do between two fetches; the byte-identical recheck serves the"
        " very same bytes again (a static page). The rewritten recheck edits"
        " every article (reworded sentences, a new price, a paragraph added and"
        " one removed), so every page is compared and diffed.",
        "- The page server's CPU is paid by the baseline too; it shows the server"
        " is not what limits a check.",
    )
    return section


def bench_throughput(slow: Series, hosts: int, rows: list[Row]) -> Section:
    from bench.workerbench import LATENCY_MS, fetch_limits

    total, per_host = fetch_limits()
    base = slow.baseline_pages_per_second
    for name in ("first", "unchanged", "rewritten"):
        value = slow.pages_per_second(name)
        targeted = name != "rewritten"
        rows.append(
            Row(
                f"Throughput at {LATENCY_MS} ms page latency,"
                f" {CHECKS[name].format(pages=slow.pages)}",
                f"{base:.0f} pages/s (plain httpx, {total} at a time,"
                f" ≤ {per_host} per host)",
                f"{value:.0f} pages/s",
                value / base,
                f"≥ {THROUGHPUT_TARGET:g}" if targeted else "— (ceiling: §2)",
                value / base >= THROUGHPUT_TARGET if targeted else None,
            )
        )
    cpus = os.cpu_count() or 1
    cpu_ms = slow.ms_per_page("rewritten", lambda s: s.worker_cpu)
    ceiling = (1000 / base) / (cpu_ms / cpus)
    section = Section(f"2. Throughput at {LATENCY_MS} ms page latency")
    section.add(
        f"The same checks, the server answering every page after {LATENCY_MS} ms"
        f" (without using CPU), as a distant site would. Pages/s from queueing"
        " the check to its finished status, median of"
        f" {len(slow.checks['first'])} repetitions.",
        "",
        "| Check | Wall time | (lowest–highest) | Pages/s | Ratio"
        " | Worker CPU per page |",
        "|---|---|---|---|---|---|",
    )
    for name, label in CHECKS.items():
        low, high = slow.spread(name, lambda s: s.seconds)
        section.add(
            f"| {label.format(pages=slow.pages)} |"
            f" {slow.median(name, lambda s: s.seconds):.3f} s |"
            f" {low:.3f}–{high:.3f} s |"
            f" {slow.pages_per_second(name):.0f} |"
            f" {ratio_text(slow.pages_per_second(name) / base)} |"
            f" {_ms(slow.ms_per_page(name, lambda s: s.worker_cpu))} |"
        )
    section.add(
        f"| baseline: plain httpx fetch |"
        f" {statistics.median(f.seconds for f in slow.baseline):.3f} s |"
        f" {min(f.seconds for f in slow.baseline):.3f}–"
        f"{max(f.seconds for f in slow.baseline):.3f} s |"
        f" {base:.0f} | 1 | {_ms(slow.baseline_ms_per_page)} |",
        "",
        f"- Concurrency: the worker fetches at most FETCH_CONCURRENCY = {total}"
        f" pages at a time and FETCH_PER_HOST_CONCURRENCY = {per_host} per host"
        " name, and so does the baseline. With every page on one host the"
        " per-host limit alone would set both speeds, so the pages are spread"
        f" over {hosts} loopback addresses (127.0.0.1 to 127.0.0.{hosts}, one"
        " port each, page i on address i mod"
        f" {hosts}): {hosts} × {per_host} = {hosts * per_host} fetches can run at"
        " once.",
        f"- The rewritten recheck is reported for information: its worker spends"
        f" {_ms(cpu_ms)} of CPU per page, which on {cpus} CPUs takes at least"
        f" {_ms(cpu_ms / cpus)} of wall time per page against the baseline's"
        f" {_ms(1000 / base)}: no scheduling can take it past"
        f" {ratio_text(ceiling)}; only less CPU per page can.",
    )
    return section


def bench_scaling(
    environment: bench_env.BenchEnv,
    server: PageServer,
    pages: int,
    reps: int,
    rows: list[Row],
    problems: list[str],
) -> Section:
    from bench import workerbench as wb

    per_target = max(1, pages // 4)
    big = wb.BIG_TARGETS * per_target
    times: dict[int, list[float]] = {1: [], 2: []}
    for rep in range(reps):
        # Alternate the order, so a drift in the machine's load hits both.
        for concurrency in (1, 2) if rep % 2 == 0 else (2, 1):
            with wb.Worker(environment, concurrency) as worker:
                wb.warm_up(worker, server, problems)
                generation = GENERATIONS["scaling"] + 10 * rep + concurrency
                times[concurrency] += wb.run_big_checks(
                    worker, server, per_target, [generation], problems
                )
    one, two = (statistics.median(times[n]) for n in (1, 2))
    rows.append(
        Row(
            f"{big:,}-page check at {wb.LATENCY_MS} ms: 2 worker processes vs 1"
            " (speed-up)",
            f"{one:.2f} s (`--concurrency=1`)",
            f"{two:.2f} s (`--concurrency=2`)",
            one / two,
            f"≥ {SCALING_TARGET:g}",
            one / two >= SCALING_TARGET,
        )
    )
    _, per_host = wb.fetch_limits()
    floor = big / per_host * wb.LATENCY_MS / 1000
    section = Section("3. Scaling with worker processes")
    section.add(
        f"A first check of {wb.BIG_TARGETS} targets × {per_target} URLs"
        f" ({big:,} pages, all on 127.0.0.1, {wb.LATENCY_MS} ms latency) by one"
        " `celery worker --concurrency=1` (one prefork child) and by one"
        " `celery worker --concurrency=2` (two children: how a user gives a"
        " worker more processes on one machine). Each worker is started for"
        " its checks and warmed up first; the order alternates between"
        " repetitions. Value: time with 1 ÷ time with 2, medians of"
        f" {reps}.",
        "",
        "| Repetition | `--concurrency=1` | `--concurrency=2` |",
        "|---|---|---|",
    )
    for rep, (a, b) in enumerate(zip(times[1], times[2], strict=True), 1):
        section.add(f"| {rep} | {a:.2f} s | {b:.2f} s |")
    section.add(
        "",
        f"- One site: FETCH_PER_HOST_CONCURRENCY = {per_host} in a fetching"
        f" process lets it fetch {per_host} pages per {wb.LATENCY_MS} ms, so one"
        f" process needs at least {floor:.1f} s for these pages. A check run by"
        " one task in one process cannot go faster with more processes; a check"
        " split into tasks can.",
    )
    return section


def _pss_text(parts: dict[str, float]) -> str:
    return ", ".join(f"{name} {mb:.0f} MB" for name, mb in parts.items())


# The smallest web: one gunicorn process whose threads share the app.
SMALL_WEB = {"WEB_WORKERS": "1", "WEB_THREADS": "4"}


def _service_pss(
    environment: bench_env.BenchEnv,
    server: PageServer,
    pages: int,
    generation: int,
    problems: list[str],
    settings: dict[str, str] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """The service's PSS per process, idle once it works, and after a first
    check of `pages` pages run through its API."""
    from bench import workerbench as wb

    with wb.Service(environment, settings) as service:
        time.sleep(SETTLE_SECONDS)
        idle = service.pss()
        server.show(pages, generation, 0)
        monitor = wb.make_monitor("service", [server.urls(pages, len(server.origins))])
        check = wb.run_check_through_api(monitor, service)
        wb.expect(check, problems, new=pages)
        return idle, service.pss()


def bench_memory(
    environment: bench_env.BenchEnv,
    server: PageServer,
    pages: int,
    idle: dict[str, float],
    busy: dict[str, float],
    rows: list[Row],
    problems: list[str],
) -> Section:
    generation = GENERATIONS["memory"] + 50
    idle_whole, whole = _service_pss(environment, server, pages, generation, problems)
    small = _service_pss(
        environment, server, pages, generation + 1, problems, SMALL_WEB
    )
    worker_mb, idle_mb, whole_mb = (
        sum(busy.values()),
        sum(idle.values()),
        sum(whole.values()),
    )
    small_idle_mb, small_mb = (sum(part.values()) for part in small)
    rows.append(
        Row(
            f"Worker PSS after {pages}-page checks, all its processes",
            f"{idle_mb:.0f} MB (the same worker, just started)",
            f"{worker_mb:.0f} MB",
            worker_mb / idle_mb,
            f"≤ {PSS_TARGET_MB:g} MB",
            worker_mb <= PSS_TARGET_MB,
            REFERENCE_PSS,
        )
    )
    idle_whole_mb = sum(idle_whole.values())
    busy_target, idle_target = (
        SERVICE_PSS_TARGET_MB["busy"],
        SERVICE_PSS_TARGET_MB["idle"],
    )
    web = " ".join(f"{name}={value}" for name, value in SMALL_WEB.items())
    rows.append(
        Row(
            f"Whole service as `make run` starts it, PSS after a {pages}-page check",
            f"{idle_whole_mb:.0f} MB (the same service, idle, just started)",
            f"{whole_mb:.0f} MB ({small_mb:.0f} MB with `{web}`)",
            whole_mb / idle_whole_mb,
            f"≤ {busy_target:g} MB",
            whole_mb <= busy_target,
            REFERENCE_PSS,
        )
    )
    rows.append(
        Row(
            "Whole service as `make run` starts it, PSS idle",
            f"{worker_mb:.0f} MB (the bench's worker after its checks, above)",
            f"{idle_whole_mb:.0f} MB ({small_idle_mb:.0f} MB with `{web}`)",
            idle_whole_mb / worker_mb,
            f"≤ {idle_target:g} MB",
            idle_whole_mb <= idle_target,
            REFERENCE_PSS,
        )
    )
    section = Section("4. Memory")
    section.add(
        "PSS (`/proc/<pid>/smaps_rollup`: shared pages divided among the"
        " processes that map them), summed over every process of a tree:",
        "",
        f"- the worker of §1–2 (`--concurrency=2`) just started: {idle_mb:.0f} MB"
        f" ({_pss_text(idle)})",
        f"- the same worker after its checks of {pages} pages: {worker_mb:.0f} MB"
        f" ({_pss_text(busy)})",
        "- `make run`'s service (`python -m config.run -f Procfile`, no"
        " REDIS_URL: the embedded Valkey, gunicorn (config/gunicorn.py),"
        " one Celery worker process whose tasks and scheduler run in threads"
        " (`--pool=threads --beat-thread`), and the manager) once /healthz"
        f" says it works: {idle_whole_mb:.0f} MB ({_pss_text(idle_whole)});"
        f" after one first check of {pages} pages, run through its API:"
        f" {whole_mb:.0f} MB ({_pss_text(whole)}).",
        f"- the same with `{web}` (one gunicorn process of threads):"
        f" {small_idle_mb:.0f} MB idle ({_pss_text(small[0])}), {small_mb:.0f} MB"
        f" after the check ({_pss_text(small[1])}).",
    )
    return section


def bench_checks(
    environment: bench_env.BenchEnv,
    chosen: set[str],
    pages: int,
    reps: int,
    rows: list[Row],
    problems: list[str],
) -> list[Section]:
    from bench import workerbench as wb

    sections = []
    hosts = wb.hosts_needed()
    with wb.PageServer(hosts) as server:
        if chosen & {"cpu", "throughput", "memory"}:
            with wb.Worker(environment, concurrency=2) as worker:
                idle = worker.pss()
                wb.warm_up(worker, server, problems)
                if "cpu" in chosen:
                    print("cpu...", flush=True)
                    series = wb.run_series(
                        worker, server, pages, reps, 0, GENERATIONS["cpu"], problems
                    )
                    sections.append(bench_cpu(series, rows))
                if "throughput" in chosen:
                    print("throughput...", flush=True)
                    slow = wb.run_series(
                        worker,
                        server,
                        pages,
                        reps,
                        wb.LATENCY_MS,
                        GENERATIONS["throughput"],
                        problems,
                    )
                    sections.append(bench_throughput(slow, hosts, rows))
                if not chosen & {"cpu", "throughput"}:
                    wb.run_series(
                        worker, server, pages, 1, 0, GENERATIONS["memory"], problems
                    )
                busy = worker.pss()
        if "scaling" in chosen:
            print("scaling...", flush=True)
            sections.append(
                bench_scaling(environment, server, pages, reps, rows, problems)
            )
        if "memory" in chosen:
            print("memory...", flush=True)
            sections.append(
                bench_memory(environment, server, pages, idle, busy, rows, problems)
            )
    return sections


# --- Diff and dispatcher -----------------------------------------------------------


def bench_diff(rows: list[Row]) -> Section:
    from bench import diffbench

    result = diffbench.measure()
    ratio = result.runner_s / result.baseline_s
    scaling = result.runner_2mb_s / result.runner_s
    rows.append(
        Row(
            "Diff of a 1 MB Markdown pair (compare_texts)",
            f"{seconds(result.baseline_s)} (content_hash of both)",
            seconds(result.runner_s),
            ratio,
            f"≤ {DIFF_TARGET:g}",
            ratio <= DIFF_TARGET,
        )
    )
    rows.append(
        Row(
            "Diff scaling: 2 MB pair vs 1 MB pair",
            f"{seconds(result.runner_s)} (1 MB)",
            f"{seconds(result.runner_2mb_s)} (2 MB)",
            scaling,
            f"≤ {DIFF_SCALING_TARGET:g} (linear 2, quadratic 4)",
            scaling <= DIFF_SCALING_TARGET,
        )
    )
    section = Section("5. Diff of a 1 MB page pair")
    difflib_text = (
        f"{seconds(result.difflib_s)}"
        f"; the runner's diff work takes"
        f" {ratio_text(result.runner_s / result.difflib_s)} as long and renders"
        " the AST and the HTML too"
        if result.difflib_s
        else f"did not finish within {diffbench.DIFFLIB_CAP:g} s"
    )
    section.add(
        f"{result.size_bytes / 1e6:.2f} MB of extracted-style Markdown,"
        f" {result.lines:,} lines, {diffbench.EDITS_PER_MB} scattered edits"
        " (reworded lines, inserted and deleted lines, a block moved to the end);"
        f" the unified diff has {result.diff_lines:,} lines. Process CPU time,"
        f" median of {diffbench.REPEATS}.",
        "",
        f"- baseline, `content_hash` of both texts: {seconds(result.baseline_s)}",
        f"- `render_side_by_side`: {seconds(result.side_by_side_s)}"
        f" ({ratio_text(result.side_by_side_s / result.baseline_s)})",
        f"- what the runner does per changed page, `compare_texts` (hashes,"
        f" diff, AST and HTML): {seconds(result.runner_s)}"
        f" ({ratio_text(ratio)}); on the 2 MB pair {seconds(result.runner_2mb_s)}",
        f"- reference, stdlib `difflib.unified_diff` on the same lines (no AST,"
        f" no HTML; capped at {diffbench.DIFFLIB_CAP:g} s): {difflib_text}",
        "",
        "Why this baseline: a plain hash + splitlines of 1 MB takes about a"
        " millisecond and mostly measures memcpy; `content_hash` is the cheapest"
        " full, meaningful read of both texts, which every check already pays. A"
        " linear diff stays within a small constant of it; a quadratic one on"
        " thousands of lines would be hundreds of times slower and would show in"
        " the scaling row too.",
    )
    return section


def _dispatch_result() -> DispatchResult:
    """bench.dispatchbench in a child process without REDIS_URL: Celery there
    sends its messages to an embedded Valkey of its own, where the benchmark
    counts them."""
    from bench.dispatchbench import DispatchResult

    environ = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.dispatchbench"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise bench_env.BenchError(f"dispatch benchmark failed:\n{done.stderr[-3000:]}")
    return DispatchResult(**json.loads(done.stdout.strip().splitlines()[-1]))


def bench_dispatch(rows: list[Row], problems: list[str]) -> Section:
    from django.conf import settings

    from bench import dispatchbench

    every = float(settings.DISPATCH_EVERY_SECONDS)

    result = _dispatch_result()
    problems += result.problems
    per_row = result.baseline_due_s / result.due
    per_monitor = result.drain_s / max(result.created, 1)
    rows.append(
        Row(
            f"Dispatch {result.due:,} due of {result.total:,}, per due monitor",
            f"{seconds(per_row)}/row (plain SELECT of the due ids,"
            f" {seconds(result.baseline_due_s)})",
            f"{seconds(per_monitor)}/monitor (drain {result.drain_s:.1f} s)",
            per_monitor / per_row,
            "",
            None,
        )
    )
    tick = statistics.median(result.full_ticks) if result.full_ticks else 0.0
    tick_ratio = tick / every
    rows.append(
        Row(
            f"Dispatch tick of {result.max_per_tick:,} checks vs the beat interval",
            f"{every:g} s (DISPATCH_EVERY_SECONDS, not measured)",
            f"{tick:.2f} s (median; worst {result.worst_tick_s:.2f} s)",
            tick_ratio,
            f"≤ {TICK_TARGET}",
            tick_ratio <= TICK_TARGET,
        )
    )
    zero_ratio = result.zero_due_s / result.baseline_all_s
    indexed = dispatchbench.uses_due_index(result.explain_zero)
    rows.append(
        Row(
            f"Dispatch with 0 due of {result.total:,}",
            f"{seconds(result.baseline_all_s)} (reading every monitor once)",
            f"{seconds(result.zero_due_s)}",
            zero_ratio,
            f"≤ {ZERO_DUE_TARGET} and EXPLAIN uses monitor_due_idx",
            zero_ratio <= ZERO_DUE_TARGET and indexed,
        )
    )
    ticks = ", ".join(f"{t:.2f} s ({n})" for drain in result.drains for t, n in drain)
    section = Section("6. Dispatcher")
    section.add(
        f"{result.total:,} monitors with one scrape target each: {result.due:,}"
        f" due, {dispatchbench.PAUSED:,} paused, the rest due later"
        f" (made in {result.populate_s:.1f} s; ANALYZE after). Celery enqueueing"
        " is real, through `make run`'s embedded Valkey (config/valkey.py) in a"
        " temporary directory:"
        f" {result.messages:,} messages written for {result.created:,} checks"
        f" created. The broker's share: {seconds(result.broker_per_message_s)}"
        " per message when sent on its own.",
        "",
        f"- Ticks of the drain (time, checks created): {ticks}. One call stops at"
        f" dispatch.MAX_PER_TICK = {result.max_per_tick:,}, so {result.due:,}"
        f" monitors due at once take {-(-result.due // result.max_per_tick)}"
        " beat ticks.",
        f"- Per due monitor: {seconds(per_monitor)} with the broker. One more tick"
        f" of {result.noop_tick_created:,} with `checks.dispatch.enqueue_many` replaced"
        f" by a no-op counter: {result.noop_tick_s:.2f} s"
        f" ({seconds(result.noop_tick_s / max(result.noop_tick_created, 1))} per"
        f" monitor, against {seconds(tick / result.max_per_tick)} in the median"
        " tick with the broker).",
        f"- 0 due: {seconds(result.zero_due_s)} per call (median of 5).",
        "",
        "EXPLAIN of the dispatcher's candidate query "
        "(`Monitor.objects.due(now)...select_for_update(skip_locked)[:200]`):",
        "",
        f"- {result.due:,} due: `{dispatchbench.plan_summary(result.explain_due)}`",
        f"- 0 due: `{dispatchbench.plan_summary(result.explain_zero)}`"
        f" — {'uses' if indexed else 'does NOT use'} the partial index"
        " monitor_due_idx, so the cost follows the due monitors, not the table.",
    )
    return section


# --- Lists at scale ----------------------------------------------------------------


def _list_row(name: str, baseline: str, value: str, ratio: float, key: str) -> Row:
    target = LIST_TARGETS[key]
    return Row(name, baseline, value, ratio, f"≤ {target:g}", ratio <= target)


def bench_lists(rows: list[Row], problems: list[str]) -> Section:
    from bench import listbench

    result = listbench.measure()
    problems += result.problems
    t, kb = result.timings, {k: v / 1000 for k, v in result.sizes.items()}
    scale = f"{result.monitors:,} monitors, {result.checks:,} checks"
    rows.append(
        _list_row(
            f"API list of 100 monitors ({scale})",
            f"{seconds(t['api_one'])} (`GET /v2/monitor/{{id}}`, one monitor)",
            seconds(t["api_list"]),
            t["api_list"] / t["api_one"],
            "api",
        )
    )
    rows.append(
        _list_row(
            f"Dashboard monitor list, 25 rows with their last 14 checks ({scale})",
            f"{seconds(t['trivial'])} (the team page, a trivial page)",
            f"{seconds(t['dashboard'])} ({kb['dashboard']:.0f} KB)",
            t["dashboard"] / t["trivial"],
            "dashboard",
        )
    )
    rows.append(
        _list_row(
            f"Dashboard search by address among {result.monitors:,} monitors",
            f"{seconds(t['trivial'])} (the team page, a trivial page)",
            seconds(t["search"]),
            t["search"] / t["trivial"],
            "search",
        )
    )
    for name, words in (
        ("activity", "newest 50"),
        ("activity_kind", f"filtered by kind ({listbench.ACTIVITY_FILTER})"),
    ):
        rows.append(
            _list_row(
                f"Team activity page, {words}, among {listbench.ACTIVITY:,} entries",
                f"{seconds(t['trivial'])} (the team page, a trivial page)",
                f"{seconds(t[name])} ({kb[name]:.0f} KB)",
                t[name] / t["trivial"],
                "activity",
            )
        )
    section = Section("7. Lists at scale")
    section.add(
        f"One team of {result.monitors:,} monitors (one scrape target of one to"
        f" three addresses each) and {result.checks:,} finished checks, made in"
        f" {result.populate_s:.1f} s (VACUUM ANALYZE after). Requests through Django's"
        " test client in the bench process (middleware, authentication, views,"
        " templates, PostgreSQL; no socket), each request taking turns with its"
        f" baseline, median of {listbench.REQUESTS} after {listbench.WARM_UP}"
        " warm-up rounds.",
        "",
        "| Request | Median | Size | Monitors shown |",
        "|---|---|---|---|",
    )
    for name, label in (
        ("api_one", "`GET /v2/monitor/{id}` (baseline of the API list)"),
        ("api_list", "`GET /v2/monitor?limit=100`"),
        ("trivial", "`GET /settings/team/` (baseline of the dashboard rows)"),
        ("dashboard", "`GET /` (first page of the monitor list)"),
        ("search", f"`GET /?q={listbench.SEARCH}` among {result.monitors:,}"),
        (
            "search_small",
            f"`GET /?q={listbench.SEARCH}` in a team of {listbench.SMALL_TEAM}",
        ),
        ("activity", f"`GET /activity/` among {listbench.ACTIVITY:,} entries"),
        ("activity_kind", f"`GET /activity/?kind={listbench.ACTIVITY_FILTER}`"),
    ):
        section.add(
            f"| {label} | {seconds(t[name])} | {kb.get(name, 0):.1f} KB |"
            f" {result.matches.get(name, '—')} |"
        )
    growth = t["search"] / t["search_small"]
    section.add(
        "",
        f"- Search among {result.monitors:,} monitors takes {ratio_text(growth)}"
        f" the time it takes among {listbench.SMALL_TEAM}: trigram indexes"
        " (monitors migration 0003) serve its case-insensitive `contains` on"
        " PostgreSQL.",
        "- The API list reads each monitor's run interval as stored with its"
        " schedule instead of walking its cron expression twice per monitor.",
        f"- The activity log's {listbench.ACTIVITY:,} entries (made in"
        f" {result.activity_populate_s:.1f} s) are paged with a cursor on the"
        " (team, id) indexes, so a page costs the same at any depth; the table"
        " shows entries, not monitors, in its last column for these rows.",
    )
    return section


# --- Report ------------------------------------------------------------------------


# --- Serving the API -------------------------------------------------------------


def _serving_line(name: str, serving: Serving) -> str:
    lone, floor = serving.lone_median, serving.floor()
    p50, p95 = serving.burst_quantile(0.5), serving.burst_quantile(0.95)
    return (
        f"| {name} | {seconds(lone)} | {seconds(p50)} | {seconds(p95)} |"
        f" {ratio_text(p95 / lone)} | {seconds(floor)} | {ratio_text(p95 / floor)} |"
    )


def _web_workers() -> int:
    from config import gunicorn

    return int(gunicorn.workers)


def bench_serving(reps: int, rows: list[Row]) -> Section:
    import tempfile

    from bench import servebench as sb

    with tempfile.TemporaryDirectory(prefix="pagewatch-serving-") as var:
        results = sb.measure(Path(var), reps)
    ours, threaded = results["procfile"], results["threaded"]
    lone, p95 = ours.lone_median, ours.burst_quantile(0.95)
    burst = f"Burst of {sb.BURST} API requests ({sb.GETS} GET, {sb.POSTS} POST)"
    rows.append(
        Row(
            f"{burst} on `make run`'s web: p95",
            f"{seconds(lone)} (a lone request, median)",
            seconds(p95),
            p95 / lone,
            f"≤ {SERVING_P95_TARGET:g}",
            p95 / lone <= SERVING_P95_TARGET,
        )
    )
    rows.append(
        Row(
            f"{burst}: p50",
            f"{seconds(lone)} (a lone request, median)",
            seconds(ours.burst_quantile(0.5)),
            ours.burst_quantile(0.5) / lone,
            "",
            None,
        )
    )
    rows.append(
        Row(
            f"{burst}: p95 against the CPU floor",
            f"{seconds(ours.floor())} (lone times summed ÷ {os.cpu_count()} CPUs)",
            seconds(p95),
            p95 / ours.floor(),
            "",
            None,
        )
    )
    rows.append(
        Row(
            f"{burst}: p95 of the former web (threaded: 2 processes of 8"
            " threads) against this one",
            seconds(p95),
            seconds(threaded.burst_quantile(0.95)),
            threaded.burst_quantile(0.95) / p95,
            "",
            None,
        )
    )
    cpus = os.cpu_count() or 1
    section = Section("8. Serving the API")
    section.add(
        f"`make run`'s web (the Procfile's `web:` command: `{ours.command}`) on"
        " its embedded SQLite database, with nothing else running. A burst is"
        f" {sb.BURST} requests sent at once, each on a connection of its own:"
        f" {sb.GETS // 2} reads of the monitor list, {sb.GETS - sb.GETS // 2}"
        f" reads of one monitor and {sb.POSTS} monitors created, shuffled. The"
        " baseline is the same mix sent one request at a time just before"
        " (a lone request). Each of"
        f" {reps} repetitions starts web afresh; the former setup"
        f" (`{sb.THREADED}`) alternates with it. Medians over repetitions.",
        "",
        "| Web | Lone request | Burst p50 | Burst p95 | p95 ÷ lone |"
        " CPU floor | p95 ÷ floor |",
        "|---|---|---|---|---|---|---|",
        _serving_line(f"sync, {_web_workers()} processes (config/gunicorn.py)", ours),
        _serving_line("threaded, 2 × 8 threads (before)", threaded),
        "",
        "- The CPU floor is the least time the burst can take: each request"
        " needs a CPU about as long as it takes alone, so the lone times of the"
        f" burst's {sb.BURST} requests, summed, divided by the {cpus} CPUs, is"
        " when the last one can be done at best, whatever serves them. Its"
        " p95 can be no less than about 0.95 of it, that is"
        f" {0.95 * sb.BURST / cpus:.0f} lone requests on {cpus} CPUs:"
        f" p95 ≤ {SERVING_P95_TARGET:g}× a lone request needs"
        f" {0.95 * sb.BURST / SERVING_P95_TARGET:.1f} CPUs or more for requests"
        " that spend their time computing, as these do on loopback. A p95"
        " near the floor means the serving setup wastes none of the CPUs;"
        " only less CPU per request, or more CPUs, can lower it.",
        "- Sync workers take one request at a time each, so a burst is"
        " answered roughly in the order it came and most requests are done"
        " well before the last: p95 sits at the floor. Threaded workers took"
        " every connection at once and shared the CPUs among all of them, so"
        " nearly every request finished near the end of the burst.",
    )
    return section


# --- Moving in -----------------------------------------------------------------------


def bench_import(rows: list[Row], problems: list[str]) -> Section:
    from bench import importbench

    result = importbench.measure()
    made = result.created
    if made["api"] != made["import"] or made["import"] != result.watches:
        problems.append(f"Import bench made {made} monitors of {result.watches}.")
    per = {k: 1000 * v / max(made[k], 1) for k, v in result.cpu_s.items()}
    ratio = per["import"] / per["api"]
    rows.append(
        Row(
            f"Import of {result.watches:,} changedetection.io watches, CPU per monitor",
            f"{_ms(per['api'])} (`POST /v2/monitor` one by one)",
            _ms(per["import"]),
            ratio,
            f"≤ {IMPORT_TARGET:g}",
            ratio <= IMPORT_TARGET,
        )
    )
    section = Section("11. Moving in: an import of 1,000 watches")
    section.add(
        f"A changedetection.io backup of {result.watches:,} watches (each with a"
        " CSS filter, an element to remove, a header, two lines to ignore and a"
        f" Brotli snapshot; {result.zip_bytes / 1e6:.1f} MB zipped) imported"
        " through `monitors.moving` (read, mapped, validated by the API's"
        " serializer, made in batches of 100 per transaction with their first"
        " baselines), against the same monitors posted one by one to"
        " `POST /v2/monitor` through Django's test client in the same process."
        " CPU is this process plus the PostgreSQL backend of its connection.",
        "",
        "| Way | Monitors | CPU per monitor | of which PostgreSQL | Wall |",
        "|---|---|---|---|---|",
    )
    for name, label in (("api", "API one by one"), ("import", "Import")):
        backend = 1000 * result.backend_s[name] / max(made[name], 1)
        section.add(
            f"| {label} | {made[name]:,} | {_ms(per[name])} | {_ms(backend)} |"
            f" {seconds(result.wall_s[name])} |"
        )
    return section


# --- Channels ------------------------------------------------------------------------


def bench_channels(
    environment: bench_env.BenchEnv, reps: int, rows: list[Row], problems: list[str]
) -> Section:
    from bench import channelbench as cb

    result = cb.measure(environment, reps)
    alone, fan = cb.median(result.alone), cb.median(result.fan_out)
    kinds = ", ".join(f"{n} {kind}" for kind, n in cb.MIX.items())
    channels = sum(cb.MIX.values())
    rows.append(
        Row(
            f"One meaningful change told to {channels} channels ({kinds}):"
            " check finished to last delivery received",
            f"{seconds(alone)} (one webhook channel alone)",
            seconds(fan),
            fan / alone,
            f"≤ {FAN_OUT_TARGET:g}",
            fan / alone <= FAN_OUT_TARGET,
        )
    )
    drained, post = result.drain_per_delivery, result.post_per_request
    rows.append(
        Row(
            f"{result.drained:,} queued deliveries drained by the notifications"
            f" worker (`{cb.worker_command()}`), per delivery",
            f"{seconds(post)} (plain httpx POST, one client)",
            seconds(drained),
            drained / post,
            f"≤ {DRAIN_TARGET:g}",
            drained / post <= DRAIN_TARGET,
        )
    )
    cpu_per = result.drain_cpu_s / max(result.drained, 1)
    post_cpu = result.post_cpu_s / max(result.posts, 1)
    rows.append(
        Row(
            "The same drain: the worker's CPU per delivery (all its processes)",
            f"{_ms(1000 * post_cpu)} (the plain POST's CPU, client side)",
            _ms(1000 * cpu_per),
            cpu_per / post_cpu if post_cpu else None,
            "",
            None,
        )
    )
    without, with_hang = cb.p95(result.without_hang), cb.p95(result.with_hang)
    rows.append(
        Row(
            f"p95 delivery latency of {channels - 1} channels beside one whose"
            " receiver hangs",
            f"{seconds(without)} (the same channels, no hanging one)",
            seconds(with_hang),
            with_hang / without,
            f"≤ {HANG_TARGET:g}",
            with_hang / without <= HANG_TARGET,
        )
    )
    if (
        result.hang_attempts.get("pending", 0) + result.hang_attempts.get("failed", 0)
        != cb.HANG_CHECKS
    ):
        problems.append(f"Hanging channel's deliveries: {result.hang_attempts}")
    plain = result.plain_count
    profiled = result.profile_s / max(result.profiled, 1)
    section = Section("Channels: fan-out, drain, a hanging receiver")
    low, high = min(result.fan_out), max(result.fan_out)
    section.add(
        "Deliveries sent by Procfile.large's notifications worker"
        f" (`{cb.worker_command()}`)"
        " on the bench's PostgreSQL and Redis. Checks are ended in the bench"
        " process by `checks.runner.finish` (which records the deliveries in"
        " the outbox and queues them after commit), each with two changed"
        " pages and one unchanged (judging off: every change is meaningful)."
        " Receivers are HTTP/1.1 servers on 127.0.0.1 in threads of the bench"
        " process (webhooks, a fake Slack Web API through SLACK_API_URL,"
        " Slack incoming webhooks, Apprise `json://`), noting when each"
        " request arrives.",
        "",
        "| Measurement | Median | (lowest–highest) | `runner.finish` itself |",
        "|---|---|---|---|",
        f"| one webhook channel: finish → delivered | {seconds(alone)} |"
        f" {seconds(min(result.alone))}–{seconds(max(result.alone))} |"
        f" {seconds(cb.median(result.alone_finish))} |",
        f"| {channels} channels: finish → first delivered |"
        f" {seconds(cb.median(result.fan_out_first))} | — | — |",
        f"| {channels} channels: finish → last delivered | {seconds(fan)} |"
        f" {seconds(low)}–{seconds(high)} |"
        f" {seconds(cb.median(result.fan_out_finish))} |",
        "",
        f"- Drain: {result.drained:,} deliveries ({cb.DRAIN_CHECKS} checks ended,"
        f" each to {cb.DRAIN_CHANNELS} webhook channels) queued while the worker"
        f" did not consume, then drained in {seconds(result.drain_s)}:"
        f" {seconds(drained)} per delivery, {_ms(1000 * cpu_per)}"
        " of the worker's CPU per delivery (PostgreSQL's not counted). The"
        f" baseline posted the same body {result.posts:,} times in"
        f" {seconds(result.post_s)}. The receiver of both is this process.",
        "- By kind, median (highest) from finish to received in the fan-out: "
        + "; ".join(
            f"{kind} {seconds(cb.median(v))} ({seconds(max(v))})"
            for kind, v in result.fan_out_kinds.items()
        )
        + ". A finished check's deliveries go out as one drain task, which"
        " sends them side by side.",
        f"- The same drain function in the bench process, without a profiler:"
        f" {seconds(result.plain_wall_s / max(plain, 1))} per delivery, of which"
        f" {_ms(1000 * result.plain_cpu_s / max(plain, 1))} of the process's CPU"
        " (the receiver's threads included, PostgreSQL's not counted).",
        f"- Where a delivery's time goes: `drain.drain(ids)` of each check's"
        f" {cb.DRAIN_CHANNELS} deliveries (the task's body) over"
        f" {result.profiled} queued webhook deliveries in the bench process"
        f" under cProfile, {seconds(profiled)} per delivery (profiled),"
        " cumulative CPU time per delivery (the process's clock, so the"
        " receiver's threads and the drain's event loop count in the wait for"
        " outcomes; cProfile's own overhead included):",
        "",
        "| Part | Per delivery |",
        "|---|---|",
        *(f"| {label} | {seconds(value)} |" for label, value in result.profile_rows),
        "",
        f"- Hanging receiver: {cb.HANG_CHECKS} checks ended one after the other"
        f" on a monitor with {channels - 1} channels (the fan-out's kinds less"
        " one webhook), each waiting for its deliveries, then as many on a"
        " monitor with the same channels and a webhook channel whose receiver"
        " accepts connections and never answers. p95 (and median) of the"
        f" {channels - 1} channels' latency, finish → received: without"
        f" {seconds(without)} ({seconds(cb.median(result.without_hang))}), with"
        f" {seconds(with_hang)} ({seconds(cb.median(result.with_hang))}). The"
        f" hanging channel's deliveries afterwards: {result.hang_attempts}.",
        *(
            f"- {name}, by kind, median (highest): "
            + "; ".join(
                f"{kind} {seconds(cb.median(v))} ({seconds(max(v))})"
                for kind, v in kinds.items()
            )
            for name, kinds in result.hang_kinds.items()
        ),
    )
    return section


# --- Report ------------------------------------------------------------------------


def _versions() -> str:
    import redis
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0].split()[0]
    with redis.Redis.from_url(os.environ["REDIS_URL"]) as client:
        broker = client.info("server")["redis_version"]
    return (
        f"PostgreSQL {postgres} (database `{bench_env.db_name()}`, recreated);"
        f" Redis {broker} (BENCH_REDIS_URL, flushed)"
    )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _header(
    started_at: datetime,
    elapsed: float,
    loads: tuple[tuple[float, ...], ...],
    command: str,
) -> list[str]:
    import django
    from django.conf import settings

    cpus = os.cpu_count() or 1
    header = [
        "# Pagewatch benchmarks",
        "",
        f"Generated by `{command}` on {started_at:%Y-%m-%d %H:%M} UTC in"
        f" {elapsed:.0f} s. Each value is compared with a baseline measured in"
        " the same run on the same machine: read the ratios, not the absolute"
        " numbers (see bench/README.md).",
        "",
        "## Machine",
        "",
        f"- {cpus} CPUs (nproc), {_cpu_model()}; {platform.platform()}",
        f"- Python {platform.python_version()}, Django {django.get_version()}",
        f"- {_versions()}",
        f"- FETCH_CONCURRENCY={settings.FETCH_CONCURRENCY},"
        f" FETCH_PER_HOST_CONCURRENCY={settings.FETCH_PER_HOST_CONCURRENCY}",
        f"- Load average (1 min) at start {loads[0][0]:.1f}, at end"
        f" {loads[1][0]:.1f} (the end figure counts the bench's own last"
        " section: the crawl's workers, the browser's Chromium)",
    ]
    if loads[0][0] > cpus:
        header.append(
            "- **The machine was busy with other work during this run** (load"
            " above the CPU count): absolute times are inflated and CPU-heavy"
            " values suffer more than their I/O-bound baselines."
        )
    return header


def bench_broker(environment: bench_env.BenchEnv, rows: list[Row]) -> Section:
    from bench import brokerbench

    standalone = brokerbench.round_trip_us(environment.redis_url)
    with brokerbench.embedded() as url:
        embedded = brokerbench.round_trip_us(url)
    ratio = embedded / standalone
    rows.append(
        Row(
            "Broker round trip of a task message: embedded Valkey vs standalone Redis",
            f"{standalone:.0f} µs (Redis, BENCH_REDIS_URL, TCP loopback)",
            f"{embedded:.0f} µs (Valkey, unix socket)",
            ratio,
            f"≤ {BROKER_TARGET:g}",
            ratio <= BROKER_TARGET,
        )
    )
    section = Section("Broker round trip")
    section.add(
        f"Median of {brokerbench.MESSAGES} messages, each published through"
        " kombu and taken back (get and ack) on one connection: the standalone"
        f" Redis {standalone:.0f} µs, `make run`'s embedded Valkey"
        f" (config/valkey.py, unix socket under a temporary var/) {embedded:.0f} µs.",
    )
    return section


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=BENCHMARKS)
    parser.add_argument("--reps", type=int, default=3, help="repetitions (3)")
    parser.add_argument(
        "--pages",
        type=int,
        default=200,
        help="pages of a check (200); the scaling check has 5 times as many",
    )
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "RESULTS.md")
    args = parser.parse_args()

    chosen = set(args.only or BENCHMARKS)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    load_start = os.getloadavg()
    environment = bench_env.prepare()
    rows: list[Row] = []
    sections: list[Section] = []
    problems: list[str] = []
    try:
        bench_env.setup_django(migrate=True)
        if chosen & {"cpu", "throughput", "scaling", "memory"}:
            sections += bench_checks(
                environment, chosen, args.pages, args.reps, rows, problems
            )
        if "diff" in chosen:
            print("diff...", flush=True)
            sections.append(bench_diff(rows))
        if "dispatch" in chosen:
            print("dispatch...", flush=True)
            sections.append(bench_dispatch(rows, problems))
        if "lists" in chosen:
            print("lists...", flush=True)
            sections.append(bench_lists(rows, problems))
        if "serving" in chosen:
            print("serving...", flush=True)
            sections.append(bench_serving(args.reps, rows))
        if "crawl" in chosen:
            from bench.crawlbench import bench_crawl

            print("crawl...", flush=True)
            sections.append(bench_crawl(environment, args.reps, rows, problems))
        if "broker" in chosen:
            print("broker...", flush=True)
            sections.append(bench_broker(environment, rows))
        if "browser" in chosen:
            from bench.browserbench import bench_browser

            print("browser...", flush=True)
            sections.append(bench_browser(environment, args.reps, rows, problems))
        if "import" in chosen:
            print("import...", flush=True)
            sections.append(bench_import(rows, problems))
        if "channels" in chosen:
            print("channels...", flush=True)
            sections.append(bench_channels(environment, args.reps, rows, problems))
        header = _header(
            started_at,
            time.perf_counter() - started,
            (load_start, os.getloadavg()),
            " ".join(["bench/run.py", *sys.argv[1:]]),
        )
    except bench_env.BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        bench_env.cleanup(environment, keep_db=args.keep_db)
    footer = []
    if problems:
        footer = ["## Problems seen", "", *(f"- {p}" for p in problems)]
    args.output.write_text(render(header, rows, sections, footer))
    print(args.output.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
