"""The API's rate limit is one count per key across every web process
(issue #21.4): gunicorn runs several, and a per-process cache let each of them
allow the whole API_RATE_LIMIT. Two real processes share the count here,
through the configured cache (files under var/, or Redis when REDIS_URL is
set)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]

# One web process: ask the throttle `attempts` times for one key, print how
# many it allowed.
ONE_PROCESS = """
import sys
from types import SimpleNamespace
import django
django.setup()
from monitors.api.auth import ApiClient, ApiKeyRateThrottle
from monitors.models import ApiKey

prefix, attempts = sys.argv[1], int(sys.argv[2])
request = SimpleNamespace(user=ApiClient(ApiKey(prefix=prefix)))
throttle = ApiKeyRateThrottle
print(sum(throttle().allow_request(request, None) for _ in range(attempts)))
"""


def allowed_in_a_process_of_its_own(prefix: str, attempts: int) -> int:
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "API_RATE_LIMIT": "4/min",
    }
    done = subprocess.run(
        [sys.executable, "-c", ONE_PROCESS, prefix, str(attempts)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout.strip().splitlines()[-1])


def test_the_cache_is_one_every_process_shares():
    backend = settings.CACHES["default"]["BACKEND"]
    assert backend.rsplit(".", 1)[-1] in ("FileBasedCache", "RedisCache")
    assert "LocMem" not in backend


def test_two_web_processes_share_one_count_per_key():
    key = uuid.uuid4().hex[:12]
    first = allowed_in_a_process_of_its_own(key, 3)
    second = allowed_in_a_process_of_its_own(key, 3)
    assert (first, second) == (3, 1)
    # Another key has a count of its own.
    assert allowed_in_a_process_of_its_own(uuid.uuid4().hex[:12], 3) == 3
