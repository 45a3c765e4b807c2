"""gunicorn's settings, for `make run` (the Procfile) and production:
`gunicorn config.wsgi --config python:config.gunicorn`.

Threaded workers (gthread): a request spends much of its time waiting on the
database, and a thread waiting frees the CPU for another request, where a
sync worker holds its process until the answer is sent. WEB_WORKERS
processes (default: one per CPU) of WEB_THREADS threads each (default 8).
"""

from __future__ import annotations

import os

from config.env import env_int

worker_class = "gthread"
workers = env_int("WEB_WORKERS", os.cpu_count() or 1, minimum=1)
threads = env_int("WEB_THREADS", 8, minimum=1)
accesslog = "-"
# No gunicornc control socket: one fixed path per user, which a second
# instance (tests, the bench) would fight over.
control_socket_disable = True
