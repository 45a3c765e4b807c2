"""`make bench`: Pagewatch's performance benchmarks, written to bench/RESULTS.md.

Every number is reported as a ratio against a baseline measured in the same
run on the same machine, because absolute timings say more about the machine
(and whatever else it is doing) than about the code. See bench/README.md.

    .venv/bin/python bench/run.py                  # everything, ~2-4 minutes
    .venv/bin/python bench/run.py --only diff      # one benchmark (dev loop)
    .venv/bin/python bench/run.py --profile        # also cProfile a check

Benchmarks are not tests: nothing here fails the build. A missed target is a
**FAIL** in the results, with the numbers to start from.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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
    from bench.throughput import PageServer

BENCHMARKS = ("throughput", "memory", "diff", "dispatch")
THROUGHPUT_TARGET = 0.5
MEMORY_TARGET = 1.5
GROWTH_TARGET = 1.5
SMALL_CHECK = 20
DIFF_TARGET = 10.0
SCALING_TARGET = 2.5
ZERO_DUE_TARGET = 0.1
TICK_TARGET = 0.5


# --- Child processes (memory benchmark) ---------------------------------------------


def _maxrss_mb() -> float:
    # Linux reports kilobytes.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _hwm_mb() -> float | None:
    """VmHWM: the peak RSS of this process image alone (Linux), a cross-check."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _child(kind: str, base_url: str, generation: int, pages: int) -> None:
    """Runs in a fresh interpreter; prints one JSON line."""
    bench_env.setup_django()
    out: dict = {}
    if kind in ("idle", "check"):
        # What a worker has loaded before its first task.
        import checks.dispatch  # noqa: F401
        import checks.runner  # noqa: F401
        import checks.tasks  # noqa: F401
    if kind == "check":
        from bench.throughput import child_check

        out["before_mb"] = _maxrss_mb()
        out |= child_check(base_url, generation, pages)
    out["maxrss_mb"] = _maxrss_mb()
    out["hwm_mb"] = _hwm_mb()
    print(json.dumps(out))


def _spawn(kind: str, base_url: str = "", generation: int = 0, pages: int = 0) -> dict:
    # Through a shell that forks (not execs) the interpreter: Linux carries
    # ru_maxrss across fork + exec, so a child started by this (by now large)
    # process would report *our* peak as its own.
    done = subprocess.run(
        [
            "/bin/sh",
            "-c",
            '"$@"; exit $?',
            "sh",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            kind,
            "--server",
            base_url,
            "--generation",
            str(generation),
            "--pages",
            str(pages),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory child {kind!r} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- Benchmarks ---------------------------------------------------------------------


def bench_throughput(
    server: PageServer, reps: int, profile: bool, rows: list[Row], problems: list[str]
) -> Section:
    from bench import throughput

    result = throughput.measure(server, reps)
    problems += result.problems
    base = result.pps(result.baseline_s)
    concurrency = result.concurrency
    section = Section("1. Check throughput")
    # The target applies to a check of the 50 pages (the first, every page
    # new) and to the common check that finds nothing changed. The check with
    # diffs is reported for information: each changed page costs two Markdown
    # conversions and a rendered diff (~7 ms of CPU), and its ceiling on this
    # machine is computed from the measured CPU time below (_cpu_floor).
    for samples, what, targeted in (
        (result.first_s, "first check, 50 new pages", True),
        (result.second_s, "second check, 10 changed + 40 same", False),
        (result.unchanged_s, "third check, nothing changed (50 same)", True),
    ):
        value = result.pps(samples)
        ratio = value / base
        rows.append(
            Row(
                f"Check throughput, {what}",
                f"{base:.0f} pages/s (plain httpx, {concurrency} at a time)",
                f"{value:.1f} pages/s",
                ratio,
                f"≥ {THROUGHPUT_TARGET}" if targeted else "— (ceiling: §1)",
                ratio >= THROUGHPUT_TARGET if targeted else None,
            )
        )
    slow_base = result.pps(result.latency_baseline_s)
    for samples, what in (
        (result.latency_first_s, "first"),
        (result.latency_second_s, "second"),
    ):
        value = result.pps(samples)
        rows.append(
            Row(
                f"Check throughput, {what} check, {throughput.LATENCY_MS} ms simulated"
                " latency per page",
                f"{slow_base:.0f} pages/s (plain httpx, same latency)",
                f"{value:.1f} pages/s",
                value / slow_base,
                "",
                None,
            )
        )
    kb = result.bytes_per_page / 1000
    section.add(
        f"{result.pages} article pages of ~{kb:.0f} KB HTML (nav, cookie banner,"
        " sidebar, in-article ads, share bar, footer, ad iframes, pixels; served"
        " gzip) on a loopback asyncio server in its own process. Medians of"
        f" {reps} repetitions, each with a fresh monitor and fresh page content.",
        "",
        "| Repetition | Baseline fetch (s) | First check (s) | Second check (s)"
        " | Third check (s) |",
        "|---|---|---|---|---|",
    )
    for rep in range(reps):
        fetches = result.baseline_s[2 * rep : 2 * rep + 2]
        section.add(
            f"| {rep + 1} | {' / '.join(f'{s:.3f}' for s in fetches)} | "
            f"{result.first_s[rep]:.3f} | {result.second_s[rep]:.3f} |"
            f" {result.unchanged_s[rep]:.3f} |"
        )
    share = max(result.server_cpu_share)
    section.add(
        "",
        f"- Baseline concurrency {concurrency} = min(FETCH_CONCURRENCY,"
        " FETCH_PER_HOST_CONCURRENCY): every page is on 127.0.0.1, so the"
        " runner's per-host limit applies to it as well.",
        f"- The server is not the bottleneck: it used at most {share:.1%} of one"
        " CPU during a check.",
        "- On loopback a fetch costs the baseline almost nothing, so the ratio"
        " compares the runner's per-page work with a nearly free fetch. The"
        f" informational rows repeat the measurement ({throughput.LATENCY_REPS}"
        f" repetitions) with the server answering each page after"
        f" {throughput.LATENCY_MS} ms, closer to fetching real sites.",
    )
    phases = throughput.attribute(server, generation=900)
    section.add(
        "",
        "Where the worker thread's time goes, in ms per page (one extra first and"
        " second check with the phases' functions wrapped in checks.runner; wall"
        " time, and the thread's CPU time: the difference is waiting, for"
        " PostgreSQL, for the disk on COMMIT, or for a CPU):",
        "",
        "| Phase | First: wall | First: CPU | Second: wall | Second: CPU |",
        "|---|---|---|---|---|",
    )
    labels = dict(throughput.PHASES, store="of which Snapshot.store_many")

    def cells(name: str) -> str:
        values = []
        for check in ("first", "second"):
            wall, cpu = phases[check].get(name, (0.0, 0.0))
            values += [f"{wall * 1000 / result.pages:.2f}"]
            values += [f"{cpu * 1000 / result.pages:.2f}"]
        return " | ".join(values)

    for name in [*throughput.PHASES, "store"]:
        section.add(f"| {labels[name]} | {cells(name)} |")
    for check in ("first", "second"):
        spent = phases[check]
        phases[check]["other"] = tuple(
            spent["total"][i]
            - sum(v[i] for k, v in spent.items() if k not in ("total", "store"))
            for i in (0, 1)
        )
    labels |= {
        "other": "other: claim, plan, waiting for fetches and the analysis pool, finish"
    }
    labels |= {"total": "**total**"}
    for name in ("other", "total"):
        section.add(f"| {labels[name]} | {cells(name)} |")
    section.add(
        "",
        f"For scale: the baseline spends {1000 / base:.2f} ms of wall time per page.",
    )
    places = throughput.cpu_by_place(server, generation=920)
    place_labels = {
        "thread": "worker thread (database writes, pipeline)",
        "threads": "worker's other threads (fetcher, pool feeders)",
        "pool": "analysis pool processes (extract, Markdown, diffs)",
        "database": "PostgreSQL backend",
        "server": "page server (the baseline pays it too)",
        "wall": "**wall time**",
    }
    section.add(
        "",
        "Where the CPU goes, in ms per page (one extra first and second check;"
        f" {os.cpu_count()} CPUs are shared by all of these, so the check cannot"
        " take less wall time than their sum divided by the CPU count):",
        "",
        "| Place | First check | Second check |",
        "|---|---|---|",
    )
    for key, label in place_labels.items():
        if key in places["first"]:
            first, second = (
                places[c][key] * 1000 / result.pages for c in ("first", "second")
            )
            section.add(f"| {label} | {first:.2f} | {second:.2f} |")
    section.add("", *_cpu_floor(places, result.pages, base))
    if profile:
        out = ROOT / "var" / "bench-profile.txt"
        out.parent.mkdir(exist_ok=True)
        throughput.profile_second_check(server, generation=950, out=out)
        section.add(
            "", f"cProfile of a first + second check: `{out.relative_to(ROOT)}`."
        )
    return section


def _cpu_floor(
    places: dict[str, dict[str, float]], pages: int, base: float
) -> list[str]:
    """What the measured CPU time allows: all of it spread perfectly over the
    machine's CPUs is the least wall time a check can take."""
    cpus = os.cpu_count() or 1
    lines = []
    for check in ("first", "second"):
        spent = sum(v for k, v in places[check].items() if k != "wall")
        floor = spent * 1000 / pages / cpus
        lines.append(
            f"- {check.capitalize()} check: {spent * 1000 / pages:.2f} ms of CPU per"
            f" page in all, so at least {floor:.2f} ms of wall time per page on"
            f" {cpus} CPUs: against the baseline's {1000 / base:.2f} ms per page, no"
            f" scheduling can take this check past {1000 / base / floor:.2f}×; only"
            " less CPU per page can."
        )
    return lines


def bench_memory(server: PageServer, rows: list[Row]) -> Section:
    from bench.pages import PAGE_BYTES
    from bench.throughput import PAGES

    setup_only = _spawn("setup")
    idle = _spawn("idle")
    check = _spawn("check", server.base_url, generation=700, pages=PAGES)
    small = _spawn("check", server.base_url, generation=710, pages=SMALL_CHECK)
    ratio = check["maxrss_mb"] / idle["maxrss_mb"]
    increment = check["maxrss_mb"] - idle["maxrss_mb"]
    small_increment = small["maxrss_mb"] - idle["maxrss_mb"]
    growth = increment / max(small_increment, 0.1)
    rows.append(
        Row(
            f"Peak worker RSS, a first + second {PAGES}-page check, fresh process",
            f"{idle['maxrss_mb']:.0f} MB (Django setup + worker imports)",
            f"{check['maxrss_mb']:.0f} MB (+{increment:.0f} MB)",
            ratio,
            f"≤ {MEMORY_TARGET}",
            ratio <= MEMORY_TARGET,
        )
    )
    rows.append(
        Row(
            f"Peak RSS increment, {PAGES}-page vs {SMALL_CHECK}-page check",
            f"+{small_increment:.1f} MB ({SMALL_CHECK} pages)",
            f"+{increment:.1f} MB ({PAGES} pages)",
            growth,
            f"≤ {GROWTH_TARGET} (all bodies held: {PAGES / SMALL_CHECK:g})",
            growth <= GROWTH_TARGET,
        )
    )
    fetched_mb = 2 * PAGES * PAGE_BYTES / 1e6
    section = Section("2. Peak worker memory")
    section.add(
        "Peak RSS (`getrusage(RUSAGE_SELF).ru_maxrss`) of fresh interpreters:",
        "",
        f"- Django setup only: {setup_only['maxrss_mb']:.1f} MB",
        "- baseline, Django setup + checks.runner/dispatch/tasks imported (an"
        f" idle worker): {idle['maxrss_mb']:.1f} MB",
        f"- the same, then a first check ({PAGES} new pages) and a second check"
        f" ({PAGES // 5} changed, diffs rendered): {check['maxrss_mb']:.1f} MB"
        f" (before the checks: {check['before_mb']:.1f} MB)",
        f"- the same with {SMALL_CHECK} pages: {small['maxrss_mb']:.1f} MB",
        "",
        "Cross-check, VmHWM of the same processes (peak RSS of the process image"
        " alone): "
        + ", ".join(
            f"{r['hwm_mb']:.1f} MB" if r.get("hwm_mb") else "n/a"
            for r in (setup_only, idle, check, small)
        )
        + ".",
        "",
        f"The {PAGES}-page checks add {increment:.1f} MB at peak while fetching"
        f" ~{fetched_mb:.0f} MB of HTML in all. The runner hands bodies over"
        " through a queue bounded by FETCH_CONCURRENCY, takes at most"
        " 2 × CHECK_CPU_WORKERS + FETCH_CONCURRENCY from it at a time, and a"
        " fetch keeps its slot until its body is handed over, so at most"
        " 2 × FETCH_CONCURRENCY + 2 × CHECK_CPU_WORKERS +"
        " FETCH_PER_HOST_CONCURRENCY bodies"
        f" (40 here, decoded) are held at once: past"
        f" {SMALL_CHECK} pages the peak should barely grow with the number of"
        " pages, which the second row checks.",
    )
    return section


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
            f"≤ {SCALING_TARGET:g} (linear 2, quadratic 4)",
            scaling <= SCALING_TARGET,
        )
    )
    section = Section("3. Diff of a 1 MB page pair")
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


def bench_dispatch(
    environment: bench_env.BenchEnv, rows: list[Row], problems: list[str]
) -> Section:
    from django.utils import timezone

    from bench import dispatchbench
    from config.celery import DISPATCH_EVERY_SECONDS

    result = dispatchbench.measure(timezone.now(), environment.broker_dir)
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
    tick_ratio = tick / DISPATCH_EVERY_SECONDS
    rows.append(
        Row(
            f"Dispatch tick of {result.max_per_tick:,} checks vs the beat interval",
            f"{DISPATCH_EVERY_SECONDS:g} s (config.celery, not measured)",
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
    section = Section("4. Dispatcher")
    section.add(
        f"{result.total:,} monitors with one scrape target each: {result.due:,}"
        f" due, {dispatchbench.PAUSED:,} paused, the rest due later"
        f" (made in {result.populate_s:.1f} s; ANALYZE after). Celery enqueueing"
        " is real, through kombu's filesystem transport in a temporary directory:"
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


# --- Report ------------------------------------------------------------------------


def _database_text(environment: bench_env.BenchEnv) -> str:
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
        return f"PostgreSQL {version} (database `{bench_env.DB_NAME}`, recreated)"
    import sqlite3

    return f"SQLite {sqlite3.sqlite_version} (`var/bench.sqlite3`): {environment.note}"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _header(
    environment: bench_env.BenchEnv,
    started_at: datetime,
    elapsed: float,
    loads: tuple[tuple[float, ...], tuple[float, ...]],
) -> list[str]:
    import django
    from django.conf import settings

    cpus = os.cpu_count() or 1
    header = [
        "# Pagewatch benchmarks",
        "",
        f"Generated by `make bench` (bench/run.py) on"
        f" {started_at:%Y-%m-%d %H:%M} UTC in {elapsed:.0f} s. Each value is"
        " compared with a baseline measured in the same run on the same machine:"
        " read the ratios, not the absolute numbers (see bench/README.md).",
        "",
        "## Machine",
        "",
        f"- {cpus} CPUs (nproc), {_cpu_model()}; {platform.platform()}",
        f"- Python {platform.python_version()}, Django {django.get_version()}",
        f"- Database: {_database_text(environment)}",
        f"- FETCH_CONCURRENCY={settings.FETCH_CONCURRENCY},"
        f" FETCH_PER_HOST_CONCURRENCY={settings.FETCH_PER_HOST_CONCURRENCY}",
        f"- Load average (1 min) at start {loads[0][0]:.1f}, at end {loads[1][0]:.1f}",
    ]
    if max(loads[0][0], loads[1][0]) > cpus:
        header.append(
            "- **The machine was busy with other work during this run** (load"
            " above the CPU count): absolute times are inflated and CPU-heavy"
            " values suffer more than their I/O-bound baselines."
        )
    return header


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=BENCHMARKS)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--server", default="", help=argparse.SUPPRESS)
    parser.add_argument("--generation", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--pages", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.server, args.generation, args.pages)
        return 0

    from bench.throughput import PageServer

    chosen = args.only or list(BENCHMARKS)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    load_start = os.getloadavg()
    environment = bench_env.prepare()
    bench_env.setup_django(migrate=True)
    rows: list[Row] = []
    sections: list[Section] = []
    problems: list[str] = []
    try:
        if "throughput" in chosen or "memory" in chosen:
            with PageServer() as server:
                if "throughput" in chosen:
                    print("throughput...", flush=True)
                    sections.append(
                        bench_throughput(
                            server, args.reps, args.profile, rows, problems
                        )
                    )
                if "memory" in chosen:
                    print("memory...", flush=True)
                    sections.append(bench_memory(server, rows))
        if "diff" in chosen:
            print("diff...", flush=True)
            sections.append(bench_diff(rows))
        if "dispatch" in chosen:
            print("dispatch...", flush=True)
            sections.append(bench_dispatch(environment, rows, problems))
        header = _header(
            environment,
            started_at,
            time.perf_counter() - started,
            (load_start, os.getloadavg()),
        )
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
