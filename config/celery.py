"""The Celery app: one worker pool for checks, one beat process as the scheduler.

Settings come from Django settings under the CELERY_ namespace (broker, acks_late,
time limits, the periodic tasks of CELERY_BEAT_SCHEDULE...: see config/settings.py).
Beat is the *only* scheduler, and all it does is enqueue a few small periodic
tasks; which monitors are due lives in the database (Monitor.next_run_at), so beat
restarts or two beats running by mistake cannot lose or double a check
(checks.dispatch claims each slot in the database).
"""

from __future__ import annotations

import os

from celery import Celery

# Registers the embedded broker's URL scheme (pagewatch-files://) with kombu.
import config.broker  # noqa: F401

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("pagewatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every installed app's tasks.py, and the notification outbox's own
# (checks/notify/tasks.py).
app.autodiscover_tasks()
app.autodiscover_tasks(["checks.notify"])
