"""Beat's scheduler, saying a broker outage once.

Celery's own logs a full traceback and stack for every entry it cannot send,
so a Redis outage of a few minutes filled the log with hundreds of them. Here
the first failure is one line naming the reason, the entries that fail while
the broker stays down are counted quietly, and the return is one line more.
Nothing is lost meanwhile: which monitors are due lives in the database, and
the next tick after the outage dispatches them."""

from __future__ import annotations

import logging
from typing import Any

from celery.beat import PersistentScheduler, ScheduleEntry

logger = logging.getLogger("celery.beat")


class Scheduler(PersistentScheduler):
    unsent = 0  # entries not sent since the broker went away

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
