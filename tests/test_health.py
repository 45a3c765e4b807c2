"""GET /healthz: open to probes, 200 when the database, the broker, a worker
serving the check queue and the scheduler's tick are all fine, 503 naming
the part that is not."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from checks.models import Heartbeat
from checks.tasks import dispatch_due_monitors_task, worker_heartbeat_task

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


@pytest.fixture
def broker(settings, redis_server):
    settings.REDIS_LOCATION = redis_server  # the session's Valkey, or REDIS_URL


def health(client: Client) -> tuple[int, dict]:
    response = client.get("/healthz")
    assert response["Cache-Control"].startswith("max-age=0")
    return response.status_code, response.json()


def test_a_running_service_is_healthy_without_signing_in(client, broker, time_machine):
    time_machine.move_to(NOW, tick=False)
    worker_heartbeat_task()  # what a worker serving the check queue runs
    dispatch_due_monitors_task()  # the scheduler's tick

    status, body = health(client)

    assert status == 200
    assert body == {
        "status": "ok",
        "parts": {
            "database": "ok", "broker": "ok", "worker": "ok", "scheduler": "ok"
        },
    }  # fmt: skip


def test_a_stopped_worker_turns_it_503_and_its_return_turns_it_200(
    client, broker, time_machine
):
    time_machine.move_to(NOW, tick=False)
    worker_heartbeat_task()
    for second in range(0, 90, 10):  # the scheduler goes on ticking
        time_machine.move_to(NOW + timedelta(seconds=second), tick=False)
        dispatch_due_monitors_task()

    status, body = health(client)

    assert status == 503
    assert body["status"] == "down"
    assert body["parts"]["worker"] == "no worker serving the check queue for 80 s"
    assert body["parts"]["scheduler"] == "ok"

    worker_heartbeat_task()  # back
    assert health(client)[0] == 200


def test_a_stopped_scheduler_turns_it_503_and_its_return_turns_it_200(
    client, broker, time_machine
):
    time_machine.move_to(NOW, tick=False)
    dispatch_due_monitors_task()
    time_machine.move_to(NOW + timedelta(seconds=61), tick=False)
    worker_heartbeat_task()

    status, body = health(client)

    assert status == 503
    assert body["parts"]["scheduler"] == "no dispatch tick from the scheduler for 61 s"
    assert body["parts"]["worker"] == "ok"

    dispatch_due_monitors_task()
    assert health(client)[0] == 200


def test_a_service_that_never_ran_a_worker_says_so(client, broker):
    status, body = health(client)

    assert status == 503
    assert body["parts"]["worker"] == "no worker serving the check queue yet"
    assert body["parts"]["scheduler"] == "no dispatch tick from the scheduler yet"


def test_an_unreachable_broker_is_named_without_its_address(
    client, settings, tmp_path, time_machine
):
    settings.REDIS_LOCATION = f"unix://{tmp_path}/nobody.sock?db=0"
    time_machine.move_to(NOW, tick=False)
    worker_heartbeat_task()
    dispatch_due_monitors_task()

    status, body = health(client)

    assert status == 503
    assert body["parts"]["broker"] == "unreachable"
    assert str(tmp_path) not in str(body)
    assert Heartbeat.objects.count() == 2


def test_an_unreachable_broker_is_logged_in_one_line_without_a_traceback(
    client, settings, tmp_path, caplog
):
    """A probe every few seconds logged forty lines of traceback each while
    Redis was down."""
    settings.REDIS_LOCATION = f"unix://{tmp_path}/nobody.sock?db=0"

    with caplog.at_level("WARNING", logger="checks.health"):
        health(client)

    [said] = [r for r in caplog.records if r.name == "checks.health"]
    assert said.getMessage().startswith("Health: the broker is unreachable: ")
    assert "No such file" in said.getMessage()
    assert said.exc_info is None


def test_a_503_adds_no_line_of_its_own_to_the_log(client, settings, tmp_path, caplog):
    """Django logged "Service Unavailable: /healthz" at ERROR after the
    part's own line, on every probe for as long as the part was down."""
    settings.REDIS_LOCATION = f"unix://{tmp_path}/nobody.sock?db=0"

    with caplog.at_level("INFO"):
        status, _ = health(client)

    assert status == 503
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname) for r in said] == [("checks.health", "WARNING")]


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "10.1.2.3:8000", "[fd00::5]:8000"])
def test_a_probe_naming_the_machine_not_the_public_name_gets_an_answer(
    client, broker, settings, time_machine, host
):
    """A load balancer's or Kubernetes' probe, or curl on the web host, names
    the machine; with ALLOWED_HOSTS set to the public name it got 400."""
    settings.ALLOWED_HOSTS = ["pagewatch.example.com"]
    time_machine.move_to(NOW, tick=False)
    worker_heartbeat_task()
    dispatch_due_monitors_task()

    response = client.get("/healthz", HTTP_HOST=host)

    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response["X-Content-Type-Options"] == "nosniff"
    # Every other page still answers only to the names it serves.
    assert client.get("/accounts/login/", HTTP_HOST=host).status_code == 400
