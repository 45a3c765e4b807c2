"""Creating and changing monitors from validated input — the one workflow the
REST API and the dashboard forms share. Input is an edit in the API's shape
(camelCase keys), checked by the same rules on either side: the validated data
of monitors.wire.monitor.MonitorWriteSerializer, or what the dashboard's
form checked (monitors.dashboard.forms.checking)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from checks.models import PageResult
from checks.notify import own
from checks.notify.deliveries import queue_confirmations
from monitors import rules
from monitors.models import Monitor, MonitorChannel, Tag, Target, Team

# Columns that change without an edit of the monitor: the dispatcher moves
# next_run_at and sets current_check_id, a check's end sets the last_* ones,
# pausing sets status, renewing the feed link sets feed_token, muting from
# the monitor page or the list sets muted_until.
WRITTEN_ELSEWHERE = (
    "status",
    "muted_until",
    "next_run_at",
    "last_run_at",
    "current_check_id",
    "last_check_summary",
    "last_check_noise",
    "feed_token",
)


def _target_fields(data: dict[str, Any]) -> dict[str, Any]:
    kind = data["type"]
    fields: dict[str, Any] = {
        "type": kind,
        "urls": data.get("urls") or [],
        "url": data.get("url") or "",
        "scrape_options": data.get("scrapeOptions") or {},
        "crawl_options": data.get("crawlOptions") or {},
        "queries": data.get("queries") or [],
        "search_window": data.get("searchWindow") or "",
        "max_results": data.get("maxResults"),
        "include_domains": data.get("includeDomains") or [],
        "exclude_domains": data.get("excludeDomains") or [],
    }
    return fields


def replace_targets(monitor: Monitor, targets: list[dict[str, Any]]) -> None:
    """Targets replace the list; a target sent back with its id keeps its
    identity, and with it the per-page baselines of earlier checks."""
    existing = {t.id: t for t in monitor.targets.all()}
    keep: set = set()
    for position, data in enumerate(targets):
        fields = _target_fields(data) | {"position": position}
        target = existing.get(data.get("id")) if data.get("id") else None
        if target is not None and target.type == data["type"]:
            for name, value in fields.items():
                setattr(target, name, value)
            target.save()
        else:
            target = _new_target(monitor, data.get("id"), fields)
        keep.add(target.id)
    monitor.targets.exclude(id__in=keep).delete()


def _free(wanted: Any, monitor: Monitor) -> bool:
    """Whether a target of `monitor` may take the id `wanted`: no target has
    it, and no other monitor's page history is filed under it. A removed
    target frees its id but leaves its pages, which a page's history and
    "Compare with" find by target id and address (PageResultQuerySet
    .history_of), so the id stays its monitor's."""
    if Target.objects.filter(pk=wanted).exists():
        return False
    return not (
        PageResult.objects.filter(target_id=wanted)
        .exclude(check_run__monitor=monitor)
        .exists()
    )


def _new_target(monitor: Monitor, wanted: Any, fields: dict[str, Any]) -> Target:
    """A new target with the id the edit gave it when that id is free (an
    unknown id, or one from another monitor, is not), otherwise a fresh one.
    Free when looked at may be taken when inserted (two requests creating
    with the same target id at once): the savepoint lets the insert fail
    alone, and the target gets a fresh id instead."""
    if wanted and _free(wanted, monitor):
        try:
            with transaction.atomic():
                return Target.objects.create(monitor=monitor, id=wanted, **fields)
        except IntegrityError:
            pass
    return Target.objects.create(monitor=monitor, **fields)


def _apply(monitor: Monitor, data: dict[str, Any], now: datetime) -> None:
    if "name" in data:
        monitor.name = data["name"].strip()
    if "schedule" in data:
        schedule = data["schedule"]
        monitor.set_schedule(schedule["cron"], schedule["timezone"], now)
    if "goal" in data:
        monitor.goal = data["goal"]
    if "judgeEnabled" in data:
        monitor.judge_enabled = data["judgeEnabled"]
    if "ignoreLines" in data:
        monitor.ignore_lines = data["ignoreLines"]
    if "changeRules" in data:
        monitor.change_rules = data["changeRules"]
    if "fetchWith" in data:
        monitor.fetch_with = data["fetchWith"]
    if "webhook" in data:
        monitor.webhook = data["webhook"]
    # Set by the dashboard form only: the API's serializers never produce it,
    # so an API edit leaves the choice as it is.
    if "webhookPages" in data:
        monitor.webhook_pages = data["webhookPages"]
    if "notification" in data:
        monitor.notification = data["notification"] or {}
    if "retentionDays" in data:
        monitor.retention_days = data["retentionDays"]
    if "mutedUntil" in data:
        # A moment, or its text in an import's validated data kept as JSON
        # between preview and import.
        field = Monitor._meta.get_field("muted_until")
        monitor.muted_until = field.to_python(data["mutedUntil"])
    status = data.get("status")
    if status == Monitor.Status.PAUSED and monitor.is_active:
        monitor.pause()
    elif status == Monitor.Status.ACTIVE and not monitor.is_active:
        monitor.resume(now)


def _ensure_signing_secret(monitor: Monitor) -> None:
    """A webhook comes with the team's signing secret, so it can be shown in
    the dashboard before the first delivery (a no-op once the team has one)."""
    if monitor.webhook:
        monitor.team.ensure_webhook_secret()


def link_channels(monitor: Monitor, ids: list[int]) -> None:
    """The team channels the monitor sends to, replacing the list (its own
    channels stay: they follow its Firecrawl fields)."""
    links = MonitorChannel.objects.filter(monitor=monitor, channel__owner_monitor=None)
    links.exclude(channel_id__in=ids).delete()
    have = set(links.values_list("channel_id", flat=True))
    MonitorChannel.objects.bulk_create(
        MonitorChannel(monitor=monitor, channel_id=pk) for pk in ids if pk not in have
    )


def _tag_all(team: Team, monitors: list[Monitor], names: list[list[str]]) -> None:
    """Each new monitor's tags, the team's tags made once for them all."""
    tags = {
        tag.name.lower(): tag
        for tag in Tag.objects.named(team, [n for each in names for n in each])
    }
    Monitor.tags.through.objects.bulk_create(
        Monitor.tags.through(monitor=monitor, tag=tags[name.lower()])
        for monitor, each in zip(monitors, names, strict=True)
        for name in rules.clean_tags(each)
        if name.lower() in tags
    )


def _new_monitor(team: Team, data: dict[str, Any], now: datetime) -> Monitor:
    monitor = Monitor(
        team=team,
        retention_days=data.get("retentionDays") or rules.RETENTION_DEFAULT,
        notification={},
    )
    _apply(monitor, data, now)
    return monitor


@transaction.atomic
def create_monitor(
    team: Team, data: dict[str, Any], now: datetime, by: str = ""
) -> Monitor:
    """`by`: the person making it, by name (Actor.person_name), whom the
    confirmation e-mails to the addresses it gets names."""
    monitor = _new_monitor(team, data, now)
    monitor.save()
    _ensure_signing_secret(monitor)
    replace_targets(monitor, data["targets"])
    own.sync(monitor)
    monitor.sync_email_recipients(added_by=by)
    queue_confirmations(monitor)
    if "channels" in data:
        link_channels(monitor, data["channels"])
    if "tags" in data:
        monitor.tags.set(Tag.objects.named(team, data["tags"]))
    return monitor


@transaction.atomic
def create_monitors(
    team: Team, batch: list[dict[str, Any]], now: datetime, by: str = ""
) -> list[Monitor]:
    """Many monitors at once, exactly as create_monitor makes each (an import
    of a thousand watches), in a few statements: all of them or none."""
    monitors = [_new_monitor(team, data, now) for data in batch]
    Monitor.objects.bulk_create(monitors)
    for monitor, data in zip(monitors, batch, strict=True):
        # Monitor.target_list: what callers read next needs no query.
        monitor.listed_targets = [
            Target(monitor=monitor, position=position, **_target_fields(target))
            for position, target in enumerate(data["targets"])
        ]
    Target.objects.bulk_create([t for m in monitors for t in m.listed_targets])
    _tag_all(team, monitors, [data.get("tags") or [] for data in batch])
    if any(monitor.webhook for monitor in monitors):
        team.ensure_webhook_secret()
    own.create_for(monitors)
    for monitor in monitors:
        if monitor.email_settings.get("recipients"):
            monitor.sync_email_recipients(added_by=by)
            queue_confirmations(monitor)
    return monitors


@transaction.atomic
def update_monitor(
    monitor: Monitor, data: dict[str, Any], now: datetime, by: str = ""
) -> Monitor:
    """Apply a validated edit. The monitor was read before this transaction:
    a delete that committed since wins, nothing is written (saving the whole
    row would bring the monitor back, scheduled again), and the monitor
    comes back with its deleted_at set for the caller to see."""
    row = Monitor.objects.select_for_update().filter(pk=monitor.pk)
    stored = row.values("deleted_at", *WRITTEN_ELSEWHERE).first()
    if stored is None or stored["deleted_at"] is not None:
        monitor.deleted_at = stored["deleted_at"] if stored else now
        return monitor
    # The save below writes the whole row: take what the scheduler, the
    # checks and other requests wrote since the monitor was read as it is
    # now, or a slot just dispatched would be due again, a finished check
    # would look running and a monitor paused meanwhile would be active
    # without a next run.
    for name in WRITTEN_ELSEWHERE:
        setattr(monitor, name, stored[name])
    _apply(monitor, data, now)
    monitor.save()
    _ensure_signing_secret(monitor)
    if "targets" in data:
        replace_targets(monitor, data["targets"])
    if {"webhook", "webhookPages", "notification"} & set(data):
        own.sync(monitor)
    if "notification" in data:
        monitor.sync_email_recipients(added_by=by)
        queue_confirmations(monitor)
    if "channels" in data:
        link_channels(monitor, data["channels"])
    if "tags" in data:
        monitor.tags.set(Tag.objects.named(monitor.team, data["tags"]))
    return monitor


@transaction.atomic
def add_ignore_lines(monitor: Monitor, added: list[str], now: datetime) -> Monitor:
    """`added` after the monitor's lines to ignore, by the rules the form and
    the API apply (ValueError with words fit to show when they refuse). The
    list is read under the row's lock, so an edit saved meanwhile is kept."""
    row = Monitor.objects.select_for_update().filter(pk=monitor.pk)
    current = row.values_list("ignore_lines", flat=True).first() or []
    entries = rules.ignore_lines_with(current, added)
    return update_monitor(monitor, {"ignoreLines": entries}, now)
