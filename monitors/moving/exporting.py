"""A team's monitors as one document (format "pagewatch-export"): each
monitor in the /v2/monitor create shape plus its status, so the same document
imports anywhere that speaks the API. Secrets stay behind: the team's webhook
signing secret is never in it, and header values that look like credentials
are left out and listed under "redacted"."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime
from typing import Any

from django.db.models import Prefetch

from monitors.models import Monitor, Target, Team
from monitors.time_words import wire_time
from monitors.wire.monitor import target_representation

FORMAT = "pagewatch-export"
VERSION = 1
# Header names whose values are credentials more often than not.
SECRET_HEADER = re.compile(
    r"auth|cookie|token|secret|key|password|passwd|session|signature", re.I
)
CSV_COLUMNS = ("name", "url", "schedule", "goal")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _without_secrets(headers: Any, where: str, redacted: list[str]) -> dict[str, str]:
    kept = {}
    for name, value in (headers or {}).items() if isinstance(headers, dict) else []:
        if SECRET_HEADER.search(str(name)):
            redacted.append(f"{where}.{name}")
        else:
            kept[name] = value
    return kept


def monitor_document(
    monitor: Monitor, redacted: list[str], index: int, webhooks: bool = True
) -> dict[str, Any]:
    where = f"monitors[{index}]"
    targets = []
    for position, target in enumerate(monitor.target_list):
        shape = target_representation(target)
        shape.pop("id", None)
        options = shape.get("scrapeOptions")
        if isinstance(options, dict) and options.get("headers"):
            shape["scrapeOptions"] = options | {
                "headers": _without_secrets(
                    options["headers"],
                    f"{where}.targets[{position}].scrapeOptions.headers",
                    redacted,
                )
            }
        targets.append(shape)
    webhook = monitor.webhook
    if webhook and not webhooks:
        # Its address is often the receiver's credential (Slack, Discord).
        redacted.append(f"{where}.webhook")
        webhook = None
    if webhook:
        webhook = webhook | {
            "headers": _without_secrets(
                webhook.get("headers"), f"{where}.webhook.headers", redacted
            )
        }
    return {
        "name": monitor.name,
        "status": monitor.status,
        "schedule": {
            "cron": monitor.schedule_cron,
            "timezone": monitor.schedule_timezone,
        },
        "targets": targets,
        "goal": monitor.goal,
        "judgeEnabled": monitor.judge_enabled,
        "ignoreLines": monitor.ignore_lines,
        "changeRules": monitor.change_rules,
        "fetchWith": monitor.fetch_with,
        "webhook": webhook,
        "notification": monitor.notification or {},
        "retentionDays": monitor.retention_days,
        "tags": monitor.tag_names,
        # As the API shows it: a mute that has ended is none.
        "mutedUntil": wire_time(until) if (until := monitor.mute_ends_at) else None,
    }


def team_monitors(team: Team) -> list[Monitor]:
    return list(
        Monitor.objects.for_team(team)
        .order_by("created_at", "pk")
        .prefetch_related(
            Prefetch(
                "targets",
                queryset=Target.objects.order_by("position", "created_at"),
                to_attr="listed_targets",
            ),
            "tags",
        )
    )


def export_document(team: Team, now: datetime, webhooks: bool = True) -> dict[str, Any]:
    """The team's monitors as one document; with webhooks=False (for one who
    may read but not change them) without their webhooks, listed as redacted."""
    redacted: list[str] = []
    monitors = [
        monitor_document(monitor, redacted, index, webhooks)
        for index, monitor in enumerate(team_monitors(team))
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": wire_time(now),
        "team": {"name": team.name, "slug": team.slug},
        "monitors": monitors,
        "redacted": redacted,
    }


def _cell(value: str) -> str:
    # A cell a spreadsheet would run as a formula is written as text.
    return "'" + value if value.startswith(_FORMULA_STARTS) else value


def export_csv(team: Team) -> str:
    """One row per page address a target names (a crawl its start page, a
    web search none): the list a spreadsheet opens."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for monitor in team_monitors(team):
        for target in monitor.target_list:
            kind = target.kind
            for url in kind.addresses(target) if kind is not None else []:
                row = (monitor.name, url, monitor.schedule_cron, monitor.goal or "")
                writer.writerow([_cell(str(v)) for v in row])
    return out.getvalue()
