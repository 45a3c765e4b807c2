"""Creating and changing a team's channels from validated input (the
ChannelInputSerializer's data, in the API's shape) — the one workflow the
REST API, the dashboard's Channels page and the importer share."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.http import Http404

from checks.notify import digests, kinds
from monitors.models import Channel, Team


def save_channel(
    team: Team, data: dict[str, Any], now: datetime, channel: Channel | None = None
) -> Channel:
    """Create or change a channel from validated input.
    A channel being changed was read before this transaction: one deleted
    since stays deleted (saving it would insert it again, linked to nothing)
    and the edit is refused with Http404, the answer to a missing channel."""
    with transaction.atomic():
        if channel is None:
            channel = _new_channel(team, data)
        else:
            locked = Channel.objects.select_for_update().filter(pk=channel.pk)
            stored = locked.values("digest_since", "next_digest_at").first()
            if stored is None:
                raise Http404("Channel not found")
            # The digest made since the channel was read started a new
            # period: the whole-row save below must not write the old one.
            channel.digest_since = stored["digest_since"]
            channel.next_digest_at = stored["next_digest_at"]
        _apply(channel, data)
        digests.schedule(channel, now)
        channel.save()
        kind = kinds.kind_for(channel.kind)
        if kind is not None and kind.signed:
            team.ensure_webhook_secret()
    return channel


def _new_channel(team: Team, data: dict[str, Any]) -> Channel:
    channel = Channel(team=team, kind=data["kind"])
    channel.events = list(Channel.DEFAULT_EVENTS)
    return channel


def _apply(channel: Channel, data: dict[str, Any]) -> None:
    if "name" in data:
        channel.name = data["name"].strip()
    if "settings" in data:
        channel.settings = data["settings"]
    if "events" in data:
        channel.events = list(dict.fromkeys(data["events"]))
    if "failingAfter" in data:
        channel.failing_after = data["failingAfter"]
    if "digest" in data:
        channel.digest = data["digest"] or ""
    if "digestAt" in data:
        channel.digest_at = data["digestAt"]


def replaced_secrets(channel: Channel, before: dict[str, Any]) -> dict[str, Any]:
    """Activity details for an edit that gave a secret setting (an Apprise or
    Slack webhook URL) a new value: its name only, never a value. Empty when
    the edit kept every secret, so the log can tell a new destination from a
    new name."""
    kind = kinds.kind_for(channel.kind)
    replaced = [
        key
        for key in (kind.secrets if kind else ())
        if key in before and channel.settings.get(key) != before[key]
    ]
    return {"replaced": replaced} if replaced else {}
