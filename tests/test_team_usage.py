"""GET /v2/team/credit-usage, /v2/team/credit-usage/historical,
/v2/team/token-usage, /v2/team/token-usage/historical and
/v2/team/queue-status through the official Python SDK (firecrawl-py), as
Firecrawl shapes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from firecrawl import Firecrawl
from firecrawl.v2.client import FirecrawlClient

from checks.models import Check
from monitors.models import Monitor

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)
USAGE_PATHS = (
    "/v2/team/credit-usage",
    "/v2/team/credit-usage/historical",
    "/v2/team/token-usage",
    "/v2/team/token-usage/historical",
    "/v2/team/queue-status",
)


@pytest.fixture
def sdk(live_server, api_key) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


@pytest.fixture
def checks(team, other_team) -> None:
    """This month: 40 credits charged and 7 held by a running check; last
    month 500 (not counted); another team's 300 (not counted)."""
    ours = Monitor.objects.create(team=team, name="Prices", schedule_cron="0 * * * *")
    theirs = Monitor.objects.create(
        team=other_team, name="Theirs", schedule_cron="0 * * * *"
    )
    completed = Check.Status.COMPLETED
    Check.objects.create(
        monitor=ours, status=completed, finished_at=NOW - timedelta(hours=2),
        actual_credits=40, billing_status=Check.Billing.CONFIRMED,
    )  # fmt: skip
    Check.objects.create(
        monitor=ours, status=completed, finished_at=datetime(2026, 10, 30, tzinfo=UTC),
        actual_credits=500, billing_status=Check.Billing.CONFIRMED,
    )  # fmt: skip
    Check.objects.create(
        monitor=ours, status=Check.Status.RUNNING, reserved_credits=7,
        billing_status=Check.Billing.RESERVED,
    )  # fmt: skip
    Check.objects.create(monitor=ours, status=Check.Status.QUEUED)
    Check.objects.create(monitor=ours, status=Check.Status.QUEUED)
    Check.objects.create(
        monitor=theirs, status=completed, finished_at=NOW - timedelta(minutes=5),
        actual_credits=300, billing_status=Check.Billing.CONFIRMED,
    )  # fmt: skip
    Check.objects.create(monitor=theirs, status=Check.Status.QUEUED)


def test_credit_usage_reports_what_the_teams_allowance_has_left_this_month(
    sdk, team, checks
):
    team.credit_allowance = 1000
    team.save(update_fields=["credit_allowance"])

    with time_machine.travel(NOW, tick=False):
        usage = sdk.get_credit_usage()

    assert usage.remaining_credits == 1000 - 40 - 7
    assert usage.plan_credits == 1000
    assert usage.billing_period_start == "2026-11-01T00:00:00.000Z"
    assert usage.billing_period_end == "2026-12-01T00:00:00.000Z"


def test_a_team_without_an_allowance_reports_plenty_left_and_no_plan(
    live_server, api_key, client, team, checks
):
    with time_machine.travel(NOW, tick=False):
        body = client.get(
            "/v2/team/credit-usage", HTTP_AUTHORIZATION=f"Bearer {api_key}"
        ).json()

    assert body == {
        "success": True,
        "data": {
            "remainingCredits": 99_999_999,
            "planCredits": None,
            "creditsUsed": 47,
            "billingPeriodStart": "2026-11-01T00:00:00.000Z",
            "billingPeriodEnd": "2026-12-01T00:00:00.000Z",
        },
    }


def test_an_allowance_spent_past_its_end_reports_none_left_not_a_negative(
    sdk, team, checks
):
    team.credit_allowance = 30
    team.save(update_fields=["credit_allowance"])

    with time_machine.travel(NOW, tick=False):
        assert sdk.get_credit_usage().remaining_credits == 0


def test_the_december_billing_period_ends_on_the_first_of_january(sdk, team):
    with time_machine.travel(datetime(2026, 12, 31, 23, 0, tzinfo=UTC), tick=False):
        usage = sdk.get_credit_usage()

    assert (usage.billing_period_start, usage.billing_period_end) == (
        "2026-12-01T00:00:00.000Z",
        "2027-01-01T00:00:00.000Z",
    )


def test_queue_status_counts_only_the_teams_own_checks_waiting_and_running(sdk, checks):
    status = sdk.get_queue_status()

    assert (
        status.jobs_in_queue,
        status.active_jobs_in_queue,
        status.waiting_jobs_in_queue,
    ) == (3, 1, 2)
    assert status.most_recent_success == NOW - timedelta(hours=2)


def test_team_usage_answers_401_without_a_key(client, db):
    for path in USAGE_PATHS:
        response = client.get(path)
        assert response.status_code == 401
        assert response.json()["success"] is False


def test_a_read_only_key_may_read_the_teams_usage(client, team):
    from monitors.models import ApiKey

    _, raw = ApiKey.issue(team, name="reader", scope=ApiKey.Scope.READ)
    for path in USAGE_PATHS:
        response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert response.status_code == 200, response.content


@pytest.fixture
def v2_sdk(live_server, api_key) -> FirecrawlClient:
    """firecrawl-py's v2 client: its `Firecrawl` wrapper does not pass
    `get_credit_usage_historical` on, the client it wraps has it."""
    return FirecrawlClient(api_key=api_key, api_url=live_server.url, max_retries=1)


def test_historical_credit_usage_lists_each_month_the_team_used_credits_oldest_first(
    v2_sdk, checks
):
    with time_machine.travel(NOW, tick=False):
        history = v2_sdk.get_credit_usage_historical()

    assert history.success is True
    assert [p.model_dump() for p in history.periods] == [
        {
            "startDate": "2026-10-01T00:00:00.000Z",
            "endDate": "2026-11-01T00:00:00.000Z",
            "apiKey": None,
            "creditsUsed": 500,
        },
        {
            "startDate": "2026-11-01T00:00:00.000Z",
            "endDate": "2026-12-01T00:00:00.000Z",
            "apiKey": None,
            "creditsUsed": 40 + 7,
        },
    ]


def test_the_current_months_historical_period_is_what_credit_usage_reports(
    v2_sdk, team, checks
):
    monitor = Monitor.objects.get(team=team)
    Check.objects.create(
        monitor=monitor, status=Check.Status.COMPLETED,
        finished_at=datetime(2026, 11, 1, tzinfo=UTC),
        actual_credits=3, billing_status=Check.Billing.CONFIRMED,
    )  # fmt: skip

    with time_machine.travel(NOW, tick=False):
        current = v2_sdk.get_credit_usage_historical().periods[-1]
        usage = v2_sdk.http_client.get("/v2/team/credit-usage").json()["data"]

    assert current.startDate == usage["billingPeriodStart"]
    assert current.endDate == usage["billingPeriodEnd"]
    assert current.creditsUsed == usage["creditsUsed"] == 40 + 7 + 3


def test_a_team_that_never_used_credits_has_one_period_this_month_at_zero(
    v2_sdk, team, other_team, checks
):
    Check.objects.filter(monitor__team=team).delete()

    with time_machine.travel(NOW, tick=False):
        periods = v2_sdk.get_credit_usage_historical().periods

    assert [(p.startDate, p.creditsUsed) for p in periods] == [
        ("2026-11-01T00:00:00.000Z", 0)
    ]


def test_historical_usage_by_api_key_is_the_teams_as_no_check_records_its_key(
    v2_sdk, checks
):
    with time_machine.travel(NOW, tick=False):
        by_key = v2_sdk.get_credit_usage_historical(by_api_key=True)
        whole = v2_sdk.get_credit_usage_historical()

    assert by_key.periods == whole.periods
    assert all(p.apiKey is None for p in by_key.periods)


def test_the_openapi_document_has_historical_credit_usage(client, db):
    schema = client.get("/v2/openapi.json").json()
    operation = schema["paths"]["/v2/team/credit-usage/historical"]["get"]
    assert operation["operationId"] == "getCreditUsageHistorical"
    assert [p["name"] for p in operation["parameters"]][0] == "byApiKey"


def test_token_usage_is_the_credit_usage_at_fifteen_tokens_a_credit(sdk, team, checks):
    team.credit_allowance = 1000
    team.save(update_fields=["credit_allowance"])

    with time_machine.travel(NOW, tick=False):
        usage = sdk.get_token_usage()

    assert usage.remaining_tokens == (1000 - 40 - 7) * 15
    assert usage.plan_tokens == 1000 * 15
    assert usage.billing_period_start == "2026-11-01T00:00:00.000Z"
    assert usage.billing_period_end == "2026-12-01T00:00:00.000Z"


def test_token_usage_of_a_team_without_an_allowance_reports_plenty_left_and_no_plan(
    live_server, api_key, client, team, checks
):
    with time_machine.travel(NOW, tick=False):
        body = client.get(
            "/v2/team/token-usage", HTTP_AUTHORIZATION=f"Bearer {api_key}"
        ).json()

    assert body == {
        "success": True,
        "data": {
            "remainingTokens": 99_999_999,
            "planTokens": None,
            "tokensUsed": 47 * 15,
            "billingPeriodStart": "2026-11-01T00:00:00.000Z",
            "billingPeriodEnd": "2026-12-01T00:00:00.000Z",
        },
    }


def test_token_usage_of_an_allowance_spent_past_its_end_reports_none_left(
    sdk, team, checks
):
    team.credit_allowance = 30
    team.save(update_fields=["credit_allowance"])

    with time_machine.travel(NOW, tick=False):
        assert sdk.get_token_usage().remaining_tokens == 0


def test_historical_token_usage_lists_the_credit_months_at_fifteen_tokens_a_credit(
    v2_sdk, checks
):
    with time_machine.travel(NOW, tick=False):
        history = v2_sdk.get_token_usage_historical()
        by_key = v2_sdk.get_token_usage_historical(by_api_key=True)

    assert history.success is True
    assert [p.model_dump() for p in history.periods] == [
        {
            "startDate": "2026-10-01T00:00:00.000Z",
            "endDate": "2026-11-01T00:00:00.000Z",
            "apiKey": None,
            "tokensUsed": 500 * 15,
        },
        {
            "startDate": "2026-11-01T00:00:00.000Z",
            "endDate": "2026-12-01T00:00:00.000Z",
            "apiKey": None,
            "tokensUsed": (40 + 7) * 15,
        },
    ]
    assert by_key.periods == history.periods


def test_the_openapi_document_says_tokens_are_credits_not_the_models_tokens(client, db):
    schema = client.get("/v2/openapi.json").json()
    current = schema["paths"]["/v2/team/token-usage"]["get"]
    historical = schema["paths"]["/v2/team/token-usage/historical"]["get"]

    assert current["operationId"] == "getTokenUsage"
    assert historical["operationId"] == "getTokenUsageHistorical"
    assert "15 tokens" in current["description"]
    assert "not" in current["description"] and "model" in current["description"]
    assert [p["name"] for p in historical["parameters"]][0] == "byApiKey"
