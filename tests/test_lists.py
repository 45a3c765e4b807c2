"""Lists at scale (#21.14): the API list works out no schedule per request,
the dashboard list's history strips stay small, and search by address is
served by indexes on PostgreSQL. The timings themselves are `make bench`'s
(bench/listbench.py); these tests hold the mechanisms in place."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework import serializers

from checks.models import Check
from monitors import schedule as schedules
from monitors.api.representation import MonitorSerializer
from monitors.api.views import with_relations
from monitors.models import EmailRecipient, Membership, Monitor, Target

pytestmark = pytest.mark.django_db


def create(api, name: str = "Pricing", schedule: str = "every 30 minutes", **extra):
    body = {
        "name": name,
        "schedule": {"text": schedule, "timezone": "Europe/Berlin"},
        "targets": [{"type": "scrape", "urls": [f"https://{name.lower()}.example/a"]}],
        **extra,
    }
    response = api.post("/v2/monitor", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["data"]


# ---------------------------------------------------------------- the interval


def test_a_monitor_stores_its_run_interval_when_its_schedule_is_set(api):
    data = create(api, schedule="every 30 minutes")
    monitor = Monitor.objects.get(pk=data["id"])
    assert monitor.run_interval_minutes == 30
    response = api.patch(
        f"/v2/monitor/{monitor.pk}",
        {"schedule": {"text": "every 2 hours", "timezone": "UTC"}},
        format="json",
    )
    assert response.status_code == 200
    monitor.refresh_from_db()
    assert monitor.run_interval_minutes == 120
    assert response.json()["data"]["unchangedPagesFree"] is True


def test_listing_monitors_walks_no_cron_expression(api, monkeypatch):
    for n in range(5):
        create(
            api,
            name=f"Shop{n}",
            schedule=("every 30 minutes", "weekdays at 9am")[n % 2],
        )

    def walked(*args, **kwargs):
        raise AssertionError("a cron expression was walked to answer a list")

    monkeypatch.setattr(schedules, "interval_minutes", walked)
    monkeypatch.setattr(schedules, "shortest_interval_minutes", walked)
    monkeypatch.setattr(schedules, "next_runs", walked)
    response = api.get("/v2/monitor", {"limit": 100})
    assert response.status_code == 200
    data = response.json()["data"]
    assert len(data) == 5
    assert {m["estimatedCreditsPerMonth"] for m in data} == {1440, 30}


def test_the_interval_is_the_shortest_gap_whatever_the_day_it_is_asked():
    friday = datetime(2026, 5, 8, 8, tzinfo=UTC)
    # The gap after Friday 08:00 spans the weekend; the schedule's interval does not.
    weekday = schedules.Schedule("0 9 * * 1-5", "UTC")
    assert schedules.interval_minutes(weekday, friday) == 3 * 24 * 60
    assert schedules.shortest_interval_minutes("0 9 * * 1-5", friday) == 24 * 60
    # Working hours: every 30 minutes by day, nothing at night.
    evening = datetime(2026, 5, 8, 18, tzinfo=UTC)
    assert schedules.shortest_interval_minutes("*/30 9-17 * * 1-5", evening) == 30
    # A daylight-saving change does not make a day 23 hours long.
    before_dst = datetime(2026, 3, 28, tzinfo=UTC)
    assert schedules.shortest_interval_minutes("0 9 * * *", before_dst) == 24 * 60


def test_a_row_without_a_stored_interval_works_it_out_once(team, monkeypatch):
    monitor = Monitor.objects.create(team=team, name="Old", schedule_cron="0 * * * *")
    calls = []
    real = schedules.shortest_interval_minutes
    monkeypatch.setattr(
        schedules,
        "shortest_interval_minutes",
        lambda *a: calls.append(a) or real(*a),
    )
    now = timezone.now()
    assert monitor.unchanged_pages_free(now) is True
    assert monitor.estimated_credits_per_month(now) == 0  # no targets
    assert len(calls) == 1


def test_the_migration_stores_the_interval_of_existing_monitors(team):
    migration = importlib.import_module("monitors.migrations.0005_monitor_run_interval")
    hourly = Monitor.objects.create(team=team, name="A", schedule_cron="0 * * * *")
    daily = Monitor.objects.create(team=team, name="B", schedule_cron="0 9 * * *")
    broken = Monitor.objects.create(team=team, name="C", schedule_cron="not cron")
    migration.fill_intervals(django_apps, None)
    for monitor in (hourly, daily, broken):
        monitor.refresh_from_db()
    assert (hourly.run_interval_minutes, daily.run_interval_minutes) == (60, 1440)
    assert broken.run_interval_minutes is None


# ---------------------------------------------------------------- API output


def test_the_quick_monitor_output_is_what_drf_would_give(api, team):
    plain = create(api, name="Plain")
    rich = create(
        api,
        name="Rich",
        goal="Tell me about prices",
        webhook={"url": "https://hooks.example/x", "events": ["monitor.page"]},
        notification={
            "email": {"enabled": True, "recipients": ["a@example.com"]},
        },
    )
    Monitor.objects.filter(pk=rich["id"]).update(
        last_run_at=datetime(2026, 5, 8, 8, 30, 1, 5, tzinfo=UTC),
        last_check_summary={"totalPages": 1, "same": 1, "changed": 0, "new": 0,
                            "removed": 0, "error": 0},
    )  # fmt: skip
    monitors = with_relations(
        list(Monitor.objects.filter(pk__in=[plain["id"], rich["id"]]))
    )
    serializer = MonitorSerializer(context={"now": timezone.now()})
    for monitor in monitors:
        generic = serializers.Serializer.to_representation(serializer, monitor)
        assert serializer.to_representation(monitor) == generic
    assert list(generic) == list(MonitorSerializer().fields)


def test_the_api_list_asks_the_database_the_same_few_times_for_any_page(
    api, django_assert_num_queries
):
    for n in range(3):
        create(api, name=f"Shop{n}")
    create(
        api,
        name="Mailed",
        notification={"email": {"enabled": True, "recipients": ["a@example.com"]}},
    )
    # Key lookup, monitors, targets, e-mail subscriptions of the one monitor
    # that has recipients, the channels they send to, and their tags.
    with django_assert_num_queries(6):
        data = api.get("/v2/monitor", {"limit": 100}).json()["data"]
    mailed = next(m for m in data if m["name"] == "Mailed")
    assert [s["email"] for s in mailed["emailRecipientSubscriptions"]] == [
        "a@example.com"
    ]
    for n in range(3, 20):
        create(api, name=f"Shop{n}")
    with django_assert_num_queries(6):
        assert len(api.get("/v2/monitor", {"limit": 100}).json()["data"]) == 21
    assert EmailRecipient.objects.count() == 1


# ---------------------------------------------------------------- dashboard list


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def full_page_of_monitors(team) -> list[Monitor]:
    monitors = []
    now = timezone.now()
    for n in range(25):
        monitor = Monitor.objects.create(
            team=team,
            name=f"Shop {n:05d} prices",
            schedule_cron="*/30 * * * *",
            schedule_timezone="Europe/Berlin",
            run_interval_minutes=30,
            next_run_at=now + timedelta(minutes=n),
        )
        Target.objects.create(
            monitor=monitor,
            type="scrape",
            urls=[f"https://shop-{n:05d}.example.com/pricing"],
        )
        monitors.append(monitor)
    checks = []
    for monitor in monitors:
        for k in range(16):
            changed = int(k % 3 == 0)
            checks.append(
                Check(
                    monitor=monitor,
                    trigger="scheduled",
                    scheduled_for=now - timedelta(minutes=30 * k),
                    status="completed",
                    started_at=now - timedelta(minutes=30 * k),
                    summary={
                        "totalPages": 2,
                        "same": 2 - changed,
                        "changed": changed,
                        "new": 0,
                        "removed": 0,
                        "error": 0,
                    },
                )  # fmt: skip
            )
    Check.objects.bulk_create(checks)
    return monitors


def test_the_monitor_list_with_full_history_strips_stays_small(
    web, team, django_assert_max_num_queries
):
    full_page_of_monitors(team)
    # 12 with the page's tags and the team's, for the tag filter.
    with django_assert_max_num_queries(12):
        body = web.get(reverse("monitor-list")).content.decode()
    # 25 rows of 14 checks were 167 KB of HTML; each check was a link with
    # its words twice over.
    assert len(body.encode()) < 90_000, len(body.encode())
    assert body.count('<li class="cell c-completed') == 25 * 14
    assert body.count("/checks/") == 0  # one link per strip, to the monitor
    assert "Last 14 checks, oldest first: 14 completed; 5 found changes" in body
    assert 'title="' in body.split('class="strip"')[1].split("</ol>")[0]


def test_a_strip_cell_says_its_time_to_the_second_and_what_it_found(web, team):
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="0 * * * *",
        schedule_timezone="Europe/Berlin",
    )  # fmt: skip
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/"])
    check = Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status="partial",
        started_at=datetime(2026, 11, 20, 10, 30, 5, tzinfo=UTC),
        summary={"changed": 2, "error": 1, "same": 0, "new": 0, "removed": 0},
    )
    Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status="completed",
        started_at=datetime(2026, 11, 20, 11, 0, 0, tzinfo=UTC),
        summary={"changed": 0, "error": 0, "same": 1, "new": 3, "removed": 1},
    )
    Check.objects.create(monitor=monitor, trigger="manual")  # queued, no summary
    body = web.get(reverse("monitor-list")).content.decode()
    assert (
        '<li class="cell c-partial has-changes"'
        ' title="Fri 20 Nov, 11:30:05: Completed with errors, 2 changed">!</li>'
    ) in body
    # Pages seen for the first time, or gone, are said as such.
    assert 'title="Fri 20 Nov, 12:00:00: Completed, 3 new, 1 removed"' in body
    assert '<li class="cell c-queued" title="' in body
    assert f'href="{monitor.get_absolute_url()}#check-history"' in body
    assert check.get_absolute_url() not in body


def test_a_strip_cell_calls_a_web_search_s_new_match_so_not_a_new_page(
    web, team, django_assert_max_num_queries
):
    monitor = Monitor.objects.create(
        team=team, name="News", schedule_cron="0 * * * *", schedule_timezone="UTC"
    )
    Target.objects.create(monitor=monitor, type="search", queries=["acme"])
    Target.objects.create(monitor=monitor, type="scrape", urls=["https://e.com/"])
    Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status="completed",
        started_at=datetime(2026, 11, 20, 10, 0, 0, tzinfo=UTC),
        # On the wire the new match is one of the `new`, the others `same`.
        summary={
            "totalPages": 5,
            "changed": 0,
            "new": 2,
            "removed": 0,
            "error": 0,
            "same": 3,
            "search": {"alert": 1, "ignored": 2},
        },
    )
    Check.objects.create(
        monitor=monitor,
        trigger="manual",
        status="completed",
        started_at=datetime(2026, 11, 20, 11, 0, 0, tzinfo=UTC),
        summary={
            "totalPages": 2,
            "changed": 0,
            "new": 2,
            "removed": 0,
            "error": 0,
            "same": 0,
            "search": {"alert": 2},
        },
    )
    # 11 with the page's tags and the team's, for the tag filter.
    with django_assert_max_num_queries(11):
        body = web.get(reverse("monitor-list")).content.decode()
    # The History page's order (summary_parts): a search's new matches lead.
    assert 'title="Fri 20 Nov, 10:00:00: Completed, 1 new match, 1 new"' in body
    assert (
        '<li class="cell c-completed has-changes"'
        ' title="Fri 20 Nov, 11:00:00: Completed, 2 new matches">'
    ) in body


# ---------------------------------------------------------------- search


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("shop-00004", ["Shop 00004 prices"]),  # by address
        ("SHOP 00012", ["Shop 00012 prices"]),  # by name, any case
        ("shop-0001", [f"Shop {n:05d} prices" for n in range(19, 9, -1)]),
        ("nowhere", []),
    ],
)
def test_search_finds_monitors_by_name_or_address(web, team, query, found):
    full_page_of_monitors(team)
    searched = Monitor.objects.create(team=team, name="News", schedule_cron="0 * * * *")
    Target.objects.create(monitor=searched, type="search", queries=["acme price rise"])
    body = web.get(reverse("monitor-list"), {"q": query}).content.decode()
    shown = [
        line.split(">")[1].split("<")[0]
        for line in body.splitlines()
        if 'class="row-title"' in line
    ]
    assert shown == found
    body = web.get(reverse("monitor-list"), {"q": "Price Rise"}).content.decode()
    assert "News" in body


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="trigram indexes are PostgreSQL's"
)
def test_search_can_be_served_by_the_trigram_indexes(team):
    from monitors.dashboard.monitors import _matching_monitor_ids

    search = Monitor.objects.for_team(team).filter(
        pk__in=_matching_monitor_ids("shop-0004")
    )
    sql, params = search.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    for index in (
        "monitor_name_trgm_idx",
        "target_urls_trgm_idx",
        "target_url_trgm_idx",
        "target_queries_trgm_idx",
    ):
        assert index in plan, plan


def test_searching_reads_each_table_once(web, team):
    full_page_of_monitors(team)
    with CaptureQueriesContext(connection) as queries:
        web.get(reverse("monitor-list"), {"q": "shop-0000"})
    searches = [q["sql"] for q in queries.captured_queries if "LIKE" in q["sql"]]
    # The count and the page, each one UNION of the two index-friendly parts.
    assert len(searches) == 2
    assert all(" UNION " in sql and "EXISTS" not in sql for sql in searches)
