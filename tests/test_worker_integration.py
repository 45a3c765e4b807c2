"""A real Celery worker against Redis and the test database, driven through the
official Python SDK (firecrawl-py) over a live server.

Needs Redis (REDIS_URL, default redis://127.0.0.1:6379/15) and PostgreSQL
(DATABASE_URL=postgres://...): the worker is a separate process, so it must
reach the same test database, which SQLite's in-memory test database cannot
offer. Without them the tests skip with the reason, except under CI (CI=true),
where a skip would hide a broken pipeline, so they fail instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone
from firecrawl import Firecrawl

from checks import runner
from checks.models import Check
from config.celery import app as celery_app
from monitors.models import Monitor
from tests.sites import Site

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(settings.BASE_DIR)
DEADLINE_SECONDS = 60.0
WORKER_APPLICATION = "pagewatch-test-worker"
FINISHED = {"completed", "partial", "failed", "skipped_overlap", "skipped_no_credits"}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI=true: integration tests must run, not skip)")
    pytest.skip(reason)


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        _unavailable(f"Redis at {url} is not reachable: {exc}")
    return url


@pytest.fixture
def database_url(transactional_db) -> str:
    """A URL for the database this test really uses (pytest-django's test_…)."""
    if connection.vendor != "postgresql":
        _unavailable(
            "the worker subprocess needs PostgreSQL (DATABASE_URL=postgres://…); "
            "SQLite's test database lives in this process's memory"
        )
    db = connection.settings_dict
    auth = quote(db["USER"] or "")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    # Named, so the fixture can wait for the worker's sessions to end.
    return (
        f"postgres://{auth}@{host}:{port}/{db['NAME']}"
        f"?application_name={WORKER_APPLICATION}"
    )


def worker_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            [WORKER_APPLICATION],
        )
        return cursor.fetchone()[0]


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    """Point this process's Celery producer at Redis too (the live server's
    run endpoint enqueues from here), whatever broker the settings chose."""
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options)
    conf.broker_url = redis_url
    conf.broker_transport_options = {"visibility_timeout": 3600}
    _reset_producer_pools()
    yield redis_url
    conf.broker_url, conf.broker_transport_options = saved
    _reset_producer_pools()


def _reset_producer_pools() -> None:
    # Celery caches its connection and producer pools on first use. Dropped,
    # not closed: kombu keeps pools in a global registry per broker URL, and a
    # closed one would be handed back the next time that URL is used.
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


class Worker:
    """`celery worker` in its own process group, logging to a file."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter
            [
                sys.executable, "-m", "celery", "-A", "config", "worker",
                "--loglevel=INFO", "--concurrency=1", "--pool=prefork",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
                "--purge", "-n", f"integration-{uuid.uuid4().hex[:8]}@%h",
            ],
            cwd=BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so kill() reaches the pool children too
        )  # fmt: skip

    def wait_ready(self) -> None:
        wait_for(lambda: "ready." in self.log(), "the worker to start", self.log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """kill -9, the whole process group: no warm shutdown, no acks."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


@pytest.fixture
def worker(broker: str, database_url: str, tmp_path: Path) -> Iterator[Worker]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": broker,
        "ALLOW_PRIVATE_NETWORK_TARGETS": "true",
        "PAGEWATCH_VAR_DIR": str(tmp_path / "var"),
        "PYTHONUNBUFFERED": "1",
    }
    running = Worker(env, tmp_path / "worker.log")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()
        # A killed worker's database sessions end a moment after it does; the
        # test database can only be dropped once they have.
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


@pytest.fixture
def sdk(live_server, api_key) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


def wait_for(
    condition: Callable[[], Any], what: str, details: Callable[[], str] = str
) -> Any:
    """Poll `condition` until truthy, or fail after DEADLINE_SECONDS."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.1)
    pytest.fail(f"Timed out waiting for {what}.\n{details()[-4000:]}")


def run_and_wait(sdk: Firecrawl, monitor_id: str, worker: Worker) -> Any:
    queued = sdk.run_monitor(monitor_id)
    assert queued.status == "queued" and queued.trigger == "manual"

    def finished() -> Any:
        detail = sdk.get_monitor_check(monitor_id, queued.id)
        return detail if detail.status in FINISHED else None

    return wait_for(finished, f"check {queued.id} to finish", worker.log)


def by_url(detail: Any) -> dict[str, Any]:
    return {page.url: page for page in detail.pages}


def summary_of(detail: Any) -> dict[str, int]:
    return detail.summary.model_dump(by_alias=True)


# --- the whole journey ------------------------------------------------------------


def test_checks_run_on_a_real_worker_through_the_sdk(sdk, worker):
    with Site() as site, Site() as other_site:
        urls = [
            site.html(f"/page-{i:02d}", f"Page {i}", f"<p>Item {i} costs ${i}0.</p>")
            for i in range(30)
        ]
        refused_later = other_site.html("/status", "Status", "<p>All good</p>")
        monitor = sdk.create_monitor(
            name="Integration",
            schedule={"cron": "0 3 * * *"},
            targets=[{"type": "scrape", "urls": [*urls, refused_later]}],
        )

        first = run_and_wait(sdk, monitor.id, worker)
        assert first.status == "completed"
        assert summary_of(first) == {
            "totalPages": 31, "same": 0, "changed": 0, "new": 31, "removed": 0,
            "error": 0,
        }  # fmt: skip
        assert len(first.pages) == 31  # auto-paginated past the first 25
        assert {p.status for p in first.pages} == {"new"}
        assert by_url(first)[urls[3]].metadata["title"] == "Page 3"

        second = run_and_wait(sdk, monitor.id, worker)
        assert second.status == "completed"
        assert summary_of(second)["same"] == 31

        site.html("/page-03", "Page 3", "<p>Item 3 costs $99.</p>")
        third = run_and_wait(sdk, monitor.id, worker)
        changed = by_url(third)[urls[3]]
        assert changed.status == "changed"
        assert summary_of(third) == {
            "totalPages": 31, "same": 30, "changed": 1, "new": 0, "removed": 0,
            "error": 0,
        }  # fmt: skip
        assert changed.diff.text == (
            "--- previous\n+++ current\n@@ -1,1 +1,1 @@\n"
            "-Item 3 costs $30.\n+Item 3 costs $99.\n"
        )
        assert changed.diff.json["files"][0]["chunks"][0]["changes"][0] == {
            "type": "del", "del": True, "ln": 1, "content": "-Item 3 costs $30.",
        }  # fmt: skip

        site.remove("/page-05")
        fourth = run_and_wait(sdk, monitor.id, worker)
        assert by_url(fourth)[urls[5]].status == "removed"
        assert summary_of(fourth)["removed"] == 1
        assert summary_of(fourth)["same"] == 30

        site.html("/page-05", "Page 5", "<p>Item 5 costs $50.</p>")
        other_site.stop()
        fifth = run_and_wait(sdk, monitor.id, worker)
        assert fifth.status == "partial"
        assert by_url(fifth)[urls[5]].status == "new"
        error = by_url(fifth)[refused_later]
        assert (error.status, error.error) == (
            "error",
            "Connection refused by 127.0.0.1",
        )
        assert summary_of(fifth) == {
            "totalPages": 31, "same": 29, "changed": 0, "new": 1, "removed": 0,
            "error": 1,
        }  # fmt: skip
        errors_only = sdk.get_monitor_check(monitor.id, fifth.id, status="error")
        assert [p.url for p in errors_only.pages] == [refused_later]

    checks = sdk.list_monitor_checks(monitor.id)
    assert [c.id for c in checks] == [
        c.id for c in (fifth, fourth, third, second, first)
    ]
    assert all(c.trigger == "manual" and c.finished_at for c in checks)

    after = sdk.get_monitor(monitor.id)
    assert after.current_check_id is None
    assert after.last_run_at == fifth.finished_at
    assert after.last_check_summary.model_dump(by_alias=True) == summary_of(fifth)


# --- a worker killed mid-check -----------------------------------------------------


def test_a_killed_worker_leaves_no_stuck_check(sdk, worker):
    with Site() as site:
        quick = site.html("/quick", "Quick", "<p>quick</p>")
        slow = site.html("/slow", "Slow", "<p>slow</p>", delay=30)
        monitor = sdk.create_monitor(
            name="Killed mid-check",
            schedule={"cron": "0 3 * * *"},
            targets=[{"type": "scrape", "urls": [quick, slow]}],
        )
        queued = sdk.run_monitor(monitor.id)

        # Mid-check: running, the quick page recorded, the slow one in flight.
        wait_for(
            lambda: Check.objects.filter(
                pk=queued.id, status=Check.Status.RUNNING, pages_done=1
            ).exists(),
            "the check to be half done",
            worker.log,
        )
        site.wait_for_requests(1, path="/slow")
        worker.kill()

        check = Check.objects.get(pk=queued.id)
        assert check.status == Check.Status.RUNNING  # nobody left to finish it
        assert Monitor.objects.get(pk=monitor.id).current_check_id == check.pk

        # The sweeper, once the heartbeat is older than the task time limit.
        later = timezone.now() + runner.stale_running_after() + runner.RECLAIM_AFTER
        assert runner.fail_stale_checks(later) == 1

    detail = sdk.get_monitor_check(monitor.id, queued.id)
    assert detail.status == "failed"
    assert detail.error == runner.STALE_RUNNING_MESSAGE
    assert summary_of(detail)["totalPages"] == 1  # the page it did finish stays
    assert sdk.get_monitor(monitor.id).current_check_id is None
    # Not stuck: the next run is accepted.
    assert sdk.run_monitor(monitor.id).status == "queued"
