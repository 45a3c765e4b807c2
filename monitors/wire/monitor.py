"""Wire shapes of the /v2/monitor API that a monitor is written in. The rules
they enforce beyond a field's type and bounds are the domain's, called here as
the dashboard's form calls them: monitors.rules, monitors.rules_monitor and
each target kind's `check`. How a monitor reads in answers is
monitors.api.representation.

Objects are strict (an unknown key is a 400 naming it), except inside
scrapeOptions and crawlOptions (see checks.targets.options)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from checks.notify import own
from checks.targets.options import (
    PassThroughMixin,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictMixin,
    StringMapField,
    UrlField,
)
from monitors import rules, rules_changes, rules_monitor
from monitors.models import Monitor, Target
from monitors.rules_problems import Problem
from monitors.schedule import ScheduleError
from monitors.target_kinds import all_kinds, kind_for

# ---------------------------------------------------------------- schedule


class ScheduleSerializer(StrictMixin, serializers.Serializer):
    """When checks run: `cron` or `text`, not both (one of them on create; an
    update may send only `timezone`, which keeps the times and moves them to
    that zone). Answers always give `cron` and `timezone`."""

    cron = StrictCharField(
        required=False,
        allow_null=True,
        max_length=rules.SCHEDULE_MAX,
        help_text="Five fields, e.g. */30 * * * *; by default at most every 5 minutes.",
    )
    text = StrictCharField(
        required=False,
        allow_null=True,
        max_length=rules.SCHEDULE_MAX,
        help_text="In words, e.g. every 30 minutes, hourly, daily at 9:00.",
    )
    timezone = StrictCharField(
        required=False,
        allow_null=True,
        max_length=rules.TIMEZONE_MAX,
        help_text="An IANA time zone, e.g. Europe/Berlin. Default UTC on create; "
        "on update, the monitor's own.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            schedule = rules_monitor.schedule_for(
                attrs.get("cron"),
                attrs.get("text"),
                attrs.get("timezone"),
                self.context.get("monitor"),
            )
        except ScheduleError as exc:
            raise ValidationError(exc.message, code=exc.code) from None
        return {"cron": schedule.cron, "timezone": schedule.timezone}


# ---------------------------------------------------------------- targets


def target_serializers() -> dict[str, type[serializers.Serializer]]:
    """Each kind's serializer by its type (read when the schema is built,
    once every kind has registered)."""
    return {kind.name: kind.serializer for kind in all_kinds()}


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="MonitorTarget",
        serializers=target_serializers,
        resource_type_field_name="type",
    )
)
class TargetField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise ValidationError("Each target must be an object.")
        kind = kind_for(str(data.get("type")))
        if kind is None:
            problem = rules_monitor.target_type_problem(data)
            raise ValidationError({"type": [problem]})
        target, problems = kind.check(data)
        if problems:
            raise ValidationError(nested(problems))
        return target

    def to_representation(self, value: Target) -> dict[str, Any]:
        return target_representation(value)


def nested(problems: list[Problem]) -> Any:
    """Problems in DRF's nested shape (keys and indexes as dicts, messages in
    lists, an object's own under non_field_errors), which the API's 400s
    flatten back in the same order (monitors.wire.errors.flatten_errors)."""
    root: dict[Any, Any] = {}
    for problem in problems:
        place = root
        for part in problem.path:
            place = place.setdefault(part, {})
        place.setdefault("non_field_errors", []).append(
            ErrorDetail(problem.message, code=problem.code)
        )
    return _lists(root)


def _lists(detail: dict[Any, Any]) -> Any:
    """{"non_field_errors": [...]} alone is the list itself."""
    if list(detail) == ["non_field_errors"]:
        return detail["non_field_errors"]
    return {
        key: _lists(value) if isinstance(value, dict) else value
        for key, value in detail.items()
    }


def target_representation(target: Target) -> dict[str, Any]:
    shape: dict[str, Any] = {"id": str(target.id), "type": target.type}
    kind = target.kind
    if kind is not None:
        shape |= kind.represent(target)
    return shape


# ---------------------------------------------------------------- notifications


class WholeObjectMixin:
    # A nested object that replaces the stored one whole, so it is validated as
    # on create even inside a PATCH body. DRF would otherwise inherit the root's
    # partial=True and skip its required keys and defaults (a webhook without
    # `url`, an e-mail block without `enabled`). A comment, not a docstring:
    # drf-spectacular would publish a docstring as every subclass's description.

    def to_internal_value(self, data: Any) -> Any:
        root = self.root  # type: ignore[attr-defined]
        if root is not self and getattr(root, "partial", False):
            # run_validation, not is_valid(): a top-level serializer's
            # .errors cannot hold a list (the "Must be an object." of a
            # notification given as [] or "text"), where a raised error can.
            whole = type(self)(context=self.context)  # type: ignore[attr-defined]
            return whole.run_validation(data)
        return super().to_internal_value(data)  # type: ignore[misc]


class WebhookSerializer(WholeObjectMixin, StrictMixin, serializers.Serializer):
    url = UrlField()
    headers = StringMapField(
        max_items=rules.WEBHOOK_HEADERS_MAX,
        required=False,
        key_error=rules.webhook_header_name_error,
        value_error=rules.header_value_error,
    )
    metadata = StringMapField(max_items=rules.WEBHOOK_METADATA_MAX, required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=rules.WEBHOOK_EVENTS),
        required=False,
        allow_empty=False,
        max_length=len(rules.WEBHOOK_EVENTS),
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # Firecrawl also takes a bare URL string for the webhook.
        if isinstance(data, str):
            if not data.strip():
                raise ValidationError(
                    "May not be blank: give a URL, or null to remove the webhook."
                )
            data = {"url": data}
        value = super().to_internal_value(data)
        return {
            "url": value["url"],
            "headers": value.get("headers", {}),
            "metadata": value.get("metadata", {}),
            "events": list(dict.fromkeys(value.get("events") or rules.WEBHOOK_EVENTS)),
        }

    def to_representation(self, instance: Any) -> Any:
        return instance


class EmailNotificationSerializer(StrictMixin, serializers.Serializer):
    enabled = StrictBooleanField(default=False)
    recipients = serializers.ListField(
        child=serializers.EmailField(max_length=rules.EMAIL_MAX),
        default=list,
        max_length=rules.RECIPIENTS_MAX,
    )
    includeDiffs = StrictBooleanField(default=False)

    def validate_recipients(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(address.strip().lower() for address in value))


class SlackNotificationSerializer(StrictMixin, serializers.Serializer):
    # Firecrawl's notification.slack, kept as given; underneath it is the
    # monitor's own Slack channel (monitors.editing). Comments, not a
    # docstring, here and below: drf-spectacular publishes docstrings in the
    # OpenAPI document, for integrators.

    enabled = StrictBooleanField(default=False)
    channelId = StrictCharField(required=False, allow_blank=True, max_length=64)
    channelName = StrictCharField(required=False, allow_blank=True, max_length=200)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        if value.get("enabled"):
            problem = own.slack_unavailable()
            if problem:
                raise ValidationError({"enabled": [problem]})
            if not value.get("channelId"):
                raise ValidationError(
                    {"channelId": ["Required when Slack is enabled."]}
                )
        return {key: data[key] for key in value if key in data} | {
            "enabled": value["enabled"]
        }


class NotificationSerializer(
    WholeObjectMixin, StrictMixin, PassThroughMixin, serializers.Serializer
):
    email = EmailNotificationSerializer(required=False)
    slack = SlackNotificationSerializer(required=False)


# ---------------------------------------------------------------- change rules


class ChangeRulesSerializer(WholeObjectMixin, StrictMixin, serializers.Serializer):
    # Which changes matter, decided before (and without) the AI judge:
    # monitors.rules_changes, whose checks the dashboard's form runs too.

    lines = serializers.ChoiceField(
        choices=rules_changes.LINES,
        default=rules_changes.LINES_ANY,
        help_text="Which line changes count: added, removed or any (default). "
        "A changed line is one removed and one added.",
    )
    containing = serializers.ListField(
        child=StrictCharField(
            max_length=rules_changes.TEXT_MAX, allow_blank=True, trim_whitespace=False
        ),
        default=list,
        max_length=rules_changes.CONTAINING_MAX,
        help_text="A change counts only when one of its counted lines contains "
        "one of these: plain text (case-insensitive) or an RE2 regular "
        "expression between slashes.",
    )
    appears = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=rules_changes.TEXT_MAX,
        help_text="A change counts only when the page's new text has this and "
        "its previous text had not (same syntax as containing).",
    )
    disappears = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=rules_changes.TEXT_MAX,
        help_text="A change counts only when the page's previous text had this "
        "and its new text has not, e.g. Out of stock. With appears, either "
        "counts.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        problems = rules_changes.problems(attrs)
        if problems:
            raise ValidationError(nested(problems))
        return attrs


# ---------------------------------------------------------------- monitor input


class MonitorWriteSerializer(StrictMixin, serializers.Serializer):
    # The create body; with partial=True (see MonitorUpdateSerializer) the PATCH
    # body. context["monitor"] is the stored monitor when updating.

    allow_extra = ("origin",)

    name = StrictCharField(max_length=rules.NAME_MAX)
    schedule = ScheduleSerializer()
    targets = serializers.ListField(
        child=TargetField(), min_length=rules.TARGETS_MIN, max_length=rules.TARGETS_MAX
    )
    webhook = WebhookSerializer(required=False, allow_null=True)
    notification = NotificationSerializer(required=False, allow_null=True)
    channels = serializers.ListField(
        # The database's bigint: a larger id is a 400, never an overflow.
        child=StrictIntegerField(min_value=1, max_value=rules_monitor.CHANNEL_ID_MAX),
        required=False,
        max_length=rules.CHANNELS_MAX,
        help_text="Pagewatch extension: the ids of the team's channels "
        "(/v2/channels) this monitor sends to; replaces the list.",
    )
    tags = serializers.ListField(
        child=StrictCharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text="Pagewatch extension: the names of the monitor's tags, e.g. "
        f'["Competitors"]; at most {rules.MONITOR_TAGS_MAX}, each at most '
        f"{rules.TAG_NAME_MAX} characters, no commas. Replaces the list; "
        "leave it out to keep them. A name the team has in another case is "
        "that tag.",
    )
    retentionDays = StrictIntegerField(
        required=False, min_value=rules.RETENTION_MIN, max_value=rules.RETENTION_MAX
    )
    goal = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=rules.GOAL_MAX
    )
    judgeEnabled = StrictBooleanField(required=False, allow_null=True)
    ignoreLines = serializers.ListField(
        child=StrictCharField(max_length=rules.IGNORE_LINE_MAX, allow_blank=True),
        required=False,
        max_length=rules.IGNORE_LINES_MAX,
        help_text=(
            "Pagewatch extension: lines to ignore before comparing and judging. "
            "Plain text (case-insensitive) or an RE2 regular expression "
            "between slashes, e.g. /^Updated \\d+:\\d+$/."
        ),
    )
    changeRules = ChangeRulesSerializer(
        required=False,
        allow_null=True,
        help_text=(
            "Pagewatch extension: which changes matter, decided without AI "
            "before the judge. A changed page whose change breaks a rule set "
            "here is recorded as not meaningful (judgment.meaningful false, "
            'metadata.judgedBy "rules", a Pagewatch extension) and never sent '
            "to the AI judge. A page watched as JSON only is not decided by "
            "them. Replaces the rules whole; null (or no rule set) removes them."
        ),
    )
    fetchWith = serializers.ChoiceField(
        choices=Monitor.FetchWith.values,
        required=False,
        help_text=(
            "Pagewatch extension: how pages are loaded. auto (default): plain "
            "HTTP, a real browser for pages whose options need one or that "
            "turn out to be built by scripts; http: never a browser; browser: "
            "always one (needs BROWSER_EXECUTABLE)."
        ),
    )
    mutedUntil = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text=(
            "Pagewatch extension: until when the monitor's notifications are "
            "muted (ISO 8601, in the future). It keeps checking and recording "
            "changes but sends nothing to its webhook, e-mail or channels, "
            "digests included. 9999-12-31T00:00:00Z mutes until unmuted; null "
            "unmutes."
        ),
    )
    origin = StrictCharField(
        required=False, max_length=200, help_text="Sent by the SDKs; ignored."
    )

    def validate_mutedUntil(self, until: datetime | None) -> datetime | None:  # noqa: N802
        rule = rules.mute_rule(until, timezone.now())
        if rule is not None:
            raise ValidationError(rule.api, code=rule.code)
        return rules.clean_muted_until(until)

    def validate_ignoreLines(self, entries: list[str]) -> list[str]:  # noqa: N802
        errors = {
            index: [problem]
            for index, entry in enumerate(entries)
            if entry.strip() and (problem := rules.ignore_line_error(entry))
        }
        if errors:
            raise ValidationError(errors)
        return rules.clean_ignore_lines(entries)

    def validate_tags(self, tags: list[str]) -> list[str]:
        problem = rules.tags_error(tags)
        if problem:
            raise ValidationError(problem)
        return rules.clean_tags(tags)

    def validate_channels(self, ids: list[int]) -> list[int]:  # noqa: N802
        monitor: Monitor | None = self.context.get("monitor")
        team = monitor.team if monitor else self.context.get("team")
        problem = rules_monitor.channel_problem(team, ids)
        if problem:
            raise ValidationError(problem)
        return list(dict.fromkeys(ids))

    def validate_targets(self, targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rule = rules_monitor.target_ids_rule(targets)
        if rule is not None:
            raise ValidationError(rule.api, code=rule.code)
        return targets

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.pop("origin", None)
        monitor: Monitor | None = self.context.get("monitor")
        if self.partial and not attrs:
            raise ValidationError("Update body cannot be empty.")
        if "goal" in attrs:
            attrs["goal"] = rules.clean_goal(attrs["goal"])
        if "changeRules" in attrs:
            attrs["changeRules"] = rules_changes.clean(attrs["changeRules"])
        attrs["judgeEnabled"], problem = rules_monitor.judging(attrs, monitor)
        if problem:
            field, rule = problem
            raise ValidationError({field: [rule.api]}, code=rule.code)
        rule = rules_monitor.fetch_with_rule(attrs, monitor)
        if rule is not None:
            raise ValidationError({"fetchWith": [rule.api]}, code=rule.code)
        return attrs


class MonitorUpdateSerializer(MonitorWriteSerializer):
    status = serializers.ChoiceField(
        choices=Monitor.Status.choices, required=False, help_text="Pause or resume."
    )
    webhook = WebhookSerializer(
        required=False, allow_null=True, help_text="null clears it."
    )
    notification = NotificationSerializer(
        required=False, allow_null=True, help_text="null clears it."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["partial"] = True
        super().__init__(*args, **kwargs)
