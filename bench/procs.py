"""Processes the bench starts, and what they cost, read from /proc (Linux).

A worker is a process tree: Celery's main process, its prefork children, and
whatever those start. CPU time is summed over the whole tree, including the
children that exited meanwhile: a process's `cutime`/`cstime` hold the CPU time
of the children it reaped (and of theirs), so adding them to each live
process's own time counts every process that ever ran under the root once.
Memory is PSS (`smaps_rollup`): each shared page is divided among the processes
that map it, so the sum over a tree is what the tree costs the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bench.env import BenchError

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _started(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields else None  # starttime, proc(5) field 22


def parent(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if fields else 0


def tree(root: int) -> list[int]:
    """`root` and all its live descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of these processes and of the children they reaped."""
    total = 0
    for pid in pids:
        if fields := _stat(pid):
            # utime, stime, cutime, cstime (proc(5) fields 14-17)
            total += sum(int(value) for value in fields[11:15])
    return total / _TICKS


def tree_cpu_seconds(root: int) -> float:
    return cpu_seconds(tree(root))


def pss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


class Group:
    """A command in a session (so a process group) of its own, output to a
    log file; stopped with `stop_signal`, then the whole group killed."""

    def __init__(
        self,
        command: list[str],
        log: Path,
        cwd: Path,
        env: dict[str, str] | None = None,
        stop_signal: int = signal.SIGTERM,
        stop_wait: float = 15.0,
    ) -> None:
        self.log = log
        self.stop_signal = stop_signal
        self.stop_wait = stop_wait
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def check_alive(self, what: str) -> None:
        if self.process.poll() is not None:
            raise BenchError(
                f"{what}: {self.log.stem} exited with {self.process.returncode}:\n"
                f"{self.log_tail()}"
            )

    def wait_until(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            self.check_alive(what)
            if time.monotonic() > deadline:
                raise BenchError(
                    f"{what}: not ready after {timeout:g} s:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        # Descendants that left the group (config.run starts each Procfile
        # entry in a session of its own) are killed by pid, if that pid is
        # still the same process (its start time says so).
        strays = {pid: _started(pid) for pid in tree(self.pid)}
        if self.process.poll() is None:
            self.process.send_signal(self.stop_signal)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=self.stop_wait)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        for pid, started in strays.items():
            if started is not None and _started(pid) == started:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
