"""The database or the broker away for a moment (a restart, a failover, a
network blip), as the periodic upkeep sees it.

Each upkeep task (dispatch tick, heartbeats, sweepers, digests, retention)
mends from the database what an earlier run left, so a run that meets an
outage has nothing to save: it says so in one line and the next run after
the outage does the work. A traceback per run, every few seconds for as
long as the outage lasts, buried the rest of the log and told the operator
nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

logger = logging.getLogger(__name__)

DATABASE_AWAY = (OperationalError, InterfaceError)
# What kombu raises once its publish retries are spent, what redis-py raises
# below it, and the socket's own errors.
BROKER_AWAY = (
    BrokerOperationalError,
    redis.ConnectionError,
    redis.TimeoutError,
    ConnectionError,
    TimeoutError,
)


def away(exc: BaseException) -> str | None:
    """Which service `exc` says is out of reach, in words, or None when it
    says something else (a bug, a wrong query)."""
    if isinstance(exc, DATABASE_AWAY):
        return "the database"
    if isinstance(exc, BROKER_AWAY):
        return "the broker"
    return None


def reason(exc: BaseException) -> str:
    """The error's own words on one line (psycopg's run over several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def traceback_of(exc: BaseException) -> BaseException | None:
    """What to log `exc` with (exc_info): nothing for an outage, whose
    reason says it all in one line; the exception itself otherwise."""
    return None if away(exc) else exc


@contextmanager
def skipped_while_away(what: str) -> Iterator[None]:
    """Run the block; when the database or the broker is out of reach, log
    one line naming it (no traceback) instead of raising, so the task ends
    normally and the next run picks up."""
    try:
        yield
    except (*DATABASE_AWAY, *BROKER_AWAY) as exc:
        logger.warning(
            "%s was skipped: %s is not reachable; the next run after it is back "
            "does the work: %s",
            what,
            away(exc),
            reason(exc),
        )
