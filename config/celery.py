"""The Celery app: worker pools for checks, one beat as the scheduler (a
process of its own, or a thread of the worker: `--beat-thread`).

Settings come from Django settings under the CELERY_ namespace (broker, acks_late,
time limits, the periodic tasks of CELERY_BEAT_SCHEDULE...: see config/settings.py).
Beat is the *only* scheduler, and all it does is enqueue a few small periodic
tasks; which monitors are due lives in the database (Monitor.next_run_at), so beat
restarts or two beats running by mistake cannot lose or double a check
(checks.dispatch claims each slot in the database).
"""

from __future__ import annotations

import gc
import inspect
import logging
import os
from typing import Any

from celery import Celery, Task, bootsteps, signals
from celery.beat import EmbeddedService
from celery.exceptions import ImproperlyConfigured
from click import Option
from django.db import close_old_connections

from config.env import env_log_level

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery runs Django's system checks when a worker starts, and they import
# every URL, view and serializer of the web (memory in each worker that
# never serves a page). They run where they belong: `manage.py migrate`,
# which `make run` and every deploy run first, and `manage.py check`.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

logger = logging.getLogger(__name__)


class PagewatchTask(Task):
    """Every task: a message whose arguments this code's task does not take
    (sent by a machine running another Pagewatch version, during a rolling
    deploy, say) is dropped with one plain line, not a TypeError traceback.
    Nothing is lost with it: checks, batches, deliveries and imports live in
    the database, and the sweepers send what is left undone again."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            inspect.signature(self.run).bind(*args, **kwargs)
        except TypeError as exc:
            logger.error(
                "Task %s[%s] was dropped: its message was sent by another version "
                "of Pagewatch (%s). Run one version on every machine; the sweeper "
                "sends work left undone again.",
                self.name,
                self.request.id,
                exc,
            )
            return None
        return super().__call__(*args, **kwargs)


app = Celery("pagewatch", task_cls=PagewatchTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every installed app's tasks.py, and the notification outbox's own
# (checks/notify/tasks.py).
app.autodiscover_tasks()
app.autodiscover_tasks(["checks.notify"])


class BeatThread(bootsteps.StartStopStep):
    """`celery worker --beat-thread`: the scheduler in a thread of the
    worker's own process (Celery's `EmbeddedService(thread=True)`), instead
    of the process `--beat` forks, which holds a copy of everything the
    worker imported. Only with a pool that does not fork: a child forked
    while the scheduler's thread holds a lock (logging, its schedule file)
    would inherit the lock held forever."""

    label = "Beat thread"
    conditional = True

    def __init__(self, worker: Any, beat_thread: bool = False, **kwargs: Any) -> None:
        self.enabled = beat_thread
        super().__init__(worker, **kwargs)

    def create(self, worker: Any) -> Any:
        pool = worker.pool_cls
        module = pool if isinstance(pool, str) else pool.__module__
        if module.rpartition(".")[2] not in ("thread", "threads", "solo"):
            raise ImproperlyConfigured(
                "--beat-thread runs the scheduler in the worker's process, which"
                " needs --pool=threads or --pool=solo; with processes, use --beat"
            )
        return EmbeddedService(
            worker.app,
            thread=True,
            schedule_filename=worker.schedule_filename,
            scheduler_cls=worker.scheduler,
        )


app.user_options["worker"].add(
    Option(
        ["--beat-thread"],
        is_flag=True,
        help="Run the scheduler (beat) in a thread of this worker (threads pool).",
    )
)
app.steps["worker"].add(BeatThread)


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(sender: Any, **_: object) -> None:
    """Around each task, what Django does around each request: a connection
    older than DATABASE_CONN_MAX_AGE, or broken, is closed, and the next one
    used is checked first. Celery's own closing of every connection is off
    (CELERY_DB_REUSE_MAX). Not for a task run eagerly: it runs inside its
    caller's transaction."""
    if not getattr(sender.request, "is_eager", False):
        close_old_connections()


@signals.task_prerun.connect
def _links_under_the_sub_path(**_: object) -> None:
    """reverse() starts at the sub-path (FORCE_SCRIPT_NAME) that django.setup()
    gave the thread it ran in; a threads pool's threads start without it, and
    the links in e-mails and webhooks would leave it out."""
    from django.conf import settings
    from django.urls import set_script_prefix

    set_script_prefix(settings.FORCE_SCRIPT_NAME or "/")


@signals.worker_init.connect
def _follow_the_database_clock(**_: object) -> None:
    """Heartbeats, claims and sweeps timed by the database's clock, so a
    worker whose machine's clock is off neither has its live work taken
    from it nor looks alive once gone (checks.shared_clock). Set before the
    pool forks: its processes inherit it."""
    from checks import shared_clock

    shared_clock.follow_the_database()


@signals.worker_init.connect
def _share_memory_with_pool_processes(**_: object) -> None:
    """Objects the worker made before forking its pool stay shared with the
    pool's processes: frozen out of the garbage collector (gc.freeze, made
    for pre-fork servers), a child's collections never write to their pages,
    so the kernel never has to copy them."""
    os.register_at_fork(before=gc.freeze)


@signals.after_setup_logger.connect
def _root_level_from_log_level(logger: logging.Logger, **_: object) -> None:
    """LOG_LEVEL, when set, is the root level of workers and beat too. Celery
    sets the root logger's level from `--loglevel` (INFO in the Procfiles and
    the systemd units) after Django's logging configuration, so LOG_LEVEL=DEBUG
    or WARNING changed the web's log alone. Without LOG_LEVEL, `--loglevel`
    stands."""
    if os.environ.get("LOG_LEVEL", "").strip():
        logger.setLevel(env_log_level("LOG_LEVEL", "INFO"))


class WithoutCancelNotice(logging.Filter):
    """Drops Celery 5's notice, logged on every broker connection loss, that
    cancelling running tasks will become the default in 6.0: our choice is
    explicit (CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS), and
    Celery's logging setup turns every such warning back on, so a warnings
    filter cannot silence it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "worker_cancel_long_running_tasks_on_connection_loss" not in message
