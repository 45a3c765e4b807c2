"""/v2/channels (a Pagewatch extension): a team's channels, with the same
envelope, errors and keys as /v2/monitor. Their input is
monitors.wire.channel's ChannelInputSerializer, which the dashboard's channel
form validates with too, so both take the same input."""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from checks.deleting import delete_channels
from checks.notify import channels as channel_events
from checks.notify import kinds
from checks.notify.kinds import team_email
from monitors.api.auth import sees_hooks_whole
from monitors.api.base import ApiView
from monitors.api.errors import not_found
from monitors.api.views import RESPONSE_HEADERS, envelope, error_responses, ok
from monitors.channel_editing import replaced_secrets, save_channel
from monitors.models import Channel
from monitors.time_words import wire_time
from monitors.wire.channel import ChannelInputSerializer
from teams.activity import Actor, Kind, record


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
        # The team from the context when a list gives one (its members
        # looked up once for every channel: team_email.with_members).
        team = self.context.get("team") or channel.team
        if self.context.get("can_write", False):
            return kind.shown_for(team, channel.settings)
        return kind.shown_in_shape(team, channel.settings)

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


def render(request: Request, channel: Channel) -> dict[str, Any]:
    context = {"can_write": sees_hooks_whole(request)}
    return ChannelSerializer(channel, context=context).data


class ChannelListView(ApiView):
    @extend_schema(
        operation_id="listChannels",
        summary="List the team's channels (Pagewatch extension)",
        parameters=RESPONSE_HEADERS,
        responses={200: envelope("ChannelListResponse", ChannelSerializer(many=True))}
        | error_responses(),
    )
    def get(self, request: Request) -> Response:
        # Each one's settings are shown as its team (the key's) may see them;
        # the team's members (team e-mail's recipients) looked up once.
        team = request.user.team
        rows = Channel.objects.for_team(team).shared()
        context = {
            "can_write": sees_hooks_whole(request),
            "team": team_email.with_members(team),
        }
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
