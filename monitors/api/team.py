"""GET /v2/team/credit-usage, GET /v2/team/credit-usage/historical, GET
/v2/team/token-usage, GET /v2/team/token-usage/historical and GET
/v2/team/queue-status, shaped as Firecrawl's, so that the official CLI's
`firecrawl --status` and `firecrawl credit-usage`, the SDKs'
`get_credit_usage()`, `get_credit_usage_historical()`, `get_token_usage()`,
`get_token_usage_historical()` and `get_queue_status()` and the MCP server's
`firecrawl_credit_usage` answer about this team instead of failing. Readable
with a read key.

Tokens are credits counted Firecrawl's way (15 to a credit, every endpoint's
use included), not the language model's tokens: Pagewatch does not record
what its judge or extraction spent at the model, so the only honest figure it
has to give under that name is its credits, converted as Firecrawl converts
them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from monitors.models import Team

# What a team without a monthly allowance reports as left: the figure
# Firecrawl's own self-hosted server gives, so that clients which expect a
# number (the CLI formats it) show "plenty" rather than failing on null.
UNLIMITED = 99_999_999
# Firecrawl bills everything, Extract included, in credits and reports its
# token usage as credits at this rate.
TOKENS_PER_CREDIT = 15
TOKENS_ARE_CREDITS = (
    "Tokens as Firecrawl counts them now: the team's credits at 15 tokens a "
    "credit, every kind of use included. They are not the language model's "
    "tokens: Pagewatch does not record what its judge or extraction spent at "
    "the model."
)


def _usage_schemas(
    unit: str, rate: str, month_used: str, months: str
) -> tuple[Any, Any]:
    """The OpenAPI shapes of /v2/team/<unit>-usage and its /historical, which
    differ only in the unit ("Credit", "Token"), how it converts from credits
    (`rate`, "" for credits) and what a month's figure and the months are."""
    lower = unit.lower()
    current = envelope(
        f"{unit}UsageResponse",
        inline_serializer(
            f"{unit}Usage",
            {
                f"remaining{unit}s": serializers.IntegerField(
                    help_text=f"Left this month{rate}; {UNLIMITED:,} when the team "
                    "has no monthly allowance (the default)."
                ),
                f"plan{unit}s": serializers.IntegerField(
                    allow_null=True,
                    help_text=f"The team's monthly allowance{rate}; null when it "
                    "has none.",
                ),
                f"{lower}sUsed": serializers.IntegerField(
                    help_text=f"Pagewatch extension: used this month{rate}, "
                    "including credits held by checks still running."
                ),
                "billingPeriodStart": TimestampField(),
                "billingPeriodEnd": TimestampField(
                    help_text="When the next month's allowance starts."
                ),
            },
        ),
    )
    historical = inline_serializer(
        f"{unit}UsageHistoricalResponse",
        {
            "success": serializers.BooleanField(help_text="Always true."),
            "periods": inline_serializer(
                f"{unit}UsageHistoricalPeriod",
                {
                    "startDate": TimestampField(
                        help_text="The first moment of the month (UTC)."
                    ),
                    "endDate": TimestampField(
                        help_text="When the next month starts (UTC)."
                    ),
                    f"{lower}sUsed": serializers.IntegerField(help_text=month_used),
                },
                many=True,
                help_text=months,
            ),
        },
    )
    return current, historical


CREDIT_USAGE, CREDIT_USAGE_HISTORICAL = _usage_schemas(
    "Credit",
    "",
    month_used="Credits the team's checks that finished this month used; for "
    "the current month also those held by checks still running, as in "
    "/v2/team/credit-usage.",
    months="Oldest first: every month in which a check still kept (see the "
    "monitors' retention) used credits, and the current month. Never broken "
    "down by API key (no `apiKey`): scheduled checks belong to no key.",
)
TOKEN_USAGE, TOKEN_USAGE_HISTORICAL = _usage_schemas(
    "Token",
    ", 15 to a credit",
    month_used="The month's creditsUsed in /v2/team/credit-usage/historical, "
    "15 tokens to a credit.",
    months="The same months as /v2/team/credit-usage/historical, oldest first.",
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


@dataclass(frozen=True)
class MonthUsage:
    """What the team has used of its allowance this UTC calendar month, in
    credits."""

    used: int
    allowance: int | None
    start: datetime

    @classmethod
    def of(cls, team: Team, now: datetime) -> MonthUsage:
        return cls(
            used=Check.objects.credits_used(team, now),
            allowance=team.credit_allowance,
            start=month_start(now),
        )

    @property
    def remaining(self) -> int | None:
        """Credits left; None when the team has no allowance."""
        if self.allowance is None:
            return None
        return max(0, self.allowance - self.used)

    def period(self) -> dict[str, str]:
        return {
            "billingPeriodStart": wire_time(self.start),
            "billingPeriodEnd": wire_time(_next_month(self.start)),
        }


def _in_tokens(credits: int | None) -> int | None:
    return None if credits is None else credits * TOKENS_PER_CREDIT


def _periods(request: Request, used_key: str, per_credit: int) -> Response:
    """The team's months, oldest first, each with its credits times
    `per_credit` under `used_key`. Top-level `periods`, no `data` envelope:
    the SDKs read Firecrawl's answer this way."""
    months = Check.objects.credits_by_month(request.user.team, timezone.now())
    return Response(
        {
            "success": True,
            "periods": [
                {
                    "startDate": wire_time(start),
                    "endDate": wire_time(_next_month(start)),
                    used_key: used * per_credit,
                }
                for start, used in months.items()
            ],
        }
    )


class CreditUsageView(ApiView):
    @extend_schema(
        operation_id="getCreditUsage",
        summary="Credits the team has left this month",
        parameters=RESPONSE_HEADERS,
        responses={200: CREDIT_USAGE} | error_responses(),
    )
    def get(self, request: Request) -> Response:
        usage = MonthUsage.of(request.user.team, timezone.now())
        remaining = usage.remaining
        return ok(
            {
                "remainingCredits": UNLIMITED if remaining is None else remaining,
                "planCredits": usage.allowance,
                "creditsUsed": usage.used,
                **usage.period(),
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
        return _periods(request, "creditsUsed", 1)


class TokenUsageView(ApiView):
    @extend_schema(
        operation_id="getTokenUsage",
        summary="Tokens (credits, 15 to a credit) the team has left this month",
        description=TOKENS_ARE_CREDITS,
        parameters=RESPONSE_HEADERS,
        responses={200: TOKEN_USAGE} | error_responses(),
    )
    def get(self, request: Request) -> Response:
        usage = MonthUsage.of(request.user.team, timezone.now())
        remaining = _in_tokens(usage.remaining)
        return ok(
            {
                # The same "plenty" figure as credits: clients format it as
                # is, and 15 times it says nothing more.
                "remainingTokens": UNLIMITED if remaining is None else remaining,
                "planTokens": _in_tokens(usage.allowance),
                "tokensUsed": usage.used * TOKENS_PER_CREDIT,
                **usage.period(),
            }
        )


class TokenUsageHistoricalView(ApiView):
    @extend_schema(
        operation_id="getTokenUsageHistorical",
        summary="Tokens (credits, 15 to a credit) the team used, month by month",
        description=TOKENS_ARE_CREDITS,
        parameters=[BY_API_KEY, *RESPONSE_HEADERS],
        responses={200: TOKEN_USAGE_HISTORICAL} | error_responses(),
    )
    def get(self, request: Request) -> Response:
        return _periods(request, "tokensUsed", TOKENS_PER_CREDIT)


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
