"""A confirmed import that loses its database or its worker part way: it goes
on from the monitors already made (never making one twice), and one that
cannot is ended by the stale sweep saying how far it got, instead of saying
"running" for ever.

The database is taken away as tests/test_upkeep_outages.py does (every query
refused as a lost server refuses it), from the second batch of monitors on;
the savepoint statements still pass, as the test's own transaction needs."""

from __future__ import annotations

import html
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import time_machine
from celery.exceptions import Retry
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DatabaseError, OperationalError, connection
from django.utils import timezone

from checks.tasks import fail_stale_checks_task
from monitors import moving
from monitors.models import ImportRun, Membership, Monitor, Target
from monitors.moving import importing, plan
from monitors.tasks import import_monitors_task

pytestmark = pytest.mark.django_db

LOST = "server closed the connection unexpectedly\n\tThis probably means the server"
ADDRESSES = b"".join(b"https://e%d.example.com/\n" % n for n in range(5))


def _items(team):
    return plan.prepare(team, moving.read("csv", data=ADDRESSES))


def _running_run(team) -> ImportRun:
    run = importing.preview_run(team, "csv", _items(team))
    ImportRun.objects.filter(pk=run.pk).update(status=ImportRun.Status.QUEUED)
    return run


@contextmanager
def database_lost_at_second_batch(monkeypatch) -> Iterator[None]:
    """The first batch of monitors is made; from the second on, every query
    is refused."""
    real = importing.create_monitors
    calls = []
    lost = []

    def making(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            lost.append(1)
        return real(*args, **kwargs)

    def refuse(execute, sql, params, many, context):
        if lost and not sql.upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")):
            raise OperationalError(LOST)
        return execute(sql, params, many, context)

    monkeypatch.setattr(importing, "BATCH", 2)
    monkeypatch.setattr(importing, "create_monitors", making)
    with connection.execute_wrapper(refuse):
        yield


def _run_task(run: ImportRun, retries: int = 0, redelivered: bool = False) -> None:
    import_monitors_task.push_request(
        retries=retries, delivery_info={"redelivered": redelivered}
    )
    try:
        import_monitors_task.run(str(run.pk))
    finally:
        import_monitors_task.pop_request()


def test_an_import_that_loses_its_database_says_one_line_and_its_retry_goes_on(
    team, monkeypatch, caplog
):
    run = _running_run(team)

    with database_lost_at_second_batch(monkeypatch), pytest.raises(Retry):
        _run_task(run)

    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert said[0].exc_info is None and "\n" not in said[0].getMessage()
    assert "the database is not reachable" in said[0].getMessage()
    run.refresh_from_db()
    assert run.status == ImportRun.Status.RUNNING
    assert len(run.made) == Monitor.objects.filter(team=team).count() == 2

    monkeypatch.setattr(importing, "BATCH", 2)
    _run_task(run, retries=1)

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE
    assert Monitor.objects.filter(team=team).count() == 5  # none made twice
    assert run.report["created"] == 5 and run.report["duplicates"] == 0
    made = {o["monitorId"] for o in run.report["items"]}
    assert made == {str(pk) for pk in Monitor.objects.values_list("pk", flat=True)}


class Killed(BaseException):
    """The worker's process killed (SIGKILL, out of memory): nothing after
    it runs in that process, not even an except clause for Exception."""


def killed_from_call(monkeypatch, first: int) -> None:
    """Making monitors kills the worker from the `first`-th batch on."""
    real = importing.create_monitors
    calls = []

    def making(*args, **kwargs):
        calls.append(1)
        if len(calls) >= first:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(importing, "BATCH", 2)
    monkeypatch.setattr(importing, "create_monitors", making)


def test_an_import_redelivered_after_its_worker_was_killed_makes_none_twice(
    team, monkeypatch
):
    """Even a duplicate chosen to be imported all the same: judged again, it
    was still chosen, and made twice."""
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    items = _items(team)
    Target.objects.create(monitor=existing, type="scrape", urls=items[0].urls)
    run = importing.preview_run(team, "csv", plan.prepare(team, items))
    ImportRun.objects.filter(pk=run.pk).update(
        status=ImportRun.Status.QUEUED, chosen_duplicates=[items[0].ref]
    )
    killed_from_call(monkeypatch, 2)
    with pytest.raises(Killed):
        _run_task(run)
    monkeypatch.undo()

    _run_task(run, redelivered=True)

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE
    assert run.report["created"] == 5
    assert Monitor.objects.filter(team=team).count() == 6
    assert Target.objects.filter(urls=items[0].urls).count() == 2


def test_a_worker_killed_at_every_attempt_ends_the_import_saying_how_far(
    team, monkeypatch
):
    """Redelivered for ever before: each delivery killed its worker again."""
    run = _running_run(team)
    killed_from_call(monkeypatch, 2)
    with pytest.raises(Killed):
        _run_task(run)
    for _ in range(2):  # three attempts in all
        with pytest.raises(Killed):
            _run_task(run, redelivered=True)

    _run_task(run, redelivered=True)

    run.refresh_from_db()
    assert run.status == ImportRun.Status.FAILED
    assert run.error == (
        "Stopped part way after 2 of 5 monitors were made: the worker making them "
        "stopped 3 times. The monitors made are kept; import again to add the "
        "rest: those already made show as “Already monitored” and are skipped."
    )
    assert Monitor.objects.filter(team=team).count() == 2


@pytest.mark.django_db(transaction=True)  # the query refused is the last one
def test_an_import_out_of_attempts_is_ended_by_the_stale_sweep_saying_how_far(
    team, monkeypatch, caplog
):
    run = _running_run(team)
    ImportRun.objects.filter(pk=run.pk).update(
        status=ImportRun.Status.RUNNING, attempts=ImportRun.MAX_ATTEMPTS - 1
    )
    with database_lost_at_second_batch(monkeypatch):
        _run_task(run, retries=ImportRun.MAX_ATTEMPTS - 1)  # the last: no retry
    assert "it ends, stopped part way" in caplog.records[-1].getMessage()

    fail_stale_checks_task()  # moved just now: left alone
    assert ImportRun.objects.get(pk=run.pk).status == ImportRun.Status.RUNNING
    ImportRun.objects.filter(pk=run.pk).update(
        progressed_at=timezone.now() - ImportRun.STALLED_AFTER - timedelta(minutes=1)
    )
    fail_stale_checks_task()

    run.refresh_from_db()
    assert run.status == ImportRun.Status.FAILED
    assert run.finished_at is not None
    assert run.error == (
        "Stopped part way after 2 of 5 monitors were made: Pagewatch lost its "
        "worker or its database while making them. The monitors made are kept; "
        "import again to add the rest: those already made show as “Already "
        "monitored” and are skipped."
    )
    assert Monitor.objects.filter(team=team).count() == 2


def test_importing_again_after_a_stop_shows_those_made_as_duplicates_and_skips_them(
    team,
):
    importing.run_import(team, _items(team)[:2], timezone.now())

    again = _items(team)
    assert [i.duplicate for i in again] == [True, True, False, False, False]
    assert not any(i.same_address_as for i in again)  # "Already monitored"
    report = importing.run_import(team, again, timezone.now())

    assert report.created == 3 and report.count("duplicate") == 2
    assert Monitor.objects.filter(team=team).count() == 5


def test_an_import_whose_last_attempt_meets_a_database_blip_ends_saying_so(
    team, monkeypatch
):
    run = _running_run(team)
    ImportRun.objects.filter(pk=run.pk).update(
        status=ImportRun.Status.RUNNING, attempts=ImportRun.MAX_ATTEMPTS - 1
    )

    def lost(run_, now):
        raise OperationalError(LOST)

    monkeypatch.setattr(importing, "execute_run", lost)
    _run_task(run, retries=ImportRun.MAX_ATTEMPTS - 1)

    run.refresh_from_db()
    assert run.status == ImportRun.Status.FAILED
    assert run.error.startswith(
        "Stopped part way after 0 of 5 monitors were made: the server lost its "
        "database. The monitors made are kept;"
    )


def test_a_batch_rolled_back_after_it_was_recorded_is_not_counted_as_made(team):
    """A batch refused at its commit (a deferred constraint, say) is made
    again one monitor at a time, and one of them refused again: only the
    monitors that exist are recorded as made."""
    run = _running_run(team)
    assert run.claim()

    def recorded(made: dict[int, str]) -> None:
        run.record_made(made, timezone.now())
        if len(made) > 1 or 2 in made:
            raise DatabaseError("deferred constraint refused at commit")

    report = importing.run_import(
        team, importing.planned_items(run), timezone.now(), on_made=recorded
    )

    run.refresh_from_db()
    assert report.created == 4 and report.count("failed") == 1
    made = {str(pk) for pk in Monitor.objects.values_list("pk", flat=True)}
    assert len(made) == 4 and set(run.made.values()) == made
    assert "2" not in run.made


# --- an import small enough to be made in the request -------------------------------


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, list[str], dict]]:
    """The tasks the request sends, listed instead of reaching a broker: the
    test does the worker's part itself."""
    listed: list[tuple[str, list[str], dict]] = []

    def send_task(name, args=None, kwargs=None, **options):
        listed.append((name, args, kwargs or {}))

    monkeypatch.setattr(importing.current_app, "send_task", send_task)
    return listed


def database_away_during_the_import(monkeypatch) -> None:
    """The database goes away at the import's second batch of monitors and is
    back once the request has stopped making them (a restart, a failover)."""
    real = importing.execute_run

    def executing(run, now):
        with database_lost_at_second_batch(monkeypatch):
            return real(run, now)

    monkeypatch.setattr(importing, "execute_run", executing)


PAUSED = (
    "The database went away while the monitors were being made: 2 of 5 were "
    "made. Pagewatch goes on with the rest by itself in a minute; this page "
    "shows how far it has got."
)


def _worker_takes(sent) -> None:
    ((name, args, kwargs),) = sent
    assert name == importing.IMPORT_TASK
    import_monitors_task.push_request(retries=0, delivery_info={})
    try:
        import_monitors_task.run(*args, **kwargs)
    finally:
        import_monitors_task.pop_request()


def test_an_import_made_in_the_page_that_loses_its_database_goes_on_by_itself(
    team, client, django_user_model, monkeypatch, sent
):
    person = django_user_model.objects.create_user("mia", "mia@example.com", "x")
    Membership.objects.create(team=team, user=person)
    client.force_login(person)
    uploaded = client.post(
        "/import/", {"source": "csv", "file": SimpleUploadedFile("l.txt", ADDRESSES)}
    )
    run_url = uploaded["Location"]
    database_away_during_the_import(monkeypatch)

    confirmed = client.post(run_url + "confirm/", follow=True)

    assert confirmed.status_code == 200
    page = " ".join(html.unescape(confirmed.content.decode()).split())
    assert PAUSED in page
    run = ImportRun.objects.get(team=team)
    assert run.status == ImportRun.Status.RUNNING and len(run.made) == 2
    assert Monitor.objects.filter(team=team).count() == 2
    monkeypatch.undo()

    _worker_takes(sent)

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE and run.report["created"] == 5
    assert Monitor.objects.filter(team=team).count() == 5  # none made twice


def test_an_import_made_in_the_api_request_that_loses_its_database_answers_202(
    team, api, monkeypatch, sent
):
    database_away_during_the_import(monkeypatch)

    response = api.post(
        "/v2/import",
        {
            "source": "csv",
            "dryRun": "false",
            "file": SimpleUploadedFile("l.txt", ADDRESSES),
        },
        format="multipart",
    )

    assert response.status_code == 202, response.content
    answer = response.json()["data"]
    # The address to follow it at is the run's own, not a placeholder.
    assert answer["status"] == "running" and answer["error"] == PAUSED.replace(
        "this page shows", f"GET /v2/import/{answer['id']} shows"
    )
    monkeypatch.undo()
    _worker_takes(sent)
    done = api.get(f"/v2/import/{answer['id']}").json()["data"]
    assert done["status"] == "done" and done["created"] == 5
    assert "error" not in done
    assert Monitor.objects.filter(team=team).count() == 5


# --- a worker killed outright (kill -9): the sweep sends it on ----------------------


def test_the_stale_sweep_sends_an_import_whose_worker_was_killed_on_from_where_it_was(
    team, monkeypatch, sent
):
    run = _running_run(team)
    with pytest.MonkeyPatch.context() as patch, pytest.raises(Killed):
        killed_from_call(patch, 2)
        _run_task(run)
    fail_stale_checks_task()  # moved just now: left alone
    assert sent == []
    ImportRun.objects.filter(pk=run.pk).update(
        progressed_at=timezone.now() - ImportRun.STALLED_AFTER - timedelta(minutes=1)
    )

    fail_stale_checks_task()
    fail_stale_checks_task()  # a second sweep does not send it twice

    run.refresh_from_db()
    assert run.status == ImportRun.Status.QUEUED and not run.error
    assert sent == [(importing.IMPORT_TASK, [str(run.pk)], {})]
    _worker_takes(sent)
    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE and run.attempts == 2
    assert run.report["created"] == 5
    assert Monitor.objects.filter(team=team).count() == 5  # none made twice


def test_a_second_copy_of_the_message_taking_over_a_live_import_makes_none_twice(
    team, monkeypatch
):
    """The copy (sent again by the sweep, or handed out twice) takes the run
    over between two batches of the first attempt: the first attempt's next
    batch is rolled back and it stops; the copy makes every monitor once."""
    run = _running_run(team)
    monkeypatch.setattr(importing, "BATCH", 2)
    progress = ImportRun.record_import_progress
    copies: list[ImportRun] = []

    def copy_arrives(self, done, now):
        progress(self, done, now)
        if not copies:
            copies.append(self)
            _run_task(run, redelivered=True)

    monkeypatch.setattr(ImportRun, "record_import_progress", copy_arrives)
    _run_task(run)

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE and run.attempts == 2
    assert run.report["created"] == 5 and len(run.made) == 5
    assert Monitor.objects.filter(team=team).count() == 5
    made = {o["monitorId"] for o in run.report["items"]}
    assert made == {str(pk) for pk in Monitor.objects.values_list("pk", flat=True)}


# --- a first message lost (broker restarted, worker killed before acking) ---------


def _queued_and_lost(team, monkeypatch, sent, capture) -> ImportRun:
    """A confirmed import large enough for a worker, whose message never
    reaches one."""
    monkeypatch.setattr(importing, "INLINE_MAX", 2)
    run = importing.preview_run(team, "csv", _items(team))
    with capture(execute=True):
        importing.start_run(run, [], timezone.now())
    assert sent == [(importing.IMPORT_TASK, [str(run.pk)], {})]
    sent.clear()  # lost on its way to a worker
    return run


def _stalled(run: ImportRun) -> None:
    """A queued run past its window: its message lost, not merely waiting."""
    ImportRun.objects.filter(pk=run.pk).update(
        progressed_at=timezone.now()
        - ImportRun.QUEUED_STALLED_AFTER
        - timedelta(minutes=1)
    )


def test_the_stale_sweep_sends_again_an_import_whose_first_message_was_lost(
    team, monkeypatch, sent, django_capture_on_commit_callbacks
):
    run = _queued_and_lost(team, monkeypatch, sent, django_capture_on_commit_callbacks)
    fail_stale_checks_task()  # queued just now: left alone
    assert sent == []
    _stalled(run)

    fail_stale_checks_task()
    fail_stale_checks_task()  # a second sweep does not send it twice

    run.refresh_from_db()
    assert run.status == ImportRun.Status.QUEUED and not run.error
    assert sent == [(importing.IMPORT_TASK, [str(run.pk)], {})]
    _worker_takes(sent)
    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE and run.report["created"] == 5
    assert Monitor.objects.filter(team=team).count() == 5

    _run_task(run)  # the first message turns up late after all
    _run_task(run, redelivered=True)
    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE
    assert Monitor.objects.filter(team=team).count() == 5  # none made twice


def test_a_late_first_message_and_the_one_sent_again_make_each_monitor_once(
    team, monkeypatch, sent, django_capture_on_commit_callbacks
):
    run = _queued_and_lost(team, monkeypatch, sent, django_capture_on_commit_callbacks)
    _stalled(run)
    fail_stale_checks_task()
    assert len(sent) == 1

    _run_task(run)  # the first message arrives after the sweep sent another
    _worker_takes(sent)  # the one sent again finds it taken

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE and run.report["created"] == 5
    assert Monitor.objects.filter(team=team).count() == 5


def test_an_import_whose_messages_are_all_lost_ends_saying_it_never_started(
    team, monkeypatch, sent, django_capture_on_commit_callbacks
):
    run = _queued_and_lost(team, monkeypatch, sent, django_capture_on_commit_callbacks)
    for _ in range(ImportRun.MAX_ATTEMPTS):
        _stalled(run)
        fail_stale_checks_task()
        run.refresh_from_db()
        assert run.status == ImportRun.Status.QUEUED
    assert len(sent) == ImportRun.MAX_ATTEMPTS
    _stalled(run)

    fail_stale_checks_task()

    run.refresh_from_db()
    assert run.status == ImportRun.Status.FAILED and run.finished_at is not None
    assert run.error == (
        "The import did not start: Pagewatch sent it to its workers several "
        "times and none of them made it. No monitors were made. Please import "
        "the list again, or ask whoever runs Pagewatch to check its workers and "
        "task queue."
    )
    assert len(sent) == ImportRun.MAX_ATTEMPTS
    assert Monitor.objects.filter(team=team).count() == 0


def test_an_import_waiting_in_a_busy_queue_is_not_sent_again_or_failed_as_stalled(
    team, monkeypatch, sent, django_capture_on_commit_callbacks
):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        run = _queued_and_lost(
            team, monkeypatch, sent, django_capture_on_commit_callbacks
        )
    # A sweep every STALLED_AFTER for over an hour: a running import would
    # have been sent again each time and failed by now.
    for sweep in range(1, 5):
        later = start + sweep * (ImportRun.STALLED_AFTER + timedelta(minutes=1))
        with time_machine.travel(later, tick=False):
            importing.go_on_with_stalled(timezone.now())

    run.refresh_from_db()
    assert run.status == ImportRun.Status.QUEUED and not run.error
    assert sent == [] and run.attempts == 0

    later = start + ImportRun.QUEUED_STALLED_AFTER + timedelta(minutes=1)
    with time_machine.travel(later, tick=False):
        assert importing.go_on_with_stalled(timezone.now()) == 1
    assert sent == [(importing.IMPORT_TASK, [str(run.pk)], {})]
