"""The /v2/monitor endpoints: thin views over the serializers and
monitors.editing. Every lookup is scoped to the caller's team."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.db.models import Prefetch, prefetch_related_objects
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from checks import deleting
from checks.ai import allowance
from checks.notify.kinds.base import MASK, mask_url
from monitors.api import conditional, paging
from monitors.api.auth import sees_hooks_whole
from monitors.api.base import ApiView
from monitors.api.errors import not_found
from monitors.api.representation import MonitorSerializer
from monitors.editing import create_monitor, update_monitor
from monitors.models import Channel, EmailRecipient, Monitor, Target
from monitors.moving.exporting import SECRET_HEADER
from monitors.wire.monitor import MonitorUpdateSerializer, MonitorWriteSerializer
from teams.activity import Actor, Kind, monitor_fields, record, record_monitor_change

ERROR = inline_serializer(
    "Error",
    {
        "success": serializers.BooleanField(help_text="Always false."),
        "error": serializers.CharField(help_text="Names the field at fault."),
        "code": serializers.CharField(
            help_text="For programs: BAD_REQUEST, NOT_FOUND, UNAUTHORIZED, "
            "RATE_LIMITED, MONITOR_PAUSED…"
        ),
        "details": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="Every validation issue: {code, path, message}.",
        ),
    },
)
_ERRORS = {
    400: OpenApiResponse(
        ERROR, "Invalid input (code BAD_REQUEST or BAD_REQUEST_INVALID_JSON)"
    ),
    401: OpenApiResponse(ERROR, "Missing, malformed, unknown or revoked API key"),
    403: OpenApiResponse(
        ERROR, "A read-only API key (scope read) asked to change something"
    ),
    404: OpenApiResponse(
        ERROR, "Monitor not found: unknown, deleted, another team's, or a malformed id"
    ),
    413: OpenApiResponse(ERROR, "Request body larger than the server accepts"),
    415: OpenApiResponse(ERROR, "Request body is not application/json"),
    429: OpenApiResponse(ERROR, "Rate limited; retry after Retry-After seconds"),
    503: OpenApiResponse(
        ERROR,
        "The database or the task queue is unreachable for a moment "
        "(code SERVICE_UNAVAILABLE); retry after Retry-After seconds",
    ),
}


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    """The error responses an operation can give, always including 401, 429 and
    503."""
    return {code: _ERRORS[code] for code in sorted({401, 429, 503, *codes})}


# The usual set for an operation on one monitor (monitors.api.checks uses it too).
ERRORS = error_responses(400, 404)


RESPONSE_HEADERS = [
    OpenApiParameter(
        "Retry-After",
        OpenApiTypes.INT,
        OpenApiParameter.HEADER,
        required=True,
        response=[429, 503],
        description="Seconds to wait before the next request.",
    ),
    OpenApiParameter(
        "WWW-Authenticate",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        required=True,
        response=[401],
        description="Always `Bearer`.",
    ),
]
MONITOR_ID = OpenApiParameter(
    "monitor_id",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="A malformed id answers 404, like an unknown one.",
)


def envelope(name: str, data: Any) -> Any:
    success = serializers.BooleanField(help_text="Always true.")
    return inline_serializer(name, {"success": success, "data": data})


MONITOR_ENVELOPE = envelope("MonitorResponse", MonitorSerializer())


def monitors_for(request: Request) -> Any:
    return (
        Monitor.objects.for_team(request.user.team)
        .select_related("team")  # feedUrl
        .prefetch_related(
            Prefetch(
                "targets", queryset=Target.objects.order_by("position", "created_at")
            ),
            Prefetch("email_recipients", queryset=EmailRecipient.objects.all()),
            "tags",
        )
    )


def with_relations(monitors: list[Monitor]) -> list[Monitor]:
    """A page of monitors with what their answer shows: every monitor's
    targets as a plain list (Monitor.target_list), and e-mail subscriptions
    only for the monitors that list recipients. Django's prefetching into a
    relation costs a queryset per monitor, a large part of a page's time."""
    prefetch_related_objects(monitors, Prefetch("targets", to_attr="listed_targets"))
    prefetch_related_objects(
        [m for m in monitors if m.email_settings.get("recipients")],
        "email_recipients",
    )
    # The team's channels each monitor sends to, for the page in one query.
    shared = Channel.objects.shared().order_by("pk").only("pk")
    prefetch_related_objects(
        monitors, Prefetch("channels", queryset=shared, to_attr="shared_channels")
    )
    prefetch_related_objects(monitors, "tags")
    return monitors


def get_monitor_for(request: Request, monitor_id: str) -> Monitor:
    """The caller's team's monitor, or 404 — another team's monitor and a
    malformed id look exactly like a missing one."""
    try:
        pk = uuid.UUID(str(monitor_id))
    except ValueError:
        raise not_found() from None
    monitor = monitors_for(request).filter(pk=pk).first()
    if monitor is None:
        raise not_found()
    return monitor


def ok(data: Any) -> Response:
    return Response({"success": True, "data": data})


def _masked_headers(headers: Any) -> Any:
    if not isinstance(headers, dict):
        return headers
    return {
        name: MASK if SECRET_HEADER.search(str(name)) else value
        for name, value in headers.items()
    }


def readable_by(request: Request, monitor: dict[str, Any]) -> dict[str, Any]:
    """A monitor's answer as `request`'s key may see it. A read key reads the
    configuration but not the credentials in it: header values that look like
    credentials (webhook and page headers, the rule the export applies) come
    back masked, and so does what may be secret in the webhook's address
    (mask_url). It cannot send the answer back, so nothing is lost; a write
    key could point the webhook or a page at its own server anyway and gets
    them whole — while its maker may still edit (ApiClient.can): a viewer's
    key reads as a viewer does."""
    if sees_hooks_whole(request):
        return monitor
    shown = dict(monitor)
    if isinstance(shown.get("webhook"), dict):
        webhook = shown["webhook"]
        headers = _masked_headers(webhook.get("headers"))
        shown["webhook"] = webhook | {"headers": headers}
        if isinstance(webhook.get("url"), str):
            shown["webhook"]["url"] = mask_url(webhook["url"])
    targets = []
    for target in shown.get("targets") or []:
        options = target.get("scrapeOptions") if isinstance(target, dict) else None
        if isinstance(options, dict) and options.get("headers"):
            headers = _masked_headers(options["headers"])
            target = target | {"scrapeOptions": options | {"headers": headers}}
        targets.append(target)
    if "targets" in shown:
        shown["targets"] = targets
    return shown


def monitor_context(team_id: Any) -> dict[str, Any]:
    """What MonitorSerializer reads besides the monitors: the time, and why
    the team's AI calls are held (one query, asked once per answer)."""
    now = timezone.now()
    return {"now": now, "ai_held": allowance.used_up(team_id, now)}


def render_monitor(monitor: Monitor) -> dict[str, Any]:
    return MonitorSerializer(monitor, context=monitor_context(monitor.team_id)).data


# Any offset >= 0 is valid, but one past 64 bits overflows the database's
# OFFSET (a 500 on SQLite and PostgreSQL alike); no team has this many rows, so
# the answer is the same: nothing.
OFFSET_MAX = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
# More digits than any bound here; int() of thousands of digits is refused
# (and slow), so such a number is judged by its sign alone.
_DIGITS_MAX = 30


def int_param(
    request: Request, name: str, default: int, low: int, high: int | None = None
) -> int:
    """The integer query parameter `name`: its default when absent or empty,
    a 400 naming it when it is not a whole number or below `low` or above
    `high`. Without `high` (offsets) a huge value is clamped to OFFSET_MAX."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    if not _INTEGER.fullmatch(raw):
        raise ValidationError({name: ["Must be an integer."]})
    digits = raw.lstrip("+-")
    if len(digits) > _DIGITS_MAX:
        value = -(10**_DIGITS_MAX) if raw.startswith("-") else 10**_DIGITS_MAX
    else:
        value = int(raw)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValidationError({name: [f"Must be {bound}."]})
    return min(value, OFFSET_MAX) if high is None else value


def _paging(request: Request, limit_default: int = 25) -> tuple[int, int]:
    errors = {}
    values = {}
    for name, default, low, high in (
        ("limit", limit_default, 1, 100),
        ("offset", 0, 0, None),
    ):
        try:
            values[name] = int_param(request, name, default, low, high)
        except ValidationError as exc:
            errors.update(exc.detail)
    if errors:
        raise ValidationError(errors)
    return values["limit"], values["offset"]


PAGING = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": 100, "default": 25},
        description="How many items to return: 1 to 100, default 25.",
    ),
    OpenApiParameter(
        "offset",
        {"type": "integer", "minimum": 0, "default": 0},
        description="How many items to skip: 0 or more, default 0.",
    ),
]


TAG_FILTER = OpenApiParameter(
    "tag",
    str,
    description="Pagewatch extension: only the monitors with this tag (any case).",
)


class MonitorListView(ApiView):
    conditional_reads = True

    @extend_schema(
        operation_id="listMonitors",
        summary="List the team's monitors, newest first",
        parameters=[
            *PAGING,
            paging.BEFORE,
            TAG_FILTER,
            paging.since_parameter("the monitors"),
            conditional.IF_NONE_MATCH,
            conditional.ETAG,
            *RESPONSE_HEADERS,
        ],
        responses={
            200: inline_serializer(
                "MonitorListResponse",
                {
                    "success": serializers.BooleanField(help_text="Always true."),
                    "next": paging.NEXT,
                    "data": MonitorSerializer(many=True),
                },
            )
        }
        | conditional.NOT_MODIFIED
        | error_responses(400),
    )
    def get(self, request: Request) -> Response:
        limit, offset = _paging(request)
        before = paging.before_param(request)
        since = paging.since_param(request)
        monitors = Monitor.objects.for_team(request.user.team)
        tag = request.query_params.get("tag", "").strip()
        if tag:
            monitors = monitors.tagged(tag)
        if since is not None:
            monitors = monitors.changed_since(since, timezone.now())
        monitors = paging.newest_first(monitors.select_related("team"), before)
        # One row more than the page tells whether a next page exists.
        rows = list(monitors[offset : offset + limit + 1])
        shown = with_relations(rows[:limit])
        context = monitor_context(request.user.team.pk)
        shapes = MonitorSerializer(shown, many=True, context=context).data
        body = {"success": True, "data": [readable_by(request, s) for s in shapes]}
        if len(rows) > limit:
            body["next"] = paging.next_link(request, shown[-1], limit, tag=tag)
        return Response(body)

    @extend_schema(
        operation_id="createMonitor",
        summary="Create a monitor",
        request=MonitorWriteSerializer,
        parameters=RESPONSE_HEADERS,
        responses={200: MONITOR_ENVELOPE} | error_responses(400, 403, 413, 415),
    )
    def post(self, request: Request) -> Response:
        serializer = MonitorWriteSerializer(
            data=request.data, context={"team": request.user.team}
        )
        serializer.is_valid(raise_exception=True)
        actor = Actor.of(request)
        monitor = create_monitor(
            request.user.team,
            serializer.validated_data,
            timezone.now(),
            by=actor.person_name,
        )
        record(actor, monitor.team_id, Kind.MONITOR_CREATED, monitor)
        return ok(render_monitor(get_monitor_for(request, str(monitor.pk))))


class MonitorDetailView(ApiView):
    conditional_reads = True

    @extend_schema(
        operation_id="getMonitor",
        summary="One monitor",
        parameters=[
            MONITOR_ID,
            conditional.IF_NONE_MATCH,
            conditional.ETAG,
            *RESPONSE_HEADERS,
        ],
        responses={200: MONITOR_ENVELOPE}
        | conditional.NOT_MODIFIED
        | error_responses(404),
    )
    def get(self, request: Request, monitor_id: str) -> Response:
        monitor = render_monitor(get_monitor_for(request, monitor_id))
        return ok(readable_by(request, monitor))

    @extend_schema(
        operation_id="updateMonitor",
        summary="Change a monitor (only the fields sent)",
        request=MonitorUpdateSerializer,
        parameters=[MONITOR_ID, *RESPONSE_HEADERS],
        responses={200: MONITOR_ENVELOPE} | error_responses(400, 403, 404, 413, 415),
    )
    def patch(self, request: Request, monitor_id: str) -> Response:
        monitor = get_monitor_for(request, monitor_id)
        serializer = MonitorUpdateSerializer(
            data=request.data,
            context={"monitor": monitor, "current_timezone": monitor.schedule_timezone},
        )
        serializer.is_valid(raise_exception=True)
        before = monitor_fields(monitor)
        actor = Actor.of(request)
        update_monitor(
            monitor, serializer.validated_data, timezone.now(), by=actor.person_name
        )
        if monitor.deleted_at is not None:
            raise not_found()  # deleted while we looked: nothing was changed
        record_monitor_change(actor, before, monitor)
        return ok(render_monitor(get_monitor_for(request, monitor_id)))

    @extend_schema(
        operation_id="deleteMonitor",
        summary="Delete a monitor",
        parameters=[MONITOR_ID, *RESPONSE_HEADERS],
        responses={
            200: inline_serializer(
                "DeleteResponse",
                {"success": serializers.BooleanField(help_text="Always true.")},
            )
        }
        | error_responses(403, 404),
    )
    def delete(self, request: Request, monitor_id: str) -> Response:
        monitor = get_monitor_for(request, monitor_id)
        deleting.soft_delete_monitor(monitor, timezone.now())
        record(Actor.of(request), monitor.team_id, Kind.MONITOR_DELETED, monitor)
        return Response({"success": True})
