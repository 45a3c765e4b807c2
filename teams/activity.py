"""Writing the activity log: who did what, from where.

Callers name the actor (Actor.of(request) in views, Actor.command() in
management commands, SYSTEM in workers) and the event; the words shown are
Activity.what_words and Activity.actor_words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config.signin import client_ip
from monitors import clock, muting, rules
from monitors.models import ApiKey, Membership, Monitor, Team
from teams.models import Activity

Kind, Via = Activity.Kind, Activity.Via


@dataclass(frozen=True)
class Actor:
    via: str
    user: Any = None
    key: ApiKey | None = None
    address: str | None = None
    # Who it was when no account says it: the e-mail address a link went to.
    name: str = ""

    @classmethod
    def of(cls, request: Any, via: str | None = None) -> Actor:
        """The person or API key behind a request (dashboard, API or admin)."""
        address = client_ip(request)
        key = getattr(request.user, "key", None)
        if isinstance(key, ApiKey):
            return cls(Via.API, key=key, address=address)
        user = request.user if request.user.is_authenticated else None
        return cls(via or Via.DASHBOARD, user=user, address=address)

    @property
    def person_name(self) -> str:
        """Who did it, by name, for someone outside the team (the address
        a monitor's e-mails were added for): the person, or the one who made
        the API key; "" when no person is known."""
        return _name_of(self.user or (self.key.created_by if self.key else None))

    @classmethod
    def command(cls, user: Any = None) -> Actor:
        return cls(Via.COMMAND, user=user)

    @classmethod
    def email_link(cls, request: Any, to: str, user: Any = None) -> Actor:
        """Whoever followed a link in an e-mail sent to `to` (no sign-in:
        the signed link is the credential), named by that address."""
        return cls(Via.EMAIL, user=user, address=client_ip(request), name=to)


SYSTEM = Actor(Via.SYSTEM)


def record(
    actor: Actor,
    team: Team | int,
    kind: str,
    monitor: Monitor | None = None,
    **details: Any,
) -> Activity:
    user = actor.user
    return Activity.objects.create(
        team_id=team if isinstance(team, int) else team.pk,
        kind=kind,
        via=actor.via,
        user=user,
        user_name=_user_name(actor.name or _name_of(user)),
        api_key=actor.key,
        key_name=actor.key.name if actor.key else "",
        monitor=monitor,
        monitor_name=monitor.name if monitor else "",
        details=details,
        address=actor.address,
    )


def _name_of(user: Any) -> str:
    return (user.get_full_name() or user.get_username()) if user else ""


def _user_name(name: str) -> str:
    # A full name can be 301 characters, an e-mail address 254: cut to the
    # column, which PostgreSQL would refuse past.
    return name[: Activity._meta.get_field("user_name").max_length]


def record_in_their_teams(
    actor: Actor, kind: str, person: Any = None, **details: Any
) -> None:
    """An entry about a person's account (their second factor): each team
    they are in hears of it, as with sign-ins. The person is the actor's
    own user unless named (an administrator removing someone's device)."""
    person = person or actor.user
    teams = Membership.objects.filter(user=person).values_list("team", flat=True)
    for team_id in teams:
        record(actor, team_id, kind, **details)


def record_created(
    actor: Actor, team: Team, monitors: list[Monitor], **details: Any
) -> None:
    """One "created" entry per monitor, in one INSERT (an import makes
    hundreds at once)."""
    record_each(actor, team, Kind.MONITOR_CREATED, monitors, **details)


def record_each(
    actor: Actor, team: Team, kind: str, monitors: list[Monitor], **details: Any
) -> None:
    """The same entry for each of these monitors, in one INSERT (an action
    on many monitors from the list, an import)."""
    user = actor.user
    Activity.objects.bulk_create(
        Activity(
            team_id=team.pk,
            kind=kind,
            via=actor.via,
            user=user,
            user_name=_user_name(_name_of(user)),
            api_key=actor.key,
            key_name=actor.key.name if actor.key else "",
            monitor=monitor,
            monitor_name=monitor.name,
            details=details,
            address=actor.address,
        )
        for monitor in monitors
    )


# ------------------------------------------------------------------ monitors


def monitor_fields(monitor: Monitor) -> dict[str, Any]:
    """What a person can change about a monitor, by the name the activity
    log gives it (status and mute apart: pausing and resuming, muting and
    unmuting are entries of their own)."""
    targets = [
        (t.type, t.urls, t.url, t.queries, t.scrape_options, t.crawl_options,
         t.search_window, t.max_results, t.include_domains, t.exclude_domains)
        for t in monitor.targets.order_by("position", "created_at")
    ]  # fmt: skip
    return {
        "name": monitor.name,
        "schedule": (monitor.schedule_cron, monitor.schedule_timezone),
        "goal": monitor.goal or "",
        "judging": monitor.judge_enabled,
        "ignored lines": monitor.ignore_lines,
        "which changes matter": monitor.change_rules,
        "how pages are loaded": monitor.fetch_with,
        "webhook": _webhook_as_meant(monitor.webhook),
        "page events": monitor.webhook_pages,
        "notifications": _notification_as_meant(monitor.notification),
        # The team channels it sends to; its own channels follow "webhook"
        # and "notifications" above.
        "channels": sorted(monitor.channels.shared().values_list("pk", flat=True)),
        "history kept": monitor.retention_days,
        "tags": monitor.tag_names,
        "targets": targets,
        "status": monitor.status,
        "mute": monitor.mute_ends_at,
    }


def _webhook_as_meant(webhook: Any) -> Any:
    """The webhook with its defaults filled in: one stored without `events`
    or `metadata` (an import, an older row) and the same one written whole
    by a save mean the same, and are no edit."""
    if not isinstance(webhook, dict) or not webhook:
        return webhook or None
    return webhook | {
        "headers": webhook.get("headers") or {},
        "metadata": webhook.get("metadata") or {},
        "events": sorted(webhook.get("events") or rules.WEBHOOK_EVENTS),
    }


def _notification_as_meant(notification: Any) -> Any:
    """The notification settings with the e-mail's defaults filled in, as
    for the webhook."""
    if not isinstance(notification, dict):
        return notification
    email = notification.get("email") or {}
    if not isinstance(email, dict):
        return notification
    return notification | {
        "email": email
        | {
            "enabled": bool(email.get("enabled")),
            "recipients": email.get("recipients") or [],
            "includeDiffs": bool(email.get("includeDiffs")),
        }
    }


def record_mute(actor: Actor, team: Team, monitors: list[Monitor], until: Any) -> None:
    """ "Muted notifications until Tue 1 Dec 14:00 (Europe/Berlin)", or
    "Unmuted notifications" (until None), for each of these monitors."""
    details = muting.log_details(until, clock.team_zone(team))
    record_each(actor, team, Kind.MONITOR_EDITED, monitors, **details)


def record_monitor_change(
    actor: Actor, before: dict[str, Any], monitor: Monitor
) -> None:
    """Entries for an edit: paused or resumed when the status moved, edited
    (with the fields) when anything else did."""
    monitor.refresh_from_db()
    after = monitor_fields(monitor)
    if before["status"] != after["status"]:
        kind = (
            Kind.MONITOR_PAUSED
            if after["status"] == Monitor.Status.PAUSED
            else Kind.MONITOR_RESUMED
        )
        record(actor, monitor.team_id, kind, monitor)
    if before["mute"] != after["mute"]:
        record_mute(actor, monitor.team, [monitor], after["mute"])
    changed = [
        name
        for name in after
        if name not in ("status", "mute") and before[name] != after[name]
    ]
    if changed:
        record(actor, monitor.team_id, Kind.MONITOR_EDITED, monitor, fields=changed)
