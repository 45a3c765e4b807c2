"""GET /v2/team/credit-usage, GET /v2/team/credit-usage/historical and GET
/v2/team/queue-status, shaped as Firecrawl's, so that the official CLI's
`firecrawl --status` and `firecrawl credit-usage`, the SDKs'
`get_credit_usage()`, `get_credit_usage_historical()` and `get_queue_status()`
and the MCP server's `firecrawl_credit_usage` answer about this team instead
of failing. Readable with a read key."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from checks.models import Check, month_start
from monitors.api.base import ApiView
from monitors.api.timestamps import TimestampField
from monitors.api.views import RESPONSE_HEADERS, envelope, error_responses, ok
from monitors.time_words import wire_time

# What a team without a monthly allowance reports as left: the figure
# Firecrawl's own self-hosted server gives, so that clients which expect a
# number (the CLI formats it) show "plenty" rather than failing on null.
UNLIMITED = 99_999_999

CREDIT_USAGE = envelope(
    "CreditUsageResponse",
    inline_serializer(
        "CreditUsage",
        {
            "remainingCredits": serializers.IntegerField(
                help_text=f"Left this month; {UNLIMITED:,} when the team has no "
                "monthly allowance (the default)."
            ),
            "planCredits": serializers.IntegerField(
                allow_null=True,
                help_text="The team's monthly allowance; null when it has none.",
            ),
            "creditsUsed": serializers.IntegerField(
                help_text="Pagewatch extension: used this month, including "
                "credits held by checks still running."
            ),
            "billingPeriodStart": TimestampField(),
            "billingPeriodEnd": TimestampField(
                help_text="When the next month's allowance starts."
            ),
        },
    ),
)

CREDIT_USAGE_HISTORICAL = inline_serializer(
    "CreditUsageHistoricalResponse",
    {
        "success": serializers.BooleanField(help_text="Always true."),
        "periods": inline_serializer(
            "CreditUsageHistoricalPeriod",
            {
                "startDate": TimestampField(
                    help_text="The first moment of the month (UTC)."
                ),
                "endDate": TimestampField(
                    help_text="When the next month starts (UTC)."
                ),
                "creditsUsed": serializers.IntegerField(
                    help_text="Credits the team's checks that finished this "
                    "month used; for the current month also those held by "
                    "checks still running, as in /v2/team/credit-usage."
                ),
            },
            many=True,
            help_text="Oldest first: every month in which a check still kept "
            "(see the monitors' retention) used credits, and the current "
            "month. Never broken down by API key (no `apiKey`): scheduled "
            "checks belong to no key.",
        ),
    },
)

BY_API_KEY = OpenApiParameter(
    "byApiKey",
    bool,
    description="Accepted for Firecrawl's clients; the periods are the "
    "team's either way.",
)

QUEUE_STATUS = inline_serializer(
    "QueueStatusResponse",
    {
        "success": serializers.BooleanField(help_text="Always true."),
        "jobsInQueue": serializers.IntegerField(
            help_text="The team's checks waiting or running."
        ),
        "activeJobsInQueue": serializers.IntegerField(help_text="Checks running."),
        "waitingJobsInQueue": serializers.IntegerField(
            help_text="Checks waiting for a worker."
        ),
        "mostRecentSuccess": TimestampField(
            allow_null=True, help_text="When a check of the team last completed."
        ),
    },
)


def _next_month(start: datetime) -> datetime:
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


class CreditUsageView(ApiView):
    @extend_schema(
        operation_id="getCreditUsage",
        summary="Credits the team has left this month",
        parameters=RESPONSE_HEADERS,
        responses={200: CREDIT_USAGE} | error_responses(),
    )
    def get(self, request: Request) -> Response:
        team = request.user.team
        now = timezone.now()
        used = Check.objects.credits_used(team, now)
        allowance = team.credit_allowance
        start = month_start(now)
        return ok(
            {
                "remainingCredits": UNLIMITED
                if allowance is None
                else max(0, allowance - used),
                "planCredits": allowance,
                "creditsUsed": used,
                "billingPeriodStart": wire_time(start),
                "billingPeriodEnd": wire_time(_next_month(start)),
            }
        )


class CreditUsageHistoricalView(ApiView):
    @extend_schema(
        operation_id="getCreditUsageHistorical",
        summary="Credits the team used, month by month",
        parameters=[BY_API_KEY, *RESPONSE_HEADERS],
        responses={200: CREDIT_USAGE_HISTORICAL} | error_responses(),
    )
    def get(self, request: Request) -> Response:
        months = Check.objects.credits_by_month(request.user.team, timezone.now())
        # Top-level `periods`, no `data` envelope: the SDKs read Firecrawl's
        # answer this way.
        return Response(
            {
                "success": True,
                "periods": [
                    {
                        "startDate": wire_time(start),
                        "endDate": wire_time(_next_month(start)),
                        "creditsUsed": used,
                    }
                    for start, used in months.items()
                ],
            }
        )


class QueueStatusView(ApiView):
    @extend_schema(
        operation_id="getQueueStatus",
        summary="The team's checks waiting and running",
        parameters=RESPONSE_HEADERS,
        responses={200: QUEUE_STATUS} | error_responses(),
    )
    def get(self, request: Request) -> Response:
        status = Check.objects.queue_status(request.user.team)
        last_success = status["last_success"]
        return Response(
            {
                "success": True,
                "jobsInQueue": status["running"] + status["waiting"],
                "activeJobsInQueue": status["running"],
                "waitingJobsInQueue": status["waiting"],
                "mostRecentSuccess": wire_time(last_success) if last_success else None,
            }
        )
