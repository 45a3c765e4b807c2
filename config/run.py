"""`make run`: honcho, set up for a clean stop of the Celery worker on Ctrl-C.

honcho stops a process by sending SIGTERM to its whole process group, and
SIGKILLs whatever still runs five seconds later. Neither suits a Celery prefork
worker: its pool processes, terminated while waiting on the shared task queue,
can die holding the queue's lock, which the worker then waits on forever as it
exits; and even a clean warm shutdown of an idle worker takes about six
seconds. So the Procfile starts the worker through `alone` (the worker's main
process alone gets the signal, as Celery expects), and honcho waits up to
thirty seconds: enough for an idle worker and a short check to finish. A longer
check is cut off (the worker dies with the shim honcho kills), its message goes
back to the queue (Redis) or is lost with the process (the embedded broker),
and the stale-check sweeper fails it.

    python -m config.run start -f Procfile     honcho, with the longer wait
    python -m config.run alone COMMAND...       COMMAND in a session of its own

Without Chromium, `start` leaves out the Procfile's browser worker and says
so; browser pages then go to the other worker (BROWSER_QUEUE empty), where
each fails with an error naming BROWSER_EXECUTABLE.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

import honcho.manager
from honcho.command import main as honcho_main
from honcho.environ import parse_procfile

from checks.browser.executable import find_executable

KILL_WAIT_SECONDS = 30


def configure() -> None:
    honcho.manager.KILL_WAIT = KILL_WAIT_SECONDS


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _die_with(parent: int) -> None:
    """Runs in the command's process before the command starts (Linux): the
    kernel kills it when `parent` (this shim) dies, as it does when honcho's
    patience runs out and it SIGKILLs the shim, so no worker outlives
    `make run`."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the shim died before prctl took effect
        os._exit(1)


def alone(command: list[str]) -> int:
    """Run `command` in a session (so a process group) of its own; SIGTERM or
    SIGINT sent to this process reach the command's main process only, as
    SIGTERM, and killing this process kills the command. Returns the command's
    exit status."""
    child = subprocess.Popen(  # noqa: S603 - the Procfile's
        command,
        start_new_session=True,
        preexec_fn=(  # noqa: PLW1509 - the shim has no threads
            functools.partial(_die_with, os.getpid())
            if sys.platform == "linux"
            else None
        ),
    )

    def forward(_signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    status = child.wait()
    return 128 - status if status < 0 else status


BROWSER_PROCESS = "browser"
NO_BROWSER = (
    "No Chromium found{where}: starting without the browser worker. Pages that "
    "need a browser will fail with an error saying so; install Chromium "
    "(apt-get install chromium) or set BROWSER_EXECUTABLE."
)


def without_browser_if_missing(argv: list[str]) -> list[str]:
    """`start` as asked, or, when there is no Chromium, naming every
    Procfile process but the browser worker (honcho starts those only)."""
    if argv[:1] != ["start"] or len(argv) > 3 or "-f" not in argv:
        return argv  # not our Procfile run, or processes named already
    configured = os.environ.get("BROWSER_EXECUTABLE", "")
    found = find_executable(configured)
    if found is not None:
        print(f"Browser worker: Chromium at {found}.", flush=True)
        return argv
    where = f" at BROWSER_EXECUTABLE={configured}" if configured else ""
    print(NO_BROWSER.format(where=where), flush=True)
    os.environ["BROWSER_QUEUE"] = ""
    procfile = Path(argv[argv.index("-f") + 1]).read_text()
    names = [p for p in parse_procfile(procfile).processes if p != BROWSER_PROCESS]
    return [*argv, *names]


def main(argv: list[str]) -> int:
    if argv[:1] == ["alone"]:
        return alone(argv[1:])
    configure()
    return honcho_main(without_browser_if_missing(argv)) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
