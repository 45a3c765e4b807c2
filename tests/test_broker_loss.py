"""Redis going away under a running check: the worker keeps its check (or
hands it back cleanly) and goes on when Redis returns; nothing is lost.

A Redis server of the test's own, on a free loopback port, is stopped while a
real worker is in the middle of a check and started again on the same port.
Needs PostgreSQL like tests/test_worker_integration.py, and redis-server."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from checks import dispatch, runner
from checks.models import Check, PageResult
from monitors.models import Monitor, Target
from tests import test_worker_integration
from tests.sites import Request, Site
from tests.test_worker_integration import (
    FINISHED,
    Worker,
    _reset_producer_pools,
    _unavailable,
    thousand_page_monitor,
    wait_for,
    worker_env,
    worker_sessions,
)

# The URL of the test database for a worker in another process (PostgreSQL).
database_url = test_worker_integration.database_url

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


class RedisServer:
    """redis-server on 127.0.0.1:`port`, its data in an append-only file, that a test
    stops (SIGKILL: an outage, not a shutdown) and starts again."""

    def __init__(self, tmp_path: Path, *, persistent: bool = True) -> None:
        self.persistent = persistent
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.dir = tmp_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or shutil.which("valkey-server")
        if binary is None:
            _unavailable("redis-server is not installed")
        self.process = subprocess.Popen(  # noqa: S603 - a fixed local binary
            [
                binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "",
                *(("--appendonly", "yes", "--appendfsync", "always")
                  if self.persistent else ("--appendonly", "no")),
                "--dir", str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        wait_for(lambda: _answers(client), "redis-server to start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


@pytest.fixture
def own_redis(tmp_path: Path, settings) -> Iterator[RedisServer]:
    from config.celery import app as celery_app

    server = RedisServer(tmp_path)
    server.start()
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options)
    conf.broker_url = server.url
    conf.broker_transport_options = {"visibility_timeout": 3600}
    _reset_producer_pools()
    yield server
    conf.broker_url, conf.broker_transport_options = saved
    _reset_producer_pools()
    server.kill()


def test_a_check_survives_redis_dropping_under_it(
    team, own_redis, database_url, tmp_path, settings
):
    env = worker_env(own_redis.url, database_url, tmp_path)
    worker = Worker(env, tmp_path / "worker.log")
    try:
        worker.wait_ready()
        with Site() as site:
            monitor = thousand_page_monitor(team, site, delay=0.01)
            check = dispatch.queue_manual_check(monitor)
            wait_for(
                lambda: Check.objects.get(pk=check.pk).pages_done >= 300,
                "the check to be under way",
                worker.log,
            )
            own_redis.kill()
            time.sleep(5)  # an outage of a few seconds, the check still running
            own_redis.start()

            def finished() -> bool:
                runner.fail_stale_checks(timezone.now())
                return Check.objects.get(pk=check.pk).status in FINISHED

            wait_for(finished, "the check to finish after the outage", worker.log)

        check.refresh_from_db()
        assert worker.process.poll() is None, "the worker exited"
        assert check.status == Check.Status.COMPLETED, check.error
        assert PageResult.objects.filter(check_run=check).count() == 1000
    finally:
        worker.stop()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


def test_a_check_whose_queued_batches_a_restarted_redis_forgot_is_finished(
    team, tmp_path, database_url, settings
):
    """A Redis run without persistence (a cache-style setup, or a container
    restarted without its volume) comes back empty: the batches waiting in
    it are gone, and the sweeper sends them again once they have waited the
    stale time with the queue empty, not ten minutes later."""
    from config.celery import app as celery_app

    server = RedisServer(tmp_path, persistent=False)
    server.start()
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options)
    conf.broker_url = server.url
    conf.broker_transport_options = {"visibility_timeout": 3600}
    _reset_producer_pools()
    worker = Worker(worker_env(server.url, database_url, tmp_path), tmp_path / "w.log")
    try:
        worker.wait_ready()
        with Site() as site:
            monitor = thousand_page_monitor(team, site, delay=0.01)
            check = dispatch.queue_manual_check(monitor)
            wait_for(
                lambda: Check.objects.get(pk=check.pk).pages_done >= 50,
                "the check to be under way",
                worker.log,
            )
            server.kill()
            server.start()  # empty: the queued batches are gone

            settings.CHECK_STALE_AFTER_SECONDS = 15  # this process sweeps

            def finished() -> bool:
                runner.fail_stale_checks(timezone.now())  # what beat runs
                return Check.objects.get(pk=check.pk).status in FINISHED

            wait_for(finished, "the check to finish after the outage", worker.log)

        check.refresh_from_db()
        assert check.status == Check.Status.COMPLETED, check.error
        assert PageResult.objects.filter(check_run=check).count() == 1000
    finally:
        worker.stop()
        conf.broker_url, conf.broker_transport_options = saved
        _reset_producer_pools()
        server.kill()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


def test_beat_says_an_outage_once_and_its_end_once_with_no_traceback(
    own_redis, database_url, tmp_path
):
    env = worker_env(own_redis.url, database_url, tmp_path)
    env["CELERY_TASK_LOG_LEVEL"] = "INFO"  # beat's "Sending due task" lines
    log_path = tmp_path / "beat.log"
    with log_path.open("wb") as log:
        beat = subprocess.Popen(  # noqa: S603 - our own interpreter
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            text = lambda: log_path.read_text(errors="replace")  # noqa: E731
            wait_for(lambda: "Sending due task" in text(), "beat to tick", text)
            own_redis.kill()
            time.sleep(12)  # several ticks' worth of outage
            own_redis.start()
            # Its "Sending due task" line comes before the send: wait for
            # what it says once a send went through.
            wait_for(
                lambda: "The broker is reachable again" in text(),
                "beat to send again after the outage",
                text,
            )
        finally:
            beat.terminate()
            beat.wait(timeout=15)

    output = text()
    assert "Traceback" not in output
    assert output.count("The broker cannot be reached") == 1
    assert output.count("The broker is reachable again") == 1


class ProcfileWorker(Worker):
    """The worker exactly as the Procfile (and so `make run`) starts it, with
    one pool process: its options decide which connections to the broker it
    holds besides the one it consumes from."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter
            [
                *procfile_command("worker"),
                "--concurrency=1",
                "-n", f"procfile-{uuid.uuid4().hex[:8]}@%h",
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def procfile_command(name: str) -> list[str]:
    """A Procfile entry's command, run by this interpreter."""
    for line in (Path(settings.BASE_DIR) / "Procfile").read_text().splitlines():
        entry, _, command = line.partition(":")
        if entry.strip() == name:
            words = shlex.split(command)
            assert words[0].endswith("/celery"), words
            return [sys.executable, "-m", "celery", *words[1:]]
    raise AssertionError(f"no {name} in the Procfile")


class HeldPage:
    """A page that answers only once released: its check is mid-run meanwhile."""

    def __init__(self, site: Site) -> None:
        self.released = threading.Event()
        self.url = site.handle("/held", self._answer)

    def _answer(self, _request: Request) -> tuple[int, dict[str, str], bytes]:
        self.released.wait(60)
        body = b"<html><head><title>Held</title></head><body><p>Held</p></body>"
        return 200, {"Content-Type": "text/html"}, body


def test_the_procfiles_worker_rides_out_a_redis_restart_without_a_traceback(
    team, own_redis, database_url, tmp_path
):
    worker = ProcfileWorker(
        worker_env(own_redis.url, database_url, tmp_path), tmp_path / "w.log"
    )
    try:
        worker.wait_ready()
        with Site() as site:
            held = HeldPage(site)
            monitor = Monitor.objects.create(
                team=team, name="Held", schedule_cron="0 3 * * *"
            )
            Target.objects.create(monitor=monitor, type="scrape", urls=[held.url])
            first = dispatch.queue_manual_check(monitor)
            site.wait_for_requests(1, path="/held")  # the check is running

            own_redis.kill()
            wait_for(lambda: "broker lost" in worker.log(), "the worker to notice")
            # The check ends while Redis is away (its message cannot be
            # acknowledged); Redis comes back a few seconds later, with the
            # message it had handed out.
            held.released.set()
            wait_for(lambda: finished(first.pk), "the check to finish", worker.log)
            time.sleep(3)
            own_redis.start()
            wait_for(
                lambda: worker.log().count("Connected to redis") >= 2,
                "the worker to reconnect",
                worker.log,
            )
            second = dispatch.queue_manual_check(monitor)
            wait_for(lambda: finished(second.pk), "a check after", worker.log)

        log = worker.log()
        assert worker.process.poll() is None, log[-4000:]
        for check in (first, second):
            check.refresh_from_db()
            assert check.status == Check.Status.COMPLETED, check.error
        assert first.attempts == 1  # the message Redis kept was a no-op
        assert len(site.requests_to("/held")) == 2
        assert "Traceback" not in log, log[-6000:]
        # Celery's notice about its 6.0 default, on every loss: our choice is
        # explicit in the settings.
        assert "worker_cancel_long_running_tasks_on_connection_loss" not in log
    finally:
        worker.stop()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


def finished(check_id: object) -> bool:
    return Check.objects.get(pk=check_id).status in FINISHED
