"""Benchmark 3: diffing a ~1 MB Markdown page pair with scattered changes.

What is timed is the diff work the runner does for every changed page:
`compare_texts` (both hashes, unified diff, parse-diff AST and side-by-side
HTML in one pass), and `render_side_by_side` on its own, as the dashboard
calls it.

Baseline: `content_hash` of both texts, the linear pass every check already
makes over a page (split into lines, NFC, invisible characters, whitespace
runs, SHA-256). A plain `hash + splitlines` would be ~1 ms and mostly measure
memcpy, so it says little; `content_hash` is the cheapest *meaningful* full
read of both texts, and a linear diff should stay within a small constant of it.

Scaling: the same timing on a 2 MB pair (twice the lines, twice the edits);
linear code gives ~2x, quadratic ~4x.

Reference only: the stdlib's `difflib.unified_diff` over the same line lists,
run in a subprocess killed after DIFFLIB_CAP seconds, since difflib can go
quadratic on repetitive input. It renders no HTML, so it is not the baseline.

Everything here is single-threaded CPU work, timed as process CPU time (median
of REPEATS), which other load on the machine disturbs far less than wall time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.env import ROOT
from bench.pages import markdown_document, scattered_edits

REPEATS = 5
EDITS_PER_MB = 300
DIFFLIB_CAP = 20.0


def cpu_median(work: Callable[[], object], repeats: int = REPEATS) -> float:
    samples = []
    for _ in range(repeats):
        started = time.process_time()
        work()
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def pair(megabytes: int) -> tuple[str, str]:
    previous = markdown_document(megabytes * 1_000_000)
    return previous, scattered_edits(previous, EDITS_PER_MB * megabytes)


@dataclass
class DiffResult:
    size_bytes: int
    lines: int
    diff_lines: int
    baseline_s: float  # content_hash of both texts
    side_by_side_s: float
    runner_s: float  # compare_texts
    runner_2mb_s: float
    difflib_s: float | None  # None: did not finish within DIFFLIB_CAP


_DIFFLIB_CHILD = """
import sys, time, difflib
sys.path.insert(0, {root!r})
from bench.diffbench import pair
a, b = pair(1)
started = time.process_time()
diff = difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="")
lines = sum(1 for _ in diff)
print(time.process_time() - started)
"""


def _difflib_seconds() -> float | None:
    code = _DIFFLIB_CHILD.format(root=str(ROOT))
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=DIFFLIB_CAP,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def measure() -> DiffResult:
    from checks.content import compare_texts, content_hash, render_side_by_side

    previous, current = pair(1)
    big_previous, big_current = pair(2)
    diff = compare_texts(previous, current)[2]

    return DiffResult(
        size_bytes=len(previous.encode()),
        lines=previous.count("\n"),
        diff_lines=diff["text"].count("\n") if diff else 0,
        baseline_s=cpu_median(lambda: (content_hash(previous), content_hash(current))),
        side_by_side_s=cpu_median(lambda: render_side_by_side(previous, current)),
        runner_s=cpu_median(lambda: compare_texts(previous, current)),
        runner_2mb_s=cpu_median(lambda: compare_texts(big_previous, big_current), 3),
        difflib_s=_difflib_seconds(),
    )
