"""/v2/channels (a Pagewatch extension): a team's channels, with the same
envelope, errors and keys as /v2/monitor. ChannelInputSerializer is also what
the dashboard's channel form validates with, so both take the same input."""

from __future__ import annotations

import re
from datetime import time
from typing import Any

from django.http import Http404
from django.utils import timezone
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from checks.deleting import delete_channels
from checks.notify import channels as channel_events
from checks.notify import kinds
from checks.targets.options import StrictCharField, StrictIntegerField, StrictMixin
from monitors.api.auth import ApiClient
from monitors.api.base import ApiView
from monitors.api.errors import not_found
from monitors.api.views import RESPONSE_HEADERS, envelope, error_responses, ok
from monitors.channel_editing import save_channel
from monitors.models import Channel
from monitors.time_words import wire_time
from teams.activity import Actor, Kind, record

NAME_MAX = 120
FAILING_AFTER_MAX = 100
SETTINGS_MAX_CHARS = 4000


class KindField(serializers.CharField):
    """A channel kind's name. Checked in ChannelInputSerializer.validate_kind
    (its 400 lists the kinds); documented as an enum, so generated clients and
    schemathesis know which names a create may use."""


class KindFieldSchema(OpenApiSerializerFieldExtension):
    target_class = KindField

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict:
        # Read when the document is built: a plugin may add kinds after import.
        return {"type": "string", "enum": [k.name for k in kinds.all_kinds()]}


class ChannelInputSerializer(StrictMixin, serializers.Serializer):
    # Create with every field but the optional ones; with partial=True, an edit.
    # context["team"] is the caller's team (some kinds pick settings among its
    # members); context["channel"] the stored channel when editing. Unknown keys
    # are a 400 as on /v2/monitor (a misspelt field must not be dropped unseen);
    # `origin`, which the Firecrawl SDKs stamp on bodies, is ignored. Comments,
    # not a docstring: drf-spectacular would publish one in the OpenAPI document.

    allow_extra = ("origin",)

    name = StrictCharField(max_length=NAME_MAX)
    kind = KindField(help_text="One of the kinds this Pagewatch knows.")
    settings = serializers.DictField(
        help_text="The kind's settings. Secrets are written here and never "
        "returned: an edit that leaves one out (or sends back the masked form) "
        "keeps it."
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=Channel.Event.values),
        required=False,
        max_length=len(Channel.Event.values),
    )
    digest = serializers.ChoiceField(
        choices=["daily", "weekly"], required=False, allow_null=True
    )
    digestAt = serializers.TimeField(
        required=False, allow_null=True, help_text="HH:MM in the team's time zone."
    )
    failingAfter = StrictIntegerField(
        required=False, min_value=1, max_value=FAILING_AFTER_MAX
    )

    def validate_kind(self, value: str) -> str:
        stored: Channel | None = self.context.get("channel")
        if stored is not None and value != stored.kind:
            raise ValidationError("A channel's kind cannot change; make a new one.")
        if kinds.offered(value) is None:
            known = ", ".join(k.name for k in kinds.all_kinds())
            raise ValidationError(f"Unknown kind {value!r}. Known kinds: {known}.")
        return value

    def validate_settings(self, given: dict[str, Any]) -> dict[str, Any]:
        # A field rule rather than part of validate(), which DRF skips when
        # any field failed: a form missing both its name and its address
        # must say both at once.
        stored: Channel | None = self.context.get("channel")
        name = stored.kind if stored else self.initial_data.get("kind")
        kind = kinds.kind_for(name) if isinstance(name, str) else None
        if kind is None:  # the kind's own error says what is wrong
            return given
        if len(str(given)) > SETTINGS_MAX_CHARS:
            raise ValidationError("Too large.")
        if stored is not None:
            given = kind.merge(stored.settings, given)
        try:
            return kind.clean_for(self.context["team"], given)
        except kinds.SettingsError as exc:
            raise ValidationError({k: [v] for k, v in exc.errors.items()}) from None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        stored: Channel | None = self.context.get("channel")
        if self.partial and not attrs:
            raise ValidationError("Update body cannot be empty.")
        name = attrs.get("kind") or (stored.kind if stored else "")
        kind = kinds.kind_for(name)
        assert kind is not None
        problem = kind.unavailable()
        if problem and (stored is None or "settings" in attrs):
            raise ValidationError({"kind": [problem]})
        digest = attrs.get("digest", stored.digest if stored else None) or None
        digest_at = attrs.get("digestAt", stored.digest_at if stored else None)
        if digest and digest_at is None:
            attrs["digestAt"] = time(9, 0)
        return attrs


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


class ChannelSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    settings = serializers.SerializerMethodField()
    events = serializers.ListField(child=serializers.CharField())
    digest = serializers.SerializerMethodField()
    digestAt = serializers.SerializerMethodField()
    failingAfter = serializers.IntegerField(source="failing_after")
    createdAt = serializers.SerializerMethodField()
    updatedAt = serializers.SerializerMethodField()

    def get_settings(self, channel: Channel) -> dict[str, Any]:
        kind = kinds.kind_for(channel.kind)
        if kind is None:
            return {}
        # A read key cannot send the settings back, so nothing is lost; a
        # write key could point the channel at its own server anyway.
        if self.context.get("can_write", False):
            return kind.shown_for(channel.team, channel.settings)
        return kind.shown_in_shape(channel.team, channel.settings)

    def get_digest(self, channel: Channel) -> str | None:
        return channel.digest or None

    def get_digestAt(self, channel: Channel) -> str | None:  # noqa: N802
        return channel.digest_at.strftime("%H:%M") if channel.digest_at else None

    def get_createdAt(self, channel: Channel) -> str:  # noqa: N802
        return wire_time(channel.created_at)

    def get_updatedAt(self, channel: Channel) -> str:  # noqa: N802
        return wire_time(channel.updated_at)


CHANNEL_ENVELOPE = envelope("ChannelResponse", ChannelSerializer())
CHANNEL_ID = OpenApiParameter(
    "channel_id", int, OpenApiParameter.PATH, description="Another team's is a 404."
)


# An id as the API gives it: ASCII digits, few enough for the database's
# bigint. str.isdigit() would also take "²" (which int() refuses) and "١"
# (which int() reads as 1).
_CHANNEL_ID = re.compile(r"[0-9]{1,18}")


def get_channel_for(request: Request, channel_id: str) -> Channel:
    if not _CHANNEL_ID.fullmatch(str(channel_id)):
        raise not_found("Channel")
    channel = (
        Channel.objects.for_team(request.user.team)
        .shared()
        .filter(pk=int(channel_id))
        .first()
    )
    if channel is None:
        raise not_found("Channel")
    return channel


def _can_write(request: Request) -> bool:
    client = request.user
    return not isinstance(client, ApiClient) or client.key.can_write


def render(request: Request, channel: Channel) -> dict[str, Any]:
    return ChannelSerializer(channel, context={"can_write": _can_write(request)}).data


class ChannelListView(ApiView):
    @extend_schema(
        operation_id="listChannels",
        summary="List the team's channels (Pagewatch extension)",
        parameters=RESPONSE_HEADERS,
        responses={200: envelope("ChannelListResponse", ChannelSerializer(many=True))}
        | error_responses(),
    )
    def get(self, request: Request) -> Response:
        rows = Channel.objects.for_team(request.user.team).shared()
        context = {"can_write": _can_write(request)}
        return ok(ChannelSerializer(rows, many=True, context=context).data)

    @extend_schema(
        operation_id="createChannel",
        summary="Create a channel (Pagewatch extension)",
        request=ChannelInputSerializer,
        parameters=RESPONSE_HEADERS,
        responses={200: CHANNEL_ENVELOPE} | error_responses(400, 403, 413, 415),
    )
    def post(self, request: Request) -> Response:
        serializer = ChannelInputSerializer(
            data=request.data, context={"team": request.user.team}
        )
        serializer.is_valid(raise_exception=True)
        channel = save_channel(
            request.user.team, serializer.validated_data, timezone.now()
        )
        record(Actor.of(request), channel.team, Kind.CHANNEL_CREATED, name=channel.name)
        return ok(render(request, channel))


class ChannelDetailView(ApiView):
    @extend_schema(
        operation_id="getChannel",
        summary="One channel (Pagewatch extension)",
        parameters=[CHANNEL_ID, *RESPONSE_HEADERS],
        responses={200: CHANNEL_ENVELOPE} | error_responses(404),
    )
    def get(self, request: Request, channel_id: str) -> Response:
        return ok(render(request, get_channel_for(request, channel_id)))

    @extend_schema(
        operation_id="updateChannel",
        summary="Change a channel (Pagewatch extension)",
        request=ChannelInputSerializer(partial=True),
        parameters=[CHANNEL_ID, *RESPONSE_HEADERS],
        responses={200: CHANNEL_ENVELOPE} | error_responses(400, 403, 404, 413, 415),
    )
    def patch(self, request: Request, channel_id: str) -> Response:
        channel = get_channel_for(request, channel_id)
        serializer = ChannelInputSerializer(
            data=request.data,
            partial=True,
            context={"channel": channel, "team": channel.team},
        )
        serializer.is_valid(raise_exception=True)
        before = dict(channel.settings)
        try:
            save_channel(
                channel.team, serializer.validated_data, timezone.now(), channel
            )
        except Http404:
            raise not_found("Channel") from None  # deleted while we looked
        record(Actor.of(request), channel.team, Kind.CHANNEL_EDITED,
               name=channel.name, **replaced_secrets(channel, before))  # fmt: skip
        return ok(render(request, channel))

    @extend_schema(
        operation_id="deleteChannel",
        summary="Delete a channel (Pagewatch extension)",
        parameters=[CHANNEL_ID, *RESPONSE_HEADERS],
        responses={
            200: inline_serializer(
                "ChannelDeleteResponse",
                {"success": serializers.BooleanField(help_text="Always true.")},
            )
        }
        | error_responses(403, 404),
    )
    def delete(self, request: Request, channel_id: str) -> Response:
        channel = get_channel_for(request, channel_id)
        delete_channels(Channel.objects.filter(pk=channel.pk))
        record(Actor.of(request), channel.team, Kind.CHANNEL_DELETED, name=channel.name)
        return Response({"success": True})


class ChannelTestView(ApiView):
    @extend_schema(
        operation_id="testChannel",
        summary="Send a test message through a channel (Pagewatch extension)",
        request=None,
        parameters=[CHANNEL_ID, *RESPONSE_HEADERS],
        responses={
            200: envelope(
                "ChannelTestResponse",
                inline_serializer(
                    "ChannelTestResult",
                    {
                        "delivered": serializers.BooleanField(),
                        "statusCode": serializers.IntegerField(allow_null=True),
                        "response": serializers.CharField(
                            help_text="What the service answered (an excerpt)."
                        ),
                        "error": serializers.CharField(allow_null=True),
                    },
                ),
            )
        }
        | error_responses(403, 404),
    )
    def post(self, request: Request, channel_id: str) -> Response:
        channel = get_channel_for(request, channel_id)
        delivery = channel_events.send_test(channel)
        attempt = delivery.attempt_log.order_by("-number").first()
        return ok(
            {
                "delivered": delivery.status == delivery.Status.DELIVERED,
                "statusCode": delivery.last_status_code,
                "response": attempt.response_body if attempt else "",
                "error": delivery.last_error or None,
            }
        )
