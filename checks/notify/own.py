"""A monitor's own channels: its Firecrawl `webhook`, `notification.email` and
`notification.slack` as Channel rows (`owner_monitor`), which the outbox sends
through like any team channel.

The monitor's fields stay the configuration the API reads and writes, byte for
byte; each own channel is that field as a channel. Its row is brought in step
with the field whenever it is written (monitors.editing), used to record an
event, or used to send (checks.notify.deliveries), so a field written any
other way (an import, the ORM) is followed too. The webhook and e-mail
channels stay once made, with empty settings when the field is removed, so
their deliveries' history stays and their pending rows stop; the Slack channel
goes with `enabled: false`.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from checks.deleting import delete_channels
from checks.notify import kinds
from checks.notify.kinds import ChannelKind
from checks.notify.kinds.email import EmailKind
from checks.notify.kinds.firecrawl_webhook import FirecrawlWebhookKind
from checks.notify.kinds.slack import SlackKind
from monitors.models import Channel, Monitor, MonitorChannel

WEBHOOK = FirecrawlWebhookKind.name
EMAIL = EmailKind.name
SLACK = SlackKind.name


def slack_unavailable() -> str | None:
    """Why `notification.slack` cannot be turned on here (a missing server
    setting), or None."""
    kind = kinds.kind_for(SLACK)
    return kind.unavailable() if kind is not None else "Slack is not available."


def webhook_channel(monitor: Monitor) -> Channel | None:
    """The monitor's webhook as a channel, in step; None without a webhook."""
    return _used(monitor, kinds.kind_for(WEBHOOK))


def email_channel(monitor: Monitor) -> Channel | None:
    """The monitor's e-mail as a channel, in step; None without e-mail set."""
    return _used(monitor, kinds.kind_for(EMAIL))


def sync(monitor: Monitor) -> None:
    """Bring the monitor's own channels in step with its Firecrawl fields."""
    for kind in kinds.own_kinds():
        _in_step(monitor, kind)
    _sync_slack(monitor)


def _used(monitor: Monitor, kind: ChannelKind | None) -> Channel | None:
    # An unset field sends nothing: no query for it on every page of a check
    # (sync and refresh empty a row the field left).
    assert kind is not None
    if not kind.from_monitor(monitor):
        return None
    return _in_step(monitor, kind)


def refresh(channel: Channel, monitor: Monitor | None) -> None:
    """Before a send: an own channel's settings as its monitor's field says
    now (a webhook removed since the row was written stops it)."""
    kind = kinds.kind_for(channel.kind)
    if kind is None or not kind.own_only or monitor is None:
        return
    if channel.owner_monitor_id != monitor.pk:
        return
    settings = kind.from_monitor(monitor)
    if channel.settings != settings:
        channel.settings = settings
        Channel.objects.filter(pk=channel.pk).update(
            settings=settings, updated_at=timezone.now()
        )


def create_for(monitors: list[Monitor]) -> None:
    """The own channels of monitors just made (an import), in two statements."""
    made = [row for monitor in monitors for row in _new_rows(monitor)]
    Channel.objects.bulk_create(made)
    MonitorChannel.objects.bulk_create(
        MonitorChannel(monitor=row.owner_monitor, channel=row)
        for row in made
        if row.kind == SLACK
    )


def _in_step(monitor: Monitor, kind: ChannelKind | None) -> Channel | None:
    assert kind is not None and kind.own_only
    settings = kind.from_monitor(monitor)
    row = Channel.objects.filter(owner_monitor=monitor, kind=kind.name).first()
    if row is None:
        if not settings:
            return None
        # get_or_create: two workers recording the first event at once make
        # one row (the unique constraint on owner_monitor and kind).
        row, _ = Channel.objects.get_or_create(
            owner_monitor=monitor,
            kind=kind.name,
            defaults=_fields(monitor, kind.label, settings, []),
        )
    if row.settings != settings:
        row.settings = settings
        row.save(update_fields=["settings", "updated_at"])
    return row


def _fields(
    monitor: Monitor,
    name: str,
    settings: dict[str, Any],
    events: tuple[str, ...] | list[str],
) -> dict[str, Any]:
    # The Firecrawl webhook and e-mail choose their own events (empty here):
    # they are not told the channel messages (changes, failing).
    return {
        "team_id": monitor.team_id,
        "name": name,
        "settings": settings,
        "events": list(events),
    }


def _new_rows(monitor: Monitor) -> list[Channel]:
    rows = [
        Channel(
            owner_monitor=monitor,
            kind=kind.name,
            **_fields(monitor, kind.label, kind.from_monitor(monitor), []),
        )
        for kind in kinds.own_kinds()
        if kind.from_monitor(monitor)
    ]
    slack = _slack_settings(monitor)
    if slack is not None:
        fields = _fields(monitor, _slack_name(slack), slack, Channel.DEFAULT_EVENTS)
        rows.append(Channel(owner_monitor=monitor, kind=SLACK, **fields))
    return rows


def _slack_settings(monitor: Monitor) -> dict[str, str] | None:
    slack = (monitor.notification or {}).get("slack") or {}
    if not slack.get("enabled"):
        return None
    return {
        "channelId": slack.get("channelId") or "",
        "channelName": slack.get("channelName") or "",
    }


def _slack_name(settings: dict[str, str]) -> str:
    label = f"#{settings['channelName']}" if settings["channelName"] else ""
    return f"Slack {label or settings['channelId']}"


def _sync_slack(monitor: Monitor) -> None:
    settings = _slack_settings(monitor)
    own = Channel.objects.filter(owner_monitor=monitor, kind=SLACK)
    if settings is None:
        delete_channels(own)  # its deliveries in a statement, not read one by one
        return
    name = _slack_name(settings)
    if own.update(settings=settings, name=name, updated_at=timezone.now()):
        return
    fields = _fields(monitor, name, settings, Channel.DEFAULT_EVENTS)
    made = Channel.objects.create(owner_monitor=monitor, kind=SLACK, **fields)
    MonitorChannel.objects.create(monitor=monitor, channel=made)
