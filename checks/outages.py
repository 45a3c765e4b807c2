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
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

logger = logging.getLogger(__name__)

# What Django raises when the database may be away; database_away() says
# which of these really are (an OperationalError is also a deadlock, a
# statement timeout or a full disk: faults that must keep their traceback).
DATABASE_ERRORS = (OperationalError, InterfaceError)
# SQLSTATEs of a connection that is gone: class 08 (connection exception)
# and an administrator's or a crash's shutdown, or a server not yet up.
CONNECTION_GONE_SQLSTATES = ("57P01", "57P02", "57P03")
# SQLite's "unable to open database file"; "database is locked" (SQLITE_BUSY)
# is contention, not an outage.
SQLITE_AWAY_CODES = (sqlite3.SQLITE_CANTOPEN,)
# What kombu raises once its publish retries are spent, what redis-py raises
# below it, and the socket's own errors.
BROKER_AWAY = (
    BrokerOperationalError,
    redis.ConnectionError,
    redis.TimeoutError,
    ConnectionError,
    TimeoutError,
)


def database_away(exc: BaseException) -> bool:
    """Whether `exc` says the connection to the database is gone (refused,
    lost, shut down), rather than that a query failed on a live one."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    if isinstance(cause, sqlite3.Error):
        return getattr(cause, "sqlite_errorcode", None) in SQLITE_AWAY_CODES
    # psycopg's error (Django raises its own from it): a connection that
    # failed or broke carries no SQLSTATE, or one of class 08. Without a
    # cause there is nothing to tell it by: counted as away, as before.
    sqlstate = getattr(cause, "sqlstate", None)
    return (
        sqlstate is None
        or sqlstate.startswith("08")
        or sqlstate in CONNECTION_GONE_SQLSTATES
    )


def away(exc: BaseException) -> str | None:
    """Which service `exc` says is out of reach, in words, or None when it
    says something else (a bug, a wrong query, a deadlock)."""
    if database_away(exc):
        return "the database"
    if isinstance(exc, BROKER_AWAY):
        return "the broker"
    return None


def reason(exc: BaseException) -> str:
    """The error's own words on one line (psycopg's run over several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def warn(log: logging.Logger, exc: BaseException, message: str, *args: object) -> None:
    """Log `message` (with `args`) and the reason `exc` gives after a colon:
    one line for an outage, whose reason says it all; with its traceback
    otherwise. For a call to the broker that upkeep may skip (the next run
    or the sweeper does it)."""
    log.warning(
        f"{message}: %s",
        *args,
        reason(exc),
        exc_info=None if away(exc) else exc,
        stacklevel=2,  # the caller's line, not this one
    )


@contextmanager
def skipped_while_away(what: str) -> Iterator[None]:
    """Run the block; when the database or the broker is out of reach, log
    one line naming it (no traceback) instead of raising, so the task ends
    normally and the next run picks up."""
    try:
        yield
    except (*DATABASE_ERRORS, *BROKER_AWAY) as exc:
        if isinstance(exc, DATABASE_ERRORS) and not database_away(exc):
            raise  # a fault on a live database: its traceback is wanted
        logger.warning(
            "%s was skipped: %s is not reachable; the next run after it is back "
            "does the work: %s",
            what,
            away(exc),
            reason(exc),
        )
