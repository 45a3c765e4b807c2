"""The admin walked as an administrator uses it, on what it found: lists that
stay fast on long tables, channel edits held to the API's rules and logged
like the dashboard's, API keys that are revoked rather than deleted."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checks.models import Check, PageResult
from monitors.models import Monitor, Target

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


def admin_url(model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


@pytest.fixture
def monitor(team) -> Monitor:
    monitor = Monitor.objects.create(
        team=team,
        name="Pricing page",
        schedule_cron="*/30 * * * *",
        schedule_timezone="UTC",
        next_run_at=NOW,
    )
    Target.objects.create(
        monitor=monitor, type=Target.Type.SCRAPE, urls=["https://example.com/"]
    )
    return monitor


@pytest.mark.parametrize("search", ["", "example"])
def test_the_page_results_list_does_not_join_every_page_to_its_check(
    admin_client, monitor, search
):
    check = Check.objects.create(
        monitor=monitor,
        status=Check.Status.COMPLETED,
        trigger=Check.Trigger.SCHEDULED,
        scheduled_for=NOW,
        estimated_credits=3,
    )
    PageResult.objects.bulk_create(
        PageResult(
            check_run=check,
            target_id=check.pk,
            url=f"https://example.com/p{n}",
            status=PageResult.Status.SAME,
        )
        for n in range(3)
    )

    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(admin_url(PageResult, "changelist"), {"q": search})

    # On PostgreSQL a search for a common word joined 100,000 page results to
    # their checks in a nested loop: 10 s for one page of the list.
    listing = [q["sql"] for q in queries if 'FROM "checks_pageresult"' in q["sql"]]
    assert listing and not [sql for sql in listing if "JOIN" in sql]
    assert page.content.decode().count(admin_url(Check, "change", check.pk)) == 3
