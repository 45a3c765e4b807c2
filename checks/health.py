"""Is the service healthy? The parts an operator's probe asks about: the
database, the broker (Redis or the embedded Valkey), a worker serving the
check queue, and the scheduler's dispatch tick. Each answers for itself, so
the answer names the part that is down (GET /healthz)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.db import DatabaseError, connection

from checks import runner
from checks.errors import wait_words
from checks.models import Check, CheckBatch, Heartbeat

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Part:
    name: str
    problem: str = ""  # plain words; "" when the part is fine

    @property
    def ok(self) -> bool:
        return not self.problem


def service_health(now: datetime) -> list[Part]:
    database = _database()
    return [database, _broker(), *_heartbeats(now, database.ok)]


def service_warnings(now: datetime) -> list[str]:
    """What is wrong without anything being down, in plain words: a second
    scheduler standing by (config.beat) is harmless, but one of the two
    should go; browser pages nobody takes wait until their checks end.
    Empty when the database cannot say."""
    within = timedelta(seconds=settings.HEALTH_STALE_AFTER_SECONDS)
    warnings = []
    try:
        two = Heartbeat.second_scheduler(within)
        no_browser = _browser_pages_untaken(now)
    except DatabaseError:
        return []  # the database part says so already
    if two is not None:
        # Which machines: in the standby's log, not on this open page.
        warnings.append(
            "Two schedulers are running against this database. The second "
            "stands by and sends nothing, but only one should run: stop one of "
            "them (the scheduler's log names both)."
        )
    if no_browser:
        warnings.append(
            "Pages that need a web browser are waiting and no worker that runs "
            "one is taking them: start a browser worker. Their checks end "
            f"after {wait_words(CheckBatch.REQUEUE_AFTER)} otherwise."
        )
    return warnings


def _browser_pages_untaken(now: datetime) -> bool:
    """Browser pages waiting past the stale time with no browser worker
    about (runner.browser_worker_seen)."""
    if not runner.browser_queue():
        return False
    waiting = CheckBatch.objects.filter(
        status=CheckBatch.Status.PENDING,
        uses_browser=True,
        heartbeat_at__lt=now - runner.stale_running_after(),
        check_run__status=Check.Status.RUNNING,
    )
    return waiting.exists() and not runner.browser_worker_seen(now)


def _database() -> Part:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        # The reason, not a traceback: a probe asks every few seconds, and
        # forty lines each buried the rest of the log during an outage.
        logger.warning("Health: the database is unreachable: %s", exc)
        return Part("database", "unreachable")
    return Part("database")


def _broker() -> Part:
    error = broker_error()
    if error is not None:
        logger.warning("Health: the broker is unreachable: %s", error)
        return Part("broker", "unreachable")
    return Part("broker")


def broker_error() -> Exception | None:
    """Why the broker does not answer a ping (within its socket time-outs),
    or None when it does."""
    client = redis.Redis.from_url(
        settings.REDIS_LOCATION, **settings.REDIS_SOCKET_TIMEOUTS
    )
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        return exc
    finally:
        client.close()
    return None


# What each heartbeat shows, in the words /healthz uses when it is missing.
_SIGNS = {
    Heartbeat.WORKER: "no worker serving the check queue",
    Heartbeat.SCHEDULER: "no dispatch tick from the scheduler",
}


def _heartbeats(now: datetime, database_ok: bool) -> list[Part]:
    if not database_ok:
        return [Part(name, "unknown: the database is down") for name in _SIGNS]
    stale = timedelta(seconds=settings.HEALTH_STALE_AFTER_SECONDS)
    seen = Heartbeat.last_seen()
    parts = []
    for name, missing in _SIGNS.items():
        at = seen.get(name)
        if at is None:
            parts.append(Part(name, f"{missing} yet"))
        elif now - at > stale:
            ago = int((now - at).total_seconds())
            parts.append(Part(name, f"{missing} for {ago} s"))
        else:
            parts.append(Part(name))
    return parts
