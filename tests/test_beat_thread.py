"""`celery worker --beat-thread` (config/celery.py): the scheduler in a thread
of a worker whose tasks run in threads, as the default Procfile starts it.
Its ticks reaching /healthz are tested on the whole service
(tests/test_service_faults.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_worker(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-m", "celery", "-A", "config", "worker", *options],
        cwd=ROOT,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_scheduler_thread_is_refused_beside_a_pool_that_forks():
    done = start_worker("--pool=prefork", "--concurrency=1", "--beat-thread")

    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "--beat-thread runs the scheduler in the worker's process" in said
    assert "with processes, use --beat" in said


def test_the_worker_offers_the_scheduler_thread_in_its_help():
    done = start_worker("--help")

    assert done.returncode == 0, done.stderr
    assert "--beat-thread" in done.stdout
