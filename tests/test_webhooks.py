"""Webhook events end to end: rows written with the event, sent to a real
receiver on 127.0.0.1, signed both ways, retried, never followed, disabled by 410.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from checks.models import Delivery, DeliveryAttempt
from checks.notify import deliveries, drain
from checks.notify.kinds.base import mask_url
from checks.notify.tasks import deliver_task, sweep_deliveries_task
from monitors.models import WEBHOOK_SECRET_GRACE
from tests.notifying import (
    firecrawl_signature_ok,
    judged,
    make_monitor,
    run_queued,
    standard_signature_ok,
    webhook_config,
)

# The shared fixtures (site, receiver, queued, scenario).
pytest_plugins = ["tests.notifying"]

pytestmark = pytest.mark.django_db

START = datetime(2026, 5, 17, 15, 30, tzinfo=UTC)

PAGE_KEYS = {
    "monitorId",
    "checkId",
    "url",
    "status",
    "previousScrapeId",
    "currentScrapeId",
    "error",
    "isMeaningful",
    "judgment",
    "diff",
}
ENVELOPE_KEYS = {"success", "type", "id", "webhookId", "data", "error", "metadata"}


@pytest.fixture
def hooked(team, receiver):
    return make_monitor(
        team,
        webhook=webhook_config(
            receiver.url,
            headers={"Authorization": "Bearer receiver-token"},
            metadata={"environment": "production"},
        ),
        goal="Tell me when prices change",
    )


def test_a_check_sends_one_page_event_per_non_removed_page_and_one_completion(
    team, hooked, receiver, scenario, queued
):
    check = scenario.run(
        hooked,
        [
            ("https://example.com/same", "same"),
            ("https://example.com/pricing", "changed", {"judgment": judged(True)}),
            ("https://example.com/new", "new"),
            ("https://example.com/broken", "error", {"error": "Timed out after 30 s"}),
            ("https://example.com/gone", "removed"),
        ],
    )
    assert Delivery.objects.filter(check_run=check).count() == 5
    run_queued(queued)

    team.refresh_from_db()
    secret = team.webhook_secret
    assert secret.startswith("whsec_")  # minted lazily on the first delivery
    requests = receiver.requests
    assert len(requests) == 5
    for request in requests:
        assert request.method == "POST"
        assert request.header("Content-Type") == "application/json"
        assert request.header("Authorization") == "Bearer receiver-token"
        assert firecrawl_signature_ok(secret, request)
        assert standard_signature_ok(secret, request)
        assert abs(int(request.header("webhook-timestamp")) - time.time()) < 60
        assert request.header("X-Firecrawl-Job-Id") == str(check.pk)

    payloads = receiver.payloads()
    for payload, request in zip(payloads, requests, strict=True):
        assert set(payload) == ENVELOPE_KEYS
        assert payload["id"] == str(check.pk)
        assert payload["metadata"] == {"environment": "production"}
        assert payload["webhookId"] == request.header("webhook-id")
        assert payload["webhookId"] == request.header("X-Firecrawl-Webhook-Id")
        assert request.header("X-Firecrawl-Event") == payload["type"]
    assert len({p["webhookId"] for p in payloads}) == 5

    pages = {p["data"][0]["url"]: p for p in payloads if p["type"] == "monitor.page"}
    assert set(pages) == {
        "https://example.com/same",
        "https://example.com/pricing",
        "https://example.com/new",
        "https://example.com/broken",
    }
    for payload in pages.values():
        assert len(payload["data"]) == 1
        assert set(payload["data"][0]) == PAGE_KEYS
        assert payload["data"][0]["monitorId"] == str(hooked.pk)
        assert payload["data"][0]["checkId"] == str(check.pk)

    changed = pages["https://example.com/pricing"]
    assert changed["success"] is True and changed["error"] is None
    page = changed["data"][0]
    assert page["status"] == "changed"
    assert page["isMeaningful"] is True
    assert page["judgment"] == judged(True)
    assert set(page["diff"]) == {"text"}  # the markdown AST stays out
    assert page["diff"]["text"].startswith("--- previous\n+++ current\n")
    assert page["previousScrapeId"] and page["currentScrapeId"]
    assert requests[1].header("X-Firecrawl-Scrape-Id") == page["currentScrapeId"]

    same = pages["https://example.com/same"]["data"][0]
    assert same["isMeaningful"] is None and same["judgment"] is None
    assert same["diff"] is None

    broken = pages["https://example.com/broken"]
    assert broken["success"] is False
    assert broken["error"] == "Timed out after 30 s"
    assert broken["data"][0]["error"] == "Timed out after 30 s"

    completed = [p for p in payloads if p["type"] == "monitor.check.completed"]
    assert len(completed) == 1
    assert completed[0]["success"] is False  # one page errored: partial
    assert completed[0]["data"] == [
        {
            "monitorId": str(hooked.pk),
            "checkId": str(check.pk),
            "status": "partial",
            "summary": {
                "totalPages": 5,
                "same": 1,
                "changed": 1,
                "new": 1,
                "removed": 1,
                "error": 1,
            },
        }
    ]

    check.refresh_from_db()
    webhook = check.notification_status["webhook"]
    assert webhook["attempted"] is True
    assert webhook["delivered"] is True and webhook["success"] is True
    assert webhook["queued"] is False and webhook["skipped"] is False
    assert webhook["statusCode"] == 200 and webhook["error"] is None
    assert webhook["deliveredAt"].endswith("Z")
    assert set(check.notification_status) == {"webhook", "email"}


def test_a_completed_check_reports_success_and_a_skipped_one_failure(
    hooked, receiver, scenario, queued
):
    done = scenario.run(hooked, [("https://example.com/a", "same")])
    skipped = scenario.finish(
        scenario.start(hooked),
        status="skipped_overlap",
        error="Previous monitor check is still running.",
    )
    run_queued(queued)

    completed = {
        p["id"]: p
        for p in receiver.payloads()
        if p["type"] == "monitor.check.completed"
    }
    assert completed[str(done.pk)]["success"] is True
    assert completed[str(done.pk)]["error"] is None
    assert completed[str(skipped.pk)]["success"] is False
    assert (
        completed[str(skipped.pk)]["error"]
        == "Previous monitor check is still running."
    )
    assert completed[str(skipped.pk)]["data"][0]["status"] == "skipped_overlap"


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (["monitor.check.completed"], ["monitor.check.completed"]),
        (["monitor.page"], ["monitor.page", "monitor.page"]),
        (["page"], ["monitor.page", "monitor.page"]),  # legacy suffix
        (["check.completed"], ["monitor.check.completed"]),
    ],
)
def test_the_events_filter_sends_only_the_chosen_events(
    team, receiver, scenario, queued, events, expected
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url, events=events))
    scenario.run(
        monitor, [("https://example.com/a", "same"), ("https://example.com/b", "new")]
    )
    run_queued(queued)
    assert [p["type"] for p in receiver.payloads()] == expected


@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        ("all", ["new", "same", "changed", "error"]),  # Firecrawl's, the default
        ("changed", ["new", "changed"]),
    ],
)
def test_page_events_go_for_every_page_or_only_changed_ones_as_the_monitor_chose(
    team, receiver, scenario, queued, pages, expected
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    monitor.webhook_pages = pages
    monitor.save(update_fields=["webhook_pages"])
    check = scenario.run(
        monitor,
        [
            ("https://example.com/a", "new"),
            ("https://example.com/b", "same"),
            ("https://example.com/c", "changed"),
            ("https://example.com/d", "error", {"error": "Connection refused"}),
            ("https://example.com/e", "removed"),
        ],
    )
    run_queued(queued)

    payloads = receiver.payloads()
    page_events = [p["data"][0] for p in payloads if p["type"] == "monitor.page"]
    assert [p["status"] for p in page_events] == expected
    completed = [p for p in payloads if p["type"] == "monitor.check.completed"]
    assert [p["data"][0]["summary"]["totalPages"] for p in completed] == [5]
    assert Delivery.objects.filter(check_run=check).count() == len(expected) + 1


def test_a_new_monitor_sends_every_page_unless_told_otherwise(team):
    assert make_monitor(team).webhook_pages == "all"


def test_no_webhook_means_no_rows_and_a_skipped_status(team, scenario, queued):
    monitor = make_monitor(team)
    check = scenario.run(monitor, [("https://example.com/a", "changed")])
    assert not Delivery.objects.webhooks().exists()
    assert queued == []
    assert check.notification_status["webhook"]["skipped"] is True
    assert check.notification_status["webhook"]["attempted"] is False


def test_a_receiver_failing_twice_gets_three_attempts_with_the_same_webhook_id(
    team, receiver, scenario, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    receiver.then(500, body=b"boom").then(503, body=b"busy")
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url, events=["monitor.check.completed"])
    )
    check = scenario.finish(scenario.start(monitor))
    [delivery_id] = queued
    run_queued(queued)

    delivery = Delivery.objects.get(pk=delivery_id)
    assert delivery.status == "pending" and delivery.attempts == 1
    assert delivery.next_attempt_at >= START + timedelta(minutes=1)
    check.refresh_from_db()
    assert check.notification_status["webhook"]["queued"] is True
    assert check.notification_status["webhook"]["statusCode"] == 500
    assert check.notification_status["webhook"]["error"] == "Answered 500."

    time_machine.shift(timedelta(seconds=50))
    assert sweep_deliveries_task() == 0  # not due yet: nothing queued
    second_at = delivery.next_attempt_at
    time_machine.move_to(second_at, tick=False)
    assert sweep_deliveries_task() == 1
    assert sweep_deliveries_task() == 0  # already on its way: not queued twice
    run_queued(queued)

    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert delivery.next_attempt_at - second_at >= timedelta(minutes=5)
    time_machine.move_to(delivery.next_attempt_at + timedelta(seconds=1), tick=False)
    sweep_deliveries_task()
    run_queued(queued)

    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 3
    attempts = list(delivery.attempt_log.all())
    assert [a.status_code for a in attempts] == [500, 503, 200]
    assert [a.success for a in attempts] == [False, False, True]
    assert [a.response_body for a in attempts] == ["boom", "busy", "ok"]
    assert [a.number for a in attempts] == [1, 2, 3]

    requests = receiver.requests
    assert len(requests) == 3
    assert len({r.body for r in requests}) == 1  # the very same bytes
    # One id per delivery on every attempt, in both header styles and the body,
    # so a receiver can drop repeats (Standard Webhooks' idempotency key).
    same_id = {str(delivery.webhook_id)}
    assert {r.header("webhook-id") for r in requests} == same_id
    assert {r.header("X-Firecrawl-Webhook-Id") for r in requests} == same_id
    assert {p["webhookId"] for p in receiver.payloads()} == same_id
    assert {r.body for r in requests} == {delivery.body.encode()}
    team.refresh_from_db()
    assert all(standard_signature_ok(team.webhook_secret, r) for r in requests)
    check.refresh_from_db()
    assert check.notification_status["webhook"]["delivered"] is True
    assert check.notification_status["webhook"]["error"] is None


def test_retries_follow_the_schedule_and_give_up_after_about_a_day(
    team, receiver, scenario, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    for _ in range(10):
        receiver.then(500)
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url, events=["monitor.check.completed"])
    )
    scenario.finish(scenario.start(monitor))
    [delivery_id] = queued
    run_queued(queued)
    waits = []
    delivery = Delivery.objects.get(pk=delivery_id)
    while delivery.status == "pending":
        waits.append(delivery.next_attempt_at - timezone_now())
        time_machine.move_to(delivery.next_attempt_at, tick=False)
        sweep_deliveries_task()
        run_queued(queued)
        delivery.refresh_from_db()

    assert delivery.status == "failed"
    assert delivery.attempts == drain.MAX_ATTEMPTS == 7
    assert len(receiver.requests) == 7
    minimum = [timedelta(minutes=m) for m in (1, 5, 15, 60, 240, 720)]
    for wait, floor in zip(waits, minimum, strict=True):
        assert floor <= wait <= floor * (1 + drain.JITTER)
    first, *_, last = delivery.attempt_log.all()
    assert (
        timedelta(hours=17) <= last.started_at - first.started_at <= timedelta(hours=24)
    )


def timezone_now() -> datetime:
    from django.utils import timezone

    return timezone.now()


def test_retry_after_from_the_receiver_is_honoured(
    team, receiver, scenario, queued, time_machine
):
    time_machine.move_to(START, tick=False)
    receiver.then(429, headers={"Retry-After": "3600"})
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url, events=["monitor.check.completed"])
    )
    scenario.finish(scenario.start(monitor))
    run_queued(queued)
    delivery = Delivery.objects.get()
    assert delivery.status == "pending"
    assert delivery.next_attempt_at >= START + timedelta(hours=1)
    assert delivery.last_status_code == 429


def test_a_redirect_is_not_followed(team, receiver, site, scenario, queued):
    receiver.then(302, headers={"Location": site.url("/elsewhere")})
    site.page("/elsewhere", "should never be reached")
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url, events=["monitor.check.completed"])
    )
    scenario.finish(scenario.start(monitor))
    run_queued(queued)

    assert len(receiver.requests) == 1
    assert site.requests_to("/elsewhere") == []
    delivery = Delivery.objects.get()
    assert delivery.status == "pending"  # a failure, retried later
    attempt = delivery.attempt_log.get()
    assert attempt.status_code == 302 and not attempt.success
    assert "redirects are not followed" in attempt.error


def test_a_410_disables_the_webhook_and_tells_the_team(
    team, django_user_model, receiver, scenario, queued, mailoutbox
):
    owner = django_user_model.objects.create_user("owner", "owner@acme.test")
    team.members.add(owner)
    receiver.then(410, body=b"gone for good")
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    check = scenario.start(monitor)
    scenario.page(check, "https://example.com/a", "same")
    scenario.page(check, "https://example.com/b", "same")
    first, second = queued
    queued.clear()

    queued.append(first)
    queued.run()

    monitor.refresh_from_db()
    assert monitor.webhook is None
    assert Delivery.objects.get(pk=first).status == "failed"
    assert Delivery.objects.get(pk=second).status == "cancelled"
    deliver_task(second)  # its queued message arrives later: nothing is sent
    assert len(receiver.requests) == 1

    notice = Delivery.objects.emails().get()
    assert notice.event == "email.webhook_disabled"
    assert notice.email == "owner@acme.test"
    run_queued(queued)
    [mail] = mailoutbox
    assert mail.to == ["owner@acme.test"]
    assert "Pricing page" in mail.subject
    # Which receiver, in shape as the activity log keeps it: a path that
    # may be its secret is masked, a plain word such as /hook is not.
    assert f"its webhook at {mask_url(receiver.url)}." in mail.body
    # On the monitor's list, as every e-mail about it (README).
    assert mail.message()["List-Id"].startswith(f"Pricing page <{monitor.pk}.monitor.")

    scenario.finish(check)
    assert Delivery.objects.webhooks().count() == 2  # no new event once disabled


def test_the_same_task_running_twice_sends_once(team, receiver, scenario, queued):
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url, events=["monitor.check.completed"])
    )
    scenario.finish(scenario.start(monitor))
    [delivery_id] = queued

    deliver_task(delivery_id)
    deliver_task(delivery_id)

    assert len(receiver.requests) == 1
    delivery = Delivery.objects.get(pk=delivery_id)
    assert delivery.attempts == 1 and delivery.status == "delivered"
    assert DeliveryAttempt.objects.count() == 1


def test_an_address_the_policy_forbids_fails_at_once_without_retries(
    team, receiver, scenario, queued, settings
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url, events=["monitor.check.completed"])
    )
    scenario.finish(scenario.start(monitor))
    run_queued(queued)

    assert receiver.requests == []
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 1
    assert "loopback" in delivery.last_error


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"X-Team": "été"}, "Header 'X-Team'"),  # not sendable as ASCII
        ({"X-A\r\nInjected": "yes"}, "is not a valid header name"),
        ({"X-é": "yes"}, "is not a valid header name"),
        ({"X-Team": "a\r\nInjected: yes"}, "Header 'X-Team'"),
    ],
)
def test_a_header_that_can_never_be_sent_fails_at_once_naming_it(
    team, receiver, scenario, queued, headers, reason
):
    # Stored before today's rules, or by hand: the API refuses these now.
    monitor = make_monitor(
        team,
        webhook=webhook_config(
            receiver.url, headers=headers, events=["monitor.check.completed"]
        ),
    )
    check = scenario.finish(scenario.start(monitor))
    run_queued(queued)

    assert receiver.requests == []
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 1
    assert delivery.next_attempt_at is None
    assert reason in delivery.last_error
    assert "webhook headers" in delivery.last_error  # says what to change
    check.refresh_from_db()
    assert check.notification_status["webhook"]["error"] == delivery.last_error


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/hook", "http://exa mple.com/hook", "http://u:p@e.com/h"],
)
def test_an_invalid_webhook_url_fails_at_once_with_the_reason(
    team, receiver, scenario, queued, url
):
    monitor = make_monitor(
        team, webhook=webhook_config(url, events=["monitor.check.completed"])
    )
    scenario.finish(scenario.start(monitor))
    run_queued(queued)

    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 1
    assert "URL" in delivery.last_error


def test_a_webhook_removed_before_sending_cancels_the_delivery(
    team, receiver, scenario, queued
):
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    scenario.finish(scenario.start(monitor))
    monitor.webhook = None
    monitor.save()
    run_queued(queued)

    assert receiver.requests == []
    assert Delivery.objects.get().status == "cancelled"


def test_send_test_event_is_signed_and_retry_now_sends_a_failed_one_again(
    team, receiver, queued, django_capture_on_commit_callbacks
):
    receiver.then(500)
    team.rotate_webhook_secret()
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    with django_capture_on_commit_callbacks(execute=True):
        delivery = deliveries.send_test_event(monitor)
    run_queued(queued)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.attempts == 1

    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries.retry_now(delivery) is True
    run_queued(queued)

    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2
    [_, request] = receiver.requests
    payload = receiver.payloads()[1]
    assert payload["type"] == "monitor.test"
    assert payload["id"] is None
    assert payload["data"][0]["monitorId"] == str(monitor.pk)
    assert firecrawl_signature_ok(team.webhook_secret, request)
    assert standard_signature_ok(team.webhook_secret, request)

    recent = deliveries.recent_deliveries(monitor)
    assert recent == [delivery]
    assert [a.status_code for a in recent[0].attempt_log.all()] == [500, 200]
    assert deliveries.retry_now(delivery) is False  # delivered stays delivered


class VerifyingReceiver:
    """A receiver that holds one secret and answers 401 to a message whose
    Standard Webhooks signature it cannot verify with it."""

    def __init__(self, site, secret: str) -> None:
        self.secret = secret
        self.accepted: list[str] = []
        site.handle("/verified", self._answer)
        self.url = site.url("/verified")

    def _answer(self, request):
        if not standard_signature_ok(self.secret, request):
            return 401, {}, b"bad signature"
        self.accepted.append(request.header("webhook-id"))
        return 204, {}, b""


def test_after_a_rotation_both_secrets_sign_until_the_grace_period_ends(
    team, site, settings, queued, time_machine, django_capture_on_commit_callbacks
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    time_machine.move_to(START, tick=False)
    old = team.ensure_webhook_secret()
    receiver = VerifyingReceiver(site, old)
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))

    def send_test_event() -> Delivery:
        with django_capture_on_commit_callbacks(execute=True):
            delivery = deliveries.send_test_event(monitor)
        run_queued(queued)
        delivery.refresh_from_db()
        return delivery

    new = team.rotate_webhook_secret()
    assert new != old
    assert send_test_event().status == "delivered"  # the receiver still has `old`
    receiver.secret = new  # switched over during the grace period
    assert send_test_event().status == "delivered"
    [*_, during] = site.requests_to("/verified")
    assert len(during.header("webhook-signature").split()) == 2
    assert firecrawl_signature_ok(new, during)  # one signature: the current one

    time_machine.move_to(START + WEBHOOK_SECRET_GRACE + timedelta(seconds=1))
    assert send_test_event().status == "delivered"
    [*_, after] = site.requests_to("/verified")
    assert after.header("webhook-signature").split() == [
        after.header("webhook-signature")
    ]
    assert not standard_signature_ok(old, after)
    receiver.secret = old  # a receiver that never switched is refused now
    late = send_test_event()
    assert late.status == "pending" and late.last_status_code == 401
    assert len(receiver.accepted) == 3


def test_rotating_twice_in_the_grace_period_retires_the_oldest_secret(team):
    first = team.ensure_webhook_secret()
    second = team.rotate_webhook_secret(START)
    third = team.rotate_webhook_secret(START + timedelta(hours=1))
    team.refresh_from_db()
    now = START + timedelta(hours=2)
    assert team.webhook_signing_secrets(now) == [third, second]
    assert first not in team.webhook_signing_secrets(now)


def test_the_runner_announces_its_pages_and_its_finish_through_the_outbox(
    team, site, receiver, queued, django_capture_on_commit_callbacks
):
    from checks import runner
    from checks.models import Check
    from monitors.models import Target

    page_url = site.html("/pricing", "Pricing", "<p>Starter costs $19.</p>")
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Target.objects.create(monitor=monitor, type="scrape", urls=[page_url])
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    with django_capture_on_commit_callbacks(execute=True):
        runner.run(check)
    queued.run()

    types = [p["type"] for p in receiver.payloads()]
    assert types == ["monitor.page", "monitor.check.completed"]
    page_event, completed = receiver.payloads()
    assert page_event["data"][0]["url"] == page_url
    assert page_event["data"][0]["status"] == "new"
    assert completed["data"][0]["summary"]["new"] == 1
    check.refresh_from_db()
    assert check.notification_status["webhook"]["delivered"] is True


def test_a_page_still_gone_sends_its_page_event_as_same_with_no_error(
    team, site, receiver, queued, django_capture_on_commit_callbacks
):
    from checks import runner
    from checks.models import Check
    from monitors.models import Target

    page_url = site.html("/pricing", "Pricing", "<p>Starter costs $19.</p>")
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    Target.objects.create(monitor=monitor, type="scrape", urls=[page_url])

    def run_check() -> Check:
        with django_capture_on_commit_callbacks(execute=True):
            return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))

    run_check()
    site.remove("/pricing")
    run_check()  # removed: no page event (reference §11.1)
    check = run_check()
    queued.run()

    pages = [p for p in receiver.payloads() if p["type"] == "monitor.page"]
    assert [p["data"][0]["status"] for p in pages] == ["new", "same"]
    still_gone = pages[-1]
    assert still_gone["id"] == str(check.pk)
    assert still_gone["success"] is True and still_gone["error"] is None
    assert set(still_gone["data"][0]) == PAGE_KEYS
    assert still_gone["data"][0]["error"] is None
    assert still_gone["data"][0]["diff"] is None
    assert still_gone["data"][0]["previousScrapeId"] is None
    assert still_gone["data"][0]["currentScrapeId"]
    completed = [p for p in receiver.payloads() if p["type"] != "monitor.page"][-1]
    assert completed["success"] is True
    assert completed["data"][0]["summary"]["same"] == 1
    assert completed["data"][0]["summary"]["error"] == 0


def test_signatures_reject_a_tampered_body_a_wrong_secret_and_an_old_timestamp():
    from checks.notify import signing

    secret = "whsec_" + "A" * 43 + "="
    body = b'{"type":"monitor.page"}'
    headers = signing.signature_headers(secret, "msg-1", 1_700_000_000, body)
    lower = {k.lower(): v for k, v in headers.items()}
    now = 1_700_000_000 + 10
    assert signing.verify_firecrawl(secret, body, headers["X-Firecrawl-Signature"])
    assert signing.verify_standard(secret, lower, body, now=now)
    assert not signing.verify_firecrawl(
        secret, body + b" ", lower["x-firecrawl-signature"]
    )
    assert not signing.verify_standard(secret, lower, body + b" ", now=now)
    assert not signing.verify_standard("whsec_" + "B" * 43 + "=", lower, body, now=now)
    assert not signing.verify_standard(secret, lower, body, now=now + 3600)
    # The Standard Webhooks key is the decoded secret, not its text.
    assert signing.standard_key(secret) == b"\x00" * 32
    assert signing.standard_key("not-base64!") == b"not-base64!"
