"""Beat's scheduler, saying a broker outage once.

Celery's own logs a full traceback and stack for every entry it cannot send,
so a Redis outage of a few minutes filled the log with hundreds of them. Here
the first failure is one line naming the reason, the entries that fail while
the broker stays down are counted quietly, and the return is one line more.
Nothing is lost meanwhile: which monitors are due lives in the database, and
the next tick after the outage dispatches them.

Exactly one scheduler sends: each holds a lease in the database
(Heartbeat.hold_schedule), renewed every few seconds. A second one started
by mistake (two `beat`s, or `make run` on two machines against one database)
finds it held, says so in one line, sends nothing while the first runs, and
takes over within LEASE of the first one stopping. While the database cannot
say who holds it, every scheduler sends: the tasks claim their work in the
database, so a doubled tick is waste, never double work."""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from datetime import timedelta
from typing import Any

from celery.beat import PersistentScheduler, ScheduleEntry
from django.db import close_old_connections

from checks import outages

logger = logging.getLogger("celery.beat")

# A holder that has not renewed its lease this long is gone; it renews every
# RENEW_EVERY seconds, well inside, and a standby asks again as often.
LEASE = timedelta(seconds=30)
RENEW_EVERY = 5.0


# Drawn once per process: two containers that share a host name
# (`network_mode: host`, a fixed `hostname:`) each run beat as pid 1, and
# without it they would take each other for the lease's one holder and both
# send.
RUN = uuid.uuid4().hex[:8]


def identity() -> str:
    """The name this scheduler holds the lease by: the machine and pid say
    which one it is in the log, RUN tells apart two that share both."""
    return f"celery beat on {socket.gethostname()}, pid {os.getpid()} (run {RUN})"


class Scheduler(PersistentScheduler):
    unsent = 0  # entries not sent since the broker went away
    standing_by = False  # another scheduler holds the lease
    lease_unknown = False  # the database could not say who holds it
    renewed = -RENEW_EVERY  # time.monotonic() of the last lease renewal

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if not self.holds_schedule():
            return RENEW_EVERY
        return min(super().tick(*args, **kwargs), RENEW_EVERY)

    def close(self) -> None:
        super().close()
        if not self.standing_by:
            try:
                from checks.models import Heartbeat

                Heartbeat.release_schedule(identity())
            except Exception as exc:  # noqa: BLE001 - it runs out by itself
                logger.info("The scheduler's lease was not handed back: %s", exc)

    def holds_schedule(self) -> bool:
        """Whether this scheduler sends; asks the database every RENEW_EVERY
        seconds (a tick comes several times a second when many are due)."""
        if time.monotonic() - self.renewed < RENEW_EVERY:
            return not self.standing_by
        self.renewed = time.monotonic()
        # Imported here: the scheduler class is loaded before Django is set up.
        from checks.models import Heartbeat

        me = identity()
        try:
            # This thread's connection lives as long as the scheduler: one
            # broken by a database restart is dropped here, as Django does
            # between requests.
            close_old_connections()
            lease = Heartbeat.hold_schedule(me, LEASE)
        except Exception as exc:  # noqa: BLE001 - sending is the safe default
            if not self.lease_unknown:
                outages.warn(
                    logger,
                    exc,
                    "The scheduler cannot ask the database whether another "
                    "scheduler runs, so it sends its tasks meanwhile",
                )
            self.lease_unknown = True
            self.standing_by = False
            return True
        self.lease_unknown = False
        was_standing_by, self.standing_by = self.standing_by, lease.holder != me
        if self.standing_by and not was_standing_by:
            logger.warning(
                "Another scheduler is running against this database (%s); this "
                "one (%s) stands by and sends nothing while it runs. Run exactly "
                "one scheduler: stop one of them. If the other was just stopped, "
                "this one takes over within %d s.",
                lease.holder,
                me,
                LEASE.total_seconds(),
            )
        elif was_standing_by and not self.standing_by:
            logger.warning("The other scheduler stopped; this one (%s) sends now.", me)
        return not self.standing_by

    def apply_entry(self, entry: ScheduleEntry, producer: Any = None) -> None:
        logger.info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)
        try:
            self.apply_async(entry, producer=producer, advance=False)
        except Exception as exc:  # noqa: BLE001 - any failure to send is an outage
            if not self.unsent:
                logger.error(
                    "The broker cannot be reached, so scheduled tasks are not sent "
                    "until it is back: %s",
                    exc,
                )
            self.unsent += 1
            return
        if self.unsent:
            logger.warning(
                "The broker is reachable again; %d scheduled sends were skipped "
                "meanwhile and the schedule goes on.",
                self.unsent,
            )
            self.unsent = 0
