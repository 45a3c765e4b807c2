"""The Celery app: one worker pool for checks, one beat process as the scheduler.

Settings come from Django settings under the CELERY_ namespace (broker, acks_late,
time limits, the periodic tasks of CELERY_BEAT_SCHEDULE...: see config/settings.py).
Beat is the *only* scheduler, and all it does is enqueue a few small periodic
tasks; which monitors are due lives in the database (Monitor.next_run_at), so beat
restarts or two beats running by mistake cannot lose or double a check
(checks.dispatch claims each slot in the database).
"""

from __future__ import annotations

import gc
import logging
import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery runs Django's system checks when a worker starts, and they import
# every URL, view and serializer of the web (memory in each worker that
# never serves a page). They run where they belong: `manage.py migrate`,
# which `make run` and every deploy run first, and `manage.py check`.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("pagewatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every installed app's tasks.py, and the notification outbox's own
# (checks/notify/tasks.py).
app.autodiscover_tasks()
app.autodiscover_tasks(["checks.notify"])


@signals.worker_init.connect
def _share_memory_with_pool_processes(**_: object) -> None:
    """Objects the worker made before forking its pool stay shared with the
    pool's processes: frozen out of the garbage collector (gc.freeze, made
    for pre-fork servers), a child's collections never write to their pages,
    so the kernel never has to copy them."""
    os.register_at_fork(before=gc.freeze)


class WithoutCancelNotice(logging.Filter):
    """Drops Celery 5's notice, logged on every broker connection loss, that
    cancelling running tasks will become the default in 6.0: our choice is
    explicit (CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS), and
    Celery's logging setup turns every such warning back on, so a warnings
    filter cannot silence it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "worker_cancel_long_running_tasks_on_connection_loss" not in message
