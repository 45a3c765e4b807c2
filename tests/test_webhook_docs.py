"""docs/webhooks.md shows every payload as Pagewatch sends it: each JSON
example has exactly the fields (and nesting) of the real event or channel
message of its `type`, and the diff text starts as real diffs do, so a
receiver written from the docs parses what arrives."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from checks.content.diff import compare_texts
from checks.notify import digests, events, messages
from monitors.models import Channel, MonitorChannel
from tests.notifying import judged, make_monitor, webhook_config

pytest_plugins = ["tests.notifying"]

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parent.parent / "docs" / "webhooks.md"


def documented() -> dict[str, dict[str, Any]]:
    """Every ```json example of the doc that has a `type`, by type."""
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(), flags=re.S)
    examples = [json.loads(block) for block in blocks]
    return {e["type"]: e for e in examples if isinstance(e, dict) and "type" in e}


def shape(value: Any) -> Any:
    """Field names all the way down (a list by its first item); values aside."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


@pytest.fixture
def changed_check(team, receiver, scenario):
    monitor = make_monitor(
        team, webhook=webhook_config(receiver.url), goal="Price changes"
    )
    *_, diff = compare_texts(
        "# Plans\n\nBasic costs $19 a month.\n", "# Plans\n\nBasic costs $24 a month.\n"
    )
    check = scenario.run(
        monitor,
        [
            (
                "https://example.com/pricing",
                "changed",
                {"diff": diff, "judgment": judged(True)},
            ),
            ("https://example.com/gone", "error", {"error": "Not found"}),
        ],
    )
    return check


def test_the_monitor_events_documented_are_the_ones_sent(changed_check, receiver):
    docs = documented()
    page = changed_check.pages.get(status="changed")
    sent = {
        events.PAGE: events.page_event(page, webhook_id=uuid.uuid4(), metadata={}),
        events.CHECK_COMPLETED: events.check_completed_event(
            changed_check, webhook_id=uuid.uuid4(), metadata={}
        ),
        events.TEST: events.test_event(
            changed_check.monitor, webhook_id=uuid.uuid4(), metadata={}
        ),
    }

    for event, payload in sent.items():
        assert shape(docs[event]) | {"metadata": None} == shape(payload) | {
            "metadata": None
        }, event
    documented_diff = docs[events.PAGE]["data"][0]["diff"]["text"]
    real_diff = sent[events.PAGE]["data"][0]["diff"]["text"]
    assert documented_diff.splitlines()[:3] == real_diff.splitlines()[:3]


def test_the_channel_messages_documented_are_the_ones_sent(team, changed_check):
    docs = documented()
    monitor = changed_check.monitor
    change = messages.change(changed_check, meaningful_only=False)
    assert change is not None
    channel = Channel.objects.create(team=team, name="Ops", kind="webhook")
    MonitorChannel.objects.create(monitor=monitor, channel=channel)
    since = changed_check.created_at - timedelta(minutes=1)
    until = timezone.now() + timedelta(minutes=1)
    grouped = digests._changes(channel, since, until)
    assert grouped
    sent = {
        messages.CHANGE: change,
        messages.FAILING: messages.failing(monitor, 3, changed_check),
        messages.RECOVERED: messages.recovered(monitor),
        messages.TEST: messages.test("Ops hook"),
        messages.DIGEST: messages.digest(
            since,
            until,
            grouped,
            "Europe/Berlin",
        ),
    }

    for kind, message in sent.items():
        assert shape(docs[kind]) == shape(message), kind
