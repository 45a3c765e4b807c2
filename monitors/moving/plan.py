"""Judging planned items the way the API would: every payload goes through
MonitorWriteSerializer, the very validation POST /v2/monitor uses, so an
import can never create what the API would refuse. Items whose addresses the
team already watches are flagged as duplicates."""

from __future__ import annotations

from collections.abc import Iterable

from monitors.api.errors import flatten_errors, format_path
from monitors.api.serializers import MonitorWriteSerializer
from monitors.models import Target, Team
from monitors.moving.base import Planned

_STATUS_KEYS = ("status",)


def _problem(serializer: MonitorWriteSerializer) -> str:
    issues = flatten_errors(serializer.errors)
    words = []
    for issue in issues[:3]:
        where = format_path(issue["path"])
        words.append(f"{where}: {issue['message']}" if where else issue["message"])
    return "The API would refuse it: " + "; ".join(words)


def validate(items: Iterable[Planned]) -> None:
    for item in items:
        if item.payload is None:
            continue
        body = {k: v for k, v in item.payload.items() if k not in _STATUS_KEYS}
        serializer = MonitorWriteSerializer(data=body)
        if serializer.is_valid():
            item.validated = dict(serializer.validated_data)
        else:
            item.refuse(_problem(serializer))


def watched_urls(team: Team) -> set[str]:
    urls: set[str] = set()
    rows = Target.objects.filter(
        monitor__team=team, monitor__deleted_at__isnull=True
    ).values_list("urls", "url")
    for listed, single in rows:
        urls.update(u for u in listed or [] if isinstance(u, str))
        if single:
            urls.add(single)
    return urls


def mark_duplicates(team: Team, items: Iterable[Planned]) -> None:
    """Flag items with an address the team watches already, or that an item
    before them in the same source brings."""
    seen = watched_urls(team)
    for item in items:
        if not item.importable:
            continue
        item.duplicate = any(url in seen for url in item.urls)
        seen.update(item.urls)


def prepare(team: Team, items: list[Planned]) -> list[Planned]:
    validate(items)
    mark_duplicates(team, items)
    return items
