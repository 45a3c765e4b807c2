"""Helpers for tests that watch other processes end (Linux /proc)."""

from __future__ import annotations

import os
import signal
import time


def running(pid: int) -> bool:
    """Whether `pid` still runs; a zombie has exited, only not been reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def left_running(pids: list[int], seconds: float = 10) -> list[int]:
    """Those of `pids` still running after up to `seconds`; they are killed
    then, so a failing test leaves nothing behind."""
    deadline = time.monotonic() + seconds
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    still_running = [pid for pid in pids if running(pid)]
    for pid in still_running:
        os.kill(pid, signal.SIGKILL)
    return still_running
