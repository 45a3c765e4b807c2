"""The pages a big team opens every day ask the database the same few times
however many monitors, channels, deliveries or pages they show; and none
works something out for every row of the history when it shows a page of it.
Counts of queries, never timings (bench/RESULTS.md has those)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from checks.models import Check, Delivery, PageResult
from monitors.models import ApiKey, Channel, Membership, Monitor, Target

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.EDITOR)
    client.force_login(user)
    return client


def queries_of(client, path: str) -> list[str]:
    # Once before: a key's first request of the minute also notes its use.
    client.get(path)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return [query["sql"] for query in queries]


def make_monitor(team, name: str = "Shop", kind: str = "scrape") -> Monitor:
    monitor = Monitor.objects.create(
        team=team, name=name, schedule_cron="0 * * * *", run_interval_minutes=60
    )
    if kind == "crawl":
        Target.objects.create(monitor=monitor, type="crawl", url="https://a.example/")
    else:
        Target.objects.create(
            monitor=monitor, type="scrape", urls=["https://a.example/"]
        )
    return monitor


def finished_check(monitor: Monitor, hours_ago: int = 0) -> Check:
    return Check.objects.create(
        monitor=monitor,
        trigger="scheduled",
        status="completed",
        summary={"totalPages": 1, "same": 0, "changed": 1},
        created_at=timezone.now() - timedelta(hours=hours_ago),
    )


def pages_of(check: Check, count: int, status: str = "same", first: int = 0) -> None:
    target = check.monitor.targets.get()
    PageResult.objects.bulk_create(
        PageResult(
            check_run=check,
            target_id=target.pk,
            url=f"https://a.example/page-{n:04d}",
            status=status,
            created_at=check.created_at + timedelta(seconds=n),
        )
        for n in range(first, first + count)
    )


# ---------------------------------------------------------------- monitor list


def test_the_monitor_list_asks_the_same_few_queries_for_5_or_30_monitors(web, team):
    def add_monitors(count: int, start: int) -> None:
        for n in range(start, start + count):
            monitor = make_monitor(team, name=f"Shop {n}")
            pages_of(finished_check(monitor), 1, status="changed")

    add_monitors(5, 0)
    few = len(queries_of(web, "/"))
    add_monitors(25, 5)
    assert len(queries_of(web, "/?failing=1")) == len(queries_of(web, "/?tag=x"))
    assert len(queries_of(web, "/")) == few


# ---------------------------------------------------------------- a check's page


def test_a_check_page_asks_the_same_few_queries_for_10_or_100_pages(web, team):
    monitor = make_monitor(team, kind="crawl")
    check = finished_check(monitor)
    pages_of(check, 10, status="changed")
    path = check.get_absolute_url()
    few = len(queries_of(web, path))
    pages_of(check, 90, status="changed", first=10)
    assert len(queries_of(web, path)) == few
    assert len(queries_of(web, path + "?status=changed")) == few


# ---------------------------------------------------------------- a site's pages


def site_path(monitor: Monitor) -> str:
    return f"/monitors/{monitor.pk}/sites/{monitor.targets.get().pk}/"


def test_a_sites_page_asks_the_same_few_queries_for_5_or_150_pages(web, team):
    monitor = make_monitor(team, kind="crawl")
    pages_of(finished_check(monitor, hours_ago=2), 5)
    few = len(queries_of(web, site_path(monitor)))
    pages_of(finished_check(monitor, hours_ago=1), 150)
    assert len(queries_of(web, site_path(monitor) + "?page=2")) == few


def test_a_sites_page_counts_its_pages_without_reading_each_ones_latest_outcome(
    web, team
):
    monitor = make_monitor(team, kind="crawl")
    pages_of(finished_check(monitor, hours_ago=2), 3)

    sql = queries_of(web, site_path(monitor))

    # Worked out inside the count, the latest outcome was read again for every
    # result of every page in the history kept.
    counts = [q for q in sql if "COUNT(" in q and "checks_pageresult" in q]
    assert counts
    assert all(q.count('FROM "checks_pageresult"') == 1 for q in counts)


def test_a_sites_page_says_each_page_s_latest_outcome_on_every_page_of_the_list(
    web, team
):
    monitor = make_monitor(team, kind="crawl")
    pages_of(finished_check(monitor, hours_ago=3), 120, status="error")
    pages_of(finished_check(monitor, hours_ago=2), 110)  # 0-109 load again
    second = web.get(site_path(monitor) + "?page=2").content.decode()
    rows = second.split("<tr>")[2:]
    assert len(rows) == 20
    loaded = [row for row in rows if "On the site" in row]
    failed = [row for row in rows if "Could not be loaded" in row]
    assert len(loaded) == 10 and "page-0100" in loaded[0]
    assert len(failed) == 10 and "page-0110" in failed[0]


# ---------------------------------------------------------------- deliveries


def test_a_monitors_deliveries_ask_the_same_few_queries_for_3_or_30_channels(web, team):
    monitor = make_monitor(team)
    check = finished_check(monitor)

    def deliveries_to(count: int, start: int) -> None:
        for n in range(start, start + count):
            channel = Channel.objects.create(
                team=team, name=f"Ops {n}", kind="slack", settings={"channelId": "C1"}
            )
            Delivery.objects.create(
                kind="slack",
                channel=channel,
                monitor=monitor,
                check_run=check,
                event="monitor.check.completed",
                status="delivered",
            )

    deliveries_to(3, 0)
    path = f"/monitors/{monitor.pk}/deliveries/"
    few = len(queries_of(web, path))
    deliveries_to(27, 3)
    assert len(queries_of(web, path)) == few
    assert "Ops 29" in web.get(path).content.decode()


# ---------------------------------------------------------------- the API


def test_the_api_channel_list_asks_the_same_few_queries_for_2_or_20_channels(
    team, django_user_model
):
    _, raw = ApiKey.issue(team, name="sync")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    member = django_user_model.objects.create_user("mira", "mira@example.com")
    Membership.objects.create(team=team, user=member, role=Membership.Role.EDITOR)

    def channels(count: int, start: int) -> None:
        # Webhooks and team e-mail (whose addresses are the team's members').
        for n in range(start, start + count):
            Channel.objects.create(
                team=team,
                name=f"Hook {n}",
                kind="webhook",
                settings={"url": f"https://hooks.example/{n}"},
            ) if n % 2 else Channel.objects.create(
                team=team,
                name=f"Team mail {n}",
                kind="team_email",
                settings={"recipients": [member.pk]},
            )

    channels(2, 0)
    few = len(queries_of(api, "/v2/channels"))
    channels(18, 2)
    assert len(queries_of(api, "/v2/channels")) == few
    shown = api.get("/v2/channels").json()["data"]
    assert len(shown) == 20
    assert {"recipients": ["mira@example.com"]} in [c["settings"] for c in shown]


# ---------------------------------------------------------------- channels


def test_the_channels_page_reads_no_message_bodies_for_its_recent_deliveries(web, team):
    monitor = make_monitor(team)
    channel = Channel.objects.create(
        team=team, name="Ops", kind="webhook", settings={"url": "https://h.example/"}
    )
    Delivery.objects.create(
        kind="webhook",
        channel=channel,
        monitor=monitor,
        event="monitor.check.completed",
        url="https://h.example/",
        body='{"big": "' + "x" * 5000 + '"}',
        status="delivered",
    )

    sql = queries_of(web, "/channels/")

    assert any('"checks_delivery"' in q for q in sql)
    assert not any('"checks_delivery"."body"' in q for q in sql)
    assert "Shop" in web.get("/channels/").content.decode()
