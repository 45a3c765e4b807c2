"""Keep a running check's worker threads on one CPU (Linux).

A check's worker process runs several threads (the worker thread writing
results, the fetcher's event loop, the analysis pool's manager and feeder)
that take turns holding the GIL: they never run Python at the same time, so a
second CPU buys them nothing. Spread over several CPUs they pay for every
turn instead: the thread that gets the GIL is woken on another CPU (an
inter-processor interrupt, a VM exit under KVM) with cold caches. On one CPU a
turn is a local context switch. Measured on a 2-CPU VM (bench/, first check of
50 pages, alternating runs): the worker process used 5-15% less CPU and the
check took 8-19% less time.

Only worth it when the parallel part of a check, extraction and diffs, runs
in the analysis pool's processes, which are never pinned: the scheduler moves
them away from the busy CPU. Without a pool (CHECK_CPU_WORKERS 0 or 1) the
worker process does that work itself, and several such workers pinned to one
CPU could leave others idle, so the runner pins nothing then. The CPU kept is
the one the calling thread runs on when the check starts (where the scheduler
put it), and every thread gets its own mask back afterwards. Where affinity
cannot be set (not Linux, a thread gone meanwhile, a restrictive container),
nothing happens.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

_TASKS = Path("/proc/self/task")
# Field 39 of /proc/<pid>/task/<tid>/stat ("processor"), counted after the
# parenthesised command name, which may itself hold spaces.
_PROCESSOR_FIELD = 39 - 3


def current_cpu() -> int | None:
    """The CPU the calling thread last ran on; None where that is unknown."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[_PROCESSOR_FIELD])
    except (OSError, IndexError, ValueError):
        return None


def _thread_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_TASKS)]
    except OSError:
        return []


def _set(tid: int, cpus: set[int]) -> bool:
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError:  # the thread ended meanwhile, or we may not
        return False
    return True


@contextlib.contextmanager
def threads_on_one_cpu(enabled: bool = True) -> Iterator[int | None]:
    """Pin every thread of this process to the caller's current CPU for the
    block (threads started inside inherit it); yields that CPU, or None when
    nothing was pinned."""
    cpu = current_cpu() if enabled and hasattr(os, "sched_setaffinity") else None
    if cpu is None:
        yield None
        return
    process_mask = os.sched_getaffinity(0)
    saved: dict[int, set[int]] = {}
    for tid in _thread_ids():
        try:
            saved[tid] = os.sched_getaffinity(tid)
        except OSError:
            continue
        if not _set(tid, {cpu}):
            del saved[tid]
    try:
        yield cpu if saved else None
    finally:
        # Threads started inside (the fetcher) may outlive the block briefly:
        # they get the caller's mask from before, like a thread started now.
        for tid in _thread_ids():
            _set(tid, saved.get(tid, process_mask))
