"""The check endpoints of /v2/monitor: run now, list checks, one check with its
pages. Thin views over the engine (checks.dispatch) and its models; lookups
are scoped to the caller's team through monitors.api.views.get_monitor_for.

Wire shapes are the contract's MonitorCheck and MonitorCheckPage exactly, plus
the page's `summary` (the summary format; null otherwise), which the SDKs keep
as an extra field.
"""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from checks.captures import with_links
from checks.content.metadata import for_clients
from checks.dispatch import (
    PAUSED_CODE,
    RUNNING_CODE,
    QueueUnavailable,
    RunRefused,
)
from checks.models import SUMMARY_KEYS, Check, PageResult
from checks.targets.options import StrictCharField, StrictMixin
from monitors import running
from monitors.api import conditional, paging
from monitors.api.base import ApiView
from monitors.api.errors import ApiError, not_found, service_unavailable
from monitors.api.representation import SummarySerializer
from monitors.api.timestamps import TimestampField
from monitors.api.views import (
    ERROR,
    ERRORS,
    PAGING,
    _paging,
    error_responses,
    get_monitor_for,
    int_param,
)
from monitors.models import Monitor
from teams.activity import Actor

PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX = 25, 100

# --- Wire shapes ---------------------------------------------------------------


class PageDiffSerializer(serializers.Serializer):
    text = serializers.CharField(required=False, help_text="Unified diff")
    json = serializers.JSONField(
        required=False,
        help_text=(
            "Markdown mode: the parse-diff AST of the unified diff. JSON and "
            "mixed mode: {path: {previous, current}} for each changed field."
        ),
    )


class MeaningfulChangeSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["added", "removed", "changed"])
    before = serializers.CharField(allow_null=True)
    after = serializers.CharField(allow_null=True)
    reason = serializers.CharField()


class JudgmentSerializer(serializers.Serializer):
    meaningful = serializers.BooleanField()
    confidence = serializers.ChoiceField(choices=["high", "medium", "low"])
    reason = serializers.CharField()
    meaningfulChanges = MeaningfulChangeSerializer(many=True)


class PageSnapshotSerializer(serializers.Serializer):
    json = serializers.JSONField(help_text="The page's full JSON extraction")


class CheckSerializer(serializers.Serializer):
    """MonitorCheck, as Firecrawl's API sends it."""

    id = serializers.UUIDField()
    monitorId = serializers.UUIDField(source="monitor_id")
    status = serializers.ChoiceField(choices=Check.Status.choices)
    trigger = serializers.ChoiceField(choices=Check.Trigger.choices)
    scheduledFor = TimestampField(source="scheduled_for", allow_null=True)
    startedAt = TimestampField(source="started_at", allow_null=True)
    finishedAt = TimestampField(source="finished_at", allow_null=True)
    estimatedCredits = serializers.IntegerField(source="estimated_credits")
    reservedCredits = serializers.IntegerField(source="reserved_credits")
    actualCredits = serializers.IntegerField(source="actual_credits", allow_null=True)
    billingStatus = serializers.ChoiceField(
        source="billing_status", choices=Check.Billing.choices
    )
    summary = serializers.SerializerMethodField()
    targetResults = serializers.SerializerMethodField()
    notificationStatus = serializers.JSONField(
        source="notification_status", allow_null=True
    )
    error = serializers.CharField(allow_null=True)
    createdAt = TimestampField(source="created_at")
    updatedAt = TimestampField(source="updated_at")

    @extend_schema_field(SummarySerializer)
    def get_summary(self, check: Check) -> dict[str, int]:
        # Counters are zeros until the check is reconciled, never missing.
        stored = check.summary or {}
        return {key: int(stored.get(key) or 0) for key in SUMMARY_KEYS}

    @extend_schema_field(
        serializers.ListField(child=serializers.DictField(), allow_null=True)
    )
    def get_targetResults(self, check: Check) -> list[dict] | None:  # noqa: N802
        return check.target_results


class PageSerializer(serializers.Serializer):
    """MonitorCheckPage, as Firecrawl's API sends it."""

    id = serializers.UUIDField()
    targetId = serializers.UUIDField(source="target_id")
    url = serializers.CharField()
    status = serializers.ChoiceField(choices=PageResult.Status.choices)
    previousScrapeId = serializers.UUIDField(
        source="previous_scrape_id", allow_null=True
    )
    currentScrapeId = serializers.UUIDField(source="current_scrape_id", allow_null=True)
    statusCode = serializers.IntegerField(source="status_code", allow_null=True)
    error = serializers.CharField(allow_null=True)
    metadata = serializers.SerializerMethodField()
    diff = serializers.SerializerMethodField()
    snapshot = serializers.SerializerMethodField()
    judgment = serializers.SerializerMethodField()
    summary = serializers.CharField(
        allow_null=True, help_text="Pagewatch extension: the summary format's text"
    )
    createdAt = TimestampField(source="created_at")

    @extend_schema_field(serializers.DictField())
    def get_metadata(self, page: PageResult) -> dict[str, Any]:
        # Screenshots and PDFs as signed links that expire
        # (CAPTURE_URL_TTL_SECONDS); the same link for a quarter of that.
        return with_links(for_clients(page.metadata or {}))

    @extend_schema_field(PageDiffSerializer(allow_null=True))
    def get_diff(self, page: PageResult) -> dict[str, Any] | None:
        return page.diff

    @extend_schema_field(PageSnapshotSerializer(allow_null=True))
    def get_snapshot(self, page: PageResult) -> dict[str, Any] | None:
        # Firecrawl sends a snapshot in JSON and mixed mode only.
        return None if page.extraction is None else {"json": page.extraction}

    @extend_schema_field(JudgmentSerializer(allow_null=True))
    def get_judgment(self, page: PageResult) -> dict[str, Any] | None:
        return page.judgment or None


class CheckDetailSerializer(CheckSerializer):
    pages = PageSerializer(many=True)
    next = serializers.URLField(required=False)


class RunRequestSerializer(StrictMixin, serializers.Serializer):
    """The run body: `{}` from the SDKs (plus their `origin`), nothing from the CLI."""

    origin = StrictCharField(
        required=False, max_length=200, help_text="Sent by the SDKs; ignored."
    )


RUN_RESPONSE = inline_serializer(
    "RunMonitorResponse",
    {
        "success": serializers.BooleanField(default=True),
        "id": serializers.UUIDField(help_text="The queued check's id"),
        "data": CheckSerializer(),
    },
)
CONFLICT = inline_serializer(
    "RunConflict",
    {
        "success": serializers.BooleanField(default=False),
        "error": serializers.CharField(),
        "code": serializers.ChoiceField(choices=[PAUSED_CODE, RUNNING_CODE]),
        "checkId": serializers.UUIDField(required=False),
    },
)
CHECK_LIST_RESPONSE = inline_serializer(
    "MonitorCheckListResponse",
    {
        "success": serializers.BooleanField(default=True),
        "next": paging.NEXT,
        "data": CheckSerializer(many=True),
    },
)
CHECK_DETAIL_RESPONSE = inline_serializer(
    "MonitorCheckDetailResponse",
    {
        "success": serializers.BooleanField(default=True),
        "next": serializers.URLField(required=False),
        "data": CheckDetailSerializer(),
    },
)
NOT_FOUND = {404: OpenApiResponse(ERROR, "Monitor or check not found")}


# --- Query parameters ------------------------------------------------------------


def _status_param(request: Request, choices: list[str]) -> str | None:
    status = request.query_params.get("status")
    if status is None or status == "":
        return None
    if status not in choices:
        raise ValidationError({"status": [f"Must be one of: {', '.join(choices)}."]})
    return status


def _check_for(monitor: Monitor, check_id: str) -> Check:
    try:
        pk = uuid.UUID(str(check_id))
    except ValueError:
        raise not_found("Check") from None
    check = Check.objects.filter(monitor=monitor, pk=pk).first()
    if check is None:
        raise not_found("Check")
    return check


# --- Views ----------------------------------------------------------------------


class MonitorRunView(ApiView):
    @extend_schema(
        operation_id="runMonitor",
        summary="Queue a manual check",
        request=RunRequestSerializer,
        responses={
            200: RUN_RESPONSE,
            409: OpenApiResponse(CONFLICT, "Monitor paused, or a check is running"),
        }
        | error_responses(400, 403, 404, 413, 415),
    )
    def post(self, request: Request, monitor_id: str) -> Response:
        monitor = get_monitor_for(request, monitor_id)
        RunRequestSerializer(data=request.data).is_valid(raise_exception=True)
        try:
            check = running.run_one(monitor, Actor.of(request))
        except Monitor.DoesNotExist:
            raise not_found() from None  # deleted while we looked
        except RunRefused as refused:
            extra = {"checkId": str(refused.check_id)} if refused.check_id else {}
            raise ApiError(refused.message, 409, refused.code, **extra) from None
        except QueueUnavailable as unavailable:
            raise service_unavailable(unavailable.message) from None
        return Response(
            {"success": True, "id": str(check.pk), "data": CheckSerializer(check).data}
        )


class MonitorCheckListView(ApiView):
    conditional_reads = True

    @extend_schema(
        operation_id="listMonitorChecks",
        summary="List a monitor's checks, newest first",
        parameters=[
            *PAGING,
            paging.BEFORE,
            OpenApiParameter(
                "status", str, enum=Check.Status.values, description="Only this status"
            ),
            paging.since_parameter("the checks"),
            conditional.IF_NONE_MATCH,
            conditional.ETAG,
        ],
        responses={200: CHECK_LIST_RESPONSE} | conditional.NOT_MODIFIED | ERRORS,
    )
    def get(self, request: Request, monitor_id: str) -> Response:
        monitor = get_monitor_for(request, monitor_id)
        limit, offset = _paging(request)
        before = paging.before_param(request)
        status = _status_param(request, Check.Status.values)
        since = paging.since_param(request)
        checks = paging.newest_first(Check.objects.filter(monitor=monitor), before)
        if status:
            checks = checks.filter(status=status)
        if since is not None:
            checks = checks.changed_since(since)
        # One row more than the page tells whether a next page exists.
        rows = list(checks[offset : offset + limit + 1])
        shown = rows[:limit]
        body = {"success": True, "data": CheckSerializer(shown, many=True).data}
        if len(rows) > limit:
            body["next"] = paging.next_link(request, shown[-1], limit, status=status)
        return Response(body)


class MonitorCheckDetailView(ApiView):
    conditional_reads = True

    @extend_schema(
        operation_id="getMonitorCheck",
        summary="One check with its page results (paginated)",
        parameters=[
            PAGING[0],
            OpenApiParameter(
                "skip",
                {"type": "integer", "minimum": 0, "default": 0},
                description="How many pages to skip: 0 or more, default 0.",
            ),
            OpenApiParameter(
                "status",
                str,
                enum=PageResult.Status.values,
                description="Only pages with this status",
            ),
            conditional.IF_NONE_MATCH,
            conditional.ETAG,
        ],
        responses={200: CHECK_DETAIL_RESPONSE}
        | conditional.NOT_MODIFIED
        | ERRORS
        | NOT_FOUND,
    )
    def get(self, request: Request, monitor_id: str, check_id: str) -> Response:
        monitor = get_monitor_for(request, monitor_id)
        check = _check_for(monitor, check_id)
        limit = int_param(request, "limit", PAGE_LIMIT_DEFAULT, 1, PAGE_LIMIT_MAX)
        skip = int_param(request, "skip", 0, 0)
        status = _status_param(request, PageResult.Status.values)
        pages = check.pages.order_by("created_at", "id")
        if status:
            pages = pages.filter(status=status)
        shown = PageResult.with_diffs(list(pages[skip : skip + limit]))
        data = dict(CheckSerializer(check).data)
        data["pages"] = PageSerializer(shown, many=True).data
        body: dict[str, Any] = {"success": True}
        # `next` only while rows remain (the server compares the filtered count).
        if shown and pages.count() > skip + len(shown):
            query = {"skip": skip + len(shown), "limit": limit}
            if status:
                query["status"] = status
            data["next"] = body["next"] = paging.absolute(request, query)
        body["data"] = data
        return Response(body)
