"""The API's rate limit is one count per key across every web process:
gunicorn runs several, and each may take requests of one key at the same
moment. Real processes share the count here, through the configured cache
(the embedded Valkey, or Redis when REDIS_URL is set)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings

from config import settings as production

ROOT = Path(__file__).resolve().parents[1]

# One web process: once set up, say so and wait for the word to go (so that
# several processes begin together however long a loaded machine takes to
# start them), then ask the throttle `attempts` times for one key as fast as
# it answers, and print how many it allowed.
ONE_PROCESS = """
import sys, time
from types import SimpleNamespace
import django
django.setup()
from monitors.api.auth import ApiClient, ApiKeyRateThrottle
from monitors.models import ApiKey

prefix, attempts = sys.argv[1], int(sys.argv[2])
request = SimpleNamespace(user=ApiClient(ApiKey(prefix=prefix)))
throttle = ApiKeyRateThrottle
throttle().allow_request(SimpleNamespace(user=ApiClient(ApiKey(prefix="warm"))), None)
print("ready", flush=True)
sys.stdin.readline()
print(sum(throttle().allow_request(request, None) for _ in range(attempts)))
"""


def web_processes(
    redis_server: str, prefix: str, attempts: int, count: int, rate: str
) -> list[int]:
    """How many requests each of `count` processes, started together, let
    through for one key."""
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "API_RATE_LIMIT": rate,
        "REDIS_URL": redis_server,
        "SECRET_KEY": settings.SECRET_KEY,
    }
    running = [
        subprocess.Popen(
            [sys.executable, "-c", ONE_PROCESS, prefix, str(attempts)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    for process in running:
        assert process.stdout.readline().strip() == "ready"
    for process in running:
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=120)[0] for process in running]
    assert all(process.returncode == 0 for process in running)
    return [int(out.strip().splitlines()[-1]) for out in outputs]


def test_the_cache_is_one_every_process_shares():
    # As configured for every process (the tests' own is a subclass with a
    # key prefix per xdist worker: tests.caching.WorkerCache).
    backend = production.CACHES["default"]["BACKEND"]
    assert backend.rsplit(".", 1)[-1] == "RedisCache"


def within_one_window(seconds: float, duration: float) -> None:
    """Wait, if need be, for a window of the limit's clock (fixed windows:
    each hour for `/hour`) with `seconds` left in it: runs that straddle a
    window's end count twice, as the throttle means them to."""
    left = duration - time.time() % duration
    if left < seconds:
        time.sleep(left + 0.1)


def test_two_web_processes_share_one_count_per_key(redis_server):
    key = uuid.uuid4().hex[:12]
    within_one_window(120, 3600)
    [first] = web_processes(redis_server, key, 3, 1, "4/hour")
    [second] = web_processes(redis_server, key, 3, 1, "4/hour")
    assert (first, second) == (3, 1)
    # Another key has a count of its own.
    assert web_processes(redis_server, uuid.uuid4().hex[:12], 3, 1, "4/hour") == [3]


def test_a_parallel_burst_across_web_processes_gets_the_limit_through_not_more(
    redis_server,
):
    within_one_window(120, 3600)
    allowed = web_processes(redis_server, uuid.uuid4().hex[:12], 150, 4, "200/hour")

    assert 180 <= sum(allowed) <= 220  # within 10 % of the limit
    assert all(n > 0 for n in allowed)  # the processes really ran together
