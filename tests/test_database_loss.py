"""PostgreSQL dropping a worker's connections (a failover, a restart, an
administrator's pg_terminate_backend): the worker reconnects by itself and
the check it was on is finished, not left running.

The shared PostgreSQL cannot be restarted here, so the worker's sessions are
ended from the server side, which is what the worker sees of a restart.
Needs PostgreSQL and Redis like tests/test_worker_integration.py."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from checks import dispatch, runner
from checks.models import Check, Delivery, Heartbeat, PageResult
from checks.notify import channels, drain, kinds, messages, sweep
from monitors.models import Channel, Membership, Monitor, Target
from tests import test_worker_integration
from tests.sites import Site
from tests.smtp import MailServer
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
            # This run's workers only: ending every server-wide session of
            # that name failed a check of another run on the same server.
            " WHERE application_name = %s AND datname = current_database()",
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


class SlowReceiver:
    """A webhook receiver that takes its time before answering 200, so the
    worker is waiting on it when its database sessions end."""

    def __init__(self, site: Site) -> None:
        self.ids: list[str | None] = []
        self.url = site.handle("/hook", self._answer)

    def _answer(self, request) -> tuple[int, dict[str, str], bytes]:
        self.ids.append(request.header("webhook-id"))
        if len(self.ids) == 1:
            time.sleep(2)
        return 200, {}, b"ok"


def test_a_webhook_whose_worker_lost_the_database_mid_send_is_delivered(
    team, tmp_path, broker, database_url
):
    env = worker_env(broker, database_url, tmp_path)
    worker = Worker(env, tmp_path / "worker.log", *POOLS["threads"])
    try:
        worker.wait_ready()
        with Site() as site:
            receiver = SlowReceiver(site)
            monitor = one_page_monitor(team, site.html("/p", "P", "<p>one</p>"))
            monitor.webhook = {
                "url": receiver.url,
                "events": ["monitor.check.completed"],
            }
            monitor.save()
            check = finished(dispatch.queue_manual_check(monitor), worker)
            wait_for(lambda: receiver.ids, "the webhook to arrive", worker.log)
            assert end_worker_sessions() >= 1
            delivery = Delivery.objects.get(check_run=check)
            wait_for(
                lambda: (
                    Delivery.objects.filter(pk=delivery.pk)
                    .exclude(status="sending")
                    .exists()
                    or "lost its database connection" in worker.log()
                ),
                "the send to end",
                worker.log,
            )
            # The claim's lease is past (the sweeper's every minute does the rest).
            Delivery.objects.filter(pk=delivery.pk, status="sending").update(
                claimed_at=timezone.now() - drain.CLAIM_LEASE - timedelta(seconds=1)
            )
            sweep.sweep()
            wait_for(
                Delivery.objects.filter(pk=delivery.pk, status="delivered").exists,
                "the webhook to be delivered",
                worker.log,
            )
    finally:
        worker.stop()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")

    assert set(receiver.ids) == {str(delivery.webhook_id)}
    # A routine reconnect: one plain line, no stack trace for the operator.
    assert "Traceback" not in worker.log()


def test_a_team_e_mail_whose_worker_lost_the_database_mid_send_reaches_everyone(
    team, django_user_model, tmp_path, broker, database_url
):
    addresses = ["ada@acme.test", "bo@acme.test", "cy@acme.test"]
    for address in addresses:
        user = django_user_model.objects.create_user(address.split("@")[0], address)
        Membership.objects.create(team=team, user=user)
    channel = Channel.objects.create(
        team=team,
        name="Everyone",
        kind="team_email",
        settings=kinds.kind_for("team_email").clean_for(
            team, {"recipients": addresses}
        ),
        events=list(Channel.DEFAULT_EVENTS),
    )
    server = MailServer()
    env = worker_env(broker, database_url, tmp_path) | {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(server.port),
    }
    worker = Worker(env, tmp_path / "worker.log", *POOLS["threads"])
    try:
        worker.wait_ready()
        # The first e-mail is taken and its answer held while the worker's
        # sessions end: writing down who got it is what meets the drop.
        server.answering.clear()
        delivery = channels.create(channel, None, None, messages.test(channel.name))
        wait_for(lambda: server.taken, "the first e-mail", worker.log)
        assert end_worker_sessions() >= 1
        server.answering.set()
        wait_for(
            lambda: "lost its database connection" in worker.log(),
            "the drain to lose its connection",
            worker.log,
        )
        first = list(server.taken)
        delivery.refresh_from_db()
        assert delivery.status == "sending"
        assert delivery.done_with == []

        # The claim's lease is past (the sweeper's every minute does the rest).
        Delivery.objects.filter(pk=delivery.pk).update(
            claimed_at=timezone.now() - drain.CLAIM_LEASE - timedelta(seconds=1)
        )
        sweep.sweep()
        wait_for(
            Delivery.objects.filter(pk=delivery.pk, status="delivered").exists,
            "the e-mails to be delivered",
            worker.log,
        )
    finally:
        worker.stop()
        server.close()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")

    # Nobody else was mailed while nothing could be written down; the one
    # e-mail in flight went again (at least once), and everyone got theirs.
    assert len(first) == 1
    assert sorted(server.taken) == sorted([*addresses, *first])
    assert "Traceback" not in worker.log()


class DatabaseDoor:
    """A TCP door on 127.0.0.1 in front of PostgreSQL, for a worker to reach
    it through: shut, the database is away for that worker (its sessions
    cut, new ones refused) as in a restart that takes a while; opened again
    on the same port, it is back. The shared server itself cannot be stopped
    here."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.listener: socket.socket | None = None

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def shut(self) -> None:
        if self.listener is not None:
            # shutdown() first: close() alone leaves a socket that a thread
            # waits in accept() on listening.
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)
            self.listener.close()
            self.listener = None
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # shut
            server = socket.create_connection(self.upstream)
            self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), daemon=True
                ).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@pytest.mark.slow  # a few beat intervals
def test_the_scheduler_and_upkeep_ride_out_a_database_outage_in_plain_lines(
    team, tmp_path, broker, database_url
):
    db = connection.settings_dict
    door = DatabaseDoor(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432))
    door.open()
    through_door = database_url.replace(
        f"@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/",
        f"@127.0.0.1:{door.port}/",
    )
    assert through_door != database_url
    env = worker_env(broker, through_door, tmp_path)
    env["CELERY_TASK_LOG_LEVEL"] = "INFO"
    # The Procfile's worker: threads, the scheduler in a thread of it.
    worker = Worker(env, tmp_path / "worker.log", *POOLS["threads"])
    try:
        worker.wait_ready()
        wait_for(
            lambda: Heartbeat.SCHEDULER in Heartbeat.last_seen(),
            "a dispatch tick",
            worker.log,
        )
        door.shut()
        wait_for(
            lambda: "A dispatch tick was skipped" in worker.log(),
            "a dispatch tick to meet the outage",
            worker.log,
        )
        back = timezone.now()
        door.open()
        monitor = one_page_monitor(team, "http://127.0.0.1:9/")
        Monitor.objects.filter(pk=monitor.pk).update(next_run_at=back)
        wait_for(
            lambda: Heartbeat.last_seen()[Heartbeat.SCHEDULER] > back,
            "a dispatch tick after the outage",
            worker.log,
        )
        wait_for(
            Check.objects.filter(monitor=monitor).exists,
            "the due monitor's check",
            worker.log,
        )
    finally:
        worker.stop()
        door.shut()
        wait_for(lambda: worker_sessions() == 0, "the worker's sessions to end")

    log = worker.log()
    assert "the database is not reachable" in log
    assert "Traceback" not in log, log[-6000:]
