"""The services Pagewatch needs, down for a while: Redis (the cache behind the
API's rate limit, and the broker) and the database. Requests get a clear
answer in seconds — the API's envelope with 503 SERVICE_UNAVAILABLE, a page in
plain words in the dashboard — never a 500 or a hang, and nothing is left
half-done behind them.

Redis is played by a port nobody listens on (stopped: connection refused) or
by a socket that accepts connections and never answers (wedged: stopped with
SIGSTOP, failed over, a firewall dropping packets); no Redis server is needed.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.test import Client, override_settings

from checks.models import Check
from config.celery import app as celery_app
from monitors import moving
from monitors.api.auth import ApiKeyAuthentication
from monitors.models import ImportRun, Membership, Monitor, Target
from monitors.moving import importing
from teams.models import Activity
from tests.moving import backup_zip

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "a-long-enough-password"


@pytest.fixture
def stopped_redis() -> str:
    """A Redis URL on a port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture
def wedged_redis() -> Iterator[str]:
    """A Redis URL whose connections are accepted (by the kernel) and never
    answered."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


@pytest.fixture
def broker_at(settings) -> Iterator[Callable[[str], None]]:
    """Point this process's Celery producer at a broker URL, with the
    transport options production uses for Redis."""
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport_options)

    def point(url: str) -> None:
        conf.broker_url = url
        conf.broker_transport_options = {
            "visibility_timeout": 3600,
            **settings.REDIS_SOCKET_TIMEOUTS,
        }
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    yield point
    conf.broker_url, conf.broker_transport_options = saved
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


def redis_cache(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
        }
    }


def make_monitor(team) -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="*/30 * * * *"
    )
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://example.com/"])
    return monitor


# --- Redis stopped ---------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_still_answers_while_the_rate_limit_cache_is_down(
    api, team, stopped_redis
):
    make_monitor(team)
    with override_settings(CACHES=redis_cache(stopped_redis)):
        response = api.get("/v2/monitor")
    assert response.status_code == 200, response.content
    assert [m["name"] for m in response.json()["data"]] == ["Pricing"]


@pytest.mark.django_db(transaction=True)
def test_run_with_the_broker_down_is_a_503_and_leaves_no_check(
    api, team, stopped_redis, broker_at
):
    monitor = make_monitor(team)
    broker_at(stopped_redis)

    response = api.post(f"/v2/monitor/{monitor.pk}/run", {}, format="json")

    assert response.status_code == 503, response.content
    assert response.json() == {
        "success": False,
        "error": "Checks cannot be started right now: the task queue (Redis) is "
        "not reachable. Try again in a moment.",
        "code": "SERVICE_UNAVAILABLE",
    }
    assert response["Retry-After"] == "10"
    # Withdrawn, not left queued for the sweeper: the caller was told no.
    assert not Check.objects.exists()
    assert Monitor.objects.get(pk=monitor.pk).current_check_id is None


@pytest.mark.django_db(transaction=True)
def test_run_now_in_the_dashboard_says_the_queue_is_down(
    client, team, django_user_model, stopped_redis, broker_at
):
    user = django_user_model.objects.create_user("olive", "o@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    monitor = make_monitor(team)
    broker_at(stopped_redis)

    response = client.post(f"/monitors/{monitor.pk}/run/", HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    assert "cannot reach its task queue right now" in response.content.decode()
    assert not Check.objects.exists()
    # Run now works again once the broker is back.
    broker_at("memory://")
    client.post(f"/monitors/{monitor.pk}/run/", HTTP_HX_REQUEST="true")
    assert Check.objects.get().status == Check.Status.QUEUED


@pytest.mark.django_db(transaction=True)
def test_run_now_in_the_admin_says_the_queue_is_down_and_leaves_no_check(
    client, team, django_user_model, stopped_redis, broker_at
):
    client.force_login(django_user_model.objects.create_superuser("ada"))
    first, second = make_monitor(team), make_monitor(team)
    broker_at(stopped_redis)

    response = client.post(
        "/admin/monitors/monitor/",
        {"action": "run_now_selected", "_selected_action": [first.pk, second.pk]},
        follow=True,
    )

    said = [str(m) for m in response.context["messages"]]
    assert said == [
        "Pagewatch cannot reach its task queue right now. Please try again in a moment."
    ]
    assert not Check.objects.exists()
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_RUN).exists()


# --- Redis wedged ----------------------------------------------------------------

# After django.setup() in a process of its own, with REDIS_URL at the wedged
# port: how long a cache read and a task publish take to give up.
TIMED = """
import json, time, django
django.setup()
from django.core.cache import cache
from config.celery import app
took = {}
for name, call in (
    ("cache", lambda: cache.get("x")),
    ("publish", lambda: app.send_task("checks.tasks.run_check_task", args=["x"])),
):
    start = time.monotonic()
    try:
        call()
    except Exception as exc:
        took[name] = [round(time.monotonic() - start, 1), type(exc).__name__]
print(json.dumps(took))
"""


def test_a_wedged_redis_costs_a_request_seconds_not_a_hang(
    wedged_redis, tmp_path, settings
):
    env = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")
    } | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PAGEWATCH_VAR_DIR": str(tmp_path),
        "REDIS_URL": wedged_redis,
        # With Redis the settings require a key of their own (not var/'s).
        "SECRET_KEY": settings.SECRET_KEY,
    }
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", TIMED],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            # gunicorn kills a web worker whose request takes 30 s.
            timeout=60,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still waiting on Redis after {time.monotonic() - start:.0f} s")
    took = json.loads(done.stdout.strip().splitlines()[-1])
    assert took["cache"][0] < 10 and took["publish"][0] < 20, took


# --- the database unreachable ----------------------------------------------------


def refuse(*args: object, **kwargs: object) -> None:
    raise OperationalError("connection failed: connection to server refused")


@pytest.mark.django_db
def test_the_api_says_503_when_the_database_is_unreachable(api, monkeypatch, caplog):
    monkeypatch.setattr(ApiKeyAuthentication, "_find", refuse)

    response = api.get("/v2/monitor")

    assert response.status_code == 503
    assert response.json() == {
        "success": False,
        "error": "The database is not reachable right now. Try again in a moment.",
        "code": "SERVICE_UNAVAILABLE",
    }
    assert response["Retry-After"] == "10"
    # One line per request in the log: the handler's, not Django's after it.
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.levelname, r.exc_info) for r in said] == [("WARNING", None)]


@pytest.mark.django_db
def test_the_dashboard_says_so_when_the_database_is_unreachable(
    team, django_user_model, monkeypatch
):
    user = django_user_model.objects.create_user("olive", "o@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user)
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    # The session is loaded by a middleware, before any view.
    monkeypatch.setattr(SessionStore, "load", refuse)

    response = browser.get("/")

    assert response.status_code == 503
    page = response.content.decode()
    assert "Pagewatch cannot reach its database" in page
    assert "Traceback" not in page and "OperationalError" not in page


def dashboard_browser(team, django_user_model) -> Client:
    user = django_user_model.objects.create_user("olive", "o@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user)
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    return browser


@pytest.mark.django_db
def test_a_dashboard_page_with_the_database_away_logs_one_line_without_a_traceback(
    team, django_user_model, monkeypatch, caplog
):
    """A traceback per request, for as long as the outage lasted, buried the
    rest of an operator's log."""
    browser = dashboard_browser(team, django_user_model)
    monkeypatch.setattr(SessionStore, "load", refuse)

    with caplog.at_level("INFO"):
        response = browser.get("/")

    assert response.status_code == 503
    [said] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert said.levelname == "WARNING"
    assert said.exc_info is None
    assert said.getMessage() == (
        "Service Unavailable: /: the database is not reachable: "
        "connection failed: connection to server refused"
    )


@pytest.mark.django_db
def test_a_bug_on_a_dashboard_page_is_still_logged_with_its_traceback(
    team, django_user_model, monkeypatch, caplog
):
    browser = dashboard_browser(team, django_user_model)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug, not an outage")

    monkeypatch.setattr(SessionStore, "load", broken)

    response = browser.get("/")

    assert response.status_code == 500
    [said] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (said.name, said.levelname) == ("django.request", "ERROR")
    assert said.getMessage() == "Internal Server Error: /"
    assert said.exc_info is not None and said.exc_info[0] is RuntimeError


# --- An import too big to make while the request waits ------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_large_import_with_the_broker_down_is_a_503_and_can_be_started_again(
    api, team, stopped_redis, broker_at, monkeypatch
):
    monkeypatch.setattr(importing, "INLINE_MAX", 1)
    broker_at(stopped_redis)
    upload = SimpleUploadedFile("backup.zip", backup_zip())
    body = {"source": "changedetection", "file": upload, "dryRun": "false"}

    response = api.post("/v2/import", body, format="multipart")

    assert response.status_code == 503, response.content
    assert response.json()["code"] == "SERVICE_UNAVAILABLE"
    assert "task queue" in response.json()["error"]
    # Not left "queued" for ever: the run waits, as previewed, to be started again.
    run = ImportRun.objects.get()
    assert run.status == ImportRun.Status.PREVIEWED
    assert not Monitor.objects.exists()
    broker_at("memory://")
    assert importing.start_run(run, [], run.created_at).status == "queued"


@pytest.mark.django_db(transaction=True)
def test_confirming_a_large_import_in_the_dashboard_with_the_broker_down_says_so(
    client, team, django_user_model, stopped_redis, broker_at, monkeypatch
):
    user = django_user_model.objects.create_user("olive", "o@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    monkeypatch.setattr(importing, "INLINE_MAX", 1)
    items = moving.read("changedetection", data=backup_zip(), filename="b.zip")
    run = importing.preview_run(
        team, "changedetection", importing.plan.prepare(team, items)
    )
    broker_at(stopped_redis)

    response = client.post(f"/import/{run.pk}/confirm/", follow=True)

    assert response.status_code == 200
    assert "cannot reach its task queue right now" in response.content.decode()
    assert ImportRun.objects.get().status == ImportRun.Status.PREVIEWED
