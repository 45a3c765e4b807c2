"""Faults injected into `make run`'s service, started as `make run` starts it
(`python -m config.run -f Procfile.large`: the embedded Valkey, gunicorn, the
worker, the upkeep worker, beat; or the default Procfile's one worker) on its
embedded SQLite database in a temporary var/, and driven through its API:

- a fresh start runs checks through the embedded Valkey;
- a pool process killed mid-check: its message is delivered again;

- the worker killed with SIGKILL is started again while web keeps answering;
- its idle pool processes killed, the worker still runs new checks;
- upkeep (dispatch, the stale-check sweeper) goes on while the worker is
  stopped (SIGSTOP: alive but taking nothing, as a wedged worker);
- a check whose worker died mid-check is finished within the stale time and
  a sweep, and Run now works again right after.

CHECK_STALE_AFTER_SECONDS is 15 here (the sweeper then runs every 5 s); by
default it is 120 (a sweep every 15 s).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from config import valkey
from tests.sites import Site

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
STALE_AFTER = 15
SWEEP_EVERY = 5  # settings.STALE_SWEEP_EVERY_SECONDS for STALE_AFTER
FINISHED = {"completed", "partial", "failed"}


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


class Service:
    """`make run`'s processes under config.run, with a key for its API."""

    def __init__(self, var: Path, procfile: str = "Procfile.large") -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self.var = var
        # The Celery workers whose "ready" line tells the service is up.
        self.workers = (
            ("worker", "upkeep") if procfile == "Procfile.large" else ("worker",)
        )
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                if k not in ("DATABASE_URL", "REDIS_URL")
            },
            "PAGEWATCH_VAR_DIR": str(var),
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "PUBLIC_BASE_URL": self.base_url,
            "ALLOW_PRIVATE_NETWORK_TARGETS": "true",
            "CHECK_STALE_AFTER_SECONDS": str(STALE_AFTER),
            "CELERY_TASK_LOG_LEVEL": "INFO",  # each task's "succeeded" line
            "WEB_WORKERS": "1",
        }
        self._manage("migrate", "--noinput")
        banner = self._manage("bootstrap")
        self.key = re.search(r"API key\s*:\s*(\S+)", banner).group(1)
        self.log_path = var / "service.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "config.run", "-f", procfile],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=10,
            trust_env=False,
        )
        wait_for(self.ready, "the service to start", timeout=120)

    def _manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return done.stdout

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def ready(self) -> bool:
        """Web answers and both workers said they are ready since they last
        started."""
        try:
            if self.http.get("/v2/monitor").status_code != 200:
                return False
        except httpx.HTTPError:
            return False
        return all(self._ready_since_start(name) for name in self.workers)

    def _ready_since_start(self, name: str) -> bool:
        log = self.log()
        start = log.rfind(f"| {name} started (pid ")
        hostname = "celery@" if name == "worker" else "upkeep@"
        return start >= 0 and f"INFO celery.apps.worker {hostname}" in log[start:]

    def pid(self, name: str) -> int:
        return int(re.findall(rf"\| {name} started \(pid (\d+)\)", self.log())[-1])

    def monitor(self, urls: list[str]) -> str:
        answer = self.http.post(
            "/v2/monitor",
            json={
                "name": "Faults",
                "schedule": {"cron": "0 3 * * *"},
                "targets": [{"type": "scrape", "urls": urls}],
            },
        )
        assert answer.status_code == 200, answer.text
        return answer.json()["data"]["id"]

    def run_now(self, monitor_id: str) -> httpx.Response:
        return self.http.post(f"/v2/monitor/{monitor_id}/run")

    def check(self, monitor_id: str, check_id: str) -> dict:
        answer = self.http.get(f"/v2/monitor/{monitor_id}/checks/{check_id}")
        return answer.json()["data"]

    def run_and_wait(self, monitor_id: str, timeout: float = 60) -> dict:
        queued = self.run_now(monitor_id)
        assert queued.status_code in (200, 202), queued.text
        check_id = queued.json()["data"]["id"]
        return wait_for(
            lambda: (c := self.check(monitor_id, check_id))["status"] in FINISHED and c,
            f"check {check_id} to finish\n{self.log()[-3000:]}",
            timeout,
        )

    def stop(self) -> None:
        self.http.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=45)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[Service]:
    if sys.platform != "linux":
        pytest.skip("reads /proc")
    running = Service(tmp_path_factory.mktemp("var"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def small_service(tmp_path_factory) -> Iterator[Service]:
    """`make run` as a fresh clone runs it: the default Procfile."""
    if sys.platform != "linux":
        pytest.skip("reads /proc")
    running = Service(tmp_path_factory.mktemp("var"), "Procfile")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as running:
        yield running


def test_a_fresh_make_run_runs_checks_through_the_embedded_valkey(small_service, site):
    service = small_service
    monitor = service.monitor([site.html("/v", "V", "<p>v</p>")])

    assert service.run_and_wait(monitor)["status"] == "completed"

    assert "Embedded Valkey: " in service.log()
    assert "| valkey started (pid " in service.log()
    assert valkey.answers(service.var)
    client = redis.Redis.from_url(valkey.url(service.var))
    assert client.exists("_kombu.binding.celery")  # Celery's queues live there
    assert client.config_get("appendonly") == {"appendonly": "yes"}
    assert not (service.var / "broker").exists()
    assert not (service.var / "cache").exists()
    # One worker does everything on a small machine: the scheduler runs in it.
    assert "beat: Starting..." in service.log()
    assert "| scheduler started" not in service.log()


def test_the_small_machines_worker_is_one_process_whose_scheduler_ticks(
    small_service,
):
    service = small_service

    health = wait_for(
        lambda: (answer := service.http.get("/healthz")).status_code == 200 and answer,
        f"/healthz to say every part works\n{service.log()[-3000:]}",
    )

    # The scheduler's dispatch tick and the worker's heartbeat both came
    # from the worker's one process: no pool process, no beat process.
    assert health.json()["parts"]["scheduler"] == "ok"
    assert children_of(service.pid("worker")) == []
    assert "Scheduler: Sending due task dispatch-due-monitors" in service.log()


def test_a_pool_process_killed_mid_check_gets_its_message_delivered_again(
    service, site
):
    slow = site.html("/held", "Held", "<p>held</p>", delay=60)
    monitor = service.monitor([slow])
    queued = service.run_now(monitor).json()["data"]
    wait_for(lambda: site.requests_to("/held"), "the page to be fetched")
    worker = service.pid("worker")
    for pid in children_of(worker):  # the pool, the process mid-task among them
        os.kill(pid, signal.SIGKILL)
    site.html("/held", "Held", "<p>held</p>")

    check = wait_for(
        lambda: (c := service.check(monitor, queued["id"]))["status"] in FINISHED and c,
        f"the check to finish\n{service.log()[-3000:]}",
        timeout=120,
    )
    assert check["status"] == "completed"
    assert len(site.requests_to("/held")) == 2  # taken up again, not lost
    received = re.findall(
        r"Task (checks\.tasks\.\w+\[[\w-]+\]) received", service.log()
    )
    assert len(received) > len(set(received))  # one message delivered twice
    assert service.pid("worker") == worker


def test_a_worker_killed_with_sigkill_comes_back_while_web_keeps_answering(
    service, site
):
    monitor = service.monitor([site.html("/a", "A", "<p>a</p>")])
    worker = service.pid("worker")

    os.kill(worker, signal.SIGKILL)

    answers = []
    deadline = time.monotonic() + 60
    while not (service.pid("worker") != worker and service.ready()):
        answers.append(service.http.get("/v2/monitor").status_code)
        assert time.monotonic() < deadline, service.log()[-3000:]
        time.sleep(0.2)
    assert set(answers) == {200}  # web never went away
    assert re.search(r"worker was killed by SIGKILL .*starting it again", service.log())
    assert service.process.poll() is None
    assert service.run_and_wait(monitor)["status"] == "completed"


def test_a_worker_whose_idle_pool_processes_were_killed_still_runs_checks(
    service, site
):
    monitor = service.monitor([site.html("/b", "B", "<p>b</p>")])
    worker = service.pid("worker")
    pool = children_of(worker)
    assert len(pool) >= 1

    for pid in pool:
        os.kill(pid, signal.SIGKILL)

    check = service.run_and_wait(monitor, timeout=60)
    assert check["status"] == "completed"
    assert service.pid("worker") == worker  # the same worker, not a restart


def _upkeep_runs(service: Service, task: str) -> int:
    return len(re.findall(rf"upkeep +\| .*{task}\[.*succeeded", service.log()))


def test_upkeep_goes_on_while_the_worker_is_stopped(service):
    worker = service.pid("worker")
    os.kill(worker, signal.SIGSTOP)  # alive, holding its messages, doing nothing
    try:
        dispatched = _upkeep_runs(service, "dispatch_due_monitors_task")
        swept = _upkeep_runs(service, "fail_stale_checks_task")
        wait_for(
            lambda: (
                _upkeep_runs(service, "dispatch_due_monitors_task") >= dispatched + 2
                and _upkeep_runs(service, "fail_stale_checks_task") >= swept + 2
            ),
            "two dispatch ticks and two sweeps by the upkeep worker",
            timeout=60,
        )
    finally:
        os.kill(worker, signal.SIGCONT)


def test_a_check_whose_worker_died_is_finished_within_the_stale_time(service, site):
    quick = site.html("/quick", "Quick", "<p>quick</p>")
    slow = site.html("/slow", "Slow", "<p>slow</p>", delay=60)
    monitor = service.monitor([quick, slow])
    queued = service.run_now(monitor).json()["data"]
    wait_for(
        lambda: (
            service.check(monitor, queued["id"])["status"] == "running"
            and site.requests_to("/slow")
        ),
        "the check to be under way",
    )
    assert service.run_now(monitor).status_code == 409  # it is running

    worker = service.pid("worker")
    os.killpg(worker, signal.SIGKILL)  # the worker and its pool: all of it died
    died = time.monotonic()
    site.html("/slow", "Slow", "<p>slow</p>")

    check = wait_for(
        lambda: (c := service.check(monitor, queued["id"]))["status"] in FINISHED and c,
        f"the check to finish\n{service.log()[-3000:]}",
        timeout=120,
    )
    took = time.monotonic() - died

    assert check["status"] == "completed"
    assert {p["status"] for p in check["pages"]} == {"new"}
    # The stale time, one sweep, and the worker's restart (a few seconds;
    # more on a busy machine).
    assert took < STALE_AFTER + SWEEP_EVERY + 30, took
    assert service.run_now(monitor).status_code in (200, 202)  # no 409 left
