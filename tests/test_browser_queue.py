"""Browser pages travel in batches of their own, on a queue of their own
(BROWSER_QUEUE), so slow browser pages never hold up plain fetches: chosen
at planning (options, remembered pages), handed over mid-check (a plain fetch
that looked built by scripts), and sent there again when lost.

None of these run a browser: a stand-in executable makes one look installed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from checks import runner
from checks.models import Check, CheckBatch, Heartbeat, PageState
from checks.tasks import run_check_task
from config.celery import app as celery_app
from monitors.models import Monitor, Target, Team

pytestmark = pytest.mark.django_db

APP = '<html><body><div id="app"></div><script src="/app.js"></script></body></html>'


@pytest.fixture(autouse=True)
def browser_installed(settings, tmp_path: Path) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    stand_in = tmp_path / "chromium"
    stand_in.write_text("#!/bin/sh\nexit 1\n")
    stand_in.chmod(0o755)
    settings.BROWSER_EXECUTABLE = str(stand_in)
    settings.BROWSER_QUEUE = "browser"


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, str | None]]:
    """(batch id, queue) of every batch the engine queues."""
    queued: list[tuple[int, str | None]] = []

    def send_task(name: str, args: Any = None, **options: Any) -> None:
        if name == runner.RUN_BATCH_TASK:
            queued.append((args[0], options.get("queue")))

    monkeypatch.setattr(celery_app, "send_task", send_task)
    return queued


def make_check(team: Team, *targets: dict[str, Any]) -> Check:
    monitor = Monitor.objects.create(team=team, name="Shop", schedule_cron="0 3 * * *")
    for position, target in enumerate(targets):
        Target.objects.create(
            monitor=monitor, type="scrape", position=position, **target
        )
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return check


def test_pages_whose_options_need_a_browser_get_batches_on_the_browser_queue(
    team, site, settings, sent
):
    settings.BROWSER_BATCH_SIZE = 2
    plain = [site.html(f"/p{i}", "P", "<p>plain</p>") for i in range(2)]
    shown = [site.html(f"/s{i}", "S", "<p>shot</p>") for i in range(3)]
    check = make_check(
        team,
        {"urls": plain},
        {"urls": shown, "scrape_options": {"formats": ["screenshot"]}},
    )

    run_check_task(str(check.pk))

    batches = list(check.batches.order_by("number"))
    assert [(len(b.pages), b.uses_browser, b.status) for b in batches] == [
        (2, False, "done"),
        (2, True, "pending"),
        (1, True, "pending"),
    ]
    assert sent == [(batches[1].pk, "browser"), (batches[2].pk, "browser")]
    assert site.requests_to("/s0") == []


def test_a_page_remembered_as_built_by_scripts_is_planned_for_the_browser(
    team, site, sent
):
    url = site.html("/app", "App", "<p>rendered later</p>")
    check = make_check(team, {"urls": [url]})
    PageState.objects.create(
        monitor=check.monitor,
        target_id=check.monitor.targets.get().id,
        url=url,
        url_hash=PageState.hash_url(url),
        fetcher="browser",
    )

    run_check_task(str(check.pk))

    batch = check.batches.get()
    assert batch.uses_browser and batch.status == "pending"
    assert sent == [(batch.pk, "browser")]
    assert site.requests == []  # not even a plain fetch first


def test_a_plain_fetch_that_looks_built_by_scripts_is_handed_to_a_browser_batch(
    team, site, sent
):
    app = site.page("/app", APP)
    docs = site.html("/docs", "Docs", "<p>" + "Written out in full. " * 20 + "</p>")
    check = make_check(team, {"urls": [docs, app]})

    run_check_task(str(check.pk))

    check.refresh_from_db()
    plain, handed = check.batches.order_by("number")
    assert plain.status == "done" and not plain.uses_browser
    assert handed.uses_browser and handed.status == "pending"
    target_id, url, scrape_id, *rest = handed.pages[0]
    assert url == app and rest[-1].startswith("an empty app root")
    assert sent == [(handed.pk, "browser")]
    assert (check.status, check.pages_total, check.pages_done) == ("running", 2, 1)
    assert list(check.pages.values_list("url", flat=True)) == [docs]


def test_with_no_browser_queue_browser_batches_go_with_the_rest(
    team, site, settings, sent
):
    settings.BROWSER_QUEUE = ""
    url = site.html("/s", "S", "<p>shot</p>")
    check = make_check(
        team,
        {"urls": [site.html("/p", "P", "<p>x</p>")]},
        {"urls": [url], "scrape_options": {"waitFor": 100}},
    )
    runner.claim(check)

    runner.enqueue_batches(runner.plan(check))

    assert [queue for _, queue in sent] == [None, None]


def test_a_lost_browser_batch_is_sent_again_to_the_browser_queue(team, site, sent):
    url = site.html("/s", "S", "<p>shot</p>")
    check = make_check(team, {"urls": [url], "scrape_options": {"waitFor": 100}})
    run_check_task(str(check.pk))
    batch = check.batches.get()
    sent.clear()
    long_ago = timezone.now() - CheckBatch.REQUEUE_AFTER - timedelta(minutes=1)
    CheckBatch.objects.filter(pk=batch.pk).update(heartbeat_at=long_ago)
    # A browser worker took a batch a moment ago: the message was lost.
    Heartbeat.beat(Heartbeat.BROWSER, timezone.now() - timedelta(minutes=1))

    runner.fail_stale_checks(timezone.now())

    assert sent == [(batch.pk, "browser")]


def browser_check_left_waiting(team: Team, site: Any) -> Check:
    """A check whose browser batch nobody took for REQUEUE_AFTER."""
    url = site.html("/s", "S", "<p>shot</p>")
    check = make_check(team, {"urls": [url], "scrape_options": {"waitFor": 100}})
    run_check_task(str(check.pk))
    long_ago = timezone.now() - CheckBatch.REQUEUE_AFTER - timedelta(minutes=1)
    check.batches.update(heartbeat_at=long_ago)
    return check


def test_a_check_whose_browser_pages_no_worker_takes_ends_saying_so(
    team, site, sent, caplog
):
    # Procfile.large's check worker without its browser worker: nothing
    # serves the browser queue, and never did.
    check = browser_check_left_waiting(team, site)
    sent.clear()

    runner.fail_stale_checks(timezone.now())

    check.refresh_from_db()
    assert check.status == Check.Status.FAILED
    assert check.error == (
        "Monitor check needs a web browser for some pages, and no worker that "
        "runs one took them within 10 minutes; it was ended."
    )
    assert list(check.batches.values_list("status", flat=True)) == ["ended"]
    assert sent == []
    assert "no worker serves the browser queue" in caplog.text


NO_BROWSER_WARNING = (
    "Pages that need a web browser are waiting and no worker that runs one is "
    "taking them: start a browser worker. Their checks end after 10 minutes "
    "otherwise."
)


def test_healthz_warns_while_browser_pages_wait_with_no_browser_worker(
    client, team, site, sent
):
    check = browser_check_left_waiting(team, site)
    assert client.get("/healthz").json()["warnings"] == [NO_BROWSER_WARNING]

    # A browser worker takes a batch: the warning goes.
    Heartbeat.beat(Heartbeat.BROWSER, timezone.now())
    assert "warnings" not in client.get("/healthz").json()

    Heartbeat.objects.filter(name=Heartbeat.BROWSER).delete()
    runner.fail_stale_checks(timezone.now())  # the check ends: nothing waits
    check.refresh_from_db()
    assert check.status == Check.Status.FAILED
    assert "warnings" not in client.get("/healthz").json()


def test_how_long_browser_pages_wait_is_said_as_long_as_they_wait(
    client, team, site, sent, monkeypatch
):
    """The words said "10 minutes" whatever CheckBatch.REQUEUE_AFTER was."""
    monkeypatch.setattr(CheckBatch, "REQUEUE_AFTER", timedelta(minutes=20))
    check = browser_check_left_waiting(team, site)

    warnings = client.get("/healthz").json()["warnings"]
    runner.fail_stale_checks(timezone.now())

    assert warnings == [NO_BROWSER_WARNING.replace("10 minutes", "20 minutes")]
    check.refresh_from_db()
    assert check.error == (
        "Monitor check needs a web browser for some pages, and no worker that "
        "runs one took them within 20 minutes; it was ended."
    )


def test_a_check_whose_browser_worker_went_quiet_long_ago_ends_saying_so(
    team, site, sent
):
    Heartbeat.beat(Heartbeat.BROWSER, timezone.now() - timedelta(hours=2))
    check = browser_check_left_waiting(team, site)

    runner.fail_stale_checks(timezone.now())

    check.refresh_from_db()
    assert check.status == Check.Status.FAILED
    assert "needs a web browser" in check.error


def test_browser_pages_waiting_behind_a_browser_worker_busy_with_a_long_batch_wait(
    team, site, sent
):
    # The browser worker last took a batch long ago, but is still on it.
    Heartbeat.beat(Heartbeat.BROWSER, timezone.now() - timedelta(hours=2))
    busy = browser_check_left_waiting(team, site)
    busy.batches.update(status=CheckBatch.Status.RUNNING, heartbeat_at=timezone.now())
    site.html("/t", "T", "<p>two</p>")
    check = make_check(
        team, {"urls": [site.url("/t")], "scrape_options": {"waitFor": 100}}
    )
    run_check_task(str(check.pk))
    long_ago = timezone.now() - CheckBatch.REQUEUE_AFTER - timedelta(minutes=1)
    check.batches.update(heartbeat_at=long_ago)
    sent.clear()

    runner.fail_stale_checks(timezone.now())

    check.refresh_from_db()
    assert check.status == Check.Status.RUNNING
    assert sent == [(check.batches.get().pk, "browser")]
