"""The database's clock, as workers read it (checks.shared_clock): measured
inside whatever transaction asks the time, and harmless to it when the
measurement fails."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.db import connection, transaction

from checks import runner, shared_clock
from checks.models import Check, Delivery
from checks.notify import drain
from checks.notify.tasks import queue_digests_task
from monitors.models import Channel, Target, Team
from tests.notifying import make_monitor, webhook_config

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.notifying"]


@pytest.fixture
def worker(monkeypatch):
    """This process measures the database's clock, and is due to."""
    monkeypatch.setattr(shared_clock, "_enabled", True)
    monkeypatch.setattr(shared_clock, "_measured_at", None)
    monkeypatch.setattr(shared_clock, "_offset", timedelta(0))


def test_a_failed_measurement_inside_a_transaction_leaves_it_usable(team, worker):
    """The time is asked inside transactions (a check's batches are stamped
    in one): a measurement whose query failed left PostgreSQL's transaction
    aborted, and every later statement of it failed."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite is on the database's machine: nothing is measured")
    with transaction.atomic():
        with connection.cursor() as cursor:
            # A clock_timestamp() found before the built-in one, that fails.
            cursor.execute(
                "CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz "
                "LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no clock'; END $$"
            )
            cursor.execute("SET LOCAL search_path = public, pg_catalog")

        shared_clock.now()

        assert Team.objects.filter(pk=team.pk).exists()


# --- What a worker stamps, next to the check's own times ---------------------------

# How far the worker's own clock is off the database server's.
SKEW = timedelta(minutes=10)


def database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


@pytest.fixture
def on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite is on the database's machine: no clock can be off")


@pytest.fixture
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def test_a_worker_whose_clock_is_behind_stamps_its_pages_within_its_checks_times(
    team, site, worker, on_postgresql, private_targets_allowed, receiver
):
    """The check's start and end were on the database's clock and its pages
    (and the webhooks telling of them) on the worker's own: ten minutes
    behind, every page read as found before its check began, and a digest
    made meanwhile told none of them."""
    page = site.html("/pricing", "Pricing", "<p>Starter costs $19.</p>")
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Target.objects.create(monitor=monitor, type="scrape", urls=[page])

    with time_machine.travel(database_now() - SKEW, tick=True):
        check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
        check = runner.run(check)

    result = check.pages.get()
    told_page = Delivery.objects.get(check_run=check, event="monitor.page")
    told_end = Delivery.objects.get(check_run=check, event="monitor.check.completed")
    assert check.status == Check.Status.COMPLETED
    assert (
        check.created_at
        <= check.started_at
        <= result.created_at
        <= told_page.created_at
        <= check.finished_at
        <= told_end.created_at
    )
    assert check.finished_at <= check.updated_at
    assert database_now() - result.created_at < SKEW / 2


def test_a_worker_whose_clock_is_ahead_has_its_messages_sent_at_once(
    team, site, worker, on_postgresql, private_targets_allowed, receiver
):
    """A message is due from when it is made; made due by a worker's clock
    ten minutes ahead, the drain (on the database's clock) found it not due
    yet, and the webhooks of every check that worker ran came ten minutes
    late, when the sweeper found them."""
    page = site.html("/pricing", "Pricing", "<p>Starter costs $19.</p>")
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Target.objects.create(monitor=monitor, type="scrape", urls=[page])

    with time_machine.travel(database_now() + SKEW, tick=True):
        check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
        check = runner.run(check)

    made = Delivery.objects.filter(check_run=check)
    assert made.count() == 2
    assert set(Delivery.objects.due(database_now())) == set(made)


def test_a_worker_whose_clock_is_behind_signs_its_webhooks_with_the_true_time(
    team, site, worker, on_postgresql, private_targets_allowed, receiver
):
    """Receivers refuse a signature whose timestamp is more than a few minutes
    from their own clock (Standard Webhooks allows five): every webhook a
    worker ten minutes behind sent was refused as a replay."""
    page = site.html("/pricing", "Pricing", "<p>Starter costs $19.</p>")
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Target.objects.create(monitor=monitor, type="scrape", urls=[page])

    with time_machine.travel(database_now() - SKEW, tick=True):
        check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
        runner.run(check)
        for delivery in Delivery.objects.filter(check_run=check).order_by("pk"):
            drain.deliver(delivery.pk)

    stamps = [int(r.header("webhook-timestamp")) for r in receiver.requests]
    assert len(stamps) == 2
    assert all(abs(stamp - database_now().timestamp()) < 60 for stamp in stamps)


def test_a_worker_whose_clock_is_ahead_makes_no_digest_before_its_time(
    team, worker, on_postgresql
):
    """A digest tells the changes stamped before its time; made on a clock
    ten minutes ahead, it was made (and its period closed) while the changes
    of its last ten minutes were still being found, and they were in no
    digest at all."""
    due = database_now() + timedelta(minutes=5)
    channel = Channel.objects.create(
        team=team,
        name="Morning news",
        kind="webhook",
        settings={"url": "https://e.com/h"},
        digest=Channel.Digest.DAILY,
        digest_since=due - timedelta(days=1),
        next_digest_at=due,
    )

    with time_machine.travel(database_now() + SKEW, tick=True):
        queue_digests_task()

    channel.refresh_from_db()
    assert channel.next_digest_at == due


# --- Imports, stamped by the worker that makes them ---------------------------------

ADDRESSES = b"".join(b"https://e%d.example.com/\n" % n for n in range(150))


def test_a_worker_whose_clock_is_behind_is_not_taken_for_stalled_while_it_imports(
    team, worker, on_postgresql, monkeypatch
):
    """The stale sweep judges an import by its last sign of life, on the
    database's clock: stamped by a worker's clock behind by more than
    ImportRun.STALLED_AFTER, a live import looked stalled at every batch and
    was queued again under its worker, which then stopped as superseded."""
    from monitors import moving
    from monitors.models import ImportRun
    from monitors.moving import importing, plan
    from monitors.tasks import import_monitors_task

    items = plan.prepare(team, moving.read("csv", data=ADDRESSES[:150]))[:5]
    run = importing.preview_run(team, "csv", items)
    ImportRun.objects.filter(pk=run.pk).update(status=ImportRun.Status.QUEUED)
    monkeypatch.setattr(importing, "BATCH", 2)
    record = ImportRun.record_made
    swept: list[int] = []

    def sweep_after_each_batch(self, *args, **kwargs):
        record(self, *args, **kwargs)
        swept.append(importing.go_on_with_stalled(database_now()))

    monkeypatch.setattr(ImportRun, "record_made", sweep_after_each_batch)
    behind = ImportRun.STALLED_AFTER + timedelta(minutes=10)
    with time_machine.travel(database_now() - behind, tick=True):
        import_monitors_task.push_request(retries=0, delivery_info={})
        try:
            import_monitors_task.run(str(run.pk))
        finally:
            import_monitors_task.pop_request()

    run.refresh_from_db()
    assert swept == [0, 0, 0]
    assert (run.status, run.attempts, len(run.made)) == ("done", 1, 5)
    assert database_now() - run.finished_at < SKEW / 2
    assert database_now() - run.progressed_at < SKEW / 2


def test_a_worker_whose_clock_is_behind_has_its_preview_made_not_given_up(
    team, worker, on_postgresql, monkeypatch
):
    """A preview is given up when its worker falls silent for
    PREVIEW_GIVEN_UP_AFTER, judged by the sweep on the database's clock: a
    worker behind by more than that had every preview it made given up
    under it, the API key for a service forgotten before it was read."""
    from monitors import moving
    from monitors.models import ImportRun
    from monitors.moving import importing
    from monitors.tasks import preview_import_task

    run = ImportRun.objects.create(
        team=team,
        source="csv",
        status=ImportRun.Status.PREPARING,
        items=[item.to_state() for item in moving.read("csv", data=ADDRESSES)],
        total=150,
    )
    record = ImportRun.record_progress
    given_up: list[int] = []

    def sweep_while_judging(self, *args, **kwargs):
        record(self, *args, **kwargs)
        given_up.append(ImportRun.objects.give_up_stale_previews(database_now()))

    monkeypatch.setattr(ImportRun, "record_progress", sweep_while_judging)
    behind = ImportRun.PREVIEW_GIVEN_UP_AFTER + timedelta(minutes=10)
    with time_machine.travel(database_now() - behind, tick=True):
        preview_import_task(str(run.pk))

    run.refresh_from_db()
    assert given_up == [0]
    assert (run.status, run.total) == (ImportRun.Status.PREVIEWED, 150)
    assert importing.previewed_items(run)[0].payload is not None
