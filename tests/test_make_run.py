"""`make run`'s process manager (config/run.py), with stand-in commands: a
process that dies is started again and the others keep running; a stop sends
SIGTERM to each main process alone, waits, then kills what is left; nothing
outlives the manager."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import run, valkey
from tests.processes import left_running, running

ROOT = Path(__file__).resolve().parents[1]

# Stands in for a service process: says where it runs, records the signals it
# gets, starts a child in its own process group (as a Celery worker starts its
# pool, whose processes ask to be killed with their parent: celery.concurrency.
# prefork's set_pdeathsig), and exits 3 on SIGTERM unless told to ignore it.
SERVICE = """
import ctypes, os, signal, sys, time
out, stubborn = sys.argv[1], sys.argv[2] == "stubborn"
def note(text):
    with open(out, "a") as f:
        f.write(text + "\\n")
def on_term(signum, frame):
    note(f"term {os.getpid()}")
    if not stubborn:
        time.sleep(0.3)  # a second, group-wide signal would be counted meanwhile
        sys.exit(3)
signal.signal(signal.SIGTERM, on_term)
child = os.fork()
if child == 0:
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    signal.signal(signal.SIGTERM, lambda *_: note("child got term"))
    while True:
        time.sleep(0.05)
note(f"ready {os.getpid()} {child}")
while True:
    time.sleep(0.05)
"""


def service_line(name: str, out: Path, mode: str = "normal") -> str:
    script = out.with_name("service.py")
    script.write_text(SERVICE)
    return f"{name}: {sys.executable} {script} {out} {mode}\n"


class Manager:
    """`python -m config.run` on a Procfile of stand-ins, output to a file."""

    def __init__(self, tmp_path: Path, procfile: str, *args: str) -> None:
        (tmp_path / "Procfile").write_text(procfile)
        self.log_path = tmp_path / "manager.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "config.run", "-f", str(tmp_path / "Procfile")]
                + ["-e", str(tmp_path / ".env"), *args],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for(self, pattern: str, count: int = 1, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while len(re.findall(pattern, self.log())) < count:
            assert self.process.poll() is None, self.log()
            assert time.monotonic() < deadline, f"no {pattern!r} in:\n{self.log()}"
            time.sleep(0.05)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


def readies(out: Path, count: int = 1, timeout: float = 20) -> list[tuple[int, int]]:
    """(main pid, child pid) of each start of the stand-in writing to `out`."""
    deadline = time.monotonic() + timeout
    while True:
        lines = out.read_text().splitlines() if out.exists() else []
        found = [tuple(map(int, line.split()[1:])) for line in lines if "ready" in line]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"{count} starts expected in {out}"
        time.sleep(0.05)


@pytest.fixture
def manager_for(tmp_path: Path) -> Iterator:
    started: list[Manager] = []

    def start(procfile: str, *args: str) -> Manager:
        started.append(Manager(tmp_path, procfile, *args))
        return started[-1]

    yield start
    for manager in started:
        if manager.process.poll() is None:
            os.killpg(manager.process.pid, signal.SIGKILL)
            manager.process.wait(timeout=10)


def test_a_process_that_dies_is_started_again_and_the_others_keep_running(
    tmp_path, manager_for
):
    web, worker = tmp_path / "web.out", tmp_path / "worker.out"
    manager = manager_for(service_line("web", web) + service_line("worker", worker))
    [(web_pid, _)] = readies(web)
    [(worker_pid, worker_child)] = readies(worker)

    os.kill(worker_pid, signal.SIGKILL)

    manager.wait_for(r"worker was killed by SIGKILL after \d+ s; starting it again")
    (_, (new_worker_pid, _)) = readies(worker, count=2)
    assert new_worker_pid != worker_pid
    assert left_running([worker_child], seconds=5) == []  # its leftovers killed
    assert running(web_pid)  # never touched
    assert readies(web) == [(web_pid, readies(web)[0][1])]
    assert manager.process.poll() is None


def test_a_process_that_keeps_dying_waits_longer_each_time(tmp_path, manager_for):
    manager = manager_for(
        service_line("web", tmp_path / "web.out")
        + f"broken: {sys.executable} -c 'raise SystemExit(7)'\n"
    )

    manager.wait_for(r"broken exited with status 7", count=3, timeout=30)

    waits = re.findall(r"broken exited with status 7 .*again in (\d+) s", manager.log())
    assert waits[:3] == ["1", "2", "4"]
    assert "web exited" not in manager.log() and "web was killed" not in manager.log()


def test_a_stop_sends_sigterm_to_each_main_process_once(tmp_path, manager_for):
    out = tmp_path / "worker.out"
    manager = manager_for(service_line("worker", out))
    [(pid, child)] = readies(out)

    assert manager.stop() == 0

    notes = out.read_text()
    assert notes.count("term") == 1 and f"term {pid}" in notes  # the main alone
    assert "child got term" not in notes
    assert left_running([pid, child], seconds=5) == []
    assert "worker stopped" in manager.log()


def test_a_process_that_ignores_sigterm_is_killed_after_the_wait(tmp_path, manager_for):
    out = tmp_path / "worker.out"
    manager = manager_for(service_line("worker", out, "stubborn"), "--stop-wait", "1")
    [(pid, child)] = readies(out)

    started = time.monotonic()
    assert manager.stop() == 0

    assert 1 <= time.monotonic() - started < 10
    assert "worker did not stop: killing it" in manager.log()
    assert left_running([pid, child], seconds=5) == []


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_nothing_outlives_a_manager_killed_with_sigkill(tmp_path, manager_for):
    out = tmp_path / "worker.out"
    manager = manager_for(service_line("worker", out))
    [(pid, child)] = readies(out)

    manager.process.kill()
    manager.process.wait(timeout=10)

    # The main process gets SIGTERM from the kernel and exits; its pool-like
    # child goes with it.
    assert left_running([pid, child], seconds=10) == []
    assert f"term {pid}" in out.read_text()


def test_variables_in_env_file_reach_the_processes(tmp_path, manager_for):
    (tmp_path / ".env").write_text("# settings\nGREETING='hello there'\n")
    out = tmp_path / "env.out"
    manager_for(f"env: echo $GREETING > {out}; sleep 60\n")

    deadline = time.monotonic() + 20
    while not (out.exists() and out.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert out.read_text() == "hello there\n"


def run_once(tmp_path: Path, env_file: str, command: str, **env: str):
    (tmp_path / ".env").write_text(env_file)
    clean = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT")}
    clean.pop("PUBLIC_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "config.run", "-e", str(tmp_path / ".env")]
        + ["--", "sh", "-c", command],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_command_after_dashes_runs_once_with_the_env_file_and_its_exit_code(
    tmp_path,
):
    done = run_once(
        tmp_path, "DATABASE_URL=postgres://db/pw\n", "echo $DATABASE_URL; exit 7"
    )

    assert done.stdout == "postgres://db/pw\n"
    assert done.returncode == 7


def test_public_base_url_follows_host_and_port_set_in_the_env_file(tmp_path):
    done = run_once(tmp_path, "PORT=9123\n", "echo $PUBLIC_BASE_URL")

    assert done.stdout == "http://127.0.0.1:9123\n"


def test_a_public_base_url_filled_in_from_host_and_port_says_so(tmp_path):
    said = "echo $PUBLIC_BASE_URL ${PUBLIC_BASE_URL_FILLED_IN:-given}"

    filled = run_once(tmp_path, "HOST=0.0.0.0\n", said)
    given = run_once(tmp_path, "", said, PUBLIC_BASE_URL="https://pw.example")

    assert filled.stdout == "http://0.0.0.0:8000 true\n"
    assert given.stdout == "https://pw.example given\n"


def test_a_public_base_url_that_is_given_is_kept(tmp_path):
    done = run_once(
        tmp_path,
        "PORT=9123\n",
        "echo $PUBLIC_BASE_URL",
        PUBLIC_BASE_URL="https://pw.example",
    )

    assert done.stdout == "https://pw.example\n"


def test_make_run_migrates_and_bootstraps_with_the_env_file_applied() -> None:
    """A DATABASE_URL in .env used to reach the processes but not migrate, so
    they started on a database nobody had migrated."""
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()

    manage = [line for line in plan if "manage.py" in line]
    through = ".venv/bin/python -m config.run -- .venv/bin/python manage.py"
    assert manage == [f"{through} migrate --noinput", f"{through} bootstrap"]
    assert plan[-1] == "exec .venv/bin/python -m config.run -f Procfile"


def test_make_run_checks_its_port_before_it_migrates_and_shows_the_first_password(
    tmp_path: Path,
) -> None:
    """A port in use was found only when the service started, after the
    first start's one showing of the administrator's password had gone by."""
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert plan[0] == ".venv/bin/python -m config.run --check -f Procfile"

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        # A Redis named, so that no Valkey server is needed for the check.
        env = {
            **os.environ,
            "PORT": port,
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            "REDIS_URL": "redis://127.0.0.1:6379/0",
        }
        done = subprocess.run(
            [sys.executable, "-m", "config.run", "--check", "-f", "Procfile"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    assert done.returncode == 1
    assert done.stderr.startswith(f"Cannot listen on 127.0.0.1:{port}")
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no database made, nothing started


def test_a_procfile_line_that_is_not_name_and_command_is_refused(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text("web: gunicorn\nthis is not an entry\n")

    with pytest.raises(SystemExit, match="Procfile:2: expected 'name: command'"):
        run.read_procfile(procfile)


def test_a_mistyped_procfile_is_one_line_naming_it(tmp_path):
    missing = tmp_path / "Procfil"

    with pytest.raises(SystemExit) as stopped:
        run.read_procfile(missing)

    assert str(stopped.value) == (
        f"Cannot read the Procfile {missing}: No such file or directory "
        "(PROCFILE: Procfile or Procfile.large)"
    )


def test_a_command_that_does_not_exist_is_one_line_naming_it(tmp_path):
    with pytest.raises(SystemExit) as stopped:
        run.main(["-e", str(tmp_path / ".env"), "--", str(tmp_path / "nothing")])

    assert str(stopped.value) == (
        f"Cannot run {tmp_path / 'nothing'}: No such file or directory"
    )


def test_the_default_procfile_runs_one_worker_for_everything_with_the_scheduler():
    entries = {e.name: e.command for e in run.read_procfile(ROOT / "Procfile")}

    assert set(entries) == {"valkey", "web", "worker"}
    # One process: tasks in threads, the scheduler in one more.
    assert "celery -A config worker --pool=threads --beat-thread " in entries["worker"]
    queues = "--queues=celery,upkeep,notifications,${BROWSER_QUEUE:-browser} "
    assert queues in entries["worker"]
    assert "--concurrency=${WORKER_THREADS:-1}" in entries["worker"]
    assert "--config python:config.gunicorn" in entries["web"]
    assert "make run PROCFILE=Procfile.large" in (ROOT / "Procfile").read_text()


def test_the_default_procfiles_worker_serves_every_queue_a_task_is_routed_to() -> None:
    from django.conf import settings

    command = {e.name: e.command for e in run.read_procfile(ROOT / "Procfile")}
    served = re.search(r"--queues=(\S+)", command["worker"]).group(1)
    served = set(served.replace("${BROWSER_QUEUE:-browser}", "browser").split(","))

    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    declared = {queue.name for queue in settings.CELERY_TASK_QUEUES}
    assert routed | declared | {settings.CELERY_TASK_DEFAULT_QUEUE} <= served


def test_the_large_procfile_runs_upkeep_apart_from_the_checks_worker() -> None:
    entries = {e.name: e.command for e in run.read_procfile(ROOT / "Procfile.large")}

    assert set(entries) == {
        "valkey", "web", "worker", "browser", "notify", "upkeep", "scheduler"
    }  # fmt: skip
    assert "celery -A config worker" in entries["worker"]
    # Takes upkeep too when upkeep is stuck; browser pages are the browser's.
    assert "--queues=celery,upkeep " in entries["worker"]
    assert "--queues=upkeep" in entries["upkeep"]
    # Deliveries never wait behind checks.
    assert "--queues=notifications " in entries["notify"]
    assert "celery -A config beat" in entries["scheduler"]
    assert "--config python:config.gunicorn" in entries["web"]


def test_the_large_procfile_starts_a_browser_worker_on_its_queue() -> None:
    entries = {e.name: e.command for e in run.read_procfile(ROOT / "Procfile.large")}

    assert (
        "celery -A config worker --queues=${BROWSER_QUEUE:-browser}"
        in (entries["browser"])
    )


def test_without_chromium_make_run_leaves_the_browser_worker_out_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = {"BROWSER_EXECUTABLE": "/nowhere/chromium", "BROWSER_QUEUE": "browser"}

    procfile = run.read_procfile(ROOT / "Procfile.large")
    entries = run.with_browser_if_installed(procfile, env)

    assert [e.name for e in entries] == [
        "valkey", "web", "worker", "notify", "upkeep", "scheduler"
    ]  # fmt: skip
    assert env["BROWSER_QUEUE"] == ""
    said = capsys.readouterr().out
    assert "No Chromium found at BROWSER_EXECUTABLE=/nowhere/chromium" in said
    assert "starting without the browser worker" in said


def test_with_chromium_make_run_starts_every_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    env = {"BROWSER_EXECUTABLE": str(chromium)}
    procfile = run.read_procfile(ROOT / "Procfile.large")

    assert run.with_browser_if_installed(procfile, env) == procfile
    assert env.get("BROWSER_QUEUE") is None
    assert f"Chromium at {chromium}" in capsys.readouterr().out


def test_without_redis_url_make_run_starts_the_embedded_valkey_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"PAGEWATCH_VAR_DIR": str(tmp_path)}

    entries = run.with_valkey_unless_redis(run.read_procfile(ROOT / "Procfile"), env)

    assert entries[0].name == "valkey"
    assert entries[0].command == ".venv/bin/python -m config.valkey"
    assert entries[0].ready is not None and not entries[0].ready()  # not started
    assert all(e.ready is None for e in entries[1:])
    said = capsys.readouterr().out
    assert f"Embedded Valkey: {valkey.find_server()} on {tmp_path}/valkey.sock" in said


def test_with_redis_url_make_run_leaves_the_embedded_valkey_out() -> None:
    env = {"REDIS_URL": "redis://127.0.0.1:6379/0"}

    entries = run.with_valkey_unless_redis(run.read_procfile(ROOT / "Procfile"), env)

    assert "valkey" not in [e.name for e in entries]
    assert "web" in [e.name for e in entries]


def test_with_no_valkey_to_run_and_no_redis_url_make_run_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(valkey, "find_server", lambda: None)

    with pytest.raises(SystemExit) as stopped:
        run.with_valkey_unless_redis(run.read_procfile(ROOT / "Procfile"), {})

    assert str(stopped.value) == valkey.NOT_FOUND
    assert "\n" not in valkey.NOT_FOUND and "REDIS_URL" in valkey.NOT_FOUND


def test_a_second_make_run_beside_a_running_valkey_starts_nothing_and_says_why(
    tmp_path: Path,
) -> None:
    """It started a second Valkey on the same socket, which took the socket
    away from the first Pagewatch's web and workers when it stopped."""
    server = valkey.find_server()
    if server is None:
        pytest.skip("no Valkey server to run")
    first = subprocess.Popen(valkey.command(server, tmp_path))  # noqa: S603
    try:
        deadline = time.monotonic() + 10
        while not valkey.answers(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        env = {"PAGEWATCH_VAR_DIR": str(tmp_path)}

        with pytest.raises(SystemExit) as stopped:
            run.with_valkey_unless_redis(run.read_procfile(ROOT / "Procfile"), env)

        assert str(stopped.value) == run.ALREADY_RUNNING.format(var_dir=tmp_path)
        assert valkey.answers(tmp_path)  # the first one is left alone
    finally:
        first.terminate()
        first.wait(10)


def test_a_port_in_use_stops_make_run_with_one_line_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])

        with pytest.raises(SystemExit) as stopped:
            run.refuse_a_taken_port({"HOST": "127.0.0.1", "PORT": port})

    said = str(stopped.value)
    assert said.startswith(f"Cannot listen on 127.0.0.1:{port} (Address already")
    assert "make run PORT=" in said and "\n" not in said


def test_a_host_that_is_not_this_machines_is_named_with_the_reason() -> None:
    with pytest.raises(SystemExit) as stopped:
        run.refuse_a_taken_port({"HOST": "192.0.2.1", "PORT": "8000"})

    assert str(stopped.value) == (
        "Cannot listen on 192.0.2.1:8000 (Cannot assign requested address): "
        "check HOST and PORT"
    )


@pytest.mark.parametrize("port", ["70000", "0", "-1"])
def test_a_port_out_of_range_stops_make_run_with_one_line(port) -> None:
    """getaddrinfo took 70000 for 4464, so the check passed and gunicorn then
    failed with a traceback on every restart."""
    with pytest.raises(SystemExit) as stopped:
        run.refuse_a_taken_port({"HOST": "127.0.0.1", "PORT": port})

    assert str(stopped.value) == (
        f"Cannot listen on 127.0.0.1:{port} (a port is a number from 1 to 65535):"
        " check HOST and PORT"
    )


def test_a_free_port_lets_make_run_start() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])

    assert run.refuse_a_taken_port({"HOST": "127.0.0.1", "PORT": port}) is None


def test_the_others_start_once_the_server_answers_and_it_stops_after_them(
    tmp_path, manager_for
):
    """The workers connect to Valkey at once, and a worker's warm shutdown
    gives its messages back through it."""
    ready, seen = tmp_path / "ready", tmp_path / "seen"
    server = (
        f"server: {sys.executable} -c 'import pathlib, signal, sys, time;"
        f' time.sleep(1); pathlib.Path("{ready}").touch();'
        " signal.signal(signal.SIGTERM, lambda *_: sys.exit(0));"
        " time.sleep(600)'\n"
    )
    web = f"web: (test -e {ready} && echo yes || echo no) > {seen}; sleep 600\n"
    (tmp_path / "Procfile").write_text(server + web)
    entries = run.read_procfile(tmp_path / "Procfile")
    entries[0].ready = ready.exists
    log = io.StringIO()
    manager = run.Manager(entries, dict(os.environ), out=log, stop_wait=5)
    threading.Timer(4, manager._ask_to_stop, (signal.SIGTERM, None)).start()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        manager.run()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)

    assert seen.read_text() == "yes\n"
    said = log.getvalue()
    assert said.index("web stopped") < said.index("sending SIGTERM to server")
    assert "server stopped" in said


def test_make_alone_lists_every_target_the_readme_names_and_makes_nothing(
    tmp_path,
) -> None:
    """`make` with no target made the virtualenv and said nothing; it now
    says what each target the README names does."""
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`make (\w+)", readme))
    copy = tmp_path / "Makefile"
    copy.write_text((ROOT / "Makefile").read_text())

    done = subprocess.run(
        ["make", "--no-print-directory"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.returncode == 0
    assert {"run", "test", "setup", "lint", "format", "bench", "clean"} <= named
    listed = set(re.findall(r"^make (\w+) ", done.stdout, re.MULTILINE))
    assert listed == named
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile"]
