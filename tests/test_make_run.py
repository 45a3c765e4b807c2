"""`make run` starts honcho through config.run: the Celery worker gets its
stop signal alone and has time for a warm shutdown."""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import honcho.manager
import pytest

from config import run
from tests.processes import left_running, running

ROOT = Path(__file__).resolve().parents[1]

# Stands in for the Celery worker: counts the SIGTERMs it gets, says where it
# runs, and exits 3 after the first one.
CHILD = """
import os, signal, sys, time
out = sys.argv[1]
def on_term(signum, frame):
    with open(out, "a") as f:
        f.write("term\\n")
    time.sleep(0.3)  # a second, group-wide signal would be counted meanwhile
    sys.exit(3)
signal.signal(signal.SIGTERM, on_term)
with open(out, "a") as f:
    f.write(f"ready {os.getpgrp()}\\n")
while True:
    time.sleep(0.05)
"""


def _wait_for(path: Path, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never appeared in {path}")


def test_a_group_wide_sigterm_reaches_the_command_once_through_alone(
    tmp_path: Path,
) -> None:
    out = tmp_path / "child.log"
    shim = subprocess.Popen(
        [sys.executable, "-m", "config.run", "alone"]
        + [sys.executable, "-c", CHILD, str(out)],
        cwd=ROOT,
        start_new_session=True,  # as honcho starts every Procfile entry
    )
    ready = _wait_for(out, "ready")

    os.killpg(shim.pid, signal.SIGTERM)  # what honcho does on Ctrl-C

    assert shim.wait(timeout=10) == 3  # the command's own exit status
    child_group = int(ready.split()[1])
    assert child_group != shim.pid  # not in the group honcho signals
    assert out.read_text().count("term") == 1


# Stands in for a worker busy with a long check: it ignores SIGTERM.
STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()}\\n")
while True:
    time.sleep(0.05)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_the_command_dies_with_alone_when_honcho_kills_it(tmp_path: Path) -> None:
    out = tmp_path / "pid"
    shim = subprocess.Popen(
        [sys.executable, "-m", "config.run", "alone"]
        + [sys.executable, "-c", STUBBORN, str(out)],
        cwd=ROOT,
        start_new_session=True,
    )
    child = int(_wait_for(out, "\n"))
    os.killpg(shim.pid, signal.SIGTERM)  # forwarded, and ignored
    time.sleep(0.3)
    assert running(child)

    os.killpg(shim.pid, signal.SIGKILL)  # honcho, 30 s later
    shim.wait(timeout=10)

    assert left_running([child], seconds=5) == []


def test_make_run_gives_the_worker_thirty_seconds_to_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(honcho.manager, "KILL_WAIT", 5)

    run.configure()

    assert honcho.manager.KILL_WAIT == 30


def test_honcho_still_reads_its_kill_wait_when_stopping() -> None:
    """config.run sets a module constant of honcho's; an upgrade that stopped
    reading it would quietly bring back the SIGKILL after five seconds."""
    assert "KILL_WAIT" in inspect.getsource(honcho.manager.Manager.loop)


def test_the_procfile_starts_the_worker_alone() -> None:
    procfile = (ROOT / "Procfile").read_text().splitlines()
    worker = next(line for line in procfile if line.startswith("worker:"))

    assert "-m config.run alone" in worker
    assert "celery -A config worker" in worker


def test_the_procfile_starts_a_browser_worker_alone_on_its_queue() -> None:
    procfile = (ROOT / "Procfile").read_text().splitlines()
    browser = next(line for line in procfile if line.startswith("browser:"))

    assert "-m config.run alone" in browser
    assert "celery -A config worker -Q ${BROWSER_QUEUE:-browser}" in browser


def test_without_chromium_make_run_leaves_the_browser_worker_out_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BROWSER_EXECUTABLE", "/nowhere/chromium")
    monkeypatch.setenv("BROWSER_QUEUE", "browser")

    argv = run.without_browser_if_missing(["start", "-f", str(ROOT / "Procfile")])

    assert argv[3:] == ["web", "worker", "scheduler"]
    assert os.environ["BROWSER_QUEUE"] == ""
    said = capsys.readouterr().out
    assert "No Chromium found at BROWSER_EXECUTABLE=/nowhere/chromium" in said
    assert "starting without the browser worker" in said


def test_with_chromium_make_run_starts_every_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    monkeypatch.setenv("BROWSER_EXECUTABLE", str(chromium))
    argv = ["start", "-f", str(ROOT / "Procfile")]

    assert run.without_browser_if_missing(argv) == argv
    assert f"Chromium at {chromium}" in capsys.readouterr().out
