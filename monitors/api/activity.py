"""GET /v2/activity: the team's activity log (a Pagewatch extension, not part
of Firecrawl's API). Readable with a read key; where each entry came from
only as the key's maker may see it now (owners: everyone's). Newest first, a page at a
time: `before` is the cursor the previous page gave as `nextBefore`."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from monitors.api.base import ApiView
from monitors.api.timestamps import TimestampField
from monitors.api.views import RESPONSE_HEADERS, error_responses, int_param
from monitors.models import Membership
from monitors.time_words import wire_time
from teams.models import Activity

ENTRY = inline_serializer(
    "ActivityEntry",
    {
        "id": serializers.IntegerField(),
        "at": TimestampField(),
        "kind": serializers.ChoiceField(choices=Activity.Kind.values),
        "via": serializers.ChoiceField(choices=Activity.Via.values),
        "actor": inline_serializer(
            "ActivityActor",
            {
                "type": serializers.ChoiceField(
                    choices=["user", "apiKey", "system", "email"],
                    help_text="system: Pagewatch itself, or a management command "
                    "run for nobody in particular (`via` says which). email: "
                    "whoever followed a link in an e-mail; `name` is the "
                    "address it was sent to.",
                ),
                "name": serializers.CharField(),
            },
        ),
        "monitorId": serializers.UUIDField(allow_null=True),
        "monitorName": serializers.CharField(),
        "summary": serializers.CharField(
            help_text="In words, as the dashboard says it."
        ),
        "details": serializers.DictField(),
        "address": serializers.IPAddressField(
            allow_null=True,
            help_text="Where it came from, for keys that act as an owner: a write "
            "key whose maker is an owner of the team now, or one made on the "
            "server (`createapikey`). Any other key (a read key, or one whose "
            "maker is now an editor or a viewer, whatever their role when they "
            "made it) gets the address of its maker's own entries (theirs in "
            "the dashboard and through any key they made) and null for everyone "
            "else's, as the dashboard shows them.",
        ),
    },
)
RESPONSE = inline_serializer(
    "ActivityListResponse",
    {
        "success": serializers.BooleanField(help_text="Always true."),
        "data": serializers.ListField(child=ENTRY),
        "nextBefore": serializers.IntegerField(
            allow_null=True, help_text="Pass as `before` for the next, older page."
        ),
    },
)


def actor(entry: Activity) -> dict[str, str]:
    """Who did it: a person (by name, whichever way they came), an API key,
    or no person at all — Pagewatch itself, or a management command run on
    the server for nobody in particular (its `via` says which) — or whoever
    followed a link in an e-mail, by the address it went to."""
    if entry.via == Activity.Via.API:
        return {"type": "apiKey", "name": entry.key_name}
    if entry.via == Activity.Via.SYSTEM:
        return {"type": "system", "name": "Pagewatch"}
    if entry.via == Activity.Via.EMAIL:
        return {"type": "email", "name": entry.user_name}
    if entry.via == Activity.Via.COMMAND and not entry.user_name:
        return {"type": "system", "name": entry.actor_words}
    return {"type": "user", "name": entry.user_name}


def render_entry(entry: Activity, reader: Membership) -> dict[str, Any]:
    """The entry as `reader` (the member the key acts as) may see it: the
    dashboard's rule (Activity.address_seen_by) decides the address."""
    return {
        "id": entry.pk,
        "at": wire_time(entry.at),
        "kind": entry.kind,
        "via": entry.via,
        "actor": actor(entry),
        "monitorId": str(entry.monitor_id) if entry.monitor_id else None,
        "monitorName": entry.monitor_name,
        "summary": entry.sentence,
        "details": entry.details,
        "address": entry.address_seen_by(reader),
    }


class ActivityListView(ApiView):
    @extend_schema(
        operation_id="listActivity",
        summary="The team's activity log, newest first (Pagewatch extension)",
        parameters=[
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 100, "default": 25},
                description="How many entries to return: 1 to 100, default 25.",
            ),
            OpenApiParameter(
                "before",
                {"type": "integer", "minimum": 1},
                description="Only entries older than this id (a page's nextBefore).",
            ),
            OpenApiParameter(
                "monitorId",
                {"type": "string", "format": "uuid"},
                description="Only this monitor's entries.",
            ),
            OpenApiParameter(
                "kind",
                {"type": "string", "enum": Activity.Kind.values},
                description="Only entries of this kind.",
            ),
            *RESPONSE_HEADERS,
        ],  # fmt: skip
        responses={200: RESPONSE} | error_responses(400),
    )
    def get(self, request: Request) -> Response:
        limit = int_param(request, "limit", 25, 1, 100)
        before = int_param(request, "before", 0, 1) or None
        entries = Activity.objects.filter(team=request.user.team)
        monitor_id = request.query_params.get("monitorId", "")
        if monitor_id:
            try:
                entries = entries.filter(monitor_id=uuid.UUID(monitor_id))
            except ValueError:
                raise ValidationError({"monitorId": ["Must be a UUID."]}) from None
        kind = request.query_params.get("kind", "")
        if kind:
            if kind not in Activity.Kind.values:
                raise ValidationError(
                    {"kind": [f"Must be one of {', '.join(Activity.Kind.values)}."]}
                )
            entries = entries.filter(kind=kind)
        reader = request.user.membership
        rows = entries.page(before, limit)
        shown = rows[:limit]
        next_before = shown[-1].pk if len(rows) > limit else None
        return Response(
            {
                "success": True,
                "data": [render_entry(entry, reader) for entry in shown],
                "nextBefore": next_before,
            }
        )
