"""Notifications of search targets: the monitor.page webhook of a reported
result carries its judgment and URL, signed like every other; a search that
failed says so in its error event and in the e-mail."""

from __future__ import annotations

import json
from html import unescape
from typing import Any

import pytest
from django.core import mail

from checks import runner
from checks.models import Check
from checks.notify import messages
from tests.notifying import firecrawl_signature_ok, webhook_config
from tests.searching import EARNINGS, LAUNCH, hit
from tests.test_channels import FakeSlack, make_channel, slack_said
from tests.test_search_checks import make_monitor

pytest_plugins = ["tests.notifying", "tests.searching"]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def slack(site: Any, settings: Any) -> FakeSlack:
    fake = FakeSlack(site)
    settings.SLACK_BOT_TOKEN = FakeSlack.TOKEN
    settings.SLACK_API_URL = fake.url
    return fake


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


def check_events(receiver: Any) -> list[dict[str, Any]]:
    return [p["data"][0] | {"_error": p["error"], "_ok": p["success"]}
            for p in receiver.payloads()
            if p["type"] == "monitor.check.completed"]  # fmt: skip


def test_a_failed_search_reaches_the_webhook_and_the_mail_with_its_reason(
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

    # No page event: no page stands for the search.
    assert page_events(receiver) == []
    [event] = check_events(receiver)
    assert event["status"] == "failed" and event["_ok"] is False
    assert event["_error"].startswith("The web search failed: “acme”: SearXNG")
    assert "HTTP 500 (boom)." in event["_error"]
    assert event["summary"]["totalPages"] == 0
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.subject.endswith(": web search failed")
    body = message.body
    assert "could not do all of a check" in body
    assert "- [failed] Web search\n  The web search failed: “acme”: SearXNG" in body
    assert "HTTP 500 (boom)." in body
    # The provider's address is often internal: not for the mail's readers.
    assert searx.site.base_url not in body
    html = message.alternatives[0].content
    assert "The web search failed: “acme”: SearXNG" in html
    assert searx.site.base_url not in html


def test_a_failed_query_beside_a_new_match_is_told_in_the_mail_and_the_webhook(
    team,
    site,
    receiver,
    queued,
    searx,
    model,
    django_capture_on_commit_callbacks,
    member_email="mia@acme.test",
):
    launch = site.html("/launch", "Launch", LAUNCH)
    searx.results("acme", hit(launch, "Acme launches"))
    searx.unresponsive = [["bing", "CAPTCHA"]]  # "broken" finds nothing
    monitor = make_monitor(team, ["acme", "broken"])
    monitor.webhook = webhook_config(receiver.url)
    monitor.notification = {"email": {"enabled": True, "recipients": [member_email]}}
    monitor.save(update_fields=["webhook", "notification"])
    monitor.sync_email_recipients()
    monitor.email_recipients.update(status="confirmed")

    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    assert [e["url"] for e in page_events(receiver)] == [launch]
    [event] = check_events(receiver)
    assert event["status"] == "partial" and event["_ok"] is False
    assert "“broken”: None of SearXNG's search engines" in event["_error"]
    [message] = mail.outbox
    assert message.subject.endswith("1 new match, web search failed")
    assert "Pagewatch found changes" in message.body
    assert "“broken”: None of SearXNG's search engines" in message.body
    assert launch in message.body


def test_slack_hears_a_failed_query_beside_a_new_match_and_a_failed_search_alone(
    team, site, slack, queued, searx, model, django_capture_on_commit_callbacks
):
    launch = site.html("/launch", "Launch", LAUNCH)
    searx.results("acme", hit(launch, "Acme launches"))
    searx.unresponsive = [["bing", "CAPTCHA"]]  # "broken" finds nothing
    monitor = make_monitor(team, ["acme", "broken"])
    settings = {"channelId": "C111"}
    make_channel(team, monitor, kind="slack", settings=settings, failing_after=1)

    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    [change] = slack.posted
    blocks = "\n".join(slack_said(block) for block in change["blocks"])
    assert "Web search: The web search failed:" in blocks
    assert "“broken”: None of SearXNG" in blocks
    assert launch in blocks

    searx.fail(500)
    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    failing = slack.posted[-1]
    text = json.dumps(failing["blocks"], ensure_ascii=False)
    assert "is failing" in failing["text"]
    assert (
        "Last error: The web search failed: “acme”: SearXNG answered HTTP 500" in text
    )
    assert searx.site.base_url not in text


def test_the_apprise_text_of_a_change_lists_the_failed_search(
    team, site, searx, model, django_capture_on_commit_callbacks
):
    launch = site.html("/launch", "Launch", LAUNCH)
    searx.results("acme", hit(launch, "Acme launches"))
    searx.unresponsive = [["bing", "CAPTCHA"]]
    monitor = make_monitor(team, ["acme", "broken"])

    check = run(monitor, django_capture_on_commit_callbacks)

    message = messages.change(check, meaningful_only=False)
    assert message is not None
    [failure] = message["failures"]
    assert failure["label"] == "Web search"
    assert failure["reason"].startswith("The web search failed: “broken”: None of")
    assert "- Web search: The web search failed: “broken”" in messages.text(message)


def test_a_search_service_refusing_its_format_is_said_plainly_in_messages_only(
    team,
    site,
    slack,
    receiver,
    queued,
    searx,
    model,
    client,
    django_user_model,
    django_capture_on_commit_callbacks,
    member_email="mia@acme.test",
):
    searx.fail(403)
    monitor = make_monitor(team, ["acme"])
    monitor.webhook = webhook_config(receiver.url)
    monitor.notification = {"email": {"enabled": True, "recipients": [member_email]}}
    monitor.save(update_fields=["webhook", "notification"])
    monitor.sync_email_recipients()
    monitor.email_recipients.update(status="confirmed")
    settings = {"channelId": "C111"}
    make_channel(team, monitor, kind="slack", settings=settings, failing_after=1)
    user = django_user_model.objects.create_user("dana", "dana@acme.test")
    team.members.add(user)
    client.force_login(user)
    exact = (
        "SearXNG refused to answer in JSON (HTTP 403): allow the format in its "
        "settings.yml (search: formats: [html, json])."
    )
    plainly = (
        "the web search service refused the request; an administrator needs to "
        "check its set-up."
    )

    check = run(monitor, django_capture_on_commit_callbacks)
    queued.run()
    check.refresh_from_db()

    # The API (the webhook's error, the check's) keeps what to change.
    [event] = check_events(receiver)
    assert exact in event["_error"] and exact in check.error
    # The dashboard says it plainly, and whole for the administrator.
    page = unescape(client.get(check.get_absolute_url()).content.decode())
    assert plainly in page
    assert f"For the administrator: {exact}" in page
    assert page.count("settings.yml") == 1
    # The messages people get say it plainly.
    [message] = mail.outbox
    said = [message.body, unescape(message.alternatives[0].content)]
    said += [json.dumps(p, ensure_ascii=False) for p in slack.posted]
    assert slack.posted
    for text in said:
        assert plainly in text.lower()
        assert "settings.yml" not in text and "HTTP 403" not in text
