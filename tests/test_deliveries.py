"""The outbox workflow: rows written with the event, queued after commit,
claimed once, swept again when the broker lost them or a worker died."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from celery import Celery, current_app
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from checks import notify
from checks.models import Check, Delivery, DeliveryAttempt, PageResult
from checks.notify import drain, outbox, sweep
from checks.notify.tasks import deliver_task, sweep_deliveries_task
from checks.notify.transports import DeliveryError
from config import valkey
from monitors.templatetags.pagewatch import delivery_error, event_label
from tests.notifying import (
    make_monitor,
    webhook_config,
)

# The shared fixtures (site, receiver, queued, scenario).
pytest_plugins = ["tests.notifying"]

pytestmark = pytest.mark.django_db

START = datetime(2026, 5, 17, 15, 30, tzinfo=UTC)


def completed_only(url: str) -> dict:
    return webhook_config(url, events=["monitor.check.completed"])


def test_a_row_is_written_with_the_page_and_queued_only_after_commit(
    team, receiver, queued, django_capture_on_commit_callbacks
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = Check.objects.create(monitor=monitor, trigger="manual", status="running")
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        page = PageResult.objects.create(
            check_run=check, target_id=check.pk, url="https://e.com/", status="new"
        )
        notify.on_page_result(page)
        assert Delivery.objects.filter(check_run=check).count() == 1
        assert queued == []  # nothing reaches the broker inside the transaction
    assert len(callbacks) == 1
    callbacks[0]()
    assert queued == [Delivery.objects.get().pk]


def test_a_rolled_back_page_leaves_no_row_and_queues_nothing(
    team, receiver, queued, django_capture_on_commit_callbacks
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = Check.objects.create(monitor=monitor, trigger="manual", status="running")
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        page = PageResult.objects.create(
            check_run=check, target_id=check.pk, url="https://e.com/", status="new"
        )
        notify.on_page_result(page)
        raise RuntimeError("the runner failed")
    assert callbacks == []
    assert not Delivery.objects.exists()
    assert queued == []


def test_finishing_a_check_twice_writes_its_rows_once(team, receiver, scenario, queued):
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    check = scenario.finish(scenario.start(monitor))
    notify.on_check_finished(check)
    assert Delivery.objects.filter(check_run=check).count() == 1


def test_a_broker_that_refuses_the_message_only_delays_the_delivery(
    team, receiver, scenario, monkeypatch, time_machine
):
    time_machine.move_to(START, tick=False)

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(outbox, "current_app", SimpleNamespace(send_task=refuse))
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))  # enqueue fails: no exception
    delivery = Delivery.objects.get()
    assert delivery.status == "pending"

    sent: list[int] = []
    monkeypatch.setattr(outbox, "enqueue", sent.append)
    assert sweep.sweep() == 0  # queued just now: give the broker a chance
    time_machine.shift(outbox.REQUEUE_AFTER + timedelta(seconds=1))
    assert sweep.sweep() == 1
    assert sent == [delivery.pk]


def _completed_and_page(team, receiver, scenario):
    """A check with one page event and its monitor.check.completed, both
    still pending."""
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = scenario.start(monitor)
    scenario.page(check, "https://e.com/", "changed")
    scenario.finish(check)
    page = Delivery.objects.get(check_run=check, event="monitor.page")
    completed = Delivery.objects.get(check_run=check, event="monitor.check.completed")
    return page, completed


def test_the_check_completed_event_waits_for_its_page_events_first_answer(
    team, receiver, scenario, queued
):
    page, completed = _completed_and_page(team, receiver, scenario)
    queued.clear()

    assert drain.deliver(completed.pk) is None  # a page is not answered yet
    completed.refresh_from_db()
    assert completed.status == "pending" and completed.attempts == 0
    assert receiver.requests == []

    drain.deliver(page.pk)  # its answer lets the completed event go
    assert queued == [completed.pk]
    queued.run()
    completed.refresh_from_db()
    assert completed.status == "delivered"
    events_in_order = [p["type"] for p in receiver.payloads()]
    assert events_in_order == ["monitor.page", "monitor.check.completed"]


def test_a_page_event_that_failed_its_first_attempt_holds_nothing_back(
    team, receiver, scenario, queued
):
    page, completed = _completed_and_page(team, receiver, scenario)
    receiver.then(500)
    drain.deliver(page.pk)
    page.refresh_from_db()
    assert page.status == "pending" and page.attempts == 1  # retried later

    drain.deliver(completed.pk)
    completed.refresh_from_db()
    assert completed.status == "delivered"


def test_a_page_event_lost_for_long_no_longer_holds_the_check_completed_event(
    team, receiver, scenario, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    _page, completed = _completed_and_page(team, receiver, scenario)
    time_machine.shift(drain.ORDER_WAIT - timedelta(seconds=1))
    assert drain.deliver(completed.pk) is None
    time_machine.shift(timedelta(seconds=2))
    drain.deliver(completed.pk)
    completed.refresh_from_db()
    assert completed.status == "delivered"


@pytest.fixture
def redis_broker(redis_server):
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    previous = current_app._get_current_object()
    app = Celery(
        "pagewatch-outbox-test",
        broker=valkey.broker_url(redis_server),
        set_as_current=False,
    )
    app.conf.task_serializer = "json"
    app.conf.accept_content = ["json"]
    app.set_current()  # deliver_task (a shared task) now publishes to this broker
    try:
        yield client
    finally:
        previous.set_current()
        app.close()
        client.flushdb()


def test_a_delivery_survives_redis_being_flushed(
    team, receiver, scenario, redis_broker, time_machine
):
    time_machine.move_to(START, tick=False)
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))  # really queued on Redis after commit
    delivery = Delivery.objects.get()
    assert redis_broker.llen("celery") == 1

    redis_broker.flushdb()  # Redis restarts empty: the message is gone

    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.attempts == 0
    assert sweep_deliveries_task() == 0
    time_machine.shift(outbox.REQUEUE_AFTER + timedelta(seconds=1))
    assert sweep_deliveries_task() == 1

    [raw] = redis_broker.lrange("celery", 0, -1)
    message = json.loads(raw)
    assert message["headers"]["task"] == deliver_task.name
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    assert args == [delivery.pk]
    deliver_task(*args)  # what the worker does with it

    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert len(receiver.requests) == 1


def test_a_delivery_queued_by_the_previous_release_still_runs(
    team, receiver, scenario, redis_broker
):
    old_name = "checks.notification_tasks.deliver_task"
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))
    delivery = Delivery.objects.get()
    redis_broker.flushdb()
    # What the previous release's web process or sweeper left in the broker.
    current_app.send_task(old_name, args=[delivery.pk])

    [raw] = redis_broker.lrange("celery", 0, -1)
    message = json.loads(raw)
    assert message["headers"]["task"] == old_name
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    worker_task = current_app.tasks[message["headers"]["task"]]  # the worker's lookup
    assert worker_task.time_limit == deliver_task.time_limit
    worker_task(*args)

    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert len(receiver.requests) == 1
    assert deliver_task.name == "checks.notify.tasks.deliver_task"


def test_a_sweep_queued_by_the_previous_release_still_runs(redis_broker):
    sweep = current_app.tasks["checks.notification_tasks.sweep_deliveries_task"]

    assert sweep() == 0  # nothing due, but the name is known and runs the sweep
    assert sweep.time_limit == sweep_deliveries_task.time_limit


def test_a_claim_left_by_a_dead_worker_is_released_and_queued_again(
    team, receiver, scenario, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))
    queued.clear()
    delivery = Delivery.objects.get()
    # A worker claimed it, then was killed before recording anything.
    Delivery.objects.filter(pk=delivery.pk).update(
        status="sending", claimed_at=START, attempts=1
    )
    assert sweep.sweep() == 0  # within the lease: maybe still working

    time_machine.shift(drain.CLAIM_LEASE + timedelta(seconds=1))
    assert sweep.sweep() == 1
    assert queued == [delivery.pk]
    delivery.refresh_from_db()
    assert delivery.status == "pending"
    lost = DeliveryAttempt.objects.get()
    assert lost.number == 1 and "worker stopped" in lost.error

    queued.run()
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2


def test_two_sweeps_queue_a_due_row_once(
    team, receiver, scenario, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))
    queued.clear()
    time_machine.shift(outbox.REQUEUE_AFTER + timedelta(seconds=1))
    assert sweep.sweep() + sweep.sweep() == 1
    assert len(queued) == 1


def waiting_rows(check: Check, count: int, **fields) -> None:
    """`count` page events of `check` that a sweep has to deal with."""
    Delivery.objects.bulk_create(
        Delivery(
            kind=Delivery.Kind.WEBHOOK,
            monitor=check.monitor,
            check_run=check,
            event="monitor.page",
            url="https://hooks.example/in",
            **fields,
        )
        for _ in range(count)
    )


def sweep_queries() -> int:
    with CaptureQueriesContext(connection) as queries:
        sweep.sweep()
    return len(queries)


def test_a_sweep_queues_a_whole_batch_of_retries_in_the_same_few_queries(
    team, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    monitor = make_monitor(team, webhook=webhook_config("https://hooks.example/in"))
    check = Check.objects.create(monitor=monitor, trigger="manual", status="completed")
    due = {"status": "pending", "attempts": 1, "next_attempt_at": START}
    waiting_rows(check, 3, **due)
    few = sweep_queries()
    waiting_rows(check, 30, **due)
    assert sweep_queries() == few
    assert len(queued) == 33 == len(set(queued))
    assert not Delivery.objects.filter(queued_at__isnull=True).exists()


def test_a_sweep_releases_a_batch_of_dead_claims_and_each_check_once(
    team, queued, time_machine, monkeypatch
):
    time_machine.move_to(START, tick=False)
    monitor = make_monitor(team, webhook=webhook_config("https://hooks.example/in"))
    check = Check.objects.create(monitor=monitor, trigger="manual", status="completed")
    dead = {"status": "sending", "attempts": 1, "claimed_at": START}
    waiting_rows(check, 2, **dead)
    time_machine.shift(drain.CLAIM_LEASE + timedelta(seconds=1))
    two = sweep_queries()
    time_machine.move_to(START, tick=False)
    waiting_rows(check, 6, **dead)
    time_machine.shift(drain.CLAIM_LEASE + timedelta(seconds=1))
    # Each claim: its own transaction, update and attempt row; the check's
    # notificationStatus is worked out once, not once per claim.
    assert sweep_queries() - two <= 4 * 4

    waiting_rows(check, 5, **dead | {"claimed_at": START})
    monkeypatch.setattr(sweep, "SWEEP_BATCH", 3)
    sweep.sweep()
    assert Delivery.objects.filter(status="sending").count() == 2


@pytest.mark.parametrize("attempt", range(1, drain.MAX_ATTEMPTS))
def test_retry_waits_are_never_shorter_than_the_schedule(attempt):
    floor = drain.RETRY_DELAYS[attempt - 1]
    for _ in range(50):
        wait = drain.retry_delay(attempt, DeliveryError("x"))
        assert floor <= wait <= floor * (1 + drain.JITTER)


def test_retry_after_lengthens_the_wait_but_is_capped():
    longer = DeliveryError("x", retry_after=timedelta(hours=2))
    assert drain.retry_delay(1, longer) == timedelta(hours=2)
    huge = DeliveryError("x", retry_after=timedelta(days=30))
    assert drain.retry_delay(1, huge) == drain.RETRY_AFTER_MAX
    shorter = DeliveryError("x", retry_after=timedelta(seconds=1))
    assert drain.retry_delay(1, shorter) >= timedelta(minutes=1)


def test_permanent_errors_and_the_last_attempt_are_not_retried():
    assert drain.retry_delay(1, DeliveryError("x", permanent=True)) is None
    assert drain.retry_delay(drain.MAX_ATTEMPTS, DeliveryError("x")) is None


def test_deliver_ignores_unknown_and_finished_rows(team, receiver, scenario, queued):
    assert deliver_task(987654) is None
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))
    queued.run()
    queued.append(Delivery.objects.get().pk)
    queued.run()  # a replayed message
    assert len(receiver.requests) == 1


def test_an_unexpected_crash_is_recorded_and_retried(
    team, receiver, scenario, queued, monkeypatch
):
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))

    def crash(self, delivery):
        raise KeyError("bug")

    monkeypatch.setattr(
        "checks.notify.kinds.firecrawl_webhook.FirecrawlWebhookKind.prepare", crash
    )
    queued.run()
    delivery = Delivery.objects.get()
    assert delivery.status == "pending" and delivery.attempts == 1
    assert delivery.last_error == "Internal error (KeyError)."


def test_notification_status_has_the_reference_shape(team, receiver, scenario, queued):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = scenario.run(monitor, [("https://e.com/a", "same")])
    status = check.notification_status
    assert set(status) == {"webhook", "email"}
    assert {
        "attempted",
        "success",
        "delivered",
        "queued",
        "skipped",
        "statusCode",
        "error",
        "deliveredAt",
    } <= set(status["webhook"])
    assert status["webhook"]["queued"] is True
    assert status["webhook"]["attempted"] is False
    assert {
        "attempted",
        "success",
        "recipients",
        "pendingRecipients",
        "unsubscribedRecipients",
        "error",
    } <= set(status["email"])
    assert status["email"]["skipped"] is True
    assert status["email"]["reason"] == "disabled"

    queued.run()
    check.refresh_from_db()
    assert check.notification_status["webhook"]["deliveries"] == {
        "total": 2,
        "delivered": 2,
        "pending": 0,
        "failed": 0,
    }


# --- Dashboard pieces -------------------------------------------------------------


@pytest.fixture
def member_client(team, client, django_user_model):
    user = django_user_model.objects.create_user("dana", "dana@acme.test")
    team.members.add(user)
    client.force_login(user)
    return client


def test_the_deliveries_page_lists_attempts_escaped(
    team, member_client, receiver, scenario, queued
):
    receiver.then(500, body=b"<script>alert(1)</script>")
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(monitor))
    queued.run()

    page = member_client.get(f"/monitors/{monitor.pk}/deliveries/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "monitor.check.completed" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert "Retry now" in html
    assert 'class="no-content"' not in html  # the retry button is its content
    detail = member_client.get(monitor.get_absolute_url()).content.decode()
    assert f"/monitors/{monitor.pk}/deliveries/" in detail
    assert "Send a test message" in detail


def test_the_deliveries_page_says_which_page_each_page_event_carried(
    team, member_client, receiver, scenario, queued
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = scenario.start(monitor)
    scenario.page(check, "https://acme.test/pricing?a=1&b=<2>", "changed")
    scenario.finish(check)
    queued.run()

    html = member_client.get(f"/monitors/{monitor.pk}/deliveries/").content.decode()
    row = next(r for r in html.split("<tr>") if 'data-event="monitor.page"' in r)
    assert "https://acme.test/pricing?a=1&amp;b=&lt;2&gt;" in row  # escaped
    assert 'class="badge s-changed">Changed<' in row
    # Delivered: nothing to retry, so a phone's stacked row hides "Actions".
    assert 'data-label="Actions" class="no-content"' in row
    completed = next(r for r in html.split("<tr>") if "monitor.check.completed" in r)
    assert "badge s-" not in completed


def test_the_deliveries_page_names_events_and_errors_in_plain_words(
    team, member_client, receiver, scenario, queued
):
    receiver.then(501).then(501)
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = scenario.start(monitor)
    scenario.page(check, "https://acme.test/pricing", "changed")
    scenario.finish(check)
    queued.run()
    Delivery.objects.create(
        kind=Delivery.Kind.EMAIL,
        monitor=monitor,
        check_run=check,
        event="email.notification",
        email="dana@acme.test",
        status=Delivery.Status.DELIVERED,
    )
    member_client.post(f"/monitors/{monitor.pk}/deliveries/test/")

    html = member_client.get(f"/monitors/{monitor.pk}/deliveries/").content.decode()
    rows = {
        event: next(r for r in html.split("<tr>") if f'data-event="{event}"' in r)
        for event in (
            "monitor.page",
            "monitor.check.completed",
            "email.notification",
            "monitor.test",
        )
    }
    assert ">Each page&#x27;s result</span>" in rows["monitor.page"]
    assert ">Check finished</span>" in rows["monitor.check.completed"]
    assert ">E-mail</span>" in rows["email.notification"]
    assert ">Test message</span>" in rows["monitor.test"]
    # The raw name stays for whoever wires up the receiver, but only in a title.
    assert 'title="Event name: monitor.check.completed"' in html
    shown = re.sub(r"<[^>]*>", " ", html)  # the words on screen, no attributes
    for raw in ("monitor.page", "monitor.check.completed", "email.notification"):
        assert raw not in shown
    # The two 501s fell on the page event and the check event, in either order.
    assert shown.count("The receiving server answered with error 501.") >= 2
    assert "Answered 501" not in shown


def test_the_monitor_page_names_its_webhook_events_in_plain_words(
    team, member_client, receiver
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    html = member_client.get(monitor.get_absolute_url()).content.decode()
    assert "· Each page&#x27;s result, Check finished" in html
    shown = re.sub(r"<[^>]*>", " ", html)
    assert "monitor.check.completed" not in shown


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("monitor.page", "Each page's result"),
        ("page", "Each page's result"),  # short names webhook configs may hold
        ("check.completed", "Check finished"),
        ("email.confirmation", "Confirmation e-mail"),
        ("crawl.started", "crawl.started"),  # unknown: as it is
    ],
)
def test_event_names_read_as_words(stored, shown):
    assert event_label(stored) == shown


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("Answered 501.", "The receiving server answered with error 501."),
        (
            "Answered 302 to https://b.test/; redirects are not followed.",
            "The receiving server sent the message on to https://b.test/ (302); "
            "messages are not forwarded, so check the webhook address.",
        ),
        (
            "Answered 410 Gone; the monitor's webhook was disabled.",
            "The receiving server answered that this address is gone (410), "
            "so the monitor's webhook was turned off.",
        ),
        ("Could not connect: timed out.", "Could not connect: timed out."),
        (
            "Not sent: SLACK_BOT_TOKEN is not set.",
            "Not sent: this kind of channel was not set up on this server. "
            "For the administrator: set SLACK_BOT_TOKEN.",
        ),
        (
            "Header 'X-Team' cannot be sent. The value of header 'X-Team' cannot "
            "be sent: 'é' is not a plain ASCII character. Change the monitor's "
            "webhook headers.",
            "Header “X-Team” cannot be sent. The value of header “X-Team” cannot "
            "be sent: “é” is not a plain ASCII character. Change the monitor's "
            "webhook headers.",
        ),
    ],
)
def test_a_receivers_answer_reads_as_a_sentence(stored, shown):
    assert delivery_error(stored) == shown


def test_a_page_event_with_an_unreadable_body_names_no_page():
    delivery = Delivery(event="monitor.page", body="{not json")
    assert delivery.page_event is None
    assert Delivery(event="monitor.page", body='{"data": []}').page_event is None
    payload = {"data": [{"url": "https://a.test/", "status": "same"}]}
    good = Delivery(event="monitor.page", body=json.dumps(payload))
    assert good.page_event == ("https://a.test/", "same")


def test_send_test_event_and_retry_now_buttons_queue_deliveries(
    team, member_client, receiver, scenario, queued, django_capture_on_commit_callbacks
):
    receiver.then(500)
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    with django_capture_on_commit_callbacks(execute=True):
        response = member_client.post(f"/monitors/{monitor.pk}/deliveries/test/")
    assert response.status_code == 302
    delivery = Delivery.objects.get(event="monitor.test")
    queued.run()
    delivery.refresh_from_db()
    assert delivery.status == "pending"

    with django_capture_on_commit_callbacks(execute=True):
        response = member_client.post(
            f"/monitors/{monitor.pk}/deliveries/{delivery.pk}/retry/"
        )
    assert response.status_code == 302
    queued.run()
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2


def test_another_teams_deliveries_look_missing(
    other_team, member_client, receiver, scenario, queued
):
    theirs = make_monitor(other_team, webhook=completed_only(receiver.url))
    scenario.finish(scenario.start(theirs))
    delivery = Delivery.objects.get()
    base = f"/monitors/{theirs.pk}/deliveries/"
    assert member_client.get(base).status_code == 404
    assert member_client.post(base + "test/").status_code == 404
    assert member_client.post(f"{base}{delivery.pk}/retry/").status_code == 404
    assert Delivery.objects.count() == 1


def test_the_deliveries_pages_need_a_session(team, client, receiver):
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    response = client.get(f"/monitors/{monitor.pk}/deliveries/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_a_delivery_outcome_moves_the_checks_updated_at_with_its_status(
    team, receiver, scenario, queued, api, time_machine
):
    time_machine.move_to(START, tick=False)
    monitor = make_monitor(team, webhook=completed_only(receiver.url))
    check = scenario.finish(scenario.start(monitor))
    path = f"/v2/monitor/{monitor.pk}/checks/{check.pk}"
    finished = api.get(path).json()["data"]

    time_machine.shift(timedelta(minutes=1))
    queued.run()

    delivered = api.get(path).json()["data"]
    assert finished["notificationStatus"]["webhook"]["delivered"] is False
    assert delivered["notificationStatus"]["webhook"]["delivered"] is True
    assert finished["updatedAt"] == "2026-05-17T15:30:00.000Z"
    assert delivered["updatedAt"] == "2026-05-17T15:31:00.000Z"
