"""A check fanned out into page batches, lost batches, and work a page is spared
(checks.runner, checks.pipeline), against real pages served on 127.0.0.1."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from checks import runner
from checks.models import Check, CheckBatch, PageResult, PageState
from checks.pipeline import extract as extract_stage
from checks.tasks import run_batch_task, run_check_task
from config.celery import app as celery_app
from monitors.models import Monitor, Target, Team

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, list]]:
    """Tasks the engine queues (by name), instead of a broker."""
    queued: list[tuple[str, list]] = []

    def send_task(name: str, args: Any = None, **_options: Any) -> None:
        queued.append((name, list(args or [])))

    monkeypatch.setattr(celery_app, "send_task", send_task)
    return queued


def make_check(team: Team, urls: list[str], **options: Any) -> Check:
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 3 * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=urls, **options)
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return check


def batch_ids(sent: list[tuple[str, list]]) -> list[int]:
    return [args[0] for name, args in sent if name == runner.RUN_BATCH_TASK]


def test_a_big_check_runs_its_first_batch_and_queues_the_others(
    team, site, settings, sent
):
    settings.CHECK_BATCH_SIZE = 2
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>{i}</p>") for i in range(5)]
    check = make_check(team, urls)

    run_check_task(str(check.pk))

    check.refresh_from_db()
    batches = list(check.batches.order_by("number"))
    assert [len(b.pages) for b in batches] == [2, 2, 1]
    assert [b.status for b in batches] == ["done", "pending", "pending"]
    assert batch_ids(sent) == [batches[1].pk, batches[2].pk]
    assert (check.status, check.pages_total, check.pages_done) == ("running", 5, 2)


@pytest.mark.parametrize("when", ["after its pages", "before it is finished"])
def test_a_check_deleted_while_its_task_runs_ends_the_task_quietly(
    team, site, monkeypatch, caplog, when
):
    check = make_check(team, [site.html("/p", "P", "<p>p</p>")])
    patched = "execute" if when == "after its pages" else "finish_if_done"
    real = getattr(runner, patched)

    def deleted_meanwhile(*args: Any, **kwargs: Any) -> Any:
        if patched == "finish_if_done":
            Check.objects.filter(pk=check.pk).discard()  # an admin, meanwhile
        result = real(*args, **kwargs)
        Check.objects.filter(pk=check.pk).discard()
        return result

    monkeypatch.setattr(runner, patched, deleted_meanwhile)
    caplog.set_level("INFO", logger="checks.runner")

    run_check_task(str(check.pk))

    assert not Check.objects.filter(pk=check.pk).exists()
    assert f"Check {check.pk} of monitor" in caplog.text
    assert "was deleted while it ran" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert Monitor.objects.get(pk=check.monitor_id).current_check_id is None


def test_the_batch_that_ends_last_finishes_the_check_once(team, site, settings, sent):
    settings.CHECK_BATCH_SIZE = 2
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>{i}</p>") for i in range(5)]
    check = make_check(team, urls)
    run_check_task(str(check.pk))
    first, last = batch_ids(sent)

    run_batch_task(last)
    assert Check.objects.get(pk=check.pk).status == Check.Status.RUNNING
    run_batch_task(first)
    run_batch_task(first)  # a duplicate message: nothing left to do

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED
    assert check.summary == {
        "totalPages": 5, "same": 0, "changed": 0, "new": 5, "removed": 0, "error": 0,
    }  # fmt: skip
    assert check.pages.count() == 5 and check.pages_done == 5
    assert all(len(site.requests_to(f"/p{i}")) == 1 for i in range(5))
    assert Monitor.objects.get(pk=check.monitor_id).last_check_summary == check.summary


def test_a_batch_held_by_a_live_worker_is_retried_later(team, site, settings, sent):
    settings.CHECK_BATCH_SIZE = 1
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>{i}</p>") for i in range(2)]
    check = make_check(team, urls)
    run_check_task(str(check.pk))
    [other] = batch_ids(sent)
    CheckBatch.objects.filter(pk=other).update(
        status=CheckBatch.Status.RUNNING, heartbeat_at=timezone.now()
    )

    assert runner.run_batch(other) is False  # run_batch_task retries it later
    assert site.requests_to("/p1") == []


def test_a_lost_batch_is_sent_again_and_its_check_completes(team, site, settings, sent):
    settings.CHECK_BATCH_SIZE = 1
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>{i}</p>") for i in range(2)]
    check = make_check(team, urls)
    run_check_task(str(check.pk))
    [lost] = batch_ids(sent)
    # A worker claimed it, then was killed (SIGKILL: no reject, no ack).
    long_ago = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    CheckBatch.objects.filter(pk=lost).update(
        status=CheckBatch.Status.RUNNING, attempts=1, heartbeat_at=long_ago
    )
    Check.objects.filter(pk=check.pk).update(heartbeat_at=long_ago)
    sent.clear()

    assert runner.fail_stale_checks(timezone.now()) == 0

    assert batch_ids(sent) == [lost]
    assert CheckBatch.objects.get(pk=lost).status == CheckBatch.Status.PENDING
    run_batch_task(lost)
    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED and check.summary["new"] == 2


def test_a_batch_lost_three_times_fails_its_check_with_the_reason(
    team, site, settings, sent
):
    settings.CHECK_BATCH_SIZE = 1
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>{i}</p>") for i in range(2)]
    check = make_check(team, urls)
    run_check_task(str(check.pk))
    [poison] = batch_ids(sent)
    long_ago = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    CheckBatch.objects.filter(pk=poison).update(
        status=CheckBatch.Status.RUNNING,
        attempts=runner.MAX_ATTEMPTS,
        heartbeat_at=long_ago,
    )

    assert runner.fail_stale_checks(timezone.now()) == 1

    check.refresh_from_db()
    assert (check.status, check.error) == ("failed", runner.GIVEN_UP_MESSAGE)
    assert check.summary["totalPages"] == 1  # the batch that did finish stays
    assert CheckBatch.objects.get(pk=poison).status == CheckBatch.Status.ENDED
    assert Monitor.objects.get(pk=check.monitor_id).current_check_id is None


def test_a_check_whose_finisher_died_is_finished_by_the_sweeper(team, site):
    check = make_check(team, [site.html("/p", "P", "<p>p</p>")])
    assert runner.claim(check)
    [batch] = runner.plan(check)
    runner._run_batch(batch, None)  # the worker died before finishing the check
    long_ago = timezone.now() - runner.stale_running_after() - timedelta(seconds=1)
    Check.objects.filter(pk=check.pk).update(heartbeat_at=long_ago)

    assert runner.fail_stale_checks(timezone.now()) == 0

    check.refresh_from_db()
    assert check.status == Check.Status.COMPLETED and check.summary["new"] == 1


def test_a_crash_analysing_one_page_fails_that_page_at_once(team, site, monkeypatch):
    good = site.html("/good", "Good", "<p>fine</p>")
    bad = site.html("/bad", "Bad", "<p>poison</p>")
    real_extract = extract_stage.extract

    def extract(body: bytes, **kwargs: Any) -> Any:
        if b"poison" in body:
            raise RuntimeError("a parser bug")
        return real_extract(body, **kwargs)

    monkeypatch.setattr(extract_stage, "extract", extract)

    check = runner.run(make_check(team, [good, bad]))

    assert check.status == Check.Status.PARTIAL
    failed = check.pages.get(url=bad)
    assert (failed.status, failed.error_kind) == ("error", "internal")
    assert (
        failed.error == "The page could not be analysed because of an internal error."
    )
    assert check.pages.get(url=good).status == PageResult.Status.NEW


def test_an_unchanged_body_is_never_extracted_again(team, site, monkeypatch):
    url = site.html("/p", "Pricing", "<p>Starter costs $19.</p>")
    check = make_check(team, [url])
    runner.run(check)
    extracted: list[str] = []
    real_extract = extract_stage.extract

    def counting(body: bytes, **kwargs: Any) -> Any:
        extracted.append(kwargs["url"])
        return real_extract(body, **kwargs)

    monkeypatch.setattr(extract_stage, "extract", counting)
    again = Check.objects.create(monitor=check.monitor, trigger="manual")

    page = runner.run(again).pages.get()

    assert (page.status, extracted) == ("same", [])
    assert page.metadata["title"] == "Pricing"  # replayed from the baseline
    assert page.current_snapshot_id == page.previous_snapshot_id

    Target.objects.filter(monitor=check.monitor).update(
        scrape_options={"onlyMainContent": False}
    )
    third = Check.objects.create(monitor=check.monitor, trigger="manual")
    assert runner.run(third).pages.get().status == "same"
    assert extracted == [url]  # other options: the same bytes extracted again


def test_a_baseline_with_an_etag_is_revalidated_and_304_is_same(team, site):
    body = "<!doctype html><title>Docs</title><p>Version 1</p>"
    url = site.page("/docs", body, headers={"ETag": '"v1"'})
    check = make_check(team, [url])
    runner.run(check)
    assert PageState.objects.get().etag == '"v1"'
    site.page("/docs", b"", status=304, headers={"ETag": '"v1"'})
    again = Check.objects.create(monitor=check.monitor, trigger="manual")

    page = runner.run(again).pages.get()

    assert site.requests_to("/docs")[-1].headers["If-None-Match"] == '"v1"'
    assert (page.status, page.status_code) == ("same", 200)
    assert page.metadata["title"] == "Docs"
    assert page.current_snapshot_id == page.previous_snapshot_id


def test_a_304_answer_never_shows_as_the_pages_status_code(team, site):
    # The 304 answers Pagewatch's conditional request, not a reader's: the
    # page still answers 200, check after check, in both places it is shown.
    body = "<!doctype html><title>Docs</title><p>Version 1</p>"
    url = site.page("/docs", body, headers={"ETag": '"v1"'})
    check = make_check(team, [url])
    runner.run(check)
    site.page("/docs", b"", status=304, headers={"ETag": '"v1"'})
    seen = []
    for _ in range(3):
        again = Check.objects.create(monitor=check.monitor, trigger="manual")
        page = runner.run(again).pages.get()
        seen.append((page.status, page.status_code, page.metadata["statusCode"]))
    site.page("/docs", body, headers={"ETag": '"v1"'})
    last = runner.run(
        Check.objects.create(monitor=check.monitor, trigger="manual")
    ).pages.get()
    seen.append((last.status, last.status_code, last.metadata["statusCode"]))

    assert seen == [("same", 200, 200)] * 4


def test_a_304_without_a_baseline_is_an_error_not_a_page(team, site):
    url = site.page("/odd", b"", status=304)

    page = runner.run(make_check(team, [url])).pages.get()

    assert (page.status, page.error_kind) == ("error", "http_4xx")


def test_a_crash_after_one_pages_fetch_fails_that_page_and_the_check_ends(
    team, site, monkeypatch
):
    from checks.pipeline import batch as batch_stage

    good = site.html("/good", "Good", "<p>Fine.</p>")
    bad = site.html("/bad", "Bad", "<p>Crashes after its fetch.</p>")
    real = batch_stage.built_by_scripts

    def crashing(job: Any, fetched: Any, *rest: Any) -> Any:
        if job.url == bad:
            raise RuntimeError("a bug after the fetch")
        return real(job, fetched, *rest)

    monkeypatch.setattr(batch_stage, "built_by_scripts", crashing)
    monkeypatch.setattr(batch_stage, "HEARTBEAT_SECONDS", 0.2)
    heartbeats: list[int] = []
    real_heartbeat = batch_stage.heartbeat

    def counted(*args: Any) -> None:
        heartbeats.append(1)
        if len(heartbeats) > 100:  # a batch waiting for a dead task: end the test
            raise AssertionError("the batch waits for a page that will never arrive")
        real_heartbeat(*args)

    monkeypatch.setattr(batch_stage, "heartbeat", counted)

    check = runner.run(make_check(team, [good, bad]))

    assert check.status == Check.Status.PARTIAL
    crashed = check.pages.get(url=bad)
    assert (crashed.status, crashed.error_kind) == ("error", "internal")
    assert check.pages.get(url=good).status == PageResult.Status.NEW
