"""The one clock every machine agrees on: the database server's.

Liveness is judged across machines: a worker writes a heartbeat, another
machine's sweeper or worker decides from it whether that worker is gone. A
worker whose own clock is minutes behind wrote heartbeats that already looked
stale, so its live batches were taken from it and run again until its check
was given up; one minutes ahead looked alive for minutes after it died.

So workers time heartbeats, claims and sweeps (of checks, batches and the
notification outbox's claims) by the database's clock: each
worker process measures how far its clock is from the database's (at most
every MEASURE_EVERY, one query) and adds the difference. A difference beyond
TOLERANCE is said in the log once, with what to do. Only workers do this
(config.celery turns it on); other processes read their own clock. With
SQLite every process is on the database's machine, so there is nothing to
measure.

The rows a worker writes that people read beside a check's own times (its
pages, its messages, the check's created and updated times) are stamped by
the same clock: their fields default to `now`."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

logger = logging.getLogger(__name__)

MEASURE_EVERY = 300.0  # seconds, on the monotonic clock
# Below this the difference is left alone: a query's own round trip, and
# the drift between two measurements, are well under it.
TOLERANCE = timedelta(seconds=2)

_enabled = False
_offset = timedelta(0)
_measured_at: float | None = None


def follow_the_database() -> None:
    """Time this process's heartbeats by the database's clock (workers)."""
    global _enabled, _measured_at
    _enabled, _measured_at = True, None


def now() -> datetime:
    """This machine's time, corrected to the database server's clock in a
    worker (see the module's description)."""
    if _enabled:
        _measure_if_due()
    return timezone.now() + _offset


def _measure_if_due() -> None:
    global _offset, _measured_at
    if _measured_at is not None and time.monotonic() - _measured_at < MEASURE_EVERY:
        return
    _measured_at = time.monotonic()
    if connection.vendor != "postgresql":
        return
    try:
        before = timezone.now()
        # In a savepoint: the time is asked inside transactions (a check's
        # batches are stamped in one), and a failed query would otherwise
        # leave the caller's transaction aborted.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            theirs = cursor.fetchone()[0]
        ours = before + (timezone.now() - before) / 2
    except DatabaseError:
        return  # asked again on the next heartbeat after MEASURE_EVERY
    offset = theirs - ours
    if abs(offset) < TOLERANCE:
        offset = timedelta(0)
    if offset and abs(offset - _offset) >= TOLERANCE:
        logger.warning(
            "This machine's clock is %d s %s the database server's; this worker "
            "times its heartbeats by the database's clock meanwhile. Set up "
            "time synchronisation (NTP, chrony or systemd-timesyncd) on it.",
            round(abs(offset.total_seconds())),
            "behind" if offset > timedelta(0) else "ahead of",
        )
    _offset = offset
