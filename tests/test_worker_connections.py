"""A worker's database connection lasts from one task to the next, as a web
process's lasts from one request to the next (DATABASE_CONN_MAX_AGE, checked
for health before reuse), instead of being opened anew for every task."""

from __future__ import annotations

import time
from unittest import mock

import pytest
from celery import signals
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection, transaction

from checks.notify.tasks import drain_task
from config.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def _run_task_signals(task: object) -> None:
    """What a worker does around one task: Celery's Django fix-up (installed
    only in a worker), then every receiver of the task signals."""
    fixup = DjangoWorkerFixup(app)
    fixup.on_task_prerun(sender=task)
    signals.task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    signals.task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    fixup.on_task_postrun(sender=task)


def test_a_worker_keeps_its_database_connection_from_one_task_to_the_next():
    connection.ensure_connection()
    task = drain_task
    connection.close_at = time.monotonic() + 60  # younger than its maximum age
    with mock.patch.object(connection, "close") as close:
        for _ in range(20):
            _run_task_signals(task)
    assert close.call_count == 0


def test_a_connection_older_than_its_maximum_age_is_closed_before_the_next_task():
    connection.ensure_connection()
    task = drain_task
    connection.close_at = time.monotonic() - 1
    with mock.patch.object(connection, "close") as close:
        signals.task_prerun.send(
            sender=task, task_id="t", task=task, args=(), kwargs={}
        )
    assert close.call_count == 1


def test_a_task_run_eagerly_leaves_its_callers_connection_alone():
    task = drain_task
    task.push_request(is_eager=True)
    try:
        with transaction.atomic(), mock.patch.object(connection, "close") as close:
            signals.task_prerun.send(
                sender=task, task_id="t", task=task, args=(), kwargs={}
            )
            signals.task_postrun.send(
                sender=task, task_id="t", task=task, args=(), kwargs={}
            )
    finally:
        task.pop_request()
    # It runs inside its caller's transaction, which closing would end.
    assert close.call_count == 0
