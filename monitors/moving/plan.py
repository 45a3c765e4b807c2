"""Judging planned items the way the API would: every payload goes through
MonitorWriteSerializer, the very validation POST /v2/monitor uses, so an
import can never create what the API would refuse. Items whose addresses the
team already watches are flagged as duplicates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import ValidationError

from checks.crawl.scope import canonical
from checks.notify.kinds.apprise import NOT_OVER_HTTP, scheme_of, service_name
from monitors import clock, rules
from monitors.models import Channel, Target, Team
from monitors.moving.base import Planned, schedule_for_seconds
from monitors.rules_problems import unstorable_problem
from monitors.wire.channel import ChannelInputSerializer
from monitors.wire.errors import flatten_errors
from monitors.wire.monitor import MonitorWriteSerializer

_STATUS_KEYS = ("status",)


# What the API's field paths are, said of an imported watch: by the body's
# key, and within a page (targets) by the innermost key that has words.
# The reason stands alone in the preview's "Will it be imported?" cell, so it
# names the part outright: an "Its" there has nothing to refer to.
_PARTS = {"schedule": "The schedule", "name": "The name", "goal": "The goal",
          "webhook": "The webhook", "notification": "The e-mail settings",
          "ignoreLines": "The lines to ignore", "channels": "The channels",
          "changeRules": "Which changes matter",
          "retentionDays": "How long its history is kept",
          "fetchWith": "How its pages are fetched",
          "judgeEnabled": "Judging its changes"}  # fmt: skip
_PAGE_PARTS = {"urls": "The address", "url": "The address",
               "includeTags": "The parts of the page to watch",
               "excludeTags": "The parts of the page to leave out",
               "headers": "The request headers", "actions": "The page actions",
               "query": "The search"}  # fmt: skip


def _part(path: list[str | int]) -> str:
    """The part of a watch an API field path is about, in words."""
    names = [p for p in path if isinstance(p, str)]
    if not names or names[0] == "non_field_errors":
        return ""
    if names[0] == "targets":
        inner = (_PAGE_PARTS[n] for n in reversed(names) if n in _PAGE_PARTS)
        return next(inner, "A page's settings")
    return _PARTS.get(names[0], "One of its settings")


def _problem(errors: Any) -> str:
    """The serializer's first few objections, each led by the part of the
    watch it is about in words (the preview is read by people; the API's
    field paths are for the API's own answers)."""
    return "; ".join(
        _said(issue["path"], issue["message"]) for issue in flatten_errors(errors)[:3]
    )


def _said(path: list[str | int], message: str) -> str:
    part = _part(path)
    return f"{part}: {message}" if part else message


def _schedule_of(item: Planned) -> str:
    return repr((item.payload or {}).get("schedule"))


# How many watches are judged between two reports of progress: often enough
# for a page to move, rarely enough not to write a row per watch.
PROGRESS_EVERY = 100


def validate(
    items: Iterable[Planned], progress: Callable[[int], None] | None = None
) -> None:
    # One serializer for every body, as DRF's many=True does: building one
    # deep-copies all of its fields, which for thousands of watches took as
    # long as judging them. In schedule order, so watches sharing a schedule
    # come together and its runs are walked once (schedule._check_runs keeps
    # only the last few hundred), not once per watch of a large file.
    serializer = MonitorWriteSerializer()
    for judged, item in enumerate(sorted(items, key=_schedule_of)):
        if progress is not None and judged and judged % PROGRESS_EVERY == 0:
            progress(judged)
        if item.payload is None:
            continue
        body = {k: v for k, v in item.payload.items() if k not in _STATUS_KEYS}
        # As the API's body parser does: a file is not read through it.
        if problem := unstorable_problem(body):
            item.refuse(_said(list(problem.path), problem.message))
            continue
        try:
            item.validated = dict(serializer.run_validation(body))
        except ValidationError as exc:
            item.refuse(_problem(exc.detail))


def ended_mutes(items: Iterable[Planned], now: datetime) -> None:
    """A mute that has ended by now (another Pagewatch's, exported or read a
    while ago, or previewed before it ended) comes as no mute, as the API
    shows an ended one, rather than refused by the API's rule that a mute
    must end after now."""
    for item in items:
        until = (item.payload or {}).get("mutedUntil")
        if not isinstance(until, str):
            continue
        moment = parse_datetime(until.strip())
        if moment is None:
            continue  # not a moment: the API's own words refuse it
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment, UTC)
        if moment <= now:
            assert item.payload is not None
            del item.payload["mutedUntil"]


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
    mark_duplicates_of(watched_urls(team), items)


def same_page(url: str) -> str:
    """What two ways of writing one address share, as a check fetches them:
    the scheme's and the host's case, a default port, an empty path and a
    fragment make no difference (http://Example.com/ is http://example.com);
    the path and the query's values do (checks.crawl.scope.canonical)."""
    return canonical(url.strip()) or url.strip()


def mark_duplicates_of(watched: set[str], items: Iterable[Planned]) -> None:
    """As mark_duplicates, given the addresses watched already; an item that
    repeats one of an earlier item's is told which (`same_address_as`).
    Addresses are compared as the same page (`same_page`), not as written."""
    watched = {same_page(url) for url in watched}
    earlier: dict[str, str] = {}
    for item in items:
        if not item.importable:
            continue
        pages = [same_page(url) for url in item.urls]
        item.duplicate = any(page in watched or page in earlier for page in pages)
        if not any(page in watched for page in pages):
            item.same_address_as = next(
                (earlier[page] for page in pages if page in earlier), ""
            )
        for page in pages:
            earlier.setdefault(page, item.label)


def spread_for(team: Team, items: Iterable[Planned]) -> None:
    """Schedules made from another tool's interval, spread over their gap
    for this team (base._spread): two teams importing the same list do not
    both check each address at the same minute."""
    for item in items:
        if item.spread_every is not None and item.payload is not None and item.urls:
            item.payload["schedule"] = schedule_for_seconds(
                item.spread_every, [], item.urls[0], team.slug
            )


def in_team_zone(team: Team, items: Iterable[Planned]) -> None:
    """A schedule that came without a zone (a list's "daily at 9am") keeps
    its times in the team's, and the preview says so."""
    zone = clock.team_zone(team)
    for item in items:
        schedule = (item.payload or {}).get("schedule")
        if isinstance(schedule, dict) and "timezone" not in schedule:
            schedule["timezone"] = zone
            item.notes.append(
                f"Its times are {zone} time, the team's zone (the file gives none)."
            )


def team_apprise_channels(team: Team) -> dict[str, Channel]:
    """The team's Apprise channels by their URL (its own, not a monitor's)."""
    channels = Channel.objects.filter(team=team, kind="apprise", owner_monitor=None)
    return {c.settings.get("url"): c for c in channels.order_by("pk")}


def apprise_channels(team: Team, items: Iterable[Planned]) -> None:
    """The source's notification URLs as the team's Apprise channels: a URL
    the team has a channel for is that channel, another one becomes a new
    channel named after its service ("Telegram (imported)"), made once for
    every watch that uses it, through the Channels page's own validation.
    A URL no channel can take is a note saying why (never the URL itself:
    it holds the service's secret)."""
    have = team_apprise_channels(team)
    judged: dict[str, dict[str, object] | str] = {}
    names: dict[str, int] = {}
    for item in items:
        item.channels = []
        for url in item.notify_urls:
            if url not in judged:
                judged[url] = _channel_for(team, url, have, names)
            channel = judged[url]
            if isinstance(channel, dict):
                if channel not in item.channels:
                    item.channels.append(channel)
            else:
                # Only its scheme: the rest of the URL holds the secret.
                which = f" ({scheme_of(url)[:20]}://…)" if "://" in url else ""
                note = (
                    f"A notification URL{which} not imported: {channel} {_instead(url)}"
                )
                # Judged again when the import runs, with the preview's notes.
                if note not in item.notes:
                    item.notes.append(note)
        if len(item.channels) > rules.CHANNELS_MAX:
            # As the API and the Channels page refuse past it; the import
            # links channels itself, so it keeps the rule here.
            left = len(item.channels) - rules.CHANNELS_MAX
            item.notes.append(
                f"{left} notification URL{'s' if left > 1 else ''} not imported: "
                f"a monitor sends to at most {rules.CHANNELS_MAX} channels."
            )
            item.channels = item.channels[: rules.CHANNELS_MAX]


def _instead(url: str) -> str:
    """What to do for a URL no channel takes: e-mail has channels of its
    own; other plugins that do not go over HTTP have no way in at all."""
    scheme = scheme_of(url)
    if scheme in ("mailto", "mailtos"):
        return (
            "For e-mail, add the addresses in the monitor's e-mail settings, or "
            "use an “E-mail to team members” channel on the Channels page."
        )
    if scheme in NOT_OVER_HTTP:
        return "Pagewatch cannot send there."
    return "Add a channel for it on the Channels page once the URL is right."


def _channel_for(
    team: Team, url: str, have: dict[str, Channel], names: dict[str, int]
) -> dict[str, object] | str:
    """The channel a URL becomes, or why it cannot become one."""
    if url in have:
        return {"url": url, "name": have[url].name, "new": False}
    service = service_name(url) if "://" in url else "Apprise"
    names[service] = names.get(service, 0) + 1
    number = f" {names[service]}" if names[service] > 1 else ""
    name = f"{service}{number} (imported)"
    body = {"name": name, "kind": "apprise", "settings": {"url": url}}
    serializer = ChannelInputSerializer(data=body, context={"team": team})
    if not serializer.is_valid():
        names[service] -= 1
        return " ".join(i["message"] for i in flatten_errors(serializer.errors)[:2])
    return {"url": url, "name": name, "new": True}


def prepare(
    team: Team,
    items: list[Planned],
    progress: Callable[[int], None] | None = None,
) -> list[Planned]:
    """Judge the items for this team; `progress` is told how many have been
    judged by the API's rules so far (the long part), now and then."""
    in_team_zone(team, items)
    spread_for(team, items)
    ended_mutes(items, timezone.now())
    validate(items, progress)
    mark_duplicates(team, items)
    apprise_channels(team, items)
    return items
