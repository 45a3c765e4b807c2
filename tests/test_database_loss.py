"""PostgreSQL dropping a worker's connections (a failover, a restart, an
administrator's pg_terminate_backend): the worker reconnects by itself and
the check it was on is finished, not left running.

The shared PostgreSQL cannot be restarted here, so the worker's sessions are
ended from the server side, which is what the worker sees of a restart.
Needs PostgreSQL and Redis like tests/test_worker_integration.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from checks import dispatch, runner
from checks.models import Check, PageResult
from monitors.models import Monitor, Target
from tests import test_worker_integration
from tests.sites import Site
from tests.test_worker_integration import (
    FINISHED,
    WORKER_APPLICATION,
    Worker,
    wait_for,
    worker_env,
    worker_sessions,
)

broker = test_worker_integration.broker
redis_url = test_worker_integration.redis_url
database_url = test_worker_integration.database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# The Procfile's worker (threads, the scheduler in a thread) and
# Procfile.large's check worker (prefork).
POOLS = {
    "threads": ("--pool=threads", "--beat-thread"),
    "prefork": ("--pool=prefork",),
}


@pytest.fixture(params=sorted(POOLS))
def pool_worker(request, broker, database_url, tmp_path: Path) -> Iterator[Worker]:
    env = worker_env(broker, database_url, tmp_path)
    running = Worker(env, tmp_path / "worker.log", *POOLS[request.param])
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


def end_worker_sessions() -> int:
    """What a database restart does to the worker: its sessions are gone."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s",
            [WORKER_APPLICATION],
        )
        return cursor.fetchone()[0]


def one_page_monitor(team, url: str) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name="Cut off", schedule_cron="0 3 * * *"
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    return monitor


def finished(check: Check, worker: Worker) -> Check:
    return wait_for(
        lambda: (c := Check.objects.get(pk=check.pk)).status in FINISHED and c,
        "the check to finish",
        worker.log,
    )


def test_a_worker_whose_database_sessions_were_ended_runs_the_next_check(
    team, pool_worker
):
    with Site() as site:
        monitor = one_page_monitor(team, site.html("/p", "P", "<p>one</p>"))
        first = finished(dispatch.queue_manual_check(monitor), pool_worker)
        assert first.status == Check.Status.COMPLETED
        assert end_worker_sessions() >= 1

        site.html("/p", "P", "<p>two</p>")
        second = finished(dispatch.queue_manual_check(monitor), pool_worker)

    assert second.status == Check.Status.COMPLETED
    assert second.summary["changed"] == 1
    assert "Traceback" not in pool_worker.log()


def test_a_check_whose_database_session_ended_mid_way_is_finished_once(
    team, pool_worker
):
    with Site() as site:
        quick = site.html("/quick", "Quick", "<p>quick</p>")
        slow = site.html("/slow", "Slow", "<p>slow</p>", delay=3)
        monitor = Monitor.objects.create(
            team=team, name="Cut mid-check", schedule_cron="0 3 * * *"
        )
        Target.objects.create(monitor=monitor, type="scrape", urls=[quick, slow])
        check = dispatch.queue_manual_check(monitor)
        site.wait_for_requests(1, path="/slow")
        assert end_worker_sessions() >= 1

        wait_for(
            lambda: (
                "lost its database connection" in pool_worker.log()
                or Check.objects.get(pk=check.pk).status in FINISHED
            ),
            "the worker to lose its connection",
            pool_worker.log,
        )
        # What beat runs once the stale time is past: a check whose batch
        # went silent is taken up again.
        runner.fail_stale_checks(timezone.now() + runner.stale_running_after())
        check = finished(check, pool_worker)

    assert check.status == Check.Status.COMPLETED, check.error
    assert check.summary["new"] == 2
    assert PageResult.objects.filter(check_run=check).count() == 2
    assert Monitor.objects.get(pk=monitor.pk).current_check_id is None
