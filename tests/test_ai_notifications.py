"""What the judge changes in notifications, through real checks against pages
on 127.0.0.1 and a scripted model (tests/llm.py): isMeaningful and the
judgment in signed monitor.page webhooks, e-mail only for meaningful changes
(reference §11.2), field diffs in JSON mode's webhooks; and the judgment
fields read back through the official Python SDK."""

from __future__ import annotations

from typing import Any

import pytest
from firecrawl import Firecrawl

from checks import runner
from checks.models import Check
from monitors.models import Monitor, Target, Team
from tests.notifying import (
    firecrawl_signature_ok,
    standard_signature_ok,
    webhook_config,
)

# The shared fixtures (site, receiver, queued, scenario).
pytest_plugins = ["tests.llm", "tests.notifying"]

pytestmark = pytest.mark.django_db

PLANS = "<h1>Plans</h1><p>Starter: $19</p><p>Pro: $49</p>"
MEMBER = "mia@acme.test"


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def member(team, django_user_model):
    user = django_user_model.objects.create_user("mia", MEMBER)
    team.members.add(user)
    return user


def watch(team: Team, url: str, **fields: Any) -> Monitor:
    options = fields.pop("scrape_options", None) or {}
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing",
        schedule_cron="*/30 * * * *",
        goal="Tell me when a price changes",
        judge_enabled=True,
        **fields,
    )
    Target.objects.create(
        monitor=monitor, type="scrape", urls=[url], scrape_options=options
    )
    return monitor


def run(monitor: Monitor, capture: Any) -> Check:
    with capture(execute=True):
        return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))


def page_events(receiver: Any) -> list[dict[str, Any]]:
    return [p for p in receiver.payloads() if p["type"] == "monitor.page"]


def test_is_meaningful_and_the_judgment_reach_a_signed_webhook(
    team, site, receiver, queued, model, django_capture_on_commit_callbacks
):
    url = site.html("/pricing", "Pricing", PLANS)
    monitor = watch(team, url, webhook=webhook_config(receiver.url))
    run(monitor, django_capture_on_commit_callbacks)
    site.html("/pricing", "Pricing", PLANS.replace("$49", "$59"))
    run(monitor, django_capture_on_commit_callbacks)
    site.html("/pricing", "Pricing", PLANS.replace("$49", "$59") + "<p>Visitors: 3</p>")
    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    new, meaningful, noise = (e["data"][0] for e in page_events(receiver))
    assert (new["status"], new["isMeaningful"], new["judgment"]) == ("new", None, None)
    assert meaningful["status"] == "changed"
    assert meaningful["isMeaningful"] is True
    assert meaningful["judgment"]["meaningfulChanges"] == [
        {
            "type": "changed",
            "before": "Pro: $49",
            "after": "Pro: $59",
            "reason": "Price.",
        }
    ]
    assert noise["isMeaningful"] is False
    assert noise["judgment"]["meaningful"] is False
    team.refresh_from_db()
    for request in receiver.requests:
        assert firecrawl_signature_ok(team.webhook_secret, request)
        assert standard_signature_ok(team.webhook_secret, request)


def test_a_webhook_in_json_mode_carries_the_field_diff(
    team, site, receiver, queued, model, django_capture_on_commit_callbacks
):
    url = site.html("/pricing", "Pricing", PLANS)
    formats = [{"type": "json", "prompt": "The plans with their prices"}]
    monitor = watch(
        team,
        url,
        webhook=webhook_config(receiver.url),
        scrape_options={"formats": formats},
    )
    run(monitor, django_capture_on_commit_callbacks)
    site.html("/pricing", "Pricing", PLANS.replace("$49", "$59"))
    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    changed = page_events(receiver)[-1]["data"][0]
    assert changed["diff"] == {
        "json": {"plans[1].price": {"previous": "$49", "current": "$59"}}
    }
    assert changed["isMeaningful"] is True


def test_email_goes_out_for_a_meaningful_change_and_not_for_noise(
    team, member, site, queued, model, mailoutbox, django_capture_on_commit_callbacks
):
    url = site.html("/pricing", "Pricing", PLANS)
    email = {"enabled": True, "recipients": [], "includeDiffs": True}
    monitor = watch(team, url, notification={"email": email})
    run(monitor, django_capture_on_commit_callbacks)  # all new: mailed
    queued.run()
    site.html("/pricing", "Pricing", PLANS + "<p>Visitors: 3</p>")
    noise = run(monitor, django_capture_on_commit_callbacks)
    queued.run()
    site.html("/pricing", "Pricing", PLANS.replace("$49", "$59") + "<p>Visitors: 3</p>")
    meaningful = run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    assert len(mailoutbox) == 2
    noise.refresh_from_db()
    assert noise.notification_status["email"]["attempted"] is False
    assert noise.pages.get().is_meaningful is False
    assert "(1 meaningful)" in mailoutbox[-1].body
    assert "changed (meaningful)" in mailoutbox[-1].body
    assert "+Pro: $59" in mailoutbox[-1].body
    meaningful.refresh_from_db()
    assert meaningful.notification_status["email"]["attempted"] is True


def test_an_unjudged_change_is_mailed_and_says_it_was_not_judged(
    team, member, site, queued, settings, mailoutbox, django_capture_on_commit_callbacks
):
    settings.LLM_BASE_URL = ""
    url = site.html("/pricing", "Pricing", PLANS)
    email = {"enabled": True, "recipients": [], "includeDiffs": False}
    monitor = watch(team, url, notification={"email": email})
    run(monitor, django_capture_on_commit_callbacks)
    site.html("/pricing", "Pricing", PLANS + "<p>Visitors: 3</p>")
    run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    assert len(mailoutbox) == 2
    assert "changed (not judged)" in mailoutbox[-1].body
    assert "Why:" not in mailoutbox[-1].body


def test_without_a_model_the_mail_says_not_judged_where_it_said_meaningful(
    team, member, site, queued, settings, mailoutbox, django_capture_on_commit_callbacks
):
    settings.LLM_BASE_URL = ""
    url = site.html("/pricing", "Pricing", PLANS)
    email = {"enabled": True, "recipients": [], "includeDiffs": True}
    monitor = watch(team, url, notification={"email": email})
    run(monitor, django_capture_on_commit_callbacks)
    site.html("/pricing", "Pricing", PLANS.replace("$49", "$59"))
    check = run(monitor, django_capture_on_commit_callbacks)
    queued.run()

    mail = mailoutbox[-1]
    assert mail.subject == (
        "Monitor changes detected: Pricing: 1 page changed (not judged)"
    )
    assert "1 page changed (not judged)." in mail.body
    assert "+Pro: $59" in mail.body  # still reported like any change
    for text in (mail.subject, mail.body, mail.alternatives[0][0]):
        assert "meaningful" not in text
    # The API keeps the contract: a fail-open judgment is isMeaningful true.
    assert check.pages.get().is_meaningful is True


@pytest.mark.django_db(transaction=True)
def test_the_sdk_reads_the_judgment_the_snapshot_and_the_summary(
    live_server, api_key, team, site, model
):
    url = site.html("/pricing", "Pricing", PLANS)
    formats = [
        "summary",
        {
            "type": "changeTracking",
            "modes": ["json", "git-diff"],
            "schema": {
                "type": "object",
                "properties": {"plans": {"type": "array", "items": {"type": "object"}}},
            },
        },
    ]
    monitor = watch(team, url, scrape_options={"formats": formats})
    runner.run(Check.objects.create(monitor=monitor, trigger="manual"))
    site.html("/pricing", "Pricing", PLANS.replace("$49", "$59"))
    check = runner.run(Check.objects.create(monitor=monitor, trigger="manual"))
    sdk = Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)

    detail = sdk.get_monitor_check(str(monitor.pk), str(check.pk))

    [page] = detail.pages
    assert page.status == "changed"
    judgment = page.judgment
    assert judgment is not None
    assert (judgment.meaningful, judgment.confidence) == (True, "high")
    assert judgment.reason == "A price changed."
    [change] = judgment.meaningful_changes
    # Mixed mode: the judge saw the field diff first, and quoted it.
    assert (change.type, change.before, change.after) == (
        "changed",
        "plans[1].price: $49",
        "plans[1].price: $59",
    )
    assert page.diff.json == {"plans[1].price": {"previous": "$49", "current": "$59"}}
    assert "+Pro: $59" in page.diff.text
    assert page.snapshot.json["plans"][1] == {"name": "Pro", "price": "$59"}
    assert page.summary == "Plans"
    assert detail.actual_credits == 6  # 5 for JSON mode, 1 for the judged page
