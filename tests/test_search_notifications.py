"""Notifications of search targets: the monitor.page webhook of a reported
result carries its judgment and URL, signed like every other; a search that
failed says so in its error event and in the e-mail."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from checks import runner
from checks.models import Check
from tests.notifying import firecrawl_signature_ok, webhook_config
from tests.searching import EARNINGS, LAUNCH, hit
from tests.test_search_checks import make_monitor

pytest_plugins = ["tests.notifying", "tests.searching"]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def run(monitor, capture: Any) -> Check:
    with capture(execute=True):
        return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))


def page_events(receiver: Any) -> list[dict[str, Any]]:
    return [p["data"][0] | {"_error": p["error"], "_ok": p["success"]}
            for p in receiver.payloads() if p["type"] == "monitor.page"]  # fmt: skip


def test_the_page_event_of_a_reported_result_carries_its_judgment_and_url(
    team, site, receiver, queued, searx, model, django_capture_on_commit_callbacks
):
    launch = site.html("/launch", "Launch", LAUNCH)
    earnings = site.html("/earnings", "Earnings", EARNINGS)
    searx.results("acme", hit(launch, "Acme launches"), hit(earnings, "Earnings"))
    monitor = make_monitor(team, ["acme"])
    monitor.webhook = webhook_config(receiver.url)
    monitor.save(update_fields=["webhook"])

    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    events = {event["url"]: event for event in page_events(receiver)}
    assert events[launch]["status"] == "new"
    assert events[launch]["judgment"] == {
        "meaningful": True,
        "confidence": "high",
        "reason": "The page reports it.",
        "meaningfulChanges": [],
    }
    assert events[earnings]["status"] == "same"
    assert events[earnings]["judgment"]["meaningful"] is False
    team.refresh_from_db()
    assert all(
        firecrawl_signature_ok(team.webhook_secret, r) for r in receiver.requests
    )


def test_a_failed_search_reaches_the_webhook_and_the_mail_as_an_error(
    team,
    site,
    receiver,
    queued,
    searx,
    model,
    django_capture_on_commit_callbacks,
    member_email="mia@acme.test",
):
    searx.fail(500)
    monitor = make_monitor(team, ["acme"])
    monitor.webhook = webhook_config(receiver.url)
    monitor.notification = {"email": {"enabled": True, "recipients": [member_email]}}
    monitor.save(update_fields=["webhook", "notification"])
    monitor.sync_email_recipients()
    monitor.email_recipients.update(status="confirmed")

    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    [event] = page_events(receiver)
    assert event["status"] == "error" and event["_ok"] is False
    assert event["_error"].startswith("The web search failed: “acme”: SearXNG")
    assert event["url"] == searx.site.base_url
    assert len(mail.outbox) == 1
    body = mail.outbox[0].body
    assert "Error: The web search could not be run, so new results" in body
    assert "(The web search failed: “acme”: SearXNG" in body
    # The provider's address is often internal: not for the mail's readers.
    assert searx.site.base_url not in body
    assert "Web search" in body
    html = mail.outbox[0].alternatives[0].content
    assert searx.site.base_url not in html
