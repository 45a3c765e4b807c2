"""The analysis pool's processes: how they end, and how they use memory."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from checks import analysis
from tests.processes import left_running

ROOT = Path(__file__).resolve().parents[1]

# Starts a pool, reports its processes and the fork server, then leaves the
# way a Celery pool process does when its worker stops: os._exit, so nothing
# shuts the pool down.
OWNER = """
import json, multiprocessing, os, sys
from multiprocessing import resource_tracker
from checks import analysis
executor = analysis.pool(2)
pids = list(executor._processes)
server = multiprocessing.forkserver._forkserver._forkserver_pid
tracker = resource_tracker._resource_tracker._pid
print(json.dumps({"pool": pids, "server": server, "tracker": tracker}), flush=True)
if sys.argv[1] == "close":
    analysis.close()  # what a Celery pool process does as it stops
os._exit(0)
"""


def _run_owner(tmp_path: Path, how: str) -> tuple[dict, Path]:
    """Run OWNER; its report, and the file its stderr (and its children's) went to."""
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings"}
    out, err = tmp_path / "owner.json", tmp_path / "owner.err"
    # Files, not pipes: a process left behind must not keep us waiting.
    with out.open("w") as stdout, err.open("w") as stderr:
        owner = subprocess.Popen(
            [sys.executable, "-c", OWNER, how],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
        assert owner.wait(timeout=60) == 0
    return json.loads(out.read_text().strip().splitlines()[-1]), err


def test_pool_processes_and_the_fork_server_end_when_their_owner_exits(
    tmp_path: Path,
) -> None:
    reported, _ = _run_owner(tmp_path, "exit")
    pids = [*reported["pool"], reported["server"]]
    assert len(pids) == 3 and all(pids)

    assert left_running(pids) == []


def test_a_closed_pool_leaves_nothing_for_the_resource_tracker_to_report(
    tmp_path: Path,
) -> None:
    reported, stderr = _run_owner(tmp_path, "close")
    pids = [*reported["pool"], reported["server"], reported["tracker"]]

    assert left_running(pids) == []
    assert "leaked" not in stderr.read_text()


def test_a_stopping_celery_pool_process_closes_its_analysis_pool() -> None:
    from celery.signals import worker_process_shutdown

    import checks.tasks  # noqa: F401 - connects the signal handler

    executor = analysis.pool(2)
    assert executor is not None
    processes = list(executor._processes.values())

    worker_process_shutdown.send(sender=None, pid=os.getpid(), exitcode=0)

    assert analysis._state.executor is None
    assert [p for p in processes if p.is_alive()] == []


def _faults_reusing_freed_memory() -> int:
    """Page faults of this process while it allocates (and fills) 2 MB in
    64 KB blocks, as a page's analysis does, for the third time (the first
    rounds settle the heap)."""
    for _page in range(3):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        blocks = [bytes(64 * 1024) for _ in range(32)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the tuning is glibc's mallopt"
)
def test_a_pool_process_reuses_the_memory_freed_by_the_previous_page() -> None:
    executor = analysis.pool(2)
    assert executor is not None

    faults = executor.submit(_faults_reusing_freed_memory).result(timeout=30)

    # glibc's defaults hand the freed 2 MB back to the kernel, and hundreds of
    # its 512 pages fault in again (~240-340 here); kept for reuse, next to none.
    assert faults < 64
