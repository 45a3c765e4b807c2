"""Digests: a channel that collects instead of telling at once gets one message
a day or a week, at its time of day in the team's zone, listing the meaningful
changes since the last one (grouped by monitor, newest first). Nothing is sent
when nothing happened.

The scheduler's periodic task calls `queue_due`; each due channel is claimed
with a conditional update of `next_digest_at`, so two schedulers never make the
same digest, and the digest is an outbox row like any delivery.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Q, Window
from django.db.models.functions import RowNumber

from checks.models import PageResult
from checks.notify import channels, messages
from checks.notify.models import Delivery
from checks.notify.reports import judge_reason, unimportant_words
from monitors import clock
from monitors import schedule as schedules
from monitors.links import public_url
from monitors.models import Channel, Team
from monitors.time_words import wire_time

DEFAULT_AT = time(9, 0)
PAGES_PER_MONITOR = 20
WEEKDAY = 1  # Monday, in cron's numbering
# How long a digest waits after its time for changes stamped before it to be
# committed (a check records its pages in transactions of a few pages each,
# well under this).
SETTLE = timedelta(seconds=30)


def next_digest_at(channel: Channel, after: datetime) -> datetime | None:
    """The first digest moment strictly after `after`, in UTC: a cron in the
    team's zone, so 09:00 stays 09:00 across DST and a time a DST change
    skips or repeats goes as a monitor's schedule would (once; 02:30 on the
    spring-forward day at 03:00)."""
    if not channel.digest:
        return None
    at = channel.digest_at or DEFAULT_AT
    weekday = WEEKDAY if channel.digest == Channel.Digest.WEEKLY else "*"
    cron = f"{at.minute} {at.hour} * * {weekday}"
    # A zone the tz database dropped reads as UTC, as the dashboard's clock
    # does: refused here, it stopped every digest made after it.
    zone = clock.team_zone(channel.team)
    return schedules.next_run_after(schedules.Schedule(cron, zone), after)


def schedule(channel: Channel, now: datetime) -> None:
    """Set (or clear) when the channel's next digest is due; not saved.

    A due time its settings still give is kept: an edit of anything else
    that lands after 09:00 but before queue_due took that digest would
    otherwise move it to the next day."""
    if not channel.digest:
        channel.digest_since = channel.next_digest_at = None
        return
    channel.digest_since = channel.digest_since or now
    ahead = next_digest_at(channel, now)
    kept = channel.next_digest_at
    still_a_digest_time = kept is not None and (
        kept <= ahead and next_digest_at(channel, kept - timedelta(minutes=1)) == kept
    )
    if not still_a_digest_time:
        channel.next_digest_at = ahead


def reschedule_team(team: Team, now: datetime) -> int:
    """Move the team's digests to their time of day in its zone, after the
    zone changed; returns how many digest channels moved. What each has
    collected since its last digest stays for the next one."""
    moved = 0
    for channel in Channel.objects.for_team(team).exclude(digest=""):
        channel.team = team
        following = next_digest_at(channel, now)
        moved += Channel.objects.filter(pk=channel.pk).update(next_digest_at=following)
    return moved


def _changes(
    channel: Channel, since: datetime, until: datetime
) -> list[dict[str, Any]]:
    rows = PageResult.objects.filter(
        check_run__monitor__channels=channel,
        check_run__monitor__deleted_at__isnull=True,
        # Half-open, so a change at the moment one digest ends is in the next.
        created_at__gte=since,
        created_at__lt=until,
        # A page gone is news as a new one is; change messages tell of both.
        status__in=(
            PageResult.Status.CHANGED,
            PageResult.Status.NEW,
            PageResult.Status.REMOVED,
        ),
        # Made by a check that started muted, finished or still running: a
        # muted change is never sent.
        check_run__notifications_muted=False,
    )
    if not channel.wants(Channel.Event.CHANGE):
        # A change the judge called noise is no news; unjudged ones are.
        rows = rows.filter(~Q(verdict=PageResult.Verdict.NOISE))
    # Each monitor's newest PAGES_PER_MONITOR, and how many it has in all,
    # in one query: a cap on rows instead left out every monitor whose
    # changes were older than a busy one's newest thousand.
    by_monitor = [F("check_run__monitor_id")]
    rows = (
        rows.annotate(
            rank=Window(
                RowNumber(),
                partition_by=by_monitor,
                order_by=[F("created_at").desc(), F("id").desc()],
            ),
            of_monitor=Window(Count("id"), partition_by=by_monitor),
        )
        .filter(rank__lte=PAGES_PER_MONITOR)
        .select_related("check_run__monitor")
        .order_by("-created_at", "-id")
    )
    grouped: dict[Any, dict[str, Any]] = {}
    for page in rows:
        monitor = page.check_run.monitor
        entry = grouped.setdefault(
            monitor.pk,
            {
                "monitor": {
                    "id": str(monitor.pk),
                    "name": monitor.name,
                    "link": public_url(monitor.get_absolute_url()),
                },
                "pages": [],
                "more": page.of_monitor - min(page.of_monitor, PAGES_PER_MONITOR),
            },
        )
        judgment = page.judgment if isinstance(page.judgment, dict) else {}
        # As change messages say it: a judge that failed gave no reason worth
        # telling (its own failure, in a server's terms), only that it did.
        not_judged = page.verdict == PageResult.Verdict.NOT_JUDGED
        entry["pages"].append(
            {
                "url": page.url,
                "status": page.status,
                "reason": None if not_judged else (judge_reason(judgment) or None),
                "notJudged": not_judged,
                # A web search's new result: a new match, not a new page.
                "match": (page.metadata or {}).get("searchStatus") == "alert",
                # Listed only in a digest of every change: said so, as the
                # change messages label it.
                "unimportant": page.verdict == PageResult.Verdict.NOISE,
                "unimportantWords": unimportant_words(page.set_aside_by_rules),
                "at": wire_time(page.created_at),
                "link": public_url(page.get_absolute_url()),
            }
        )
    return list(grouped.values())


def queue_due(now: datetime) -> list[Delivery]:
    """Make the digest of every channel whose time has come and settled.

    A digest tells of the changes from the last digest's time to its own
    (09:00 to 09:00), made SETTLE after that time: a change is stamped when
    its row is written but seen only once its transaction commits, and one
    stamped 08:59:59 that commits at 09:00:01 would otherwise be in neither
    digest."""
    made = []
    due = Channel.objects.digest_due(now - SETTLE).select_related("team")
    for channel in due:
        until = channel.next_digest_at
        assert until is not None  # digest_due() only returns channels with one
        since = channel.digest_since or (until - timedelta(days=1))
        following = next_digest_at(channel, now)
        with transaction.atomic():
            claimed = Channel.objects.filter(
                pk=channel.pk, next_digest_at=until
            ).update(next_digest_at=following, digest_since=until)
            if not claimed:
                continue
            grouped = _changes(channel, since, until)
            if grouped:
                message = messages.digest(
                    since,
                    until,
                    grouped,
                    clock.team_zone(channel.team),
                    meaningful_only=not channel.wants(Channel.Event.CHANGE),
                )
                made.append(channels.create(channel, None, None, message))
    return made
