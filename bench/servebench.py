"""The API under a burst of requests, served as `make run` serves it.

Web is the Procfile's own `web:` command (gunicorn with config/gunicorn.py),
on `make run`'s embedded setup: SQLite and the file broker in a temporary
var/, migrated, with a team, an API key and MONITORS monitors of ten URLs.
Nothing else runs: the requests measured need no worker.

A *burst* is BURST requests sent at once, each on a connection of its own
(BURST API clients arriving together): GETS reads (half the monitor list,
half one monitor) and POSTS creations of a monitor, shuffled. The *baseline*
is the same mix sent one request at a time over one kept-alive connection,
just before: what a lone request takes on this machine at that moment.
Latency is measured by the client, from sending a request to having its whole
answer. Each repetition starts web afresh; the setups compared alternate.

A burst of CPU-bound requests cannot end before its requests' lone times
summed, divided by the CPUs (the *floor*): no serving setup can serve 200
requests faster than the CPUs run them.

The API rate limit is lifted for the bench (API_RATE_LIMIT): it counts
requests per key, and the bench sends thousands with one key.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import procs
from bench.env import ROOT, BenchError

BURST = 200
GETS = 150
POSTS = BURST - GETS
MONITORS = 20
START_TIMEOUT = 90.0
# The threaded setup config/gunicorn.py had before (one process per CPU of
# 8 threads), for comparison: command-line options override the file.
THREADED = "--worker-class=gthread --workers=2 --threads=8"


@dataclass
class Serving:
    """Latencies in seconds of one setup: lone requests, and each burst's."""

    command: str
    lone: list[list[float]] = field(default_factory=list)
    bursts: list[list[float]] = field(default_factory=list)

    @property
    def lone_median(self) -> float:
        return statistics.median(t for times in self.lone for t in times)

    def burst_quantile(self, q: float) -> float:
        """The q-quantile of each burst's latencies, median over bursts."""
        return statistics.median(_quantile(b, q) for b in self.bursts)

    def floor(self) -> float:
        """The least time a burst can take: its requests' lone times summed,
        over the CPUs (median over repetitions)."""
        return statistics.median(sum(t) for t in self.lone) / (os.cpu_count() or 1)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def web_command() -> str:
    """The Procfile's web entry, as config.run runs it."""
    from config.run import read_procfile

    [web] = [e for e in read_procfile(ROOT / "Procfile") if e.name == "web"]
    return web.command


def _environment(var: Path) -> dict[str, str]:
    """`make run`'s: no DATABASE_URL or REDIS_URL, var/ in `var`."""
    drop = ("DATABASE_URL", "REDIS_URL", "LOG_LEVEL")
    return {k: v for k, v in os.environ.items() if k not in drop} | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PAGEWATCH_VAR_DIR": str(var),
    }


class Web(procs.Group):
    """The Procfile's web command (with `options` added) on `var`."""

    def __init__(self, var: Path, options: str = "") -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self.command = f"{web_command()} {options}".strip()
        env = _environment(var) | {
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "API_RATE_LIMIT": "1000000/min",
        }
        super().__init__(
            ["/bin/sh", "-c", f"exec {self.command} --access-logfile=/dev/null"],
            var / f"web-{port}.log",
            ROOT,
            env,
        )
        try:
            self.wait_until(self._ready, "web", START_TIMEOUT)
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        try:
            httpx.get(f"{self.base_url}/favicon.ico", timeout=1, trust_env=False)
        except httpx.HTTPError:
            return False
        return True


PREPARE = f"""
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from monitors.models import ApiKey, Monitor, Target, Team
team = Team.objects.create(name="Bench", slug="bench")
for i in range({MONITORS}):
    monitor = Monitor.objects.create(
        team=team, name=f"Monitor {{i}}", schedule_cron="0 3 * * *"
    )
    urls = [f"https://example.com/{{i}}/{{j}}" for j in range(10)]
    Target.objects.create(monitor=monitor, position=0, type="scrape", urls=urls)
print(ApiKey.issue(team, name="bench")[1])
"""


def prepare(var: Path) -> str:
    """Migrate `make run`'s SQLite database in `var` and fill it; returns the
    API key."""
    done = subprocess.run(
        [sys.executable, "-c", PREPARE],
        cwd=ROOT,
        env=_environment(var),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"preparing the serving database failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


Request = tuple[str, str, dict | None]


def _mix(monitor_ids: list[str], seed: int) -> list[Request]:
    rng = random.Random(seed)
    mix: list[Request] = []
    for i in range(GETS):
        path = "/v2/monitor" if i % 2 else f"/v2/monitor/{rng.choice(monitor_ids)}"
        mix.append(("GET", path, None))
    for i in range(POSTS):
        body = {
            "name": f"Bench {seed}-{i}",
            "schedule": {"cron": "0 4 * * *"},
            "targets": [
                {"type": "scrape", "urls": [f"https://example.com/{seed}/{i}"]}
            ],
        }
        mix.append(("POST", "/v2/monitor", body))
    rng.shuffle(mix)
    return mix


async def _send(client: httpx.AsyncClient, request: Request) -> float:
    method, path, body = request
    started = time.perf_counter()
    answer = await client.request(method, path, json=body)
    took = time.perf_counter() - started
    if answer.status_code != 200:
        raise BenchError(f"{method} {path} answered {answer.status_code} under load")
    return took


async def _once(web: Web, key: str, seed: int, result: Serving) -> None:
    """Warm web up, then the lone requests, then the burst."""
    options = {
        "base_url": web.base_url,
        "headers": {"Authorization": f"Bearer {key}"},
        "timeout": 120,
        "trust_env": False,
    }
    limits = httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST)
    async with httpx.AsyncClient(**options) as lone:
        listed = await lone.get("/v2/monitor", params={"limit": MONITORS})
        ids = [m["id"] for m in listed.json()["data"]]
        async with httpx.AsyncClient(limits=limits, **options) as warm:
            # Every web process and thread opens its database connection.
            await asyncio.gather(*(_send(warm, r) for r in _mix(ids, seed)[:50]))
        result.lone.append([await _send(lone, r) for r in _mix(ids, seed + 1)])
    async with httpx.AsyncClient(limits=limits, **options) as crowd:
        mix = _mix(ids, seed + 2)
        result.bursts.append(
            list(await asyncio.gather(*(_send(crowd, r) for r in mix)))
        )


def measure(var: Path, reps: int) -> dict[str, Serving]:
    """The Procfile's web and the former threaded setup, `reps` times each,
    alternating; keyed "procfile" and "threaded"."""
    key = prepare(var)
    results: dict[str, Serving] = {}
    for rep in range(reps):
        order = ("procfile", "threaded")
        for name in order if rep % 2 == 0 else order[::-1]:
            with Web(var, THREADED if name == "threaded" else "") as web:
                result = results.setdefault(name, Serving(web.command))
                asyncio.run(_once(web, key, 1000 * rep, result))
    return results
