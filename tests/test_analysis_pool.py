"""The analysis pool's processes end with the process that owns the pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Starts a pool, reports its processes and the fork server, then leaves the
# way a Celery pool process does when its worker stops: os._exit, so nothing
# shuts the pool down.
OWNER = """
import json, multiprocessing, os, sys
from checks import analysis
executor = analysis.pool(2)
pids = list(executor._processes)
server = multiprocessing.forkserver._forkserver._forkserver_pid
print(json.dumps({"pool": pids, "server": server}), flush=True)
os._exit(0)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_pool_processes_and_the_fork_server_end_when_their_owner_exits(
    tmp_path: Path,
) -> None:
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings"}
    out = tmp_path / "owner.json"
    with out.open("w") as stdout:  # a file: the pool must not hold a pipe open
        owner = subprocess.Popen(
            [sys.executable, "-c", OWNER], cwd=ROOT, env=env, stdout=stdout
        )
        assert owner.wait(timeout=60) == 0
    reported = json.loads(out.read_text().strip().splitlines()[-1])
    left = [*reported["pool"], reported["server"]]
    assert len(left) == 3 and all(left)

    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    still_running = [pid for pid in left if _running(pid)]
    for pid in still_running:  # a failing run must not leave them behind
        os.kill(pid, signal.SIGKILL)

    assert still_running == []
