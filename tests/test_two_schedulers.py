"""Two schedulers started by mistake (two `celery beat`s, or `make run` on two
machines against one database): one holds the schedule and sends, the other
stands by, says so in its log, and /healthz warns; the standby takes over
when the first stops."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from checks.models import Heartbeat
from checks.tasks import dispatch_due_monitors_task, worker_heartbeat_task
from config import beat
from tests import test_worker_integration
from tests.test_worker_integration import (
    wait_for,
    worker_env,
    worker_sessions,
)

broker = test_worker_integration.broker
redis_url = test_worker_integration.redis_url
database_url = test_worker_integration.database_url

pytestmark = pytest.mark.django_db(transaction=True)

SENDING = "Sending due task"
STANDS_BY = "Another scheduler is running against this database"


def test_a_second_scheduler_finds_the_schedule_held_and_stands_by():
    first = Heartbeat.hold_schedule("beat on a", beat.LEASE)
    second = Heartbeat.hold_schedule("beat on b", beat.LEASE)

    assert first.holder == "beat on a"
    assert second.holder == "beat on a"
    assert Heartbeat.objects.get(name=Heartbeat.SCHEDULER_STANDBY).holder == (
        "beat on b"
    )
    # The first renews its lease and keeps it.
    assert Heartbeat.hold_schedule("beat on a", beat.LEASE).holder == "beat on a"


def _identities_of_a_scheduler_on(host: str, pid: int) -> list[str]:
    """config.beat.identity(), asked twice by a process of its own that sees
    itself as process `pid` on a machine named `host`: what two containers
    sharing a name (`network_mode: host`, or one `hostname:`), each running
    beat as its pid 1, would call themselves."""
    code = (
        "import os, socket\n"
        f"socket.gethostname = lambda: {host!r}\n"
        f"os.getpid = lambda: {pid}\n"
        "from config import beat\n"
        "print(beat.identity())\n"
        "print(beat.identity())\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def test_two_schedulers_with_one_host_name_and_pid_are_two_holders_and_one_stands_by():
    first, first_again = _identities_of_a_scheduler_on("shop-box", 1)
    second, _ = _identities_of_a_scheduler_on("shop-box", 1)

    # One process keeps one name, so it renews its own lease; two differ.
    assert first == first_again
    assert first != second
    # Its log still says which machine and process it is.
    assert first.startswith("celery beat on shop-box, pid 1 ")
    assert second.startswith("celery beat on shop-box, pid 1 ")
    assert Heartbeat.hold_schedule(first, beat.LEASE).holder == first
    assert Heartbeat.hold_schedule(second, beat.LEASE).holder == first
    assert Heartbeat.objects.get(name=Heartbeat.SCHEDULER_STANDBY).holder == second
    assert Heartbeat.second_scheduler(beat.LEASE) == (first, second)


def test_a_lease_its_holder_stopped_renewing_goes_to_the_standby():
    Heartbeat.hold_schedule("beat on a", beat.LEASE)
    Heartbeat.hold_schedule("beat on b", beat.LEASE)
    # What a holder killed without a word leaves: a lease nobody renews.
    stale = Heartbeat.objects.get(name=Heartbeat.SCHEDULER_LEASE).seen_at - (
        beat.LEASE + timedelta(seconds=1)
    )
    Heartbeat.objects.filter(name=Heartbeat.SCHEDULER_LEASE).update(seen_at=stale)

    assert Heartbeat.hold_schedule("beat on b", beat.LEASE).holder == "beat on b"
    assert Heartbeat.hold_schedule("beat on a", beat.LEASE).holder == "beat on b"


def test_a_lease_handed_back_goes_to_the_next_scheduler_at_once():
    Heartbeat.hold_schedule("beat on a", beat.LEASE)
    Heartbeat.release_schedule("beat on a")

    assert Heartbeat.hold_schedule("beat on b", beat.LEASE).holder == "beat on b"


@pytest.fixture
def reachable_broker(settings, redis_server) -> None:
    settings.REDIS_LOCATION = redis_server  # the session's Valkey, or REDIS_URL


def test_healthz_warns_of_two_schedulers_and_stays_200(
    client: Client, reachable_broker
):
    worker_heartbeat_task()
    dispatch_due_monitors_task()
    Heartbeat.hold_schedule("beat on a", beat.LEASE)
    assert "warnings" not in client.get("/healthz").json()

    Heartbeat.hold_schedule("beat on b", beat.LEASE)
    response = client.get("/healthz")
    body = response.json()

    assert response.status_code == 200
    assert body["warnings"] == [
        "Two schedulers are running against this database. The second stands "
        "by and sends nothing, but only one should run: stop one of them (the "
        "scheduler's log names both)."
    ]
    # No machine names on an open page.
    assert "beat on" not in str(body)


def test_the_scheduler_lease_is_not_a_part_of_the_service_in_last_seen():
    Heartbeat.hold_schedule("beat on a", beat.LEASE)
    Heartbeat.hold_schedule("beat on b", beat.LEASE)

    assert Heartbeat.last_seen() == {}


class Beat:
    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # SIGTERM, as systemd and docker stop do
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()


@pytest.fixture
def two_beats(broker, database_url, tmp_path) -> Iterator[tuple[Beat, Beat]]:
    beats = []
    try:
        for name in ("one", "two"):
            # Each its own machine: its own var/ (beat's schedule file).
            env = worker_env(broker, database_url, tmp_path / name)
            env["CELERY_TASK_LOG_LEVEL"] = "INFO"  # beat's "Sending due task"
            (tmp_path / name).mkdir()
            beats.append(Beat(env, tmp_path / f"beat-{name}.log"))
            if name == "one":
                wait_for(lambda: SENDING in beats[0].log(), "beat one to send")
        yield beats[0], beats[1]
    finally:
        for running in beats:
            running.stop()
        wait_for(lambda: worker_sessions() == 0, "the beats' sessions to end")


@pytest.mark.integration
def test_of_two_real_beats_one_sends_the_other_stands_by_then_takes_over(
    two_beats, client
):
    one, two = two_beats
    wait_for(lambda: STANDS_BY in two.log(), "beat two to stand by", two.log)
    sent_before = one.log().count(SENDING)
    wait_for(
        lambda: one.log().count(SENDING) >= sent_before + 3,
        "beat one to send a few more",
        one.log,
    )

    assert SENDING not in two.log(), two.log()
    assert f"pid {one.process.pid}" in two.log()
    assert client.get("/healthz").json()["warnings"]

    one.stop()  # hands its lease back as it goes
    wait_for(lambda: SENDING in two.log(), "beat two to take over", two.log)
    assert "The other scheduler stopped" in two.log()
    assert "Traceback" not in one.log() + two.log()


def test_a_scheduler_that_cannot_reach_the_database_sends_and_says_so_in_one_line(
    monkeypatch, caplog
):
    from django.db import OperationalError

    def unreachable(holder, lease):
        raise OperationalError("connection to server at 127.0.0.1 failed")

    monkeypatch.setattr(Heartbeat, "hold_schedule", unreachable)
    scheduler = beat.Scheduler.__new__(beat.Scheduler)

    with caplog.at_level("WARNING", logger="celery.beat"):
        sends = scheduler.holds_schedule()

    assert sends is True
    assert scheduler.lease_unknown is True
    [line] = [r for r in caplog.records if "cannot ask the database" in r.message]
    assert line.exc_info is None
