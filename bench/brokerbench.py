"""Broker round trip: one Celery-sized message published and taken back
through kombu, on the embedded Valkey (config/valkey.py, unix socket) and on
the standalone Redis of BENCH_REDIS_URL, in the same run."""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kombu import Connection

from bench.env import BenchError
from config import valkey

MESSAGES = 2000
BODY = {"task": "checks.tasks.run_batch_task", "args": ["x" * 36, 1]}


@contextmanager
def embedded() -> Iterator[str]:
    with (
        tempfile.TemporaryDirectory(prefix="pw-valkey-") as var,
        embedded_in(Path(var)) as url,
    ):
        yield url


@contextmanager
def embedded_in(var: Path) -> Iterator[str]:
    """`make run`'s Valkey on var/valkey.sock while the block runs."""
    server = valkey.find_server()
    if server is None:
        raise BenchError(valkey.NOT_FOUND)
    process = subprocess.Popen(valkey.command(server, var), stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not valkey.answers(var):
            if time.monotonic() > deadline:
                raise BenchError("the embedded Valkey did not answer")
            time.sleep(0.02)
        yield valkey.url(var)
    finally:
        process.terminate()
        process.wait(timeout=10)


def round_trip_us(redis_url: str) -> float:
    """Median microseconds to put one message on a queue and take it back."""
    with Connection(valkey.broker_url(redis_url)) as connection:
        queue = connection.SimpleQueue("pagewatch-bench-round-trip")
        times = []
        for _ in range(MESSAGES):
            started = time.perf_counter()
            queue.put(BODY, serializer="json")
            queue.get(timeout=5).ack()
            times.append(time.perf_counter() - started)
        queue.clear()
        queue.close()
    return statistics.median(times) * 1e6
