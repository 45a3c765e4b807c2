"""Celery tasks: thin wrappers that take ids, re-read the database and call plain
code (checks.runner, checks.dispatch, checks.retention). Unit tests call those
functions directly; real workers run these in the integration tests.

Reliability settings are global (config/settings.py): acks_late, reject on worker
lost, prefetch 1, JSON only. A redelivered task is therefore normal and safe:
attempt counters in the database bound it, and claiming is conditional. Task
names are spelled out: other modules queue them by name (checks.runner,
checks.dispatch), so the engine never imports this module.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from checks import dispatch, retention, runner, shared_clock, storage
from checks.models import Heartbeat
from checks.outages import skipped_while_away
from monitors.models import ImportRun
from monitors.moving import importing

logger = logging.getLogger(__name__)

# A check's or batch's own limit comes from settings (CHECK_TIME_LIMIT_SECONDS);
# it must stay below the Redis visibility timeout so a live task is never
# redelivered.
CHECK_TIME_LIMIT = int(settings.CELERY_TASK_TIME_LIMIT)
CHECK_SOFT_TIME_LIMIT = int(settings.CELERY_TASK_SOFT_TIME_LIMIT)
# Periodic work is short; a stuck tick must not hold a worker slot for long.
PERIODIC_TIME_LIMIT = 120
PERIODIC_SOFT_TIME_LIMIT = 100


def _look_again_in() -> int:
    return int(runner.stale_running_after().total_seconds())


@shared_task(
    bind=True,
    name=runner.RUN_CHECK_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=CHECK_TIME_LIMIT,
    soft_time_limit=CHECK_SOFT_TIME_LIMIT,
    max_retries=runner.MAX_ATTEMPTS,
)
def run_check_task(self, check_id: str) -> None:  # noqa: ANN001 - Celery's Task
    check = runner.begin_delivery(check_id)
    if check is None:
        return  # gone, finished, or given up after too many deliveries
    if runner.claim(check):
        runner.execute(check, fan_out=True)
        runner.log_where_it_stands(check)
        return
    if runner.is_busy(check) and self.request.retries < self.max_retries:
        # Redelivered right after its worker died (the dead worker's heartbeat
        # is still fresh): look again once a live worker would have beaten.
        # A check still busy after that many looks is alive elsewhere: this
        # message was a second one (sent again by the sweeper, say).
        raise self.retry(countdown=_look_again_in())


@shared_task(
    bind=True,
    name=runner.RUN_BATCH_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=CHECK_TIME_LIMIT,
    soft_time_limit=CHECK_SOFT_TIME_LIMIT,
    max_retries=runner.MAX_ATTEMPTS,
)
def run_batch_task(self, batch_id: int) -> None:  # noqa: ANN001 - Celery's Task
    if not runner.run_batch(batch_id):
        # Another worker holds it (or held it until it died just now).
        raise self.retry(countdown=_look_again_in())


@shared_task(time_limit=PERIODIC_TIME_LIMIT, soft_time_limit=PERIODIC_SOFT_TIME_LIMIT)
def dispatch_due_monitors_task(follow_up: bool = False) -> int:
    # A tick that hit its cap queues one follow-up at once (expires after one
    # beat interval); a follow-up never queues another (dispatch.dispatch_tick).
    now = shared_clock.now()
    with skipped_while_away("A dispatch tick"):
        if not follow_up:
            Heartbeat.beat(Heartbeat.SCHEDULER, now)  # /healthz: the scheduler ticks
        return dispatch.dispatch_tick(now, may_follow_up=not follow_up)
    return 0


@shared_task(time_limit=PERIODIC_TIME_LIMIT, soft_time_limit=PERIODIC_SOFT_TIME_LIMIT)
def worker_heartbeat_task() -> None:
    # Queued on the check queue, so only a worker serving it records this.
    with skipped_while_away("A worker heartbeat"):
        Heartbeat.beat(Heartbeat.WORKER, shared_clock.now())


@shared_task(time_limit=PERIODIC_TIME_LIMIT, soft_time_limit=PERIODIC_SOFT_TIME_LIMIT)
def fail_stale_checks_task() -> int:
    now = shared_clock.now()
    with skipped_while_away("The stale-check sweep"):
        failed = runner.fail_stale_checks(now)
        # Previews are swept here too: a worker killed while reading a service
        # leaves its API key in the row, and no key may outlive the stale time.
        ImportRun.objects.give_up_stale_previews(now)
        # Imports whose worker is gone go on from the monitors made, on the
        # next worker; out of attempts, they end saying how far they got.
        importing.go_on_with_stalled(now)
        return failed
    return 0


@shared_task(time_limit=900, soft_time_limit=870)
def purge_expired_task() -> int:
    # Each purged batch is its own transaction: what went stays gone, and the
    # next hourly run takes the rest.
    with skipped_while_away("The retention purge"):
        return retention.purge_expired(timezone.now()).checks
    return 0


@shared_task(time_limit=600, soft_time_limit=570)
def measure_team_storage_task() -> int:
    # On the check queue, as the purge: a big team's history takes a while to
    # read, and the upkeep queue's ticks must not wait behind it. Each team's
    # figure is kept as soon as it is measured, so a run cut short loses none.
    with skipped_while_away("Measuring the teams' storage"):
        return storage.measure_stale_teams(timezone.now())
    return 0
