"""Shared fixtures: personas (a team with a key, another team with its own key)
and an API client per persona. Larger fixtures live next to the tests that use them."""

from __future__ import annotations

import gc
import os
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.servers.basehttp import ThreadedWSGIServer
from django.db import connection
from django.db.models import Model
from django.test.testcases import LiveServerThread
from django.test.utils import override_settings
from rest_framework.test import APIClient

from checks.ai import client as ai_client
from config.celery import app as celery_app
from monitors.models import ApiKey, Team
from teams import emails as team_emails
from tests.sites import Site
from tests.valkey import embedded_valkey


class _SerializedOnSharedConnection(ThreadedWSGIServer):
    """Django's live server, running one request at a time when its threads
    share the test thread's database connection (in-memory SQLite: Django
    hands every request thread that one connection). Two requests of one page
    at once (an htmx validation and a schedule preview, say) would otherwise
    use it together, and one of them could read another's half-done query.
    With PostgreSQL each thread has its own connection and nothing changes."""

    def set_app(self, application: Any) -> None:
        if not self.connections_override:
            super().set_app(application)
            return
        lock = threading.Lock()

        def one_at_a_time(environ: Any, start_response: Any) -> Any:
            with lock:
                return application(environ, start_response)

        super().set_app(one_at_a_time)


@pytest.fixture(scope="session", autouse=True)
def _live_server_on_a_shared_connection() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LiveServerThread, "server_class", _SerializedOnSharedConnection)
        yield


@pytest.fixture(scope="session")
def live_server(django_db_setup: None, live_server: Any) -> Iterator[Any]:
    """pytest-django's live server, whose connections all end before it stops.

    Started after the test database exists: pytest-django's fixture does not
    ask for it, and started first it looks at the developer's database file,
    so its request threads open connections of their own to the in-memory
    test database, which fail with "database table is locked" (not a wait)
    whenever two of them touch one table at once.

    An SDK call that raised keeps its response, so its keep-alive socket, in a
    reference cycle, and the server thread of that connection waits for a next
    request until the garbage collector closes the socket: at interpreter exit
    if nothing else does, where the woken thread printed a traceback after the
    test summary. Collected here, the threads end while the server still runs."""
    yield live_server
    gc.collect()
    for thread in threading.enumerate():
        if thread.name.endswith("(process_request_thread)"):
            thread.join(timeout=5)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> Iterator[str]:
    """REDIS_URL when set (CI's Redis); otherwise the embedded Valkey, started
    as `make run` starts it, in a var/ of this session's own (never the
    developer's, whose queues a test's cache.clear() would empty)."""
    if url := os.environ.get("REDIS_URL"):
        yield url
        return
    with embedded_valkey(tmp_path_factory.mktemp("valkey")) as url:
        yield url


@pytest.fixture(autouse=True, scope="session")
def shared_cache(redis_server: str, worker_id: str) -> Iterator[None]:
    """The cache (the API's rate limit, locks) on that server, as in
    production, under a key prefix of this xdist worker's own: with REDIS_URL
    every worker shares one database, and a test's cache.clear() must empty
    its own worker's keys only (tests.caching.WorkerCache)."""
    default = django_settings.CACHES["default"]
    caches = {
        "default": default
        | {
            "BACKEND": "tests.caching.WorkerCache",
            "LOCATION": redis_server,
            "KEY_PREFIX": f"{default['KEY_PREFIX']}-test-{worker_id}",
        }
    }
    with override_settings(CACHES=caches):
        yield


@pytest.fixture(autouse=True, scope="session")
def in_memory_broker() -> Iterator[None]:
    """Tasks a test enqueues go to an in-memory broker, never into the
    developer's Valkey (where `make run`'s worker would pick them up).
    Integration tests that start a real worker point the producer at
    `redis_server`."""
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options)
    conf.broker_url, conf.broker_transport_options = "memory://", {}
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    yield
    conf.broker_url, conf.broker_transport_options = saved


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's test database, whose teardown first ends the sessions
    left on it: the live server's request threads can outlive the run, blocked
    on a client's keep-alive socket with their connection open, and PostgreSQL
    refuses to drop a database in use. (Wrapping the fixture keeps it as lazy
    as it was; an autouse one would set the database up before anything.)"""
    yield
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture(autouse=True)
def fast_and_isolated(settings) -> Iterator[None]:
    # Password hashing at production strength costs ~0.3 s per login; throttle
    # counters in the cache must not leak between tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No search provider unless a test configures one (tests/searching.py),
    # whatever the developer's environment sets.
    settings.SEARCH_PROVIDER = settings.SEARXNG_URL = ""
    settings.BRAVE_API_KEY = settings.TAVILY_API_KEY = settings.FIRECRAWL_API_KEY = ""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def ai_client_forgets() -> None:
    """What the LLM client remembers per endpoint and model (the modes, the
    cap's name, temperature left out) must not leak between tests: a port a
    test's fake model had may be another's later."""
    ai_client._modes.clear()
    ai_client._cap_names.clear()
    ai_client._no_temperature.clear()


@pytest.fixture
def site() -> Iterator[Site]:
    """A website on 127.0.0.1 whose pages a test changes (see tests/sites.py)."""
    with Site() as running:
        yield running


@pytest.fixture
def team(db) -> Team:
    return Team.objects.create(name="Acme", slug="acme")


@pytest.fixture
def other_team(db) -> Team:
    return Team.objects.create(name="Globex", slug="globex")


@pytest.fixture
def api_key(team) -> str:
    _, raw = ApiKey.issue(team, name="tests")
    return raw


@pytest.fixture
def other_api_key(other_team) -> str:
    _, raw = ApiKey.issue(other_team, name="tests")
    return raw


@pytest.fixture
def api(api_key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    return client


@pytest.fixture
def other_api(other_api_key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {other_api_key}")
    return client


@pytest.fixture
def scrape_monitor_body() -> dict:
    return {
        "name": "Pricing page",
        "schedule": {"text": "every 30 minutes"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
    }


@pytest.fixture
def loaded(monkeypatch) -> Counter[type]:
    """How many rows of each model were read into Python (tests of deletes
    that must not read a long history)."""
    counts: Counter[type] = Counter()
    from_db = Model.from_db.__func__

    def counted(cls, *args, **kwargs):
        counts[cls._meta.concrete_model] += 1
        return from_db(cls, *args, **kwargs)

    monkeypatch.setattr(Model, "from_db", classmethod(counted))
    return counts


@pytest.fixture
def queued_resets(monkeypatch) -> list[str]:
    """The addresses the web asked a worker to send a reset to; no broker."""
    queued: list[str] = []
    monkeypatch.setattr(team_emails, "queue_password_reset", queued.append)
    return queued
