"""`make run`: start the Procfile's processes, keep them running, stop them
together.

    python -m config.run [-f Procfile]
    python -m config.run -- COMMAND ...   # once, with the same environment

A process that exits while the service runs (killed, crashed, out of memory)
is started again after a back-off, and the others keep running: web keeps
answering while the worker comes back. The back-off starts at one second and
doubles, up to a minute, while the process keeps dying within a minute of
starting; each restart is announced. (honcho and foreman stop everything when
one process exits; supervisord wants a daemon and a configuration of its own.)

Each entry runs in a session of its own, with its output prefixed by its
name. Ctrl-C or SIGTERM stops them all: each main process gets SIGTERM
(alone: Celery's prefork worker expects it there, and its pool processes,
signalled directly, can die holding the pool's lock, which the worker then
waits on forever as it exits) and up to thirty seconds to finish: enough for
an idle worker's warm shutdown (about six seconds) and a short check. Then
whatever is left of each session is killed. A check cut off goes back to the
queue and the stale-check sweeper finishes or fails it.

Without REDIS_URL the Procfile's `valkey` entry (config/valkey.py) starts the
embedded Valkey first; the others start once it answers, and it stops after
them, so a worker's warm shutdown can still give its messages back. With
REDIS_URL it is left out. With neither a server to run nor REDIS_URL, one
line says what to install and nothing starts.

A process's leftovers are killed before it starts again (a killed worker's
pool processes, a killed gunicorn's workers). On Linux each process is also
told to end when this manager dies, even by SIGKILL, so nothing outlives it.
Variables in `.env`, when present, are added to the environment (as honcho,
used before, did). `make run` migrates and bootstraps through the second form
(as `honcho run` did), so a DATABASE_URL or PAGEWATCH_VAR_DIR set there is the
one the processes then use. PUBLIC_BASE_URL defaults to http://HOST:PORT, read
after `.env`.

Without Chromium the Procfile's browser worker is left out, and said so;
browser pages then go to the other worker (BROWSER_QUEUE empty), where each
fails with an error naming BROWSER_EXECUTABLE.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import re
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TextIO

from checks.browser.executable import find_executable
from config import valkey

STOP_WAIT_SECONDS = 30.0
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 60.0
# A process that ran this long before exiting starts again after the first
# back-off; one that dies sooner waits twice as long as the time before.
STABLE_AFTER_SECONDS = 60.0
TICK_SECONDS = 0.1
READY_WAIT_SECONDS = 10.0


@dataclass
class Entry:
    name: str
    command: str
    # Whether the process is ready for the ones after it; None: at once.
    ready: Callable[[], bool] | None = field(default=None, compare=False)


def read_procfile(path: Path) -> list[Entry]:
    try:
        text = path.read_text()
    except OSError as exc:  # `make run PROCFILE=Procfil` ended in a traceback
        raise SystemExit(
            f"Cannot read the Procfile {path}: {exc.strerror} "
            "(PROCFILE: Procfile or Procfile.large)"
        ) from None
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, command = line.partition(":")
        if not sep or not name.strip().isidentifier() or not command.strip():
            raise SystemExit(f"{path}:{number}: expected 'name: command', got {line!r}")
        entries.append(Entry(name.strip(), command.strip()))
    return entries


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, `#` comments and shell quoting, as honcho read them."""
    values = {}
    if not path.exists():
        return values
    for line in path.read_text().splitlines():
        tokens = list(shlex.shlex(line, posix=True))
        if len(tokens) >= 3 and tokens[1] == "=" and tokens[0].isidentifier():
            values[tokens[0]] = "".join(tokens[2:])
    return values


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _end_with_manager() -> None:
    """Runs in the child before its command (Linux): the kernel sends it
    SIGTERM when the manager dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _shell_command(command: str) -> str:
    """A simple command replaces the shell (exec), so the process the manager
    signals is the command itself; a compound one runs as written."""
    if re.search(r"[;&|\n]", command):
        return command
    return f"exec {command}"


def _exit_text(status: int) -> str:
    if status < 0:
        return f"was killed by {signal.Signals(-status).name}"
    return f"exited with status {status}"


@dataclass
class Managed:
    """One Procfile entry and the process now running it, if any."""

    entry: Entry
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff: float = FIRST_BACKOFF_SECONDS
    restart_at: float | None = None
    pending: bytes = field(default=b"", repr=False)


class Manager:
    """Runs the entries until asked to stop; single-threaded: one loop reads
    every process's output and notices the ones that exited."""

    def __init__(
        self,
        entries: list[Entry],
        env: dict[str, str],
        out: TextIO = sys.stdout,
        stop_wait: float = STOP_WAIT_SECONDS,
    ) -> None:
        self.managed = [Managed(entry) for entry in entries]
        self.env = env
        self.out = out
        self.stop_wait = stop_wait
        self.width = max(len(e.name) for e in entries + [Entry("manager", "")])
        self.selector = selectors.DefaultSelector()
        self.stopping = False

    def say(self, name: str, text: str) -> None:
        self.out.write(f"{time.strftime('%H:%M:%S')} {name:<{self.width}} | {text}\n")
        self.out.flush()

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._ask_to_stop)
        for managed in self.managed:
            self._start(managed)
            self._wait_until_ready(managed)
        while not self.stopping:
            self._pump(TICK_SECONDS)
            now = time.monotonic()
            for managed in self.managed:
                self._look_after(managed, now)
        self._stop_all()
        return 0

    def _ask_to_stop(self, signum: int, _frame: FrameType | None) -> None:
        if not self.stopping:
            self.say("manager", f"{signal.Signals(signum).name}: stopping everything")
        self.stopping = True

    # --- One process ------------------------------------------------------------

    def _start(self, managed: Managed) -> None:
        process = subprocess.Popen(  # noqa: S603 - the Procfile's commands
            ["/bin/sh", "-c", _shell_command(managed.entry.command)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # Safe here: preexec_fn is unsafe only with threads, and the
            # manager has none.
            preexec_fn=_end_with_manager if sys.platform == "linux" else None,
        )
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)
        self.selector.register(process.stdout, selectors.EVENT_READ, managed)
        managed.process, managed.started_at = process, time.monotonic()
        managed.restart_at = None
        self.say("manager", f"{managed.entry.name} started (pid {process.pid})")

    def _wait_until_ready(self, managed: Managed) -> None:
        """Before the next entries start (the workers connect to Valkey at
        once): up to READY_WAIT_SECONDS, then they start anyway and retry."""
        ready = managed.entry.ready
        deadline = time.monotonic() + READY_WAIT_SECONDS
        while ready is not None and not ready() and not self.stopping:
            if time.monotonic() > deadline or managed.process.poll() is not None:
                self.say("manager", f"{managed.entry.name} is not ready; going on")
                return
            self._pump(TICK_SECONDS)

    def _look_after(self, managed: Managed, now: float) -> None:
        """Notice an exit and schedule the restart; start it when due."""
        process = managed.process
        if process is not None and process.poll() is not None:
            self._drain(managed)
            self._clean_up(managed)
            ran = now - managed.started_at
            if ran >= STABLE_AFTER_SECONDS:
                managed.backoff = FIRST_BACKOFF_SECONDS
            managed.restart_at = now + managed.backoff
            self.say(
                "manager",
                f"{managed.entry.name} {_exit_text(process.returncode)} after"
                f" {ran:.0f} s; starting it again in {managed.backoff:g} s",
            )
            managed.backoff = min(managed.backoff * 2, MAX_BACKOFF_SECONDS)
        if managed.restart_at is not None and now >= managed.restart_at:
            self._start(managed)

    def _clean_up(self, managed: Managed) -> None:
        """Forget an exited process: its output pipe, and whatever it left
        running in its session."""
        process = managed.process
        assert process is not None and process.stdout is not None
        self._forget_output(process)
        process.stdout.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        managed.process = None

    # --- Output -----------------------------------------------------------------

    def _forget_output(self, process: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(process.stdout)

    def _pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            self._drain(key.data)

    def _drain(self, managed: Managed) -> None:
        process = managed.process
        if process is None or process.stdout is None or process.stdout.closed:
            return
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(process.stdout.fileno(), 65536):
                managed.pending += chunk
            # End of file: the process closed its output. Stop watching the
            # pipe, or select() would report it readable forever.
            self._forget_output(process)
        *lines, managed.pending = managed.pending.split(b"\n")
        if process.poll() is not None and managed.pending:
            lines.append(managed.pending)  # its last words, without a newline
            managed.pending = b""
        for line in lines:
            self.say(managed.entry.name, line.decode(errors="replace").rstrip())

    # --- Stopping ---------------------------------------------------------------

    def _stop_all(self) -> None:
        # The servers others wait for (Valkey) stop last: a worker's warm
        # shutdown still acknowledges or gives back its messages through it.
        running = [m for m in self.managed if m.process is not None]
        self._stop([m for m in running if m.entry.ready is None])
        self._stop([m for m in running if m.entry.ready is not None])

    def _stop(self, running: list[Managed]) -> None:
        for managed in running:
            assert managed.process is not None
            self.say("manager", f"sending SIGTERM to {managed.entry.name}")
            with contextlib.suppress(ProcessLookupError):
                managed.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_wait
        while time.monotonic() < deadline and any(
            m.process.poll() is None for m in running if m.process is not None
        ):
            self._pump(TICK_SECONDS)
        for managed in running:
            assert managed.process is not None
            if managed.process.poll() is None:
                self.say("manager", f"{managed.entry.name} did not stop: killing it")
            else:
                self._drain(managed)
                self.say("manager", f"{managed.entry.name} stopped")
            self._clean_up(managed)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.run")
    parser.add_argument("-f", "--procfile", type=Path, default=Path("Procfile"))
    parser.add_argument("-e", "--env-file", type=Path, default=Path(".env"))
    parser.add_argument(
        "--stop-wait",
        type=float,
        default=STOP_WAIT_SECONDS,
        help="seconds a process has to stop before it is killed (30)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only say what would keep the Procfile from starting (a port in "
        "use, another Pagewatch on this data), and start nothing",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="after --: run this once with the same environment, not the Procfile",
    )
    args = parser.parse_args(argv)
    env = environment(args.env_file)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if command:
        try:
            return subprocess.run(command, env=env, check=False).returncode  # noqa: S603
        except OSError as exc:
            raise SystemExit(f"Cannot run {command[0]}: {exc.strerror}") from None
    if args.check:
        refuse_what_cannot_start(read_procfile(args.procfile), env)
        return 0
    entries = with_valkey_unless_redis(read_procfile(args.procfile), env)
    entries = with_browser_if_installed(entries, env)
    if any(entry.name == WEB_PROCESS for entry in entries):
        refuse_a_taken_port(env)
    names = ", ".join(entry.name for entry in entries)
    print(
        f"Starting {names} on {env['PUBLIC_BASE_URL']}/. Ctrl-C stops all.", flush=True
    )
    return Manager(entries, env, stop_wait=args.stop_wait).run()


def environment(env_file: Path) -> dict[str, str]:
    """Ours, then `.env`'s variables; links default to where web listens."""
    env = {
        **os.environ,
        **read_env_file(env_file),
        "PYTHONUNBUFFERED": "1",  # lines show up as they are written
    }
    host, port = env.get("HOST", "127.0.0.1"), env.get("PORT", "8000")
    if "PUBLIC_BASE_URL" not in env:
        env["PUBLIC_BASE_URL"] = f"http://{host}:{port}"
        # Not the operator's word (0.0.0.0 is no address to give a client):
        # the API's next links keep following the request's host.
        env["PUBLIC_BASE_URL_FILLED_IN"] = "true"
    return env


VALKEY_PROCESS = "valkey"


def with_valkey_unless_redis(entries: list[Entry], env: dict[str, str]) -> list[Entry]:
    """The entries, without the embedded Valkey when REDIS_URL names a Redis;
    with it, the others start once it answers. No server to run and no
    REDIS_URL: one line saying what to install, and nothing starts."""
    if env.get("REDIS_URL"):
        return [entry for entry in entries if entry.name != VALKEY_PROCESS]
    if not any(entry.name == VALKEY_PROCESS for entry in entries):
        return entries
    server = embedded_valkey(env)
    var_dir = valkey.var_dir_of(env)
    print(f"Embedded Valkey: {server} on {valkey.socket_path(var_dir)}.", flush=True)
    return [
        Entry(e.name, e.command, lambda: valkey.answers(var_dir))
        if e.name == VALKEY_PROCESS
        else e
        for e in entries
    ]


def embedded_valkey(env: dict[str, str]) -> str:
    """The Valkey server to start, or one line saying why none can be."""
    server = valkey.find_server()
    if server is None:
        raise SystemExit(valkey.NOT_FOUND)
    var_dir = valkey.var_dir_of(env)
    if valkey.answers(var_dir):
        # A second `make run` in the same directory used to start a second
        # Valkey on the same socket; when it stopped, it took the socket with
        # it and the first one's web and workers lost their broker.
        raise SystemExit(ALREADY_RUNNING.format(var_dir=var_dir))
    return server


def refuse_what_cannot_start(entries: list[Entry], env: dict[str, str]) -> None:
    """`make run` asks this before it migrates and bootstraps: a port in use
    found only afterwards cost a first start its one showing of the
    administrator's password."""
    names = {entry.name for entry in entries}
    if VALKEY_PROCESS in names and not env.get("REDIS_URL"):
        embedded_valkey(env)
    if WEB_PROCESS in names:
        refuse_a_taken_port(env)


ALREADY_RUNNING = (
    "Pagewatch is already running with {var_dir}: its embedded Valkey answers "
    "there. Stop that one first (Ctrl-C where it runs), or give this one a "
    "PAGEWATCH_VAR_DIR of its own."
)

WEB_PROCESS = "web"


def refuse_a_taken_port(env: dict[str, str]) -> None:
    """One plain line and nothing started when web cannot listen, instead of
    gunicorn's retries followed by the manager restarting it for ever."""
    host, port = env.get("HOST", "127.0.0.1"), env.get("PORT", "8000")
    try:
        number = int(port)
        if not 1 <= number <= 65535:
            # getaddrinfo would take 70000 for 4464 and let the probe pass,
            # and gunicorn would then fail on every restart.
            raise ValueError("a port is a number from 1 to 65535")
        addresses = socket.getaddrinfo(host, number, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = addresses[0]
        with socket.socket(family, kind, proto) as probe:
            # As gunicorn binds: a port left in TIME_WAIT is free to it.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        if getattr(exc, "errno", None) == errno.EADDRINUSE:
            raise SystemExit(
                f"Cannot listen on {host}:{port} ({reason}): another program, or "
                "another Pagewatch, may be using it. Stop it, or choose another "
                "port: make run PORT=8001"
            ) from None
        raise SystemExit(
            f"Cannot listen on {host}:{port} ({reason}): check HOST and PORT"
        ) from None


BROWSER_PROCESS = "browser"
NO_BROWSER = (
    "No Chromium found{where}: starting without the browser worker. Pages that "
    "need a browser will fail with an error saying so; install Chromium "
    "(apt-get install chromium) or set BROWSER_EXECUTABLE."
)


def with_browser_if_installed(entries: list[Entry], env: dict[str, str]) -> list[Entry]:
    """The entries, without the browser worker when there is no Chromium (and
    BROWSER_QUEUE emptied in `env`, so browser pages go to the other worker)."""
    if not any(entry.name == BROWSER_PROCESS for entry in entries):
        return entries
    configured = env.get("BROWSER_EXECUTABLE", "")
    found = find_executable(configured)
    if found is not None:
        print(f"Browser worker: Chromium at {found}.", flush=True)
        return entries
    where = f" at BROWSER_EXECUTABLE={configured}" if configured else ""
    print(NO_BROWSER.format(where=where), flush=True)
    env["BROWSER_QUEUE"] = ""
    return [entry for entry in entries if entry.name != BROWSER_PROCESS]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
