"""How a monitor reads in the /v2/monitor API's answers: its schedule, targets,
notifications and channels, the last check's summary, and the words of what
this server cannot do for it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from checks.ai import allowance, llm_available
from checks.models import SUMMARY_KEYS
from monitors.api.timestamps import TimestampField
from monitors.models import EmailRecipient, Monitor
from monitors.time_words import wire_time
from monitors.unavailable import unavailable
from monitors.wire.monitor import (
    ChangeRulesSerializer,
    NotificationSerializer,
    TargetField,
    WebhookSerializer,
    target_representation,
)

ZONE_GONE = (
    "schedule.timezone {zone} is no longer in this server's time zone database: "
    "the monitor runs on UTC until schedule.timezone names another zone."
)


class SummarySerializer(serializers.Serializer):
    totalPages = serializers.IntegerField()
    same = serializers.IntegerField()
    changed = serializers.IntegerField()
    new = serializers.IntegerField()
    removed = serializers.IntegerField()
    error = serializers.IntegerField()


class ScheduleOutSerializer(serializers.Serializer):
    cron = serializers.CharField()
    timezone = serializers.CharField()


class EmailSubscriptionSerializer(serializers.Serializer):
    email = serializers.EmailField()
    status = serializers.ChoiceField(choices=EmailRecipient.Status.choices)
    source = serializers.ChoiceField(choices=EmailRecipient.Source.choices)
    confirmationEmailSent = serializers.BooleanField()


def _reader(serializer: serializers.Serializer, field: Any) -> Callable[[Any], Any]:
    """A function giving one field's output for an instance, as DRF would."""
    if isinstance(field, serializers.SerializerMethodField):
        return getattr(serializer, field.method_name)
    simple = field.source_attrs == [field.source] and field.source != "*"
    if not simple:
        return lambda instance: _generic(field, instance)
    convert = field.to_representation
    if isinstance(field, serializers.UUIDField):
        convert = str if field.uuid_format == "hex_verbose" else convert
    source = field.source

    def read(instance: Any) -> Any:
        value = getattr(instance, source)
        return None if value is None else convert(value)

    return read


def _generic(field: Any, instance: Any) -> Any:
    attribute = field.get_attribute(instance)
    return None if attribute is None else field.to_representation(attribute)


class MonitorSerializer(serializers.Serializer):
    """A monitor as every response carries it, in Firecrawl's shape."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=Monitor.Status.choices)
    schedule = serializers.SerializerMethodField()
    nextRunAt = TimestampField(source="next_run_at", allow_null=True)
    lastRunAt = TimestampField(source="last_run_at", allow_null=True)
    currentCheckId = serializers.UUIDField(source="current_check_id", allow_null=True)
    targets = serializers.SerializerMethodField()
    webhook = serializers.SerializerMethodField()
    notification = serializers.SerializerMethodField()
    channels = serializers.SerializerMethodField(
        help_text="Pagewatch extension: ids of the team's channels it sends to."
    )
    tags = serializers.ListField(
        source="tag_names",
        child=serializers.CharField(),
        help_text="Pagewatch extension: the names of the monitor's tags, "
        "alphabetically.",
    )
    retentionDays = serializers.IntegerField(source="retention_days")
    estimatedCreditsPerMonth = serializers.SerializerMethodField()
    unchangedPagesFree = serializers.SerializerMethodField()
    lastCheckSummary = serializers.SerializerMethodField()
    goal = serializers.CharField(allow_null=True)
    judgeEnabled = serializers.BooleanField(source="judge_enabled")
    ignoreLines = serializers.ListField(
        source="ignore_lines", child=serializers.CharField()
    )
    fetchWith = serializers.ChoiceField(
        source="fetch_with", choices=Monitor.FetchWith.values
    )
    changeRules = serializers.SerializerMethodField(
        help_text="Pagewatch extension: which changes matter (see the create "
        "body's changeRules); null when every change counts."
    )
    mutedUntil = serializers.SerializerMethodField(
        help_text=(
            "Pagewatch extension: until when its notifications are muted "
            "(9999-12-31T00:00:00.000Z: until someone unmutes it); null when "
            "they are not."
        )
    )
    emailRecipientSubscriptions = serializers.SerializerMethodField()
    warning = serializers.SerializerMethodField(
        help_text=(
            "Why part of this monitor will not run on this server (a search "
            "target with no search provider configured), or not as set (a "
            "schedule.timezone the time zone database no longer has); null when "
            "all of it runs as set."
        )
    )
    feedUrl = serializers.SerializerMethodField(
        help_text=(
            "Pagewatch extension: the monitor's Atom feed of changes (changed, "
            "new and removed pages, meaningful ones marked) for a feed reader. "
            "The address is the credential: anyone with it can read the feed. "
            "A team member can replace it in the dashboard, which makes the old "
            "address answer 404. Null when the team has turned feeds off."
        )
    )
    createdAt = TimestampField(source="created_at")
    updatedAt = serializers.SerializerMethodField(
        help_text=(
            "When the monitor last changed: edited, paused or resumed, or its "
            "mute ended (the later), as updatedSince compares it; the newest "
            "updatedAt of a pass is a cursor for the next."
        )
    )

    def _now(self) -> datetime:
        return self.context.get("now") or timezone.now()

    def to_representation(self, instance: Monitor) -> dict[str, Any]:
        """What DRF's generic to_representation gives (a test holds the two
        equal), read through one prepared reader per field: on a page of
        monitors DRF's per-field lookups and time zone handling cost more
        than the monitors' data."""
        return {name: read(instance) for name, read in self._readers}

    @functools.cached_property
    def _readers(self) -> list[tuple[str, Callable[[Any], Any]]]:
        return [(f.field_name, _reader(self, f)) for f in self._readable_fields]

    @extend_schema_field(ScheduleOutSerializer)
    def get_schedule(self, monitor: Monitor) -> dict[str, str]:
        return {"cron": monitor.schedule_cron, "timezone": monitor.schedule_timezone}

    @extend_schema_field(serializers.ListField(child=TargetField()))
    def get_targets(self, monitor: Monitor) -> list[dict[str, Any]]:
        return [target_representation(t) for t in monitor.target_list]

    @extend_schema_field(WebhookSerializer(allow_null=True))
    def get_webhook(self, monitor: Monitor) -> dict[str, Any] | None:
        return monitor.webhook

    @extend_schema_field(NotificationSerializer)
    def get_notification(self, monitor: Monitor) -> dict[str, Any]:
        return monitor.notification or {}

    @extend_schema_field({"type": "array", "items": {"type": "integer"}})
    def get_channels(self, monitor: Monitor) -> list[int]:
        prefetched = getattr(monitor, "shared_channels", None)
        if prefetched is not None:  # a page of monitors (api.views.with_relations)
            return [channel.pk for channel in prefetched]
        return list(
            monitor.channels.filter(owner_monitor__isnull=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )

    @extend_schema_field(OpenApiTypes.INT)
    def get_estimatedCreditsPerMonth(self, monitor: Monitor) -> int:  # noqa: N802
        return monitor.estimated_credits_per_month(self._now())

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_unchangedPagesFree(self, monitor: Monitor) -> bool:  # noqa: N802
        return monitor.unchanged_pages_free(self._now())

    @extend_schema_field(SummarySerializer(allow_null=True))
    def get_lastCheckSummary(self, monitor: Monitor) -> dict[str, int] | None:  # noqa: N802
        # The wire counters only: the dashboard's own (search) stay home.
        stored = monitor.last_check_summary
        if stored is None:
            return None
        return {key: int(stored.get(key) or 0) for key in SUMMARY_KEYS}

    @extend_schema_field(ChangeRulesSerializer(allow_null=True))
    def get_changeRules(self, monitor: Monitor) -> dict[str, Any] | None:  # noqa: N802
        return monitor.change_rules or None

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_mutedUntil(self, monitor: Monitor) -> str | None:  # noqa: N802
        until = monitor.mute_end(self._now())
        return None if until is None else wire_time(until)

    @extend_schema_field(serializers.DateTimeField())
    def get_updatedAt(self, monitor: Monitor) -> str:  # noqa: N802
        """updated_at, or the end of a mute that has ended since (no write
        marks it), as MonitorQuerySet.changed_since matches it."""
        changed = monitor.updated_at
        ended = monitor.muted_until
        if ended is not None and changed < ended <= self._now():
            changed = ended
        return wire_time(changed)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_warning(self, monitor: Monitor) -> str | None:
        reasons = dict.fromkeys(
            t.not_run_reason for t in monitor.target_list if t.not_run_reason
        )
        reasons.update(dict.fromkeys(u.api for u in unavailable(monitor)))
        held = self._ai_held(monitor)
        if held:
            reasons[held] = None
        if monitor.zone_gone_words:
            reasons[ZONE_GONE.format(zone=monitor.schedule_timezone)] = None
        return " ".join(reasons) or None

    def _ai_held(self, monitor: Monitor) -> str | None:
        """Why this monitor's AI calls are not made (its team's allowance is
        used up, context "ai_held": asked once per answer by the view), when
        it makes any."""
        why = self.context.get("ai_held")
        if why is None or not llm_available() or not allowance.asks_the_model(monitor):
            return None
        return (
            f"{why[:1].upper()}{why[1:]}: until then changes are reported as not "
            "judged and JSON extraction pages are errors."
        )

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_feedUrl(self, monitor: Monitor) -> str | None:  # noqa: N802
        return monitor.feed_url

    @extend_schema_field(EmailSubscriptionSerializer(many=True))
    def get_emailRecipientSubscriptions(  # noqa: N802
        self, monitor: Monitor
    ) -> list[dict[str, Any]]:
        return [
            {
                "email": r.email,
                "status": r.status,
                "source": r.source,
                "confirmationEmailSent": r.confirmation_sent_at is not None,
            }
            for r in monitor.recipient_subscriptions()
        ]
