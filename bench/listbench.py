"""Benchmark 7: lists at scale — one team with 10,000 monitors and 140,000
checks (the 14 of each monitor's history strip), answered by the web process.

Data: MONITORS monitors of one team, each with one scrape target of one to
three addresses on its own site (`https://shop-00042.example.com/...`) and a
last check summary, made with bulk_create; CHECKS_PER_MONITOR finished
checks each, made inside the database (INSERT ... SELECT over
generate_series), then VACUUM ANALYZE. A second team holds SMALL_TEAM monitors made
the same way, to show how search grows with the team.

Requests go through Django's test client in this process (the whole
middleware stack, authentication, views, templates and the database; no
socket), each repeated REQUESTS times after WARM_UP, taking turns with its
baseline, and the median counts:

* API list: `GET /v2/monitor?limit=100`; baseline `GET /v2/monitor/{id}`
  (one monitor, same key, same stack).
* Dashboard list: `GET /` (25 rows with their history strips); baseline the
  team page `GET /settings/team/` (one member: a trivial page behind the
  same session and base template).
* Search by address: `GET /?q=shop-0004` (10 matches among 10,000);
  baseline the same trivial page. The same search in the 100-monitor team is
  shown for the growth.
* Activity: `GET /activity/` (the newest 50 of ACTIVITY entries of the big
  team, spread over its monitors, people and kinds) and the same filtered by
  one kind; baseline the same trivial page.
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

MONITORS = 10_000
CHECKS_PER_MONITOR = 14
SMALL_TEAM = 100
WARM_UP = 3
REQUESTS = 25
SEARCH = "shop-0004"
ACTIVITY = 100_000
ACTIVITY_FILTER = "monitor.paused"
HOST = "127.0.0.1"


@dataclass
class ListResult:
    monitors: int = 0
    checks: int = 0
    populate_s: float = 0.0
    activity_populate_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # median seconds
    sizes: dict[str, int] = field(default_factory=dict)  # response bytes
    matches: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _site(i: int) -> str:
    return f"https://shop-{i:05d}.example.com"


SCHEDULES = (
    ("*/30 * * * *", "Europe/Berlin"),
    ("0 9 * * 1-5", "UTC"),
    ("0 * * * *", "America/New_York"),
)


def _make_team(name: str, count: int, now: Any) -> Any:
    from monitors.models import Monitor, Target, Team
    from monitors.schedule import shortest_interval_minutes

    # Stored with each monitor as Monitor.set_schedule does; worked out once
    # per expression here rather than 10,000 times.
    intervals = {cron: shortest_interval_minutes(cron, now) for cron, _ in SCHEDULES}
    team = Team.objects.create(name=name, slug=f"lists-{uuid.uuid4().hex[:8]}")
    summary = {"totalPages": 2, "same": 1, "changed": 1}
    summary |= {"new": 0, "removed": 0, "error": 0}
    monitors, targets = [], []
    for i in range(count):
        cron, zone = SCHEDULES[i % len(SCHEDULES)]
        monitor = Monitor(
            id=uuid.uuid4(),
            team=team,
            name=f"Shop {i:05d} prices",
            schedule_cron=cron,
            schedule_timezone=zone,
            run_interval_minutes=intervals[cron],
            next_run_at=now + timedelta(minutes=1 + i % 60),
            last_run_at=now - timedelta(minutes=i % 60),
            last_check_summary=summary,
        )
        monitors.append(monitor)
        urls = [f"{_site(i)}/pricing", f"{_site(i)}/plans", f"{_site(i)}/terms"]
        targets.append(Target(monitor=monitor, type="scrape", urls=urls[: 1 + i % 3]))
    Monitor.objects.bulk_create(monitors, batch_size=2_000)
    Target.objects.bulk_create(targets, batch_size=2_000)
    return team


def _insert_checks(team_ids: list[int]) -> None:
    """CHECKS_PER_MONITOR finished checks per monitor of the team, made by the
    database. Columns the expressions below do not name get their model
    default, so fields added later are filled too."""
    from django.db import connection

    from checks.models import Check

    expressions = {
        "id": "gen_random_uuid()",
        "monitor_id": "m.id",
        "status": "CASE WHEN g %% 7 = 0 THEN 'partial' ELSE 'completed' END",
        "trigger": "'scheduled'",
        "scheduled_for": "now() - g * interval '30 minutes'",
        "started_at": "now() - g * interval '30 minutes'",
        "finished_at": "now() - g * interval '30 minutes' + interval '2 seconds'",
        "heartbeat_at": "now() - g * interval '30 minutes' + interval '2 seconds'",
        "pages_total": "2",
        "pages_done": "2",
        "actual_credits": "2",
        "summary": (
            "jsonb_build_object('totalPages', 2, 'same', 1 - (g %% 3 = 0)::int,"
            " 'changed', (g %% 3 = 0)::int, 'new', 0, 'removed', 0,"
            " 'error', (g %% 7 = 0)::int)"
        ),
        "created_at": "now() - g * interval '30 minutes'",
        "updated_at": "now() - g * interval '30 minutes'",
    }
    columns, values, params = [], [], []
    for model_field in Check._meta.concrete_fields:
        if model_field.generated:  # computed by the database
            continue
        columns.append(model_field.column)
        if model_field.column in expressions:
            values.append(expressions[model_field.column])
            continue
        values.append("%s")
        default = model_field.get_default()
        params.append(model_field.get_db_prep_save(default, connection))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO checks_check ({', '.join(columns)}) "
            f"SELECT {', '.join(values)} FROM monitors_monitor m "
            f"CROSS JOIN generate_series(1, {CHECKS_PER_MONITOR}) g "
            "WHERE m.team_id = ANY(%s)",
            [*params, team_ids],
        )
        # VACUUM as autovacuum would by then: it also merges the rows added
        # since the trigram indexes were made into them (GIN's pending list).
        for table in ("monitors_monitor", "monitors_target", "checks_check"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def _insert_activity(team_id: int, user_id: int) -> None:
    """ACTIVITY entries for the team, made by the database: monitors edited,
    paused, resumed and run by one person over the past months."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO teams_activity (team_id, at, kind, via, user_id, user_name,"
            " key_name, monitor_id, monitor_name, details, address)"
            " SELECT %s, now() - (%s - g) * interval '2 minutes',"
            " (ARRAY['monitor.edited', 'monitor.paused', 'monitor.resumed',"
            "        'monitor.run'])[1 + g %% 4],"
            " 'dashboard', %s, 'Lists bench', '', m.id, m.name,"
            " '{\"fields\": [\"name\"]}'::jsonb, '192.0.2.1'::inet"
            " FROM generate_series(1, %s) g"
            " JOIN LATERAL (SELECT id, name FROM monitors_monitor"
            "   WHERE team_id = %s ORDER BY id OFFSET g %% 100 LIMIT 1) m ON true",
            [team_id, ACTIVITY, user_id, ACTIVITY, team_id],
        )
        cursor.execute("VACUUM ANALYZE teams_activity")


def _member(team: Any, username: str) -> Any:
    from django.contrib.auth import get_user_model

    from monitors.models import Membership

    user = get_user_model().objects.create_user(username, f"{username}@e.com")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


def _get(client: Any, path: str, headers: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    response = client.get(path, HTTP_HOST=HOST, **headers)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: {response.status_code}")
    return elapsed, response.content


Request = tuple[Any, str, dict[str, str]]  # client, path, headers


def _medians(*requests: Request) -> list[tuple[float, bytes]]:
    """Median seconds of each request and its last body. The requests take
    turns (a, b, a, b, ...), so a change in the machine's load falls on all
    of them alike and their ratio holds."""
    samples: list[list[float]] = [[] for _ in requests]
    bodies = [b""] * len(requests)
    for round_number in range(WARM_UP + REQUESTS):
        for index, (client, path, headers) in enumerate(requests):
            elapsed, bodies[index] = _get(client, path, headers)
            if round_number >= WARM_UP:
                samples[index].append(elapsed)
    return [
        (statistics.median(times), body)
        for times, body in zip(samples, bodies, strict=True)
    ]


def measure() -> ListResult:
    from django.test import Client
    from django.utils import timezone

    from monitors.models import ApiKey

    result = ListResult(monitors=MONITORS, checks=MONITORS * CHECKS_PER_MONITOR)
    now = timezone.now()
    started = time.perf_counter()
    big = _make_team("Lists bench", MONITORS, now)
    small = _make_team("Lists bench, small", SMALL_TEAM, now)
    _insert_checks([big.pk, small.pk])
    result.populate_s = time.perf_counter() - started

    _, raw_key = ApiKey.issue(big, name="list bench")
    api = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {raw_key}"}
    one = big.monitors.first()
    answers = _medians(
        (api, f"/v2/monitor/{one.pk}", bearer),
        (api, "/v2/monitor?limit=100", bearer),
    )
    for name, (seconds, body) in zip(("api_one", "api_list"), answers, strict=True):
        result.timings[name] = seconds
        result.sizes[name] = len(body)
        result.matches[name] = body.count(b'"schedule"')

    web = Client()
    big_member = _member(big, "lists-big")
    web.force_login(big_member)
    started = time.perf_counter()
    _insert_activity(big.pk, big_member.pk)
    result.activity_populate_s = time.perf_counter() - started
    small_web = Client()
    small_web.force_login(_member(small, "lists-small"))
    names = ("trivial", "dashboard", "search", "search_small", "activity",
             "activity_kind")  # fmt: skip
    answers = _medians(
        (web, "/settings/team/", {}),
        (web, "/", {}),
        (web, f"/?q={SEARCH}", {}),
        (small_web, f"/?q={SEARCH}", {}),
        (web, "/activity/", {}),
        (web, f"/activity/?kind={ACTIVITY_FILTER}", {}),
    )
    for name, (seconds, body) in zip(names, answers, strict=True):
        result.timings[name] = seconds
        result.sizes[name] = len(body)
        result.matches[name] = body.count(b'<tr id="monitor-')
        if name.startswith("activity"):
            result.matches[name] = body.count(b'<td data-label="When">')
    expected = {"api_list": 100, "dashboard": 25, "search": 10, "search_small": 10}
    expected |= {"activity": 50, "activity_kind": 50}
    for name, count in expected.items():
        if result.matches[name] != count:
            result.problems.append(
                f"lists: {name} showed {result.matches[name]} monitors, not {count}"
            )
    return result
