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

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("pagewatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every installed app's tasks.py, and the notification outbox's own
# (checks/notify/tasks.py).
app.autodiscover_tasks()
app.autodiscover_tasks(["checks.notify"])


@app.on_after_configure.connect
def _keep_filesystem_control_files_under_var(**kwargs: object) -> None:
    # Runs once the settings are loaded (never at import, so importing this
    # module does not load Django settings). kombu's filesystem transport writes
    # its fanout/control files to a relative "control" folder in the current
    # directory unless told otherwise; keep them next to the queued messages.
    if not str(app.conf.broker_url or "").startswith("filesystem"):
        return
    options = dict(app.conf.broker_transport_options or {})
    data_folder = options.get("data_folder_in")
    if data_folder and "control_folder" not in options:
        control = os.path.join(os.path.dirname(data_folder), "control")
        os.makedirs(control, exist_ok=True)
        options["control_folder"] = control
        app.conf.broker_transport_options = options
