"""Channels: somewhere a team is told about its monitors, and which monitors
send to each."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Q

from monitors.models.monitors import Monitor
from monitors.models.teams import Team


class ChannelQuerySet(models.QuerySet["Channel"]):
    def for_team(self, team: Team) -> ChannelQuerySet:
        return self.filter(team=team)

    def shared(self) -> ChannelQuerySet:
        """Channels a team manages on the Channels page; a monitor's own
        channels (its Firecrawl `webhook`, `notification.email` and
        `notification.slack`, checks.notify.own) live with the monitor."""
        return self.filter(owner_monitor__isnull=True)

    def with_monitors(self) -> ChannelQuerySet:
        """Each channel with `live_monitors`, the monitors it serves by name,
        in one query for all channels (the Channels page names them)."""
        return self.prefetch_related(
            models.Prefetch(
                "monitors",
                queryset=Monitor.objects.alive().order_by("name", "pk"),
                to_attr="live_monitors",
            )
        )

    def digest_due(self, now: datetime) -> ChannelQuerySet:
        """Digest channels whose next digest has come (checks.notify.digests)."""
        return self.exclude(digest="").filter(next_digest_at__lte=now)


class Channel(models.Model):
    """Somewhere a team is told about its monitors: one kind (a class in
    checks.notify.kinds) and that kind's settings, linked to many monitors.

    `settings` holds secrets (tokens, Apprise URLs); they are written, never
    shown again: the API and the dashboard show the kind's masked form."""

    class Event(models.TextChoices):
        MEANINGFUL = "meaningful", "meaningful changes"
        CHANGE = "change", "every change"
        FAILING = "failing", "a monitor failing, and recovering"

    class Digest(models.TextChoices):
        NONE = "", "at once"
        DAILY = "daily", "a daily digest"
        WEEKLY = "weekly", "a weekly digest"

    DEFAULT_EVENTS = (Event.MEANINGFUL, Event.FAILING)
    FAILING_AFTER_DEFAULT = 3

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="channels")
    # Set on a monitor's own channel (made from its Firecrawl fields); such a
    # channel goes when its monitor goes.
    owner_monitor = models.ForeignKey(
        "Monitor",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="own_channels",
    )
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=32)
    settings = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    digest = models.CharField(
        max_length=8, choices=Digest.choices, default=Digest.NONE, blank=True
    )
    # Local time of day in the team's zone (Team.time_zone) the digest goes.
    digest_at = models.TimeField(null=True, blank=True)
    # When the digest's period started and when it is due; None = no digest.
    digest_since = models.DateTimeField(null=True, blank=True)
    next_digest_at = models.DateTimeField(null=True, blank=True)
    failing_after = models.PositiveSmallIntegerField(default=FAILING_AFTER_DEFAULT)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # One own channel per Firecrawl field: checks.notify.own makes
            # them with get_or_create, which relies on this.
            models.UniqueConstraint(
                fields=["owner_monitor", "kind"],
                condition=Q(owner_monitor__isnull=False),
                name="one_own_channel_per_kind",
            ),
        ]
        indexes = [
            # Used by checks.notify.digests.queue_due_digests.
            models.Index(
                fields=["next_digest_at"],
                name="channel_digest_due_idx",
                condition=~Q(digest=""),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return f"/channels/{self.pk}/"

    def wants(self, event: str) -> bool:
        return event in (self.events or [])

    @property
    def event_words(self) -> list[str]:
        """What it is told, in words ("meaningful changes"), in stored order."""
        labels = dict(self.Event.choices)
        return [labels.get(event, event) for event in self.events or []]


class MonitorChannel(models.Model):
    """A monitor sending to a channel, and whether that channel was told the
    monitor is failing (so it is told once when it starts and once when it
    recovers, never once per failure)."""

    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE)
    failing_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "channel"], name="unique_monitor_channel"
            )
        ]

    def __str__(self) -> str:
        return f"{self.monitor_id} -> {self.channel_id}"
