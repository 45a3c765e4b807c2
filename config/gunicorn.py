"""gunicorn's settings, for `make run` (the Procfile) and production:
`gunicorn config.wsgi --config python:config.gunicorn`.

Sync workers, WEB_WORKERS of them (default: CPUs + 1): an API request
mostly computes, and a process that takes one request at a time answers a
burst in the order it came, so most requests are done long before the last.
Threaded workers took every connection of a burst at once and shared the
CPUs among all of them, so nearly every request finished near the end.
One process per CPU keeps the CPUs busy; the one more keeps them busy while
a request waits on the database or Redis, and means one slow request never
holds the whole web. gunicorn's own advice, 2 x CPUs + 1, answered a burst
no sooner with the database on the same machine, and every process holds
memory of its own; with the database on another machine, where requests
wait longer, set WEB_WORKERS up to that. On the smallest machines
WEB_WORKERS=1 WEB_THREADS=4 saves more memory, for slower bursts. Each
process may take WEB_THREADS threads (default 1: sync); more only pay when
requests wait on a slow database.

The app is loaded once, before the workers are forked (preload_app), its
URLs' views with it (when_ready), and its objects are kept out of the
garbage collector's reach (gc.freeze) so the workers share them instead of
each holding a copy. Slow clients: put nginx or another buffering proxy in
front (see the README, "Running in production").
"""

from __future__ import annotations

import gc
import os
from typing import Any

from gunicorn.glogging import Logger

from config.env import env_bool, env_int
from config.logs import WithoutCredentials, hidden

_CPUS = os.cpu_count() or 1
threads = env_int("WEB_THREADS", 1, minimum=1)
worker_class = "sync" if threads == 1 else "gthread"
workers = env_int("WEB_WORKERS", _CPUS + 1, minimum=1)
preload_app = True
accesslog = "-"
# gunicorn believes X-Forwarded-Proto (and its kin) from these addresses and
# then tells Django the request was https, whatever Django's own setting
# says. By default it believed 127.0.0.1, so with TRUST_PROXY_HEADERS=false a
# client behind a local proxy that passes the header on could still claim
# https (and be sent HSTS, which browsers keep). Believed from anywhere only
# when the operator says a proxy of theirs sets these headers, as Django is.
forwarded_allow_ips = "*" if env_bool("TRUST_PROXY_HEADERS", False) else ""
# No gunicornc control socket: one fixed path per user, which a second
# instance (tests, the bench) would fight over.
control_socket_disable = True


_WITHOUT_CREDENTIALS = WithoutCredentials()


class AccessLogWithoutCredentials(Logger):
    """gunicorn's logs with the credentials some addresses carry masked
    (config.logs). In the access log every value a log format may name, so
    the request line, the path and query, the Referer (a page at a token
    address links on) and a redirect's Location alike; in the error log
    every line, as "Error handling request /feeds/teams/…" names the
    address whole."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        # One filter object: a configuration reload runs setup again and
        # addFilter leaves out one already there.
        for handler in self.error_log.handlers:
            handler.addFilter(_WITHOUT_CREDENTIALS)

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict:
        atoms = super().atoms(resp, req, environ, request_time)
        masked = {
            name: hidden(value) if isinstance(value, str) else value
            for name, value in atoms.items()
        }
        # The query string comes without its "?", so a leading code=… would
        # not look like a parameter to `hidden`.
        if isinstance(atoms.get("q"), str):
            masked["q"] = hidden("?" + atoms["q"])[1:]
        return masked


logger_class = AccessLogWithoutCredentials


def when_ready(server: Any) -> None:
    """Before the first fork: every URL's view, serializer and form imported
    once here, shared by all workers, instead of each worker importing them
    privately on its first request."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - importing is the point


def pre_fork(server: Any, worker: Any) -> None:
    gc.freeze()
