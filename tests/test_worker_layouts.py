"""Real workers as operators lay them out and stop them: Procfile.large's
check worker with no browser worker beside it, a worker stopped as docker and
systemd stop one (SIGTERM to its main process, SIGKILL 10 s later), and a
worker of another Pagewatch version taking a message it does not fit.

Needs PostgreSQL and Redis, as tests/test_worker_integration.py does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.utils import timezone

from checks import dispatch, runner
from checks.models import Check, CheckBatch, Heartbeat
from config.celery import app as celery_app
from monitors.models import Monitor, Target, Team
from tests import test_worker_integration
from tests.sites import Site
from tests.test_crawl import build_site
from tests.test_worker_integration import (
    Worker,
    wait_for,
    worker_env,
    worker_sessions,
)

broker = test_worker_integration.broker
redis_url = test_worker_integration.redis_url
database_url = test_worker_integration.database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Procfile.large's check worker: checks and upkeep, no browser pages.
LARGE_CHECK_WORKER = ("--queues=celery,upkeep",)


def started(env: dict[str, str], log: Path, *options: str) -> Worker:
    worker = Worker(env, log, *options)
    worker.wait_ready()
    return worker


def stopped(*workers: Worker) -> None:
    for worker in workers:
        worker.stop()
    wait_for(lambda: worker_sessions() == 0, "the workers' sessions to end")


def monitor_of(team: Team, *targets: dict[str, Any]) -> Monitor:
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 3 * * *")
    for position, target in enumerate(targets):
        Target.objects.create(
            monitor=monitor, type="scrape", position=position, **target
        )
    return monitor


def run_now(monitor: Monitor) -> Check:
    return dispatch.queue_manual_check(monitor)


def test_on_procfile_large_without_its_browser_worker_a_browser_check_ends_saying_so(
    team, broker, database_url, tmp_path
):
    env = worker_env(broker, database_url, tmp_path)
    env["BROWSER_EXECUTABLE"] = "/usr/bin/chromium"
    worker = started(env, tmp_path / "worker.log", *LARGE_CHECK_WORKER)
    try:
        with Site() as site:
            url = site.html("/s", "S", "<p>shot</p>")
            monitor = monitor_of(
                team, {"urls": [url], "scrape_options": {"waitFor": 100}}
            )
            check = run_now(monitor)
            batch = wait_for(
                lambda: CheckBatch.objects.filter(check_run=check).first(),
                "the check's browser batch",
                worker.log,
            )
            assert batch.uses_browser and batch.status == CheckBatch.Status.PENDING
            # Ten minutes on, as the data says: nobody took it.
            long_ago = timezone.now() - CheckBatch.REQUEUE_AFTER - timedelta(minutes=1)
            CheckBatch.objects.filter(pk=batch.pk).update(heartbeat_at=long_ago)
            # The upkeep queue's sweep, run by the real worker.
            celery_app.send_task("checks.tasks.fail_stale_checks_task")
            wait_for(
                lambda: Check.objects.filter(
                    pk=check.pk, status=Check.Status.FAILED
                ).exists(),
                "the check to end",
                worker.log,
            )
    finally:
        stopped(worker)

    check.refresh_from_db()
    assert check.error == runner.no_browser_message()
    assert "no worker serves the browser queue 'browser'" in worker.log()
    assert Monitor.objects.get(pk=monitor.pk).current_check_id is None


def test_a_message_from_another_version_is_logged_plainly_and_its_check_still_runs(
    team, broker, database_url, tmp_path
):
    worker = started(worker_env(broker, database_url, tmp_path), tmp_path / "w.log")
    try:
        with Site() as site:
            monitor = monitor_of(team, {"urls": [site.html("/p", "P", "<p>p</p>")]})
            check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
            Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
            # A newer web machine's message: one argument more than this
            # worker's task takes; an older one's: one fewer.
            celery_app.send_task(runner.RUN_CHECK_TASK, args=[str(check.pk), True])
            celery_app.send_task(runner.RUN_BATCH_TASK, args=[])
            wait_for(
                lambda: worker.log().count("another version of Pagewatch") >= 2,
                "the worker to say so",
                worker.log,
            )
            assert Check.objects.get(pk=check.pk).status == Check.Status.QUEUED
            # The sweeper, once the check waited the stale time, sends it
            # again in this version's words.
            later = timezone.now() + runner.stale_running_after()
            runner.fail_stale_checks(later)
            wait_for(
                lambda: Check.objects.filter(
                    pk=check.pk, status=Check.Status.COMPLETED
                ).exists(),
                "the check to complete",
                worker.log,
            )
    finally:
        stopped(worker)

    log = worker.log()
    assert "Traceback" not in log, log[-4000:]
    assert (
        "Task checks.tasks.run_check_task[" in log
        and "was dropped: its message was sent by another version of Pagewatch "
        "(too many positional arguments)"
        in log
    )
    assert "(missing a required argument: 'batch_id')" in log


def docker_stop(worker: Worker, grace: float = 10.0) -> None:
    """What `docker stop` and systemd (KillMode=mixed) do: SIGTERM to the
    main process alone, SIGKILL to every process `grace` seconds later."""
    worker.process.send_signal(signal.SIGTERM)
    try:
        worker.process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)


# The Procfile's worker (threads, the scheduler in a thread) and
# Procfile.large's check worker (prefork).
POOLS = {
    "threads": ("--pool=threads", "--beat-thread"),
    "prefork": ("--pool=prefork",),
}


@pytest.mark.parametrize("pool", POOLS)
def test_a_worker_stopped_mid_check_as_docker_stops_it_leaves_it_to_the_next(
    pool, team, broker, database_url, tmp_path
):
    env = worker_env(broker, database_url, tmp_path)
    first = started(env, tmp_path / "first.log", *POOLS[pool])
    with Site() as site:
        quick = site.html("/quick", "Quick", "<p>quick</p>")
        slow = site.html("/slow", "Slow", "<p>slow</p>", delay=40)
        monitor = monitor_of(team, {"urls": [quick, slow]})
        check = run_now(monitor)
        wait_for(
            lambda: Check.objects.filter(pk=check.pk, pages_done=1).exists(),
            "the check to be half done",
            first.log,
        )
        site.wait_for_requests(1, path="/slow")
        docker_stop(first)
        stopped(first)
        assert Check.objects.get(pk=check.pk).status == Check.Status.RUNNING

        site.html("/slow", "Slow", "<p>slow</p>")
        second = started(env, tmp_path / "second.log")
        try:
            later = timezone.now() + runner.stale_running_after()
            assert runner.fail_stale_checks(later) == 0
            wait_for(
                lambda: Check.objects.filter(
                    pk=check.pk, status__in=Check.FINISHED
                ).exists(),
                "the check to finish",
                second.log,
            )
        finally:
            stopped(second)

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED, (check.status, check.error)
    assert len(site.requests_to("/quick")) == 1
    assert Monitor.objects.get(pk=monitor.pk).current_check_id is None


SKEWED_CELERY = """
import sys
from datetime import UTC, datetime, timedelta

import time_machine

# This machine's clock, {seconds} s off: every clock Python reads, in the
# worker and in the pool processes it forks.
time_machine.travel(
    datetime.now(UTC) + timedelta(seconds={seconds}), tick=True
).start()

from celery.__main__ import main

sys.argv = ["celery", *sys.argv[1:]]
main()
"""


class SkewedWorker(Worker):
    """A worker on a machine whose clock is `seconds` off."""

    def __init__(
        self, env: dict[str, str], log_path: Path, seconds: int, *options: str
    ) -> None:
        script = log_path.with_suffix(".py")
        script.write_text(SKEWED_CELERY.format(seconds=seconds))
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter
            [
                sys.executable, str(script), "-A", "config", "worker",
                "--loglevel=INFO", "--concurrency=1", "--pool=prefork",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
                "--purge", "-n", f"skewed-{uuid.uuid4().hex[:8]}@%h", *options,
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def test_a_worker_whose_clock_is_minutes_behind_keeps_its_live_check_and_looks_alive(
    team, broker, database_url, tmp_path
):
    env = worker_env(broker, database_url, tmp_path)
    worker = SkewedWorker(env, tmp_path / "skewed.log", -300)
    worker.wait_ready()
    try:
        with Site() as site:
            quick = site.html("/quick", "Quick", "<p>quick</p>")
            slow = site.html("/slow", "Slow", "<p>slow</p>", delay=15)
            monitor = monitor_of(team, {"urls": [quick, slow]})
            check = run_now(monitor)
            wait_for(
                lambda: Check.objects.filter(pk=check.pk, pages_done=1).exists(),
                "the check to be half done",
                worker.log,
            )
            site.wait_for_requests(1, path="/slow")
            # The upkeep worker's sweep, on a machine whose clock is right.
            assert runner.fail_stale_checks(timezone.now()) == 0
            batch = CheckBatch.objects.get(check_run=check)
            assert batch.status == CheckBatch.Status.RUNNING
            assert abs(batch.heartbeat_at - timezone.now()) < timedelta(seconds=30)
            wait_for(
                lambda: Check.objects.filter(
                    pk=check.pk, status__in=Check.FINISHED
                ).exists(),
                "the check to finish",
                worker.log,
            )
            # What /healthz reads: this worker's signs of life, on time.
            celery_app.send_task("checks.tasks.worker_heartbeat_task")
            celery_app.send_task("checks.tasks.dispatch_due_monitors_task")
            seen = wait_for(
                lambda: len(Heartbeat.last_seen()) == 2 and Heartbeat.last_seen(),
                "the worker's heartbeat and dispatch tick",
                worker.log,
            )
    finally:
        stopped(worker)

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED, (check.status, check.error)
    assert check.attempts == 1
    assert CheckBatch.objects.get(check_run=check).attempts == 1
    assert len(site.requests_to("/slow")) == 1
    for part in (Heartbeat.WORKER, Heartbeat.SCHEDULER):
        assert abs(seen[part] - timezone.now()) < timedelta(seconds=60), part
    said = re.findall(
        r"This machine's clock is (\d+) s behind the database", worker.log()
    )
    assert len(said) == 1 and 295 <= int(said[0]) <= 305, said


def test_a_worker_stopped_mid_crawl_as_docker_stops_it_leaves_it_to_the_next(
    team, broker, database_url, tmp_path
):
    env = worker_env(broker, database_url, tmp_path)
    first = started(env, tmp_path / "first.log")
    with Site() as site:
        build_site(site, posts=50)
        for i in range(50):  # slower than the 10 s a warm shutdown is given
            site.html(f"/blog/post-{i}", f"Post {i}", f"<p>Post {i}.</p>", delay=2)
        monitor = Monitor.objects.create(
            team=team, name="Whole site", schedule_cron="0 3 * * *"
        )
        Target.objects.create(monitor=monitor, type="crawl", url=site.url("/"))
        check = run_now(monitor)
        wait_for(
            lambda: Check.objects.get(pk=check.pk).pages_done >= 15,
            "the crawl to be half done",
            first.log,
        )
        docker_stop(first)
        stopped(first)
        assert Check.objects.get(pk=check.pk).status == Check.Status.RUNNING

        second = started(env, tmp_path / "second.log")
        try:
            later = timezone.now() + runner.stale_running_after()
            assert runner.fail_stale_checks(later) == 0
            wait_for(
                lambda: Check.objects.filter(
                    pk=check.pk, status__in=Check.FINISHED
                ).exists(),
                "the crawl to finish",
                second.log,
            )
        finally:
            stopped(second)

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED, (check.status, check.error)
    expected = {"/", "/blog/", "/docs/", "/docs/a", "/docs/b", "/about", "/orphan"}
    expected |= {f"/blog/post-{i}" for i in range(50)}
    paths = list(check.pages.values_list("url", flat=True))
    assert sorted(urlsplit(url).path for url in paths) == sorted(expected)
