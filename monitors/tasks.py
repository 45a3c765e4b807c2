"""Celery tasks of the monitors app: thin wrappers that take ids, re-read the
database and call plain code (monitors.moving.importing). What they stamp is
on the database's clock (checks.shared_clock), as the sweep that judges an
import or a preview stalled reads the time."""

from __future__ import annotations

import logging
from contextlib import suppress

from celery import Task, shared_task
from django.conf import settings

from checks import outages, shared_clock
from monitors.models import ImportRun
from monitors.moving import importing

logger = logging.getLogger(__name__)


# A retry after the database went away comes this long after: a restart or
# a failover is over by then, and MAX_ATTEMPTS of them stay well inside
# ImportRun.STALLED_AFTER.
IMPORT_RETRY_AFTER = 60


@shared_task(
    name=importing.IMPORT_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=int(settings.CELERY_TASK_TIME_LIMIT),
    soft_time_limit=int(settings.CELERY_TASK_SOFT_TIME_LIMIT),
    max_retries=ImportRun.MAX_ATTEMPTS - 1,
)
def import_monitors_task(self: Task, run_id: str, resume: bool = False) -> None:
    # Redelivered: the worker that had it was stopped or killed mid-import
    # (Ctrl-C past the wait, out of memory), leaving the run "running"; or
    # retried after the database went away; or sent to go on with a run its
    # request or its worker left part way (`resume`). Each goes on from `made`.
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    again = redelivered or bool(self.request.retries) or resume
    run = None
    try:
        run = ImportRun.objects.filter(pk=run_id).select_related("team").first()
        if run is None:
            return
        if not run.claim(again=again, now=shared_clock.now()):
            if again and run.out_of_attempts:
                why = ImportRun.WORKER_LOST.format(run.attempts)
                run.stop_part_way(why, shared_clock.now())
            return  # gone, finished, or taken by another delivery of it
        report = importing.execute_run(run, shared_clock.now())
    except ImportRun.Superseded:
        # Taken over by a later attempt (sent again by the stale sweep, or a
        # second copy of this message): the batch under way was rolled back
        # and that attempt makes it.
        logger.info("Import %s: taken over by a later attempt; this one stops", run_id)
        return
    except Exception as exc:
        if outages.database_away(exc):
            _pause(self, run, run_id, exc)
            return
        # Each monitor is its own transaction: what was made stays made, and
        # the run says where it stopped rather than spinning for ever.
        logger.exception("Import %s stopped", run_id)
        if run is not None:
            # Shown on the Import page: the exception's own words are for the log.
            run.fail(
                f"The import stopped after {run.done} of {run.total} watches "
                "because of an error in Pagewatch (its log has the details).",
                shared_clock.now(),
            )
        return
    logger.info("Import %s: %s monitors created", run_id, report.created)


def _pause(task: Task, run: ImportRun | None, run_id: str, exc: Exception) -> None:
    """The database went away mid-import. Each batch of monitors is one
    transaction with its record in `made`: the next attempt goes on from
    there, and the last one ends the run saying how far it got."""
    retry = task.request.retries < task.max_retries
    logger.warning(
        "Import %s paused: the database is not reachable; %s: %s",
        run_id,
        f"it goes on in {IMPORT_RETRY_AFTER} s"
        if retry
        else "it ends, stopped part way (by the stale sweep if it is still away)",
        outages.reason(exc),
    )
    if retry:
        raise task.retry(countdown=IMPORT_RETRY_AFTER) from None
    if run is not None:
        with suppress(*outages.DATABASE_ERRORS):
            run.stop_part_way(ImportRun.DATABASE_LOST, shared_clock.now())


# Reading a service by its address stops itself after
# remote.READ_BUDGET_SECONDS; judging the largest source (5,000 watches) then
# takes seconds, not minutes. A preview past this is stuck, and
# ImportRun.PREVIEW_GIVEN_UP_AFTER, counted from the same start, is beyond it.
PREVIEW_TIME_LIMIT = 12 * 60


@shared_task(
    name=importing.PREVIEW_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=PREVIEW_TIME_LIMIT,
    soft_time_limit=PREVIEW_TIME_LIMIT - 15,
)
def preview_import_task(run_id: str) -> None:
    run = (
        ImportRun.objects.filter(pk=run_id, status=ImportRun.Status.PREPARING)
        .select_related("team")
        .first()
    )
    now = shared_clock.now()
    # Gone, given up, made by another delivery of this message, past its
    # give-up time (its page, if open, would say so now), or one delivery too
    # many after its workers died (start_preview_task fails it).
    if (
        run is None
        or run.give_up_preview_if_stale(now)
        or not run.start_preview_task(now)
    ):
        return
    try:
        importing.build_preview(run)
    except Exception as exc:
        if outages.database_away(exc):
            # The database went away: nothing can be written, so the run stays
            # preparing and its page gives it up in time (PREVIEW_GIVEN_UP_AFTER).
            logger.warning(
                "Preview of import %s stopped: the database is not reachable: %s",
                run_id,
                outages.reason(exc),
            )
            return
        # Reading and judging create nothing (a service's key is already
        # forgotten): the run only has to say it stopped.
        logger.exception("Preview of import %s stopped", run_id)
        run.fail_preview(importing.PREVIEW_FAILED, shared_clock.now())
