"""A real Celery worker against Redis and the test database, driven through the
official Python SDK (firecrawl-py) over a live server.

Needs Redis (REDIS_URL, else the embedded Valkey of tests/conftest.py) and PostgreSQL
(DATABASE_URL=postgres://...): the worker is a separate process, so it must
reach the same test database, which SQLite's in-memory test database cannot
offer. Without them the tests skip with the reason, except under CI (CI=true),
where a skip would hide a broken pipeline, so they fail instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
import redis
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.utils import timezone
from firecrawl import Firecrawl

from checks import dispatch, runner
from checks.models import Check, Delivery, PageResult
from checks.notify import channels, drain, messages, sweep
from checks.tasks import fail_stale_checks_task
from config import run, valkey
from config.celery import app as celery_app
from monitors.models import Channel, ImportRun, Membership, Monitor, Target
from monitors.moving import importing, plan, remote
from tests.sites import Request, Site, sections_site
from tests.smtp import MailServer
from tests.test_crawl import build_site, nav
from tests.test_moving_api import CD_KEY
from tests.test_moving_remote_preview import _many_watches

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
def redis_url(redis_server: str) -> str:
    url = redis_server
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
            # This run's database only: another run on the same server (a
            # second checkout, CI beside a session) has workers of its own.
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            [WORKER_APPLICATION],
        )
        return cursor.fetchone()[0]


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    """Point this process's Celery producer at Redis too (the live server's
    run endpoint enqueues from here), whatever broker the settings chose."""
    # Messages an earlier test left in the queues (a worker it stopped before
    # it took them) would be taken first: each test starts with them empty.
    # (The tests' cache.clear() no longer empties the whole database.)
    redis.Redis.from_url(redis_url).delete(
        *(queue.name for queue in settings.CELERY_TASK_QUEUES)
    )
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options)
    conf.broker_url = valkey.broker_url(redis_url)
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

    def __init__(self, env: dict[str, str], log_path: Path, *options: str) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter
            [
                sys.executable, "-m", "celery", "-A", "config", "worker",
                "--loglevel=INFO", "--concurrency=1", "--pool=prefork",
                "--without-gossip", "--without-mingle", "--without-heartbeat",
                "--purge", "-n", f"integration-{uuid.uuid4().hex[:8]}@%h",
                *options,
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


def worker_env(broker: str, database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": broker,
        # With Redis every process must sign with one key: this one's.
        "SECRET_KEY": settings.SECRET_KEY,
        "ALLOW_PRIVATE_NETWORK_TARGETS": "true",
        "PAGEWATCH_VAR_DIR": str(tmp_path / "var"),
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def worker(broker: str, database_url: str, tmp_path: Path) -> Iterator[Worker]:
    env = worker_env(broker, database_url, tmp_path)
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
def sdk(live_server, api_key, settings) -> Firecrawl:
    # The live server (this process) refuses monitors of loopback pages unless
    # private targets are allowed, as the worker's are (its environment).
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
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


def sweep_and_wait(
    sdk: Firecrawl, monitor_id: str, check_id: str, worker: Worker
) -> Any:
    """The sweeper's pass once the stale time has gone by (as the upkeep
    worker runs it), then the check's end as the SDK sees it."""
    later = timezone.now() + runner.stale_running_after()
    assert runner.fail_stale_checks(later) == 0
    return wait_for(
        lambda: (
            (d := sdk.get_monitor_check(monitor_id, check_id)).status in FINISHED and d
        ),
        "the check to finish",
        worker.log,
    )


def test_a_killed_worker_leaves_no_stuck_check(
    sdk, worker, broker, database_url, tmp_path
):
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

        # The sweeper, once the batch's heartbeat is stale, sends it again;
        # a new worker takes it and finishes the check.
        site.html("/slow", "Slow", "<p>slow</p>")
        with started_worker(broker, database_url, tmp_path, "second") as second:
            detail = sweep_and_wait(sdk, monitor.id, queued.id, second)

    assert detail.status == "completed"
    assert summary_of(detail)["new"] == 2  # the page it did finish was kept
    assert len(site.requests_to("/quick")) == 1
    assert sdk.get_monitor(monitor.id).current_check_id is None
    assert sdk.run_monitor(monitor.id).status == "queued"  # not stuck


def test_a_check_whose_message_a_dying_worker_took_is_sent_again(
    sdk, broker, database_url, tmp_path
):
    with Site() as site:
        page = site.html("/page", "Page", "<p>hello</p>")
        monitor = sdk.create_monitor(
            name="Lost message",
            schedule={"cron": "0 3 * * *"},
            targets=[{"type": "scrape", "urls": [page]}],
        )
        queued = sdk.run_monitor(monitor.id)
        # A worker took the message and was killed before it claimed the
        # check: the message has left the queue (Redis would give it back
        # only after its visibility timeout, an hour).
        taken = redis.Redis.from_url(broker).rpop(settings.CELERY_TASK_DEFAULT_QUEUE)
        assert taken is not None and str(queued.id).encode() in taken

        with started_worker(broker, database_url, tmp_path, "survivor") as survivor:
            time.sleep(1)
            assert Check.objects.get(pk=queued.id).status == Check.Status.QUEUED
            # The sweeper, once the check has waited the stale time with the
            # queue empty, sends its message again.
            detail = sweep_and_wait(sdk, monitor.id, queued.id, survivor)

    assert detail.status == "completed"
    assert summary_of(detail)["new"] == 1
    assert Check.objects.get(pk=queued.id).attempts == 1


# --- a big check spread over two workers -------------------------------------------


@contextlib.contextmanager
def started_worker(
    broker: str, database_url: str, tmp_path: Path, name: str
) -> Iterator[Worker]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": broker,
        "SECRET_KEY": settings.SECRET_KEY,
        "ALLOW_PRIVATE_NETWORK_TARGETS": "true",
        "PAGEWATCH_VAR_DIR": str(tmp_path / f"var-{name}"),
        "CELERY_TASK_LOG_LEVEL": "INFO",  # each task's "succeeded" line
        "PYTHONUNBUFFERED": "1",
    }
    running = Worker(env, tmp_path / f"{name}.log")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture
def two_workers(broker, database_url, tmp_path) -> Iterator[list[Worker]]:
    with (
        started_worker(broker, database_url, tmp_path, "a") as a,
        started_worker(broker, database_url, tmp_path, "b") as b,
    ):
        yield [a, b]
    wait_for(lambda: worker_sessions() == 0, "the workers' sessions to end")


def thousand_page_monitor(team: Any, site: Site, delay: float = 0.0) -> Monitor:
    """20 scrape targets of 50 URLs each on one 127.0.0.1 site."""
    monitor = Monitor.objects.create(
        team=team, name="Catalogue", schedule_cron="0 3 * * *"
    )
    for t in range(20):
        urls = [
            site.html(f"/t{t}/p{i}", f"T{t} P{i}", f"<p>Item {t}-{i}</p>", delay=delay)
            for i in range(50)
        ]
        Target.objects.create(monitor=monitor, type="scrape", urls=urls, position=t)
    return monitor


def batches_run_by(worker: Worker) -> int:
    return worker.log().count("checks.tasks.run_batch_task") // 2  # received+succeeded


def test_a_thousand_page_check_is_shared_by_two_workers_and_finishes_once(
    team, two_workers
):
    with Site() as site:
        monitor = thousand_page_monitor(team, site)
        check = dispatch.queue_manual_check(monitor)

        wait_for(
            lambda: Check.objects.get(pk=check.pk).status in FINISHED,
            "the 1,000-page check to finish",
            lambda: "\n".join(w.log()[-2000:] for w in two_workers),
        )

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED
    assert check.summary == {
        "totalPages": 1000, "same": 0, "changed": 0, "new": 1000, "removed": 0,
        "error": 0,
    }  # fmt: skip
    assert check.pages_done == 1000
    assert PageResult.objects.filter(check_run=check).count() == 1000
    assert set(check.batches.values_list("status", flat=True)) == {"done"}
    assert check.batches.count() == 1000 // settings.CHECK_BATCH_SIZE
    assert all(batches_run_by(w) >= 1 for w in two_workers)  # both took batches
    assert len(site.requests) == 1000  # every page fetched once
    monitor.refresh_from_db()
    assert monitor.current_check_id is None
    assert monitor.last_check_summary == check.summary


def test_a_worker_killed_mid_check_leaves_the_check_to_the_other(
    team, two_workers, settings
):
    settings.CHECK_STALE_AFTER_SECONDS = 8  # this process runs the sweeper
    victim, survivor = two_workers
    with Site() as site:
        monitor = thousand_page_monitor(team, site, delay=0.02)
        check = dispatch.queue_manual_check(monitor)
        wait_for(
            lambda: (
                Check.objects.get(pk=check.pk).pages_done >= 300
                and batches_run_by(victim) >= 1
            ),
            "the check to be under way on both workers",
            victim.log,
        )
        victim.kill()

        def finished() -> bool:
            runner.fail_stale_checks(timezone.now())  # what beat runs every minute
            return Check.objects.get(pk=check.pk).status in FINISHED

        wait_for(finished, "the survivor to finish the check", survivor.log)

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED
    assert check.summary["new"] == 1000 and check.summary["totalPages"] == 1000
    assert PageResult.objects.filter(check_run=check).count() == 1000
    assert not Check.objects.filter(status=Check.Status.RUNNING).exists()


# --- a crawl shared by two workers ------------------------------------------------


def test_a_crawl_runs_on_real_workers_through_the_sdk(sdk, two_workers):
    with Site() as site:
        build_site(site, posts=30)  # 39 pages, robots.txt, a sitemap
        monitor = sdk.create_monitor(
            name="Whole site",
            schedule={"cron": "0 3 * * *"},
            targets=[
                {
                    "type": "crawl",
                    "url": site.url("/"),
                    "crawlOptions": {"excludePaths": ["^/docs/b$"]},
                }
            ],
        )
        expected = {"/", "/blog/", "/docs/", "/docs/a", "/about", "/orphan"}
        expected |= {f"/blog/post-{i}" for i in range(30)}

        first = run_and_wait(sdk, monitor.id, two_workers[0])
        assert first.status == "completed", first.error
        assert {urlsplit(p.url).path for p in first.pages} == expected
        assert {p.status for p in first.pages} == {"new"}
        [crawl] = [r.model_dump(by_alias=True) for r in first.target_results]
        assert crawl["crawlId"]
        assert crawl["pagesFound"] == len(expected) and crawl["truncated"] is False

        site.html("/blog/post-3", "Post 3", "<p>Post number 3, now edited.</p>")
        site.html(
            "/blog/",
            "Blog",
            nav(*(f"/blog/post-{i}" for i in range(30) if i != 7), "/blog/post-new"),
        )
        site.remove("/blog/post-7")
        site.html("/blog/post-new", "New post", "<p>Fresh.</p>")
        second = run_and_wait(sdk, monitor.id, two_workers[1])

        statuses = {urlsplit(p.url).path: p.status for p in second.pages}
        changed = {path for path, status in statuses.items() if status == "changed"}
        assert changed == {"/blog/", "/blog/post-3"}
        assert statuses["/blog/post-7"] == "removed"
        assert statuses["/blog/post-new"] == "new"
        assert summary_of(second)["same"] == len(expected) - 3
        post3 = next(p for p in second.pages if p.url.endswith("/blog/post-3"))
        assert "+Post number 3, now edited." in post3.diff.text

        sdk.update_monitor(
            monitor.id,
            targets=[
                {"type": "crawl", "url": site.url("/"), "crawlOptions": {"limit": 5}}
            ],
        )
        third = run_and_wait(sdk, monitor.id, two_workers[0])
        assert len(third.pages) == 5
        assert summary_of(third)["removed"] == 0
        assert third.target_results[0].model_dump()["truncated"] is True


def test_a_crawl_past_its_limit_on_two_workers_is_the_same_pages_each_check(
    sdk, two_workers
):
    with Site() as site:
        monitor = sdk.create_monitor(
            name="Larger than its limit",
            schedule={"cron": "0 3 * * *"},
            targets=[
                {
                    "type": "crawl",
                    "url": site.url("/"),
                    "crawlOptions": {"limit": 20, "sitemap": "skip"},
                }
            ],
        )
        checks = []
        for order in range(3):
            sections_site(site, order)  # the sections answer in another order
            checks.append(run_and_wait(sdk, monitor.id, two_workers[order % 2]))
        first, second, third = checks

        reached = {urlsplit(p.url).path for p in first.pages}
        assert len(reached) == 20
        assert first.target_results[0].model_dump()["truncated"] is True
        for later in (second, third):
            assert {urlsplit(p.url).path for p in later.pages} == reached
            assert {p.status for p in later.pages} == {"same"}


def test_a_crawl_whose_worker_was_killed_half_way_is_finished_once_by_another(
    sdk, worker, broker, database_url, tmp_path
):
    with Site() as site:
        build_site(site, posts=50)
        for i in range(50):  # slow enough to kill the worker half-way
            site.html(
                f"/blog/post-{i}", f"Post {i}", f"<p>Post number {i}.</p>", delay=0.3
            )
        monitor = sdk.create_monitor(
            name="Whole site, cut short",
            schedule={"cron": "0 3 * * *"},
            targets=[{"type": "crawl", "url": site.url("/")}],
        )
        queued = sdk.run_monitor(monitor.id)
        wait_for(
            lambda: Check.objects.get(pk=queued.id).pages_done >= 15,
            "the crawl to be half done",
            worker.log,
        )
        worker.kill()
        assert Check.objects.get(pk=queued.id).status == Check.Status.RUNNING

        with started_worker(broker, database_url, tmp_path, "second") as second:
            detail = sweep_and_wait(sdk, monitor.id, queued.id, second)

    expected = {"/", "/blog/", "/docs/", "/docs/a", "/docs/b", "/about", "/orphan"}
    expected |= {f"/blog/post-{i}" for i in range(50)}
    assert detail.status == "completed", detail.error
    paths = [urlsplit(p.url).path for p in detail.pages]
    assert sorted(paths) == sorted(expected)  # each page once
    assert PageResult.objects.filter(check_run_id=queued.id).count() == len(expected)
    assert {p.status for p in detail.pages} == {"new"}
    [crawl] = [r.model_dump(by_alias=True) for r in detail.target_results]
    assert crawl["pagesFound"] == len(expected) and crawl["truncated"] is False
    assert sdk.get_monitor(monitor.id).current_check_id is None


def serve_sitemap(site: Site, delay: float = 0.0) -> None:
    """build_site's sitemap, answered after `delay` seconds."""
    site.page(
        "/sitemap.xml",
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/orphan')}</loc></url>"
        f"<url><loc>{site.url('/about')}</loc></url>"
        "</urlset>",
        content_type="application/xml",
        delay=delay,
    )


def test_a_crawl_whose_worker_was_killed_while_planning_is_planned_again_once(
    sdk, worker, broker, database_url, tmp_path
):
    with Site() as site:
        build_site(site, posts=10)
        serve_sitemap(site, delay=30)  # the worker is still reading it when killed
        monitor = sdk.create_monitor(
            name="Whole site, planning cut short",
            schedule={"cron": "0 3 * * *"},
            targets=[{"type": "crawl", "url": site.url("/")}],
        )
        queued = sdk.run_monitor(monitor.id)
        site.wait_for_requests(1, path="/sitemap.xml")
        worker.kill()
        check = Check.objects.get(pk=queued.id)
        assert check.status == Check.Status.RUNNING and not check.batches.exists()

        serve_sitemap(site)
        # The stale time goes by: the dead worker's last heartbeat ages.
        Check.objects.filter(pk=queued.id).update(
            heartbeat_at=check.heartbeat_at - runner.stale_running_after()
        )
        with started_worker(broker, database_url, tmp_path, "second") as second:
            detail = sweep_and_wait(sdk, monitor.id, queued.id, second)

    expected = {"/", "/blog/", "/docs/", "/docs/a", "/docs/b", "/about", "/orphan"}
    expected |= {f"/blog/post-{i}" for i in range(10)}
    assert detail.status == "completed", detail.error
    paths = [urlsplit(p.url).path for p in detail.pages]
    assert sorted(paths) == sorted(expected)  # each page once
    assert PageResult.objects.filter(check_run_id=queued.id).count() == len(expected)
    # The start page is also looked at by each planning (where it leads).
    assert all(len(site.requests_to(path)) == 1 for path in expected - {"/"})
    [crawl] = [r.model_dump(by_alias=True) for r in detail.target_results]
    assert crawl["pagesFound"] == len(expected) and crawl["truncated"] is False
    check.refresh_from_db()
    assert check.attempts == 2  # the first worker's delivery and the one sent again
    assert set(check.batches.values_list("status", flat=True)) == {"done"}
    assert sdk.get_monitor(monitor.id).current_check_id is None


# --- a webhook retried by a real worker ---------------------------------------------


def hooked_monitor(team: Any, page: str, webhook: dict[str, Any]) -> Monitor:
    """A monitor of one page with this webhook."""
    monitor = Monitor.objects.create(
        team=team, name="Hooked", schedule_cron="0 3 * * *", webhook=webhook
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=[page])
    return monitor


class DeduplicatingReceiver:
    """A receiver done the way Standard Webhooks asks: it answers 500 to the
    very first request, then handles each `webhook-id` once and acknowledges
    repeats without handling them again."""

    def __init__(self, site: Site) -> None:
        self.handled: dict[str, dict[str, Any]] = {}
        self.seen: list[tuple[str | None, str | None, str]] = []
        self.path = "/hook"
        site.handle(self.path, self._answer)
        self.url = site.url(self.path)

    def _answer(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        msg_id = request.header("webhook-id")
        payload = json.loads(request.body)
        self.seen.append(
            (msg_id, request.header("X-Firecrawl-Webhook-Id"), payload["webhookId"])
        )
        if len(self.seen) == 1:
            return 500, {}, b"down for a moment"
        if msg_id not in self.handled:
            self.handled[msg_id] = payload
        return 200, {}, b"ok"


def test_a_webhook_retried_by_a_real_worker_keeps_its_id_so_the_receiver_dedupes(
    worker, team
):
    with Site() as site:
        page = site.html("/price", "Price", "<p>$10</p>")
        receiver = DeduplicatingReceiver(site)
        monitor = hooked_monitor(
            team, page, {"url": receiver.url, "events": ["monitor.check.completed"]}
        )
        check = dispatch.queue_manual_check(monitor)
        delivery = wait_for(
            lambda: (
                Delivery.objects.filter(check_run=check, attempts=1)
                .exclude(status="sending")
                .first()
            ),
            "the first attempt",
            worker.log,
        )
        assert delivery.status == "pending" and delivery.last_status_code == 500
        # Due now rather than in a minute; the sweeper queues it for the worker.
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        assert sweep.sweep() == 1
        delivered = Delivery.objects.filter(pk=delivery.pk, status="delivered")
        wait_for(
            delivered.exists,
            "the retry to be delivered",
            worker.log,
        )

    ids = {str(delivery.webhook_id)}
    assert len(receiver.seen) == 2
    assert {header for header, _, _ in receiver.seen} == ids
    assert {firecrawl for _, firecrawl, _ in receiver.seen} == ids
    assert {body for _, _, body in receiver.seen} == ids
    assert list(receiver.handled) == list(ids)  # handled once


# --- webhook order on real workers ------------------------------------------------


class GatheringReceiver:
    """A receiver that gathers a check's pages until the check completes: it
    takes its time over each page (stores it, say), so the page's worker is
    still waiting for the answer when the check finishes."""

    PAGE_SECONDS = 2.0

    def __init__(self, site: Site) -> None:
        self.log: list[tuple[str, str, float]] = []  # (what, event, when)
        self.path = "/hook"
        site.handle(self.path, self._answer)
        self.url = site.url(self.path)

    def _answer(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        event = json.loads(request.body)["type"]
        self.log.append(("arrived", event, time.monotonic()))
        if event == "monitor.page":
            time.sleep(self.PAGE_SECONDS)
            self.log.append(("answered", event, time.monotonic()))
        return 200, {}, b"ok"

    def when(self, what: str, event: str) -> float:
        return next(t for w, e, t in self.log if (w, e) == (what, event))


def test_on_two_workers_the_check_completed_event_comes_after_its_pages_were_answered(
    two_workers, team
):
    with Site() as site:
        page = site.html("/price", "Price", "<p>$10</p>")
        receiver = GatheringReceiver(site)
        monitor = hooked_monitor(team, page, {"url": receiver.url})
        check = dispatch.queue_manual_check(monitor)
        sent = Delivery.objects.filter(check_run=check, status="delivered")
        wait_for(
            lambda: sent.count() == 2,
            "the page and completed events to be delivered",
            lambda: two_workers[0].log() + two_workers[1].log(),
        )

    completed = receiver.when("arrived", "monitor.check.completed")
    assert completed >= receiver.when("answered", "monitor.page")


# --- a large import ------------------------------------------------------------------


def test_a_large_import_runs_on_a_real_worker_and_reports_progress(
    live_server, api_key, worker, team
):
    headers = {"Authorization": f"Bearer {api_key}"}
    addresses = "".join(f"https://shop-{i:02d}.example.com/\n" for i in range(40))
    response = httpx.post(
        f"{live_server.url}/v2/import",
        headers=headers,
        data={"source": "csv", "dryRun": "false"},
        files={"file": ("list.txt", addresses.encode())},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["data"]["id"]

    def done() -> Any:
        answer = httpx.get(
            f"{live_server.url}/v2/import/{run_id}", headers=headers, timeout=10
        ).json()["data"]
        return answer if answer["status"] == "done" else None

    report = wait_for(done, f"import {run_id} to finish", worker.log)
    assert report["created"] == 40 and report["done"] == report["total"] == 40
    assert Monitor.objects.filter(team=team).count() == 40


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            " AND datname = current_database() AND wait_event_type = 'Lock'",
            [WORKER_APPLICATION],
        )
        return cursor.fetchone()[0]


def test_an_import_whose_worker_was_killed_goes_on_from_where_it_was_on_another(
    live_server, api_key, broker, database_url, tmp_path, team
):
    headers = {"Authorization": f"Bearer {api_key}"}
    addresses = "".join(f"https://shop-{i:03d}.example.com/\n" for i in range(400))
    with started_worker(broker, database_url, tmp_path, "first") as first:
        response = httpx.post(
            f"{live_server.url}/v2/import",
            headers=headers,
            data={"source": "csv", "dryRun": "false"},
            files={"file": ("list.txt", addresses.encode())},
            timeout=60,
        )
        assert response.status_code == 202, response.text
        run_id = response.json()["data"]["id"]
        wait_for(
            lambda: ImportRun.objects.get(pk=run_id).made, "a first batch", first.log
        )
        # The run's row held here: the worker stops at its next batch's record,
        # that batch's monitors made but not committed, and is killed there.
        with transaction.atomic():
            ImportRun.objects.select_for_update().get(pk=run_id)
            wait_for(_waiting_on_a_lock, "the worker to wait", first.log)
            first.kill()
    wait_for(lambda: worker_sessions() == 0, "the killed worker's sessions to end")
    run = ImportRun.objects.get(pk=run_id)
    assert run.status == ImportRun.Status.RUNNING
    made = len(run.made)
    assert 0 < made < 400 and Monitor.objects.filter(team=team).count() == made

    with started_worker(broker, database_url, tmp_path, "second") as second:
        # The sweep, once the run has not moved for STALLED_AFTER (Redis would
        # hand the killed worker's message out again only after an hour).
        later = timezone.now() + ImportRun.STALLED_AFTER + timedelta(minutes=1)
        assert importing.go_on_with_stalled(later) == 1

        def done() -> Any:
            answer = httpx.get(
                f"{live_server.url}/v2/import/{run_id}", headers=headers, timeout=10
            ).json()["data"]
            return answer if answer["status"] in ("done", "failed") else None

        report = wait_for(done, f"import {run_id} to finish", second.log)

    assert report["status"] == "done", report
    assert report["created"] == 400 and report["done"] == report["total"] == 400
    assert Monitor.objects.filter(team=team).count() == 400  # none made twice
    assert ImportRun.objects.get(pk=run_id).attempts == 2


def test_a_large_preview_is_made_on_a_real_worker_while_the_page_waits(
    client, worker, team, django_user_model, monkeypatch
):
    # Judging in this (the web) process would fail: only the worker may judge.
    monkeypatch.setattr(plan, "prepare", lambda *args, **kwargs: 1 / 0)
    person = django_user_model.objects.create_user("pia", "pia@example.com", "x")
    Membership.objects.create(team=team, user=person)
    client.force_login(person)
    addresses = "".join(f"https://shop-{i:03d}.example.com/\n" for i in range(150))
    upload = SimpleUploadedFile("list.txt", addresses.encode())
    response = client.post("/import/", {"source": "csv", "file": upload})
    assert response.status_code == 302
    run = ImportRun.objects.get(team=team)

    def previewed() -> bool:
        run.refresh_from_db()
        return run.status == ImportRun.Status.PREVIEWED

    wait_for(previewed, f"the preview of import {run.pk}", worker.log)
    page = client.get(response["Location"]).content.decode()
    assert "150 monitors will be created" in page
    assert not Monitor.objects.filter(team=team).exists()


def test_a_service_is_read_for_its_preview_on_a_real_worker_then_its_key_forgotten(
    client, worker, team, django_user_model, monkeypatch
):
    # Reading the service in this (the web) process would fail: only the
    # worker may ask it anything.
    monkeypatch.setattr(remote.Reading, "aget", lambda *args, **kwargs: 1 / 0)
    person = django_user_model.objects.create_user("pia", "pia@example.com", "x")
    Membership.objects.create(team=team, user=person)
    client.force_login(person)
    with Site() as site:
        _many_watches(site, 120)
        body = {"source": "changedetection", "url": site.base_url, "api_key": CD_KEY}
        response = client.post("/import/", body)
        assert response.status_code == 302
        run = ImportRun.objects.get(team=team)

        def previewed() -> bool:
            run.refresh_from_db()
            return run.status == ImportRun.Status.PREVIEWED

        wait_for(previewed, f"the preview of import {run.pk}", worker.log)
        assert len(site.requests) == 2 + 2 * 120
    assert (run.remote_url, run.remote_key) == ("", "")
    page = client.get(response["Location"]).content.decode()
    assert "120 monitors will be created" in page
    assert CD_KEY not in page


def test_a_service_read_after_a_long_wait_in_the_queue_keeps_its_key_through_a_sweep(
    client, worker, team, django_user_model
):
    """The preview waited sixteen minutes for a worker (every one busy); the
    sweep that comes while the worker reads judges it by the worker's last
    sign of life, not the upload: the preview and its key are left to it."""
    person = django_user_model.objects.create_user("pia", "pia@example.com", "x")
    Membership.objects.create(team=team, user=person)
    client.force_login(person)
    swept = threading.Event()
    with Site() as site:
        _many_watches(site, 60)
        watch = {"url": "https://site30.example.com/", "title": "Site 30"}

        def held(request: Request) -> Any:
            swept.wait(DEADLINE_SECONDS)  # until the sweep has been
            return 200, {"content-type": "application/json"}, json.dumps(watch).encode()

        site.handle("/api/v1/watch/w30", held)
        body = {"source": "changedetection", "url": site.base_url, "api_key": CD_KEY}
        response = client.post("/import/", body)
        run = ImportRun.objects.get(team=team)
        try:
            wait_for(
                lambda: ImportRun.objects.get(pk=run.pk).done == 25,
                "the worker to read its first watches",
                worker.log,
            )
            ImportRun.objects.filter(pk=run.pk).update(
                created_at=timezone.now() - timedelta(minutes=16)
            )
            fail_stale_checks_task()
            during = ImportRun.objects.get(pk=run.pk)
        finally:
            swept.set()

        def previewed() -> bool:
            run.refresh_from_db()
            return run.status == ImportRun.Status.PREVIEWED

        wait_for(previewed, f"the preview of import {run.pk}", worker.log)
    assert during.status == ImportRun.Status.PREPARING
    assert during.remote_key == CD_KEY and during.remote_url == site.base_url
    assert (run.remote_url, run.remote_key) == ("", "")
    page = client.get(response["Location"]).content.decode()
    assert "60 monitors will be created" in page


# --- a receiver that hangs, on the notifications worker ------------------------------


class HangingReceiver:
    """Accepts every connection and answers none until closed, as a receiver
    whose server is stuck does."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=32)
        self.held: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/hook"
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.held.append(self._socket.accept()[0])

    def close(self) -> None:
        self._socket.close()
        for held in self.held:
            held.close()


def notify_worker_options() -> list[str]:
    """The queue, pool and concurrency Procfile.large starts its notify worker
    with (the concurrency's default, as the shell would expand it)."""
    entries = {
        e.name: e.command for e in run.read_procfile(BASE_DIR / "Procfile.large")
    }
    command = re.sub(r"\$\{\w+:-(\w+)\}", r"\1", entries["notify"])
    return [
        option
        for option in command.split()
        if option.startswith(("--queues=", "--pool=", "--concurrency="))
    ]


def test_on_the_notify_worker_receivers_that_hang_hold_up_no_other_channel(
    broker, database_url, tmp_path, team
):
    env = worker_env(broker, database_url, tmp_path)
    notify = Worker(env, tmp_path / "notify.log", *notify_worker_options())
    hanging = HangingReceiver()
    try:
        notify.wait_ready()
        with Site() as site:
            answered = site.url("/hook")
            site.handle("/hook", lambda request: (200, {}, b"ok"))
            stuck = [
                Channel.objects.create(
                    team=team, name=f"Stuck {n}", kind="webhook",
                    settings={"url": hanging.url},
                )
                for n in range(3)
            ]  # fmt: skip
            for channel in stuck:
                channels.create(channel, None, None, messages.test(channel.name))
            wait_for(
                lambda: len(hanging.held) == len(stuck),
                "the stuck receivers to be called",
                notify.log,
            )
            working = Channel.objects.create(
                team=team, name="Working", kind="webhook", settings={"url": answered}
            )
            sent = channels.create(working, None, None, messages.test(working.name))
            wait_for(
                Delivery.objects.filter(pk=sent.pk, status="delivered").exists,
                "the working channel's message to be delivered",
                notify.log,
            )
        # Delivered while every stuck receiver still held its request.
        assert Delivery.objects.filter(channel__in=stuck, status="sending").count() == 3
    finally:
        hanging.close()
        notify.stop()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")


# --- a team e-mail whose worker is killed in the middle ---------------------------


def test_a_team_e_mail_killed_mid_send_goes_to_nobody_twice_but_the_one_in_flight(
    broker, database_url, tmp_path, team, django_user_model
):
    server = MailServer()
    env = worker_env(broker, database_url, tmp_path) | {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(server.port),
    }
    addresses = [f"{name}@acme.test" for name in ("ines", "mia", "noah", "zoe")]
    for address in addresses:
        user = django_user_model.objects.create_user(address, address)
        Membership.objects.create(team=team, user=user)
    channel = Channel.objects.create(
        team=team, name="Everyone", kind="team_email",
        settings={"recipients": sorted(
            django_user_model.objects.filter(email__in=addresses)
            .values_list("pk", flat=True)
        )},
    )  # fmt: skip
    victim = Worker(env, tmp_path / "victim.log")
    survivor = None
    try:
        victim.wait_ready()
        server.answers = 2
        delivery = channels.create(channel, None, None, messages.test(channel.name))
        wait_for(server.silent.is_set, "the third e-mail to be sent", victim.log)
        victim.kill()

        delivery.refresh_from_db()
        assert delivery.status == "sending"  # nothing recorded the attempt
        assert server.taken == addresses[:3]

        # The claim's lease ran out; the sweeper gives the row to another worker.
        server.answers = None
        survivor = Worker(env, tmp_path / "survivor.log")
        survivor.wait_ready()
        Delivery.objects.filter(pk=delivery.pk).update(
            claimed_at=timezone.now() - drain.CLAIM_LEASE - timedelta(seconds=1)
        )
        assert sweep.sweep() == 1
        wait_for(
            Delivery.objects.filter(pk=delivery.pk, status="delivered").exists,
            "the retry to be delivered",
            survivor.log,
        )
    finally:
        for worker in (victim, survivor):
            if worker is not None:
                worker.stop()
        server.close()
        wait_for(lambda: worker_sessions() == 0, "the workers' sessions to end")

    # Noah's e-mail was taken as the worker died: at least once, that one alone.
    assert server.taken == [*addresses[:3], *addresses[2:]]
