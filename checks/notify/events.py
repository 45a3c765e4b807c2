"""Webhook event payloads, exactly as Firecrawl sends them; and every event
a delivery records (webhook, channel, e-mail) with its words for the team.

Pure functions from rows to JSON-ready dicts; checks.notify.deliveries serializes them
once into the outbox row so every retry sends the very same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from checks.models import Check, PageResult
    from monitors.models import Monitor

PAGE = "monitor.page"
CHECK_COMPLETED = "monitor.check.completed"
# Sent only by the dashboard's "send test event"; never filtered out.
TEST = "monitor.test"
ALL = (PAGE, CHECK_COMPLETED)
# The events of the other outboxes: a team channel's messages
# (checks.notify.messages) and e-mails (checks.notify.emails), named here so
# that every event's words stand beside it.
CHANNEL_CHANGE = "channel.change"
CHANNEL_FAILING = "channel.failing"
CHANNEL_RECOVERED = "channel.recovered"
CHANNEL_DIGEST = "channel.digest"
CHANNEL_TEST = "channel.test"
EMAIL_NOTIFICATION = "email.notification"
EMAIL_CONFIRMATION = "email.confirmation"
EMAIL_WEBHOOK_DISABLED = "email.webhook_disabled"

# Each outbox's events in the team's words, in the order the admin's filters
# list them; pages keep the raw name in a title for whoever wires up the
# receiver.
WEBHOOK_WORDS = {
    PAGE: "Each page's result",
    CHECK_COMPLETED: "Check finished",
    TEST: "Test message",
}
CHANNEL_WORDS = {
    CHANNEL_CHANGE: "Changes",
    CHANNEL_FAILING: "Monitor failing",
    CHANNEL_RECOVERED: "Monitor works again",
    CHANNEL_DIGEST: "Digest",
    CHANNEL_TEST: "Test message",
}
EMAIL_WORDS = {
    EMAIL_NOTIFICATION: "E-mail",
    EMAIL_CONFIRMATION: "Confirmation e-mail",
    EMAIL_WEBHOOK_DISABLED: "E-mail: webhook turned off",
}
_WORDS = WEBHOOK_WORDS | CHANNEL_WORDS | EMAIL_WORDS

SUMMARY_KEYS = ("totalPages", "same", "changed", "new", "removed", "error")


def wants(webhook: Mapping[str, Any] | None, event: str) -> bool:
    """Does a monitor's webhook config ask for `event`?

    No `events` means all. Like Firecrawl, an entry also matches by its legacy
    suffix (`page`, `check`) or namespace suffix (`check.completed`).
    """
    if not webhook or not webhook.get("url"):
        return False
    if event == TEST:
        return True
    events: Iterable[str] = webhook.get("events") or ALL
    accepted = _spellings(event)
    return any(name in accepted for name in events)


def canonical(name: str) -> str:
    """The event an `events` entry names, in its full spelling ("page" ->
    "monitor.page"); a name that is no event's, as it is."""
    return next((event for event in (*ALL, TEST) if name in _spellings(event)), name)


def words_for(event: str | None) -> str:
    """A delivery's event in the team's words ("monitor.check.completed" ->
    "Check finished"); a name that is no event's, as it is."""
    name = str(event or "")
    return _WORDS.get(canonical(name), name)


def _spellings(event: str) -> set[str]:
    suffix = event.removeprefix("monitor.")
    return {suffix, suffix.split(".", 1)[0], event}


def serialize(payload: Mapping[str, Any]) -> str:
    """Compact JSON like JavaScript's JSON.stringify; these exact bytes are signed."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def webhook_diff(diff: Any) -> dict[str, Any] | None:
    """A page diff without the markdown AST (webhooks never carry it)."""
    if not isinstance(diff, Mapping):
        return None
    out: dict[str, Any] = {}
    if isinstance(diff.get("text"), str):
        out["text"] = diff["text"]
    field_diff = diff.get("json")
    # JSON mode's field diff stays; the parse-diff AST ({"files": [...]}) goes.
    if isinstance(field_diff, Mapping) and "files" not in field_diff:
        out["json"] = dict(field_diff)
    return out or None


def _id(value: Any) -> str | None:
    return None if value is None else str(value)


def _envelope(
    event: str,
    *,
    check_id: Any,
    webhook_id: Any,
    success: bool,
    data: dict[str, Any],
    error: str | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    return {
        "success": success,
        "type": event,
        "id": _id(check_id),
        "webhookId": str(webhook_id),
        "data": [data],
        "error": error,
        "metadata": dict(metadata or {}),
    }


def page_event(
    page: PageResult, *, webhook_id: Any, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    check = page.check_run
    data = {
        "monitorId": str(check.monitor_id),
        "checkId": str(check.pk),
        "url": page.url,
        "status": page.status,
        "previousScrapeId": _id(page.previous_scrape_id),
        "currentScrapeId": _id(page.current_scrape_id),
        "error": page.error or None,
        "isMeaningful": page.is_meaningful,
        "judgment": page.judgment or None,
        "diff": webhook_diff(page.diff),
    }
    return _envelope(
        PAGE,
        check_id=check.pk,
        webhook_id=webhook_id,
        success=page.status != "error",
        data=data,
        error=page.error or None,
        metadata=metadata,
    )


def summary_of(check: Check) -> dict[str, int]:
    """The check's summary with every counter present (zeros until reconciled)."""
    stored = check.summary if isinstance(check.summary, Mapping) else {}
    return {key: int(stored.get(key) or 0) for key in SUMMARY_KEYS}


def check_completed_event(
    check: Check, *, webhook_id: Any, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    success = check.status == "completed"
    data = {
        "monitorId": str(check.monitor_id),
        "checkId": str(check.pk),
        "status": check.status,
        "summary": summary_of(check),
    }
    return _envelope(
        CHECK_COMPLETED,
        check_id=check.pk,
        webhook_id=webhook_id,
        success=success,
        data=data,
        error=None if success else (check.error or None),
        metadata=metadata,
    )


def test_event(
    monitor: Monitor, *, webhook_id: Any, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    data = {
        "monitorId": str(monitor.pk),
        "message": "A test event from Pagewatch. Your endpoint is reachable.",
    }
    return _envelope(
        TEST,
        check_id=None,
        webhook_id=webhook_id,
        success=True,
        data=data,
        error=None,
        metadata=metadata,
    )
