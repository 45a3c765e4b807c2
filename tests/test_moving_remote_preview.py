"""The Import page reading a running changedetection.io by its address and API
key: the upload request only keeps the address and the key, the preview task
reads the service (progress on the page), then forgets the key; the
service's errors end the preview with plain words. A fake changedetection.io
API on 127.0.0.1 answers."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.db.models import F
from django.test import Client
from django.utils import timezone
from django.views.debug import SafeExceptionReporterFilter

from checks import tasks as check_tasks
from monitors import tasks
from monitors.models import ImportRun, Membership, Monitor
from monitors.moving import importing, remote
from tests.sites import Request, Site, refused_url
from tests.test_moving_api import CD_KEY, WATCH, _changedetection

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"


@pytest.fixture
def web(client: Client, team, django_user_model) -> Client:
    user = django_user_model.objects.create_user("mia", "mia@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user)
    client.force_login(user)
    return client


@pytest.fixture
def queued(monkeypatch) -> list[tuple[str, list[str]]]:
    """The tasks the Import page sends, listed instead of reaching a broker:
    a test does the worker's part itself."""
    sent: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(
        importing.current_app, "send_task", lambda name, args: sent.append((name, args))
    )
    return sent


@pytest.fixture
def private_allowed(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def _ask(web: Client, url: str, key: str = CD_KEY, execute: Any = None):
    body = {"source": "changedetection", "url": url, "api_key": key}
    with execute(execute=True):
        return web.post("/import/", body)


def _many_watches(site: Site, count: int) -> None:
    """A changedetection.io with `count` watches, each with a snapshot."""

    def answer(status: int, body: Any, kind: str = "application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return status, {"content-type": kind}, data

    def handler(request: Request):
        if request.header("x-api-key") != CD_KEY:
            return answer(403, {"message": "Invalid access - API key invalid."})
        path = request.path.split("?")[0]
        if path == "/api/v1/watch":
            return answer(200, {f"w{n}": {} for n in range(count)})
        if path == "/api/v1/tags":
            return answer(200, {})
        parts = path.split("/")  # "", api, v1, watch, wN[, history, latest]
        n = int(parts[4][1:])
        if len(parts) == 7:
            return answer(200, f"Page {n}\n".encode(), "text/plain")
        watch = {"url": f"https://site{n}.example.com/", "title": f"Site {n}"}
        return answer(200, watch)

    site.handle("/api/v1/watch", handler)
    site.handle("/api/v1/tags", handler)
    for n in range(count):
        site.handle(f"/api/v1/watch/w{n}", handler)
        site.handle(f"/api/v1/watch/w{n}/history/latest", handler)


def _row_holds(run: ImportRun, secret: str) -> bool:
    """Whether any column of the run's row holds `secret`, as stored."""
    table = ImportRun._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [run.pk.hex])
        row = cursor.fetchone() or ()
        if not row:
            cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [str(run.pk)])
            row = cursor.fetchone()
    assert row, "the run's row was not found"
    return any(secret in str(value) for value in row)


def test_a_large_remote_is_answered_without_asking_the_remote_anything(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _many_watches(site, 150)
    response = _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)
    run = ImportRun.objects.get(team=team)
    assert response["Location"] == f"/import/{run.pk}/"
    assert site.requests == []
    assert run.status == ImportRun.Status.PREPARING
    assert queued == [(importing.PREVIEW_TASK, [str(run.pk)])]
    page = html.unescape(web.get(response["Location"]).content.decode())
    assert "Reading watches from changedetection.io…" in page
    assert CD_KEY not in page


def test_the_preview_task_reads_the_remote_then_forgets_its_key(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _many_watches(site, 150)
    run_url = _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)[
        "Location"
    ]
    run = ImportRun.objects.get(team=team)
    assert _row_holds(run, CD_KEY)  # until the task has used it
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED
    assert (run.total, run.done) == (150, 0)
    assert not _row_holds(run, CD_KEY)
    # One request for the list, one for the tags, two for each watch.
    assert len(site.requests) == 2 + 2 * 150
    page = html.unescape(web.get(run_url).content.decode())
    assert "Site 0" in page and "Site 149" in page
    assert CD_KEY not in page


def test_the_preview_task_reads_a_remote_over_a_few_kept_alive_connections(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _many_watches(site, 60)
    _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)
    run = ImportRun.objects.get(team=team)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED
    assert [s["ref"] for s in run.items] == [f"w{n}" for n in range(60)]
    assert len(site.requests) == 2 + 2 * 60
    # One client for the whole reading: its connections are used again,
    # not one opened per request.
    connections = {request.client_port for request in site.requests}
    assert len(connections) <= remote.CONCURRENCY


def test_a_remote_being_read_shows_how_many_watches_are_read(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _many_watches(site, 60)
    run_url = _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)[
        "Location"
    ]
    run = ImportRun.objects.get(team=team)
    seen: list[tuple[int, int]] = []
    record = ImportRun.record_reading

    def spy(self: ImportRun, done: int, total: int, now) -> None:
        seen.append((done, total))
        record(self, done, total, now)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ImportRun, "record_reading", spy)
        tasks.preview_import_task(str(run.pk))
    assert seen[0] == (0, 60) and seen[-1] == (50, 60)
    # As a poll sees a run half read: the words the page shows.
    reading = ImportRun.objects.create(
        team=team,
        source="changedetection",
        status=ImportRun.Status.PREPARING,
        remote_url=site.base_url,
        remote_key=CD_KEY,
    )
    reading.record_reading(1200, 5000, timezone.now())
    polled = web.get(f"/import/{reading.pk}/", HTTP_HX_REQUEST="true")
    text = re.sub(r"<[^>]+>", " ", html.unescape(polled.content.decode()))
    body = " ".join(text.split())
    assert polled.status_code == 200
    assert "Reading watches from changedetection.io… 1,200 of 5,000" in body
    assert CD_KEY not in body
    assert web.get(run_url, HTTP_HX_REQUEST="true")["HX-Refresh"] == "true"


def test_a_remote_preview_shows_what_the_remote_holds_as_before(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _changedetection(site)
    run_url = _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)[
        "Location"
    ]
    assert site.requests == []
    tasks.preview_import_task(str(ImportRun.objects.get(team=team).pk))
    page = html.unescape(web.get(run_url).content.decode())
    assert "Pricing" in page and "Every 2 hours from 01:36, UTC" in page
    assert "Tells a new channel “Discord (imported)”" in page
    run = ImportRun.objects.get(team=team)
    (state,) = run.items
    assert state["baselines"][0][1] == "Basic plan 12 EUR\n"
    assert state["urls"] == [WATCH["url"]]


def _failed_preview(web, team, url: str, key: str, capture) -> tuple[ImportRun, str]:
    run_url = _ask(web, url, key, execute=capture)["Location"]
    run = ImportRun.objects.get(team=team)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    assert not _row_holds(run, key)
    polled = web.get(run_url, HTTP_HX_REQUEST="true")
    assert polled.status_code == 286  # polling stops
    body = " ".join(html.unescape(polled.content.decode()).split())
    assert key not in body
    return run, body


def test_a_wrong_key_ends_the_preview_saying_so_and_is_forgotten(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _changedetection(site)
    _, body = _failed_preview(
        web, team, site.base_url, "wrong-key-123", django_capture_on_commit_callbacks
    )
    assert "changedetection.io refused the key (403): check the API key." in body
    assert "Nothing was imported." in body
    assert not Monitor.objects.exists()


def test_an_unreachable_remote_ends_the_preview_in_plain_words(
    web, team, queued, private_allowed, django_capture_on_commit_callbacks
):
    _, body = _failed_preview(
        web, team, refused_url(), CD_KEY, django_capture_on_commit_callbacks
    )
    assert "Could not read" in body and "Nothing was imported." in body
    assert "Traceback" not in body and "Errno" not in body


def test_a_service_that_is_not_changedetection_ends_the_preview_saying_so(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    site.page("/", "<h1>My blog</h1>")
    _, body = _failed_preview(
        web, team, site.base_url, CD_KEY, django_capture_on_commit_callbacks
    )
    assert "no changedetection.io API" in body and "check the address" in body


def test_a_remote_address_the_policy_forbids_is_never_asked(
    web, team, site, queued, django_capture_on_commit_callbacks
):
    _changedetection(site)  # on 127.0.0.1, not allowed here
    _, body = _failed_preview(
        web, team, site.base_url, CD_KEY, django_capture_on_commit_callbacks
    )
    assert site.requests == []
    assert "Could not read" in body and "Nothing was imported." in body


def test_a_watch_removed_while_being_read_is_a_row_saying_so(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    _many_watches(site, 3)
    site.remove("/api/v1/watch/w1")  # listed, then gone
    run_url = _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)[
        "Location"
    ]
    run = ImportRun.objects.get(team=team)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED
    reasons = {s["ref"]: s["reason"] for s in run.items}
    assert reasons["w0"] == reasons["w2"] == ""
    assert "removed from changedetection.io while it was being read" in reasons["w1"]
    page = html.unescape(web.get(run_url).content.decode())
    assert "Site 0" in page and "Site 2" in page
    assert not _row_holds(run, CD_KEY)


def test_a_remote_too_slow_to_read_ends_the_preview_saying_so(
    web,
    team,
    site,
    queued,
    private_allowed,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    _many_watches(site, 5)
    # No time at all to read in: spent before the first watch.
    monkeypatch.setattr(remote, "READ_BUDGET_SECONDS", 0)
    _, body = _failed_preview(
        web, team, site.base_url, CD_KEY, django_capture_on_commit_callbacks
    )
    assert "changedetection.io answered too slowly" in body
    assert "0 of 5 watches were read" in body


def test_a_preview_task_that_breaks_while_reading_still_forgets_the_key(
    web,
    team,
    site,
    queued,
    private_allowed,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    _changedetection(site)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(remote.Reading, "aget", broken)
    _, body = _failed_preview(
        web, team, site.base_url, CD_KEY, django_capture_on_commit_callbacks
    )
    assert "The preview could not be made" in body and "boom" not in body


@pytest.mark.parametrize("address", ["nope", "ftp://example.com", ""])
def test_an_address_that_cannot_be_one_is_refused_at_once_and_nothing_is_kept(
    web, team, queued, address, django_capture_on_commit_callbacks
):
    response = _ask(web, address, execute=django_capture_on_commit_callbacks)
    assert response.status_code == 400
    assert not ImportRun.objects.exists() and queued == []


def test_another_pagewatch_is_read_by_the_preview_task_too(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    monitor = {
        "id": "m1",
        "name": "Plain",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "UTC"},
        "targets": [{"type": "scrape", "urls": ["https://blog.example.com/"]}],
    }

    def monitors(request: Request):
        if request.header("authorization") != "Bearer pw-key":
            return 401, {}, b'{"error": "Unauthorized"}'
        return (
            200,
            {"content-type": "application/json"},
            json.dumps({"success": True, "data": [monitor]}).encode(),
        )

    site.handle("/v2/monitor", monitors)
    body = {"source": "firecrawl", "url": site.base_url, "api_key": "pw-key"}
    with django_capture_on_commit_callbacks(execute=True):
        run_url = web.post("/import/", body)["Location"]
    assert site.requests == []
    run = ImportRun.objects.get(team=team)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED and run.remote_key == ""
    assert "Plain" in html.unescape(web.get(run_url).content.decode())


def test_the_key_typed_on_the_import_page_is_hidden_from_error_reports(
    web, queued, django_capture_on_commit_callbacks
):
    response = _ask(
        web,
        "https://cd.example.com/",
        key="cd-secret-key-123",
        execute=django_capture_on_commit_callbacks,
    )
    assert response.status_code == 302
    # What Django's error mail and its debug page show of the request's form.
    shown = SafeExceptionReporterFilter().get_post_parameters(response.wsgi_request)
    assert "cd-secret-key-123" not in str(shown)
    assert shown["url"] == "https://cd.example.com/"


class WorkerKilled(BaseException):
    """The kernel ending a worker out of memory: nothing after it runs, no
    `finally` included (so the key is still stored)."""


def _asked_for_a_remote(web, team, execute) -> ImportRun:
    _ask(web, "https://cd.example.com/", execute=execute)
    run = ImportRun.objects.get(team=team)
    assert _row_holds(run, CD_KEY)
    return run


def test_a_preview_that_stops_its_worker_three_times_is_failed_and_forgets_the_key(
    web, team, queued, monkeypatch, django_capture_on_commit_callbacks
):
    run = _asked_for_a_remote(web, team, django_capture_on_commit_callbacks)

    def out_of_memory(run: ImportRun) -> None:
        raise WorkerKilled

    monkeypatch.setattr(importing, "build_preview", out_of_memory)
    # acks_late + reject_on_worker_lost: each death hands the message out again.
    for _ in range(3):
        with pytest.raises(WorkerKilled):
            tasks.preview_import_task(str(run.pk))
    tasks.preview_import_task(str(run.pk))  # the fourth delivery gives up
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    assert run.error.startswith("The preview stopped its worker three times")
    assert not _row_holds(run, CD_KEY)
    page = html.unescape(web.get(f"/import/{run.pk}/").content.decode())
    assert "stopped its worker three times" in page


def test_a_preview_task_that_comes_past_the_give_up_time_gives_it_up(
    web, team, queued, monkeypatch, django_capture_on_commit_callbacks
):
    run = _asked_for_a_remote(web, team, django_capture_on_commit_callbacks)
    built: list[ImportRun] = []
    monkeypatch.setattr(importing, "build_preview", built.append)
    late = run.created_at + ImportRun.PREVIEW_GIVEN_UP_AFTER + timedelta(seconds=1)
    with time_machine.travel(late, tick=False):
        tasks.preview_import_task(str(run.pk))
    assert built == []
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    assert "not made in time" in run.error
    assert not _row_holds(run, CD_KEY)


def test_the_stale_sweep_gives_up_a_preview_whose_reader_died_and_forgets_its_key(
    web, team, queued, private_allowed, django_capture_on_commit_callbacks
):
    # A worker killed outright while reading (SIGKILL, out of memory) never
    # reaches its `finally`: the sweep must forget the key even if nobody
    # opens the page again.
    run_url = _ask(web, refused_url(), execute=django_capture_on_commit_callbacks)[
        "Location"
    ]
    dead = ImportRun.objects.get(team=team)
    dead.record_reading(25, 300, timezone.now())
    stale = ImportRun.PREVIEW_GIVEN_UP_AFTER + timedelta(minutes=1)
    ImportRun.objects.filter(pk=dead.pk).update(
        created_at=F("created_at") - stale,
        started_at=F("created_at") - stale,
        progressed_at=F("created_at") - stale,
    )
    fresh = importing.start_remote_preview(team, "changedetection", refused_url(), "k2")
    assert _row_holds(dead, CD_KEY) and _row_holds(fresh, "k2")

    check_tasks.fail_stale_checks_task()

    dead.refresh_from_db()
    assert dead.status == ImportRun.Status.PREVIEW_FAILED
    assert (dead.remote_url, dead.remote_key) == ("", "")
    assert not _row_holds(dead, CD_KEY)
    assert dead.finished_at is not None
    assert "the worker making it stopped before it was done" in dead.error
    assert "API key given for the service has been forgotten" in dead.error
    # One still within its time is left to its worker, key and all.
    fresh.refresh_from_db()
    assert fresh.status == ImportRun.Status.PREPARING and fresh.remote_key == "k2"
    # The page says why, in the same words, and stops polling.
    polled = web.get(run_url, HTTP_HX_REQUEST="true")
    assert polled.status_code == 286
    body = " ".join(html.unescape(polled.content.decode()).split())
    assert "the worker making it stopped before it was done" in body
    assert CD_KEY not in body


def test_the_stale_sweep_leaves_a_preview_read_after_a_long_wait_in_the_queue(
    web, team, site, queued, private_allowed, django_capture_on_commit_callbacks
):
    """Every worker busy for ten minutes, then one reads the service: the
    sweep that comes while it reads (sixteen minutes after the upload) judges
    the preview by the worker's last sign of life, not by the upload, so it
    neither ends the preview nor takes the key from under the worker."""
    _many_watches(site, 120)
    run_url = _ask(web, site.base_url, execute=django_capture_on_commit_callbacks)[
        "Location"
    ]
    run = ImportRun.objects.get(team=team)
    record = ImportRun.record_reading
    during: list[tuple[str, bool, str]] = []

    def sweep_while_reading(self: ImportRun, done: int, total: int, now) -> None:
        record(self, done, total, now)
        if done == 50:
            later = run.created_at + timedelta(minutes=16)
            with time_machine.travel(later, tick=False):
                check_tasks.fail_stale_checks_task()
                polled = web.get(run_url, HTTP_HX_REQUEST="true")
            row = ImportRun.objects.get(pk=run.pk)
            text = re.sub(r"<[^>]+>", " ", html.unescape(polled.content.decode()))
            page = " ".join(text.split())
            during.append((row.status, _row_holds(row, CD_KEY), page))

    started = run.created_at + timedelta(minutes=10)
    with (
        pytest.MonkeyPatch.context() as patch,
        time_machine.travel(started, tick=False),
    ):
        patch.setattr(ImportRun, "record_reading", sweep_while_reading)
        tasks.preview_import_task(str(run.pk))

    ((status, key_kept, page),) = during
    assert status == ImportRun.Status.PREPARING
    assert key_kept
    assert "Reading watches from changedetection.io… 50 of 120" in page
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED and run.total == 120
    assert not _row_holds(run, CD_KEY)


def test_the_stale_sweep_gives_up_a_preview_whose_worker_went_silent(
    web, team, queued, django_capture_on_commit_callbacks
):
    """Its last sign of life (its start, or the last watches read) is what
    counts: fifteen minutes without one, and the preview and its key end."""
    run = _asked_for_a_remote(web, team, django_capture_on_commit_callbacks)
    assert run.start_preview_task(run.created_at + timedelta(minutes=10))
    with time_machine.travel(run.created_at + timedelta(minutes=12), tick=False):
        run.record_reading(25, 300, timezone.now())

    with time_machine.travel(run.created_at + timedelta(minutes=26), tick=False):
        check_tasks.fail_stale_checks_task()
    assert ImportRun.objects.get(pk=run.pk).status == ImportRun.Status.PREPARING
    with time_machine.travel(run.created_at + timedelta(minutes=28), tick=False):
        check_tasks.fail_stale_checks_task()

    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    assert "the worker making it stopped before it was done" in run.error
    assert not _row_holds(run, CD_KEY)
