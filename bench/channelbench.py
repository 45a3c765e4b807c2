"""Channels: what telling people costs once a check has found a change.

Deliveries are sent where users send them: by the notifications worker of
Procfile.large (`celery -A config worker --queues=notifications
--concurrency=2`, NOTIFY_WORKERS's default), started here against the
bench's PostgreSQL and Redis. The bench only uses the product's seams: it
makes the team, monitors and channels as models, writes a running check's
page results as the runner writes them, and ends the check with
`checks.runner.finish`, which records the channel deliveries in the outbox and
queues them after commit.

Every receiver is a real HTTP/1.1 server on 127.0.0.1, in threads of this
process, that notes when each request arrived: webhooks, a fake Slack Web API
(`chat.postMessage`, through SLACK_API_URL and SLACK_BOT_TOKEN), Slack
incoming webhooks and Apprise's `json://`. A hanging receiver accepts
connections and never answers.

* Fan-out: one check with a meaningful change, its monitor linked to 10
  channels of four kinds; time from calling `runner.finish` to the last
  delivery received. Baseline: the same for a monitor linked to one webhook
  channel; the two alternate.
* Drain: 1,000 deliveries queued (100 checks finished, each to 10 webhook
  channels) while the worker does not consume, then the consumer turned on:
  wall time until the 1,000th arrived, per delivery. Baseline: a plain
  `httpx.Client` posting the same body to the same receiver, one after the
  other. A profile of the same drain function (`drain.drain` of one check's
  deliveries, the task's body) in this process says where a delivery's time
  goes.
* Hanging channel: checks ended one after the other, each waiting for its
  monitor's 9 channels (all but the hanging one); p95 of their delivery
  latency with and without a 10th channel whose receiver hangs.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import httpx

from bench import procs
from bench.env import BenchEnv, BenchError

if TYPE_CHECKING:
    from checks.models import Check
    from monitors.models import Channel, Monitor, Team

NOTIFY_CONCURRENCY = 16  # Procfile.large's notify worker: NOTIFY_WORKERS=16
# The worker's pool as Procfile.large starts it; for an A/B,
# BENCH_NOTIFY_POOL=prefork:2 runs the same rows with two processes.
NOTIFY_POOL = os.environ.get("BENCH_NOTIFY_POOL", "threads")
# The fan-out's channels: kind -> how many.
MIX = {"webhook": 3, "slack": 2, "slack_webhook": 2, "apprise": 3}
DRAIN_CHECKS = 100
DRAIN_CHANNELS = 10
PROFILED = 200  # deliveries drained in this process under cProfile
HANG_CHECKS = 12
WAIT_TIMEOUT = 120.0
DRAIN_TIMEOUT = 900.0  # the drain, on a machine busy with other work
SLACK_TOKEN = "xoxb-bench-token"  # noqa: S105 (the fake Slack's)


# --- Receivers -----------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # A web server's listen backlog (nginx: 511), not socketserver's 5: with
    # a sender opening several connections at once, a backlog of 5 drops
    # SYNs and each dropped one costs a second's retransmission.
    request_queue_size = 128


class Receivers:
    """One threaded HTTP/1.1 server on 127.0.0.1 for every receiver: each
    request's path and arrival (time.monotonic) are kept."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[str, float]] = []
        self._lock = threading.Condition()
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # As web servers do: without it, the head and the body go out as
            # two segments and the client's delayed ACK adds 40 ms per request.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                arrived = time.monotonic()
                if self.path.startswith("/slack/api/"):
                    ok = self.headers.get("Authorization") == f"Bearer {SLACK_TOKEN}"
                    answer = (
                        {"ok": True, "ts": "1700000000.000100"}
                        if ok
                        else {
                            "ok": False,
                            "error": "invalid_auth",
                        }
                    )
                    body = json.dumps(answer).encode()
                else:
                    body = b'{"ok": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with receivers._lock:
                    receivers.arrivals.append((self.path, arrived))
                    receivers._lock.notify_all()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def mark(self) -> int:
        with self._lock:
            return len(self.arrivals)

    def wait(
        self, since: int, count: int, prefix: str = "/", timeout: float = WAIT_TIMEOUT
    ) -> list[float]:
        """Arrival times of the first `count` requests under `prefix` after
        mark `since`."""
        return [t for _, t in self.wait_paths(since, count, prefix, timeout)]

    def wait_paths(
        self, since: int, count: int, prefix: str = "/", timeout: float = WAIT_TIMEOUT
    ) -> list[tuple[str, float]]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = [a for a in self.arrivals[since:] if a[0].startswith(prefix)]
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(
                        f"channels: {len(found)} of {count} deliveries to {prefix}"
                        f" arrived within {timeout:g} s"
                    )
                self._lock.wait(left)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Hanging:
    """Accepts connections and never answers (keeps them open until stopped)."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.origin = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self._socket.accept()
                self._held.append(connection)

    def stop(self) -> None:
        self._socket.close()
        for connection in self._held:
            connection.close()


# --- Monitors, channels and checks ------------------------------------------------


def _team() -> Team:
    from monitors.models import Team

    team, _ = Team.objects.get_or_create(
        slug="bench-channels", defaults={"name": "Bench channels"}
    )
    return team


def _channel(team: Team, name: str, kind: str, settings: dict[str, str]) -> Channel:
    from checks.notify.kinds import kind_for
    from monitors.models import Channel

    found = kind_for(kind)
    assert found is not None
    # A Slack incoming webhook is refused anywhere but at Slack's own host;
    # the bench's receiver stands in for it on this machine, as it would if
    # the channel had been saved before that rule.
    if kind != "slack_webhook":
        settings = found.clean(settings)
    return Channel.objects.create(
        team=team,
        name=name,
        kind=kind,
        settings=settings,
        events=list(Channel.DEFAULT_EVENTS),
    )


def _settings(kind: str, receivers: Receivers, n: int) -> dict[str, str]:
    if kind == "webhook":
        return {"url": f"{receivers.origin}/hook/{n}"}
    if kind == "slack":
        return {"channelId": f"C{n:08d}", "channelName": f"pricing-{n}"}
    if kind == "slack_webhook":
        return {"url": f"{receivers.origin}/slack-hook/{n}"}
    return {"url": f"json://{receivers.host}/apprise/{n}"}


def mixed_channels(team: Team, receivers: Receivers, prefix: str) -> list[Channel]:
    made, n = [], 0
    for kind, count in MIX.items():
        for _ in range(count):
            n += 1
            settings = _settings(kind, receivers, n)
            made.append(_channel(team, f"{prefix} {kind} {n}", kind, settings))
    return made


def monitor_with(team: Team, name: str, channels: list[Channel]) -> Monitor:
    from monitors.models import Monitor, MonitorChannel

    monitor = Monitor.objects.create(team=team, name=name, schedule_cron="0 * * * *")
    for channel in channels:
        MonitorChannel.objects.create(monitor=monitor, channel=channel)
    return monitor


def _diff(n: int) -> dict[str, Any]:
    text = (
        "--- previous.md\n+++ current.md\n@@ -1,3 +1,3 @@\n # Plans\n"
        f"-Pro ${19 + n}/mo, billed yearly\n+Pro ${24 + n}/mo, billed yearly\n"
        " Cancel any time.\n"
    )
    return {"text": text, "json": {"files": [{"from": "previous.md", "chunks": []}]}}


def running_check(monitor: Monitor, n: int) -> Check:
    """A running check whose pages were recorded as the runner records them:
    two changed pages (judging off, so both are meaningful) and one the same."""
    from django.utils import timezone

    from checks.models import Check, PageResult

    check = Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.RUNNING,
        started_at=timezone.now(),
    )
    target = uuid.uuid4()
    for i, status in enumerate(("changed", "changed", "same")):
        page = PageResult(
            check_run=check,
            target_id=target,
            url=f"https://shop.example.com/pricing/{i}",
            status=status,
            status_code=200,
            previous_scrape_id=uuid.uuid4(),
            current_scrape_id=uuid.uuid4(),
        )
        if status == "changed":
            page.diff = _diff(n + i)
        page.save()
    return check


def finish(check: Check) -> float:
    """End the check as the runner does; returns when it was called."""
    from checks import runner

    started = time.monotonic()
    if runner.finish(check.pk) is None:
        raise BenchError(f"channels: check {check.pk} was not running")
    return started


# --- The worker --------------------------------------------------------------------


@contextlib.contextmanager
def notify_worker(env: BenchEnv) -> Iterator[Any]:
    from bench import workerbench as wb

    pool, _, processes = NOTIFY_POOL.partition(":")
    concurrency = int(processes or NOTIFY_CONCURRENCY)
    with wb.Worker(env, concurrency, "notifications", pool) as worker:
        yield worker


def worker_command() -> str:
    pool, _, processes = NOTIFY_POOL.partition(":")
    return (
        "celery -A config worker --queues=notifications"
        + (f" --pool={pool}" if pool != "prefork" else "")
        + f" --concurrency={processes or NOTIFY_CONCURRENCY}"
    )


def _consume(worker: Any, on: bool) -> None:
    from config.celery import app

    control = app.control.add_consumer if on else app.control.cancel_consumer
    replies = control("notifications", destination=[worker.name], reply=True)
    if not replies:
        raise BenchError(f"channels: the worker did not answer ({on=})")


def _purge() -> None:
    from config.celery import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("notifications")


# --- Measurements --------------------------------------------------------------------


@dataclass
class ChannelResult:
    fan_out: list[float] = field(default_factory=list)  # seconds per check
    alone: list[float] = field(default_factory=list)
    fan_out_finish: list[float] = field(default_factory=list)  # runner.finish
    alone_finish: list[float] = field(default_factory=list)
    fan_out_first: list[float] = field(default_factory=list)
    # Latencies by kind: of the fan-out, and of each monitor of the hang test.
    fan_out_kinds: dict[str, list[float]] = field(default_factory=dict)
    hang_kinds: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    drain_s: float = 0.0
    drain_cpu_s: float = 0.0
    drained: int = 0
    post_s: float = 0.0  # the plain httpx baseline, all posts
    post_cpu_s: float = 0.0  # its CPU (this thread: the client's side only)
    posts: int = 0
    without_hang: list[float] = field(default_factory=list)  # latencies
    with_hang: list[float] = field(default_factory=list)
    profile_s: float = 0.0
    plain_wall_s: float = 0.0  # the unprofiled half, wall and CPU
    plain_cpu_s: float = 0.0
    profiled: int = 0
    plain_count: int = 0
    profile_rows: list[tuple[str, float]] = field(default_factory=list)
    profile_text: str = ""
    hang_attempts: dict[str, int] = field(default_factory=dict)

    @property
    def drain_per_delivery(self) -> float:
        return self.drain_s / max(self.drained, 1)

    @property
    def post_per_request(self) -> float:
        return self.post_s / max(self.posts, 1)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


KIND_OF_PATH = (
    ("/slack/api/", "slack"),
    ("/slack-hook/", "slack_webhook"),
    ("/apprise/", "apprise"),
    ("/", "webhook"),
)


def kind_of(path: str) -> str:
    return next(kind for prefix, kind in KIND_OF_PATH if path.startswith(prefix))


def _one_check(
    monitor: Monitor,
    receivers: Receivers,
    expect: int,
    n: int,
    by_kind: dict[str, list[float]] | None = None,
) -> tuple[float, float, list[float]]:
    check = running_check(monitor, n)
    mark = receivers.mark()
    started = finish(check)
    finished = time.monotonic()
    arrived = receivers.wait_paths(mark, expect)
    if by_kind is not None:
        for path, moment in arrived:
            by_kind.setdefault(kind_of(path), []).append(moment - started)
    return started, finished, [moment for _, moment in arrived]


def bench_fan_out(
    team: Team, receivers: Receivers, reps: int, result: ChannelResult
) -> None:
    fan = monitor_with(team, "Fan-out", mixed_channels(team, receivers, "Fan-out"))
    hook = _channel(team, "Alone", "webhook", {"url": f"{receivers.origin}/hook/alone"})
    alone = monitor_with(team, "Alone", [hook])
    channels = sum(MIX.values())
    for n in range(2):  # warm-up: every child imports and connects once
        _one_check(fan, receivers, channels, n)
        _one_check(alone, receivers, 1, n)
    for rep in range(reps):
        # Alternate the order, so a drift in the machine's load hits both.
        for which in ("alone", "fan") if rep % 2 == 0 else ("fan", "alone"):
            if which == "fan":
                started, done, arrived = _one_check(
                    fan, receivers, channels, rep, result.fan_out_kinds
                )
                result.fan_out.append(max(arrived) - started)
                result.fan_out_first.append(min(arrived) - started)
                result.fan_out_finish.append(done - started)
            else:
                started, done, arrived = _one_check(alone, receivers, 1, rep)
                result.alone.append(arrived[0] - started)
                result.alone_finish.append(done - started)


def bench_hanging(team: Team, receivers: Receivers, result: ChannelResult) -> None:
    from django.db.models import Count

    from checks.models import Delivery

    hanging = Hanging()
    try:
        others = mixed_channels(team, receivers, "Others")[: sum(MIX.values()) - 1]
        stuck = _channel(team, "Hangs", "webhook", {"url": f"{hanging.origin}/hook"})
        plain = monitor_with(team, "Without the hanging channel", others)
        with_stuck = monitor_with(team, "With the hanging channel", [*others, stuck])
        for monitor, latencies in (
            (plain, result.without_hang),
            (with_stuck, result.with_hang),
        ):
            kinds = result.hang_kinds.setdefault(monitor.name, {})
            for n in range(HANG_CHECKS):
                started, _, arrived = _one_check(
                    monitor, receivers, len(others), n, kinds
                )
                latencies.extend(t - started for t in arrived)
        # The hanging channel's attempts end with the time-out; wait for them
        # so the next measurement starts with an idle worker.
        deadline = time.monotonic() + WAIT_TIMEOUT
        while (
            Delivery.objects.filter(
                channel=stuck, status=Delivery.Status.SENDING
            ).exists()
            or Delivery.objects.filter(channel=stuck, attempts=0).exists()
        ):
            if time.monotonic() > deadline:
                raise BenchError("channels: the hanging channel's attempts never ended")
            time.sleep(0.2)
        result.hang_attempts = dict(
            Delivery.objects.filter(channel=stuck)
            .order_by()
            .values_list("status")
            .annotate(n=Count("id"))
        )
    finally:
        hanging.stop()


def _queue_drain(team: Team, receivers: Receivers, checks: int, label: str) -> int:
    hooks = [
        _channel(team, f"{label} {n}", "webhook", {"url": f"{receivers.origin}/d/{n}"})
        for n in range(DRAIN_CHANNELS)
    ]
    monitor = monitor_with(team, label, hooks)
    for n in range(checks):
        finish(running_check(monitor, n))
    return checks * DRAIN_CHANNELS


def bench_drain(
    team: Team, receivers: Receivers, worker: Any, result: ChannelResult
) -> None:
    from checks.models import Delivery

    _consume(worker, on=False)
    try:
        queued = _queue_drain(team, receivers, DRAIN_CHECKS, "Drain")
        pending = Delivery.objects.filter(
            channel__name__startswith="Drain ", status=Delivery.Status.PENDING
        ).count()
        if pending != queued:
            raise BenchError(f"channels: {pending} of {queued} deliveries pending")
        body = Delivery.objects.filter(channel__name__startswith="Drain ").first()
        assert body is not None
        mark = receivers.mark()
        cpu = procs.tree_cpu_seconds(worker.pid)
        started = time.monotonic()
    finally:
        _consume(worker, on=True)
    arrived = receivers.wait(mark, queued, "/d/", DRAIN_TIMEOUT)
    result.drain_s = max(arrived) - started
    result.drain_cpu_s = procs.tree_cpu_seconds(worker.pid) - cpu
    result.drained = queued

    # The baseline: the same body to the same receiver, one plain client.
    payload = body.body.encode()
    headers = {"Content-Type": "application/json"}
    with httpx.Client(trust_env=False) as client:
        client.post(f"{receivers.origin}/d/warm", content=payload, headers=headers)
        started, cpu = time.monotonic(), time.thread_time()
        for n in range(queued):
            client.post(
                f"{receivers.origin}/d/{n % DRAIN_CHANNELS}",
                content=payload,
                headers=headers,
            ).raise_for_status()
        result.post_s = time.monotonic() - started
        result.post_cpu_s = time.thread_time() - cpu
    result.posts = queued


def profile_drain(
    team: Team, receivers: Receivers, worker: Any, result: ChannelResult
) -> None:
    """The worker's task body, `drain.drain(ids)` of one check's deliveries
    (what `drain_task` gets when a check finishes), over PROFILED queued
    deliveries in this process, under cProfile; the worker does not consume
    meanwhile, and finds them delivered afterwards."""
    from checks.models import Delivery
    from checks.notify import drain

    _consume(worker, on=False)
    try:
        _queue_drain(team, receivers, PROFILED // DRAIN_CHANNELS, "Profiled")
        rows = Delivery.objects.filter(channel__name__startswith="Profiled ")
        batches: dict[int, list[int]] = {}
        for pk, check_id in rows.order_by("pk").values_list("pk", "check_run_id"):
            batches.setdefault(check_id, []).append(pk)
        ids = list(batches.values())
        # Half the batches timed plainly (wall and the process's CPU: the
        # sends run in the drain's own threads), the other half under cProfile.
        half = len(ids) // 2
        wall, cpu = time.monotonic(), time.process_time()
        for batch in ids[:half]:
            drain.drain(batch)
        result.plain_wall_s = time.monotonic() - wall
        result.plain_cpu_s = time.process_time() - cpu
        # The process's CPU clock: wall time on a shared machine mostly
        # measures waiting for a CPU. It includes the receiver's threads, and
        # the drain's event loop thread, which cProfile does not follow: its
        # CPU shows as the drain waiting for outcomes.
        profiler = cProfile.Profile(time.process_time)
        started = time.monotonic()
        profiler.enable()
        for batch in ids[half:]:
            drain.drain(batch)
        profiler.disable()
        result.profile_s = time.monotonic() - started
        # Their messages are still queued: the rows are delivered, so the
        # worker would only spend time finding that out.
        _purge()
        result.profiled = sum(len(batch) for batch in ids[half:])
        result.plain_count = sum(len(batch) for batch in ids[:half])
    finally:
        _consume(worker, on=True)
    stats = pstats.Stats(profiler)
    result.profile_rows = _profile_rows(stats, result.profiled)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
    result.profile_text = out.getvalue()


# (label, file suffix, function name): cumulative time per delivery.
DRAIN = "checks/notify/drain.py"
PROFILE_PARTS = (
    ("drain(), the whole task body", DRAIN, "drain"),
    ("  the claim (lock, UPDATE, read with relations)", DRAIN, "claim"),
    ("  prepare each row (signing, message)", DRAIN, "_prepare"),
    ("  sending: waiting for the outcomes (event loop thread)", DRAIN, "_outcomes"),
    ("  recording the outcomes (record_many)", DRAIN, "record_many"),
    ("the database driver (execute)", "django/db/backends/utils.py", "execute"),
)  # fmt: skip


def _profile_rows(stats: pstats.Stats, count: int) -> list[tuple[str, float]]:
    table = stats.stats  # type: ignore[attr-defined]
    rows = []
    for label, suffix, name in PROFILE_PARTS:
        # The largest match: nested functions of one name (asyncio.run and
        # Runner.run) would count twice in a sum.
        total = max(
            (
                cumulative
                for (path, _, function), (_, _, _, cumulative, _) in table.items()
                if function == name and path.endswith(suffix)
            ),
            default=0.0,
        )
        rows.append((label, total / max(count, 1)))
    return rows


def measure(env: BenchEnv, reps: int) -> ChannelResult:
    from django.conf import settings

    receivers = Receivers()
    slack_url = f"{receivers.origin}/slack/api/"
    # The worker reads them from its environment; this process from settings.
    os.environ |= {"SLACK_BOT_TOKEN": SLACK_TOKEN, "SLACK_API_URL": slack_url}
    settings.SLACK_BOT_TOKEN, settings.SLACK_API_URL = SLACK_TOKEN, slack_url
    result = ChannelResult()
    try:
        team = _team()
        with notify_worker(env) as worker:
            bench_fan_out(team, receivers, max(reps, 1) * 5, result)
            bench_drain(team, receivers, worker, result)
            profile_drain(team, receivers, worker, result)
            bench_hanging(team, receivers, result)
    finally:
        receivers.stop()
    return result


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
