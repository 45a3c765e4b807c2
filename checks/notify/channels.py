"""Channel deliveries: which of a monitor's channels a finished check tells,
and what (checks.notify.messages), as outbox rows written in the runner's
transaction. Sending is the outbox's (checks.notify.drain).

A monitor is failing once its channel's `failing_after` latest finished checks
all failed (a failed check, or one whose every page errored). The link row
remembers that the channel was told, so it hears once when the failing starts
and once when it ends, never once per failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from checks.models import Check
from checks.notify import drain, events, messages, outbox
from checks.notify.models import Delivery
from monitors.models import Channel, MonitorChannel

if TYPE_CHECKING:
    from monitors.models import Monitor

_NOT_RUN = (Check.Status.SKIPPED_OVERLAP, Check.Status.SKIPPED_NO_CREDITS)


def create(
    channel: Channel,
    monitor: Monitor | None,
    check: Check | None,
    message: dict[str, Any],
) -> Delivery:
    return outbox.create(**_row(channel, monitor, check, message))


def _row(
    channel: Channel,
    monitor: Monitor | None,
    check: Check | None,
    message: dict[str, Any],
    body: str | None = None,
) -> dict[str, Any]:
    return {
        "kind": channel.kind,
        "channel": channel,
        "monitor": monitor,
        "check_run": check,
        "event": message["type"],
        "body": events.serialize(message) if body is None else body,
    }


def check_failed(check: Check) -> bool:
    """A failed check, or one where every page it looked at errored."""
    if check.status == Check.Status.FAILED:
        return True
    # Read from the summary the check was finished with, not its pages again.
    summary = check.summary or {}
    total = int(summary.get("totalPages") or 0)
    return total > 0 and int(summary.get("error") or 0) == total


def _failures_in_a_row(check: Check, limit: int) -> int:
    """How many of the monitor's latest checks failed in a row, `check`
    first: it is told of in the transaction that finishes it, before its
    row holds its end, so it is counted as it stands, not as read back."""
    earlier = (
        Check.objects.filter(monitor_id=check.monitor_id, finished_at__isnull=False)
        .exclude(pk=check.pk)
        .exclude(status__in=_NOT_RUN)
        .order_by("-finished_at")[: max(limit - 1, 0)]
    )
    count = 0
    for one in [check, *earlier]:
        if not check_failed(one):
            break
        count += 1
    return count


def record_check(check: Check) -> list[Delivery]:
    """Called in the transaction that finishes `check`. Idempotent per check."""
    if check.status in _NOT_RUN or check.status in Check.IN_FLIGHT:
        return []
    if Delivery.objects.filter(check_run=check).to_channels().exists():
        return []
    monitor = check.monitor
    links = MonitorChannel.objects.filter(monitor=monitor).select_related("channel")
    changes: list[Delivery] = []
    failing: list[Delivery] = []
    # Each message is built and serialized once, however many channels get it.
    change_messages: dict[bool, tuple[dict[str, Any], str] | None] = {}
    failed = check_failed(check)
    for link in links:
        channel = link.channel
        if not channel.digest and (
            channel.wants(Channel.Event.CHANGE)
            or channel.wants(Channel.Event.MEANINGFUL)
        ):
            only_meaningful = not channel.wants(Channel.Event.CHANGE)
            if only_meaningful not in change_messages:
                message = messages.change(check, meaningful_only=only_meaningful)
                change_messages[only_meaningful] = (
                    None if message is None else (message, events.serialize(message))
                )
            change = change_messages[only_meaningful]
            if change is not None:
                row = _row(channel, monitor, check, *change)
                changes.append(Delivery(**row))
        if channel.wants(Channel.Event.FAILING):
            failing.extend(_failing(link, check, failed))
    return outbox.create_many(changes) + failing


def _failing(link: MonitorChannel, check: Check, failed: bool) -> list[Delivery]:
    channel, monitor = link.channel, check.monitor
    links = MonitorChannel.objects.filter(pk=link.pk)
    if failed and link.failing_since is None:
        failures = _failures_in_a_row(check, channel.failing_after)
        if failures < channel.failing_after:
            return []
        # The conditional update claims the transition: told once.
        if not links.filter(failing_since__isnull=True).update(
            failing_since=timezone.now()
        ):
            return []
        message = messages.failing(monitor, failures, check)
        return [create(channel, monitor, check, message)]
    if not failed and link.failing_since is not None:
        if not links.filter(failing_since__isnull=False).update(failing_since=None):
            return []
        return [create(channel, monitor, check, messages.recovered(monitor))]
    return []


def send_test(channel: Channel) -> Delivery:
    """A test message, sent now in this process so the caller can show what
    the service answered; recorded as an outbox row like any other."""
    with transaction.atomic():
        delivery = outbox.create_unqueued(
            **_row(channel, None, None, messages.test(channel.name))
        )
    return drain.deliver(delivery.pk) or delivery
