"""/metrics says how much each team's history takes, as checks.storage
measures it, and how big the database is, without measuring on a scrape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checks import retention, storage
from checks.tasks import measure_team_storage_task
from monitors.models import Team
from tests.test_metrics import TOKEN, scrape
from tests.test_runner import make_monitor, run_check

pytestmark = pytest.mark.django_db

LATER = timedelta(seconds=storage.TEAM_CACHE_SECONDS + 1)


@pytest.fixture
def metrics_on(settings, redis_server):
    settings.METRICS_TOKEN = TOKEN
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def figures(samples: dict, team: Team) -> tuple[float, float]:
    label = (("team", str(team.pk)),)
    return (
        samples[("pagewatch_team_history_bytes", label)],
        samples[("pagewatch_team_deleted_history_bytes", label)],
    )


def measured_now(team: Team) -> tuple[int, int]:
    usage = storage.measure_team(team.pk, timezone.now())
    return usage.total, usage.deleted_bytes


def test_a_teams_history_in_metrics_is_what_storage_measures_after_checks_and_retention(
    client, metrics_on, team, site, time_machine
):
    time_machine.move_to(timezone.now())
    url = site.html("/prices", "Prices", "<p>" + "cheap " * 2000 + "</p>")
    monitor = make_monitor(team, [url])
    gone = make_monitor(team, [site.html("/old", "Old", "<p>old page</p>")])
    run_check(monitor)
    run_check(gone)
    gone.soft_delete(timezone.now())

    assert measure_team_storage_task() == 1
    first = figures(scrape(client), team)

    assert first == measured_now(team)
    assert 0 < first[1] < first[0]

    site.html("/prices", "Prices", "<p>" + "dear " * 2000 + "</p>")
    run_check(monitor)
    time_machine.shift(LATER)
    assert measure_team_storage_task() == 1
    after_a_change = figures(scrape(client), team)

    assert after_a_change == measured_now(team)
    assert after_a_change[0] > first[0]

    retention.purge_expired(timezone.now() + timedelta(days=400))
    time_machine.shift(LATER)
    measure_team_storage_task()
    after_retention = figures(scrape(client), team)

    assert after_retention == measured_now(team)
    assert after_retention[0] < after_a_change[0]
    assert after_retention[1] == 0


def test_a_scrape_measures_nothing_and_asks_the_same_queries_for_one_team_or_many(
    client, metrics_on, team, site
):
    run_check(make_monitor(team, [site.html("/", "Home", "<p>home</p>")]))
    storage.measure_team(team.pk, timezone.now())
    with CaptureQueriesContext(connection) as one_team:
        scrape(client)
    for n in range(60):
        other = Team.objects.create(name=f"Team {n}", slug=f"team-{n}")
        if n % 2:
            storage.measure_team(other.pk, timezone.now())

    with CaptureQueriesContext(connection) as many_teams:
        samples = scrape(client)

    assert len(many_teams) == len(one_team)
    # Measuring sums the length of every diff and snapshot; a scrape never does.
    assert not [q for q in many_teams if "LENGTH(" in q["sql"].upper()]
    teams = {dict(labels).get("team") for name, labels in samples if "team_" in name}
    assert len(teams) == 1 + 30  # the measured ones; the rest wait for the task


def test_the_scrape_stays_within_a_fixed_number_of_queries_with_many_teams(
    client, metrics_on, django_assert_max_num_queries
):
    for n in range(200):
        team = Team.objects.create(name=f"Team {n}", slug=f"team-{n}")
        storage.measure_team(team.pk, timezone.now())

    with django_assert_max_num_queries(30):
        samples = scrape(client)

    assert sum(name == "pagewatch_team_history_bytes" for name, _ in samples) == 200


def test_the_periodic_task_measures_the_stalest_teams_first_and_a_few_per_run(
    team, other_team, time_machine
):
    time_machine.move_to(timezone.now(), tick=False)
    never = Team.objects.create(name="Initech", slug="initech")
    measured_long_ago = storage.measure_team(team.pk, timezone.now()).measured_at
    time_machine.shift(LATER)
    storage.measure_team(other_team.pk, timezone.now())
    time_machine.shift(timedelta(seconds=1))
    ids = [team.pk, other_team.pk, never.pk]

    assert storage.measure_stale_teams(timezone.now(), limit=1) == 1
    assert storage.measured_usage(ids)[never.pk].measured_at == timezone.now()
    assert storage.measured_usage(ids)[team.pk].measured_at == measured_long_ago

    assert storage.measure_stale_teams(timezone.now(), limit=5) == 1
    ages = storage.measured_usage(ids)
    assert ages[team.pk].measured_at == timezone.now()
    assert ages[other_team.pk].measured_at < timezone.now()  # it was still fresh
    assert storage.measure_stale_teams(timezone.now()) == 0


def test_the_team_page_figure_is_the_one_metrics_serve(team, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    measured = storage.team_usage(team)

    assert storage.measured_usage([team.pk]) == {team.pk: measured}
    time_machine.shift(timedelta(seconds=storage.TEAM_CACHE_SECONDS - 1))
    assert storage.team_usage(team).measured_at == measured.measured_at
    time_machine.shift(timedelta(seconds=2))
    assert storage.team_usage(team).measured_at > measured.measured_at


def test_metrics_say_how_big_the_database_is(client, metrics_on, team):
    samples = scrape(client)

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_total_relation_size('checks_pageresult')")
            assert (
                samples[
                    (
                        "pagewatch_database_table_bytes",
                        (("table", "checks_pageresult"),),
                    )
                ]
                == cursor.fetchone()[0]
            )
            cursor.execute("SELECT pg_database_size(current_database())")
        else:
            cursor.execute("PRAGMA page_count")
            pages = cursor.fetchone()[0]
            cursor.execute("PRAGMA page_size")
            cursor.execute(f"SELECT {pages} * {cursor.fetchone()[0]}")
        size = cursor.fetchone()[0]
    assert samples[("pagewatch_database_bytes", ())] == pytest.approx(size, rel=0.05)
    assert size > 0


def test_an_unreachable_cache_leaves_out_the_team_figures_and_says_so_in_one_line(
    client, metrics_on, team, tmp_path, caplog
):
    """The figures live in Redis: when it is down, a scrape that failed for
    them would lose every series just when the outage makes them wanted."""
    storage.measure_team(team.pk, timezone.now())
    dead = {
        "default": {
            **django_settings.CACHES["default"],
            "LOCATION": f"unix://{tmp_path}/nobody.sock?db=0",
        }
    }

    with (
        override_settings(CACHES=dead),
        caplog.at_level("WARNING", logger="checks.metrics"),
    ):
        samples = scrape(client)

    assert not [name for name, _ in samples if name.startswith("pagewatch_team_")]
    assert samples[("pagewatch_database_bytes", ())] > 0
    said = [r for r in caplog.records if "team storage" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None


EPOCH = datetime.fromtimestamp(0, tz=UTC)


def test_a_change_to_a_teams_history_keeps_its_figure_for_metrics_but_marks_it_stale(
    client,
    metrics_on,
    team,
    other_team,
    site,
    time_machine,
    django_capture_on_commit_callbacks,
):
    time_machine.move_to(timezone.now(), tick=False)
    run_check(make_monitor(team, [site.html("/", "Home", "<p>home</p>")]))
    figure = storage.measure_team(team.pk, timezone.now()).total
    measured_at = timezone.now()
    storage.measure_team(other_team.pk, timezone.now())
    time_machine.shift(timedelta(seconds=1))

    with django_capture_on_commit_callbacks(execute=True):
        storage.forget_team_usage([team.pk])

    assert figures(scrape(client), team)[0] == figure
    kept = storage.measured_usage([team.pk])[team.pk]
    assert (kept.total, kept.measured_at, kept.stale) == (figure, measured_at, True)
    time_machine.shift(LATER)
    assert storage.measure_stale_teams(timezone.now(), limit=1) == 1
    assert storage.measured_usage([team.pk])[team.pk].measured_at == timezone.now()
    assert not storage.measured_usage([team.pk])[team.pk].stale
    assert storage.measured_usage([other_team.pk])[other_team.pk].measured_at < (
        timezone.now()
    )


def test_the_team_page_measures_again_a_figure_marked_stale(
    team, time_machine, django_capture_on_commit_callbacks
):
    time_machine.move_to(timezone.now(), tick=False)
    storage.team_usage(team)
    time_machine.shift(timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        storage.forget_team_usage([team.pk])

    assert storage.team_usage(team).measured_at == timezone.now()
    assert storage.measured_usage([team.pk])[team.pk].measured_at == timezone.now()


def test_two_interleaved_runs_of_the_periodic_measuring_measure_different_teams(
    team, other_team, monkeypatch
):
    measured: list[list[int]] = [[], []]
    real = storage.measure_team

    def measure_while_another_run_starts(team_id, now):
        if not measured[1]:  # the first run, mid-way through its first team
            measured[1].append(0)
            monkeypatch.setattr(storage, "measure_team", second_run)
            storage.measure_stale_teams(now, limit=1)
            monkeypatch.setattr(storage, "measure_team", first_run)
        return real(team_id, now)

    def first_run(team_id, now):
        measured[0].append(team_id)
        return measure_while_another_run_starts(team_id, now)

    def second_run(team_id, now):
        measured[1].append(team_id)
        return real(team_id, now)

    monkeypatch.setattr(storage, "measure_team", first_run)
    assert storage.measure_stale_teams(timezone.now(), limit=1) == 1

    first, second = measured[0], measured[1][1:]
    assert len(first) == len(second) == 1
    assert set(first) | set(second) == {team.pk, other_team.pk}
    # Both claims are let go once each run is over.
    assert storage.measure_stale_teams(timezone.now(), limit=5) == 0
    assert not cache.get(f"storage:measuring:{team.pk}")


def test_a_measurement_overtaken_by_a_change_leaves_the_figure_stale(
    team, site, time_machine, monkeypatch, django_capture_on_commit_callbacks
):
    time_machine.move_to(timezone.now(), tick=False)
    storage.measure_team(team.pk, timezone.now())
    time_machine.shift(timedelta(seconds=1))
    real = storage._bytes_of

    def history_deleted_meanwhile(monitors):
        read = real(monitors)
        with django_capture_on_commit_callbacks(execute=True):
            storage.forget_team_usage([team.pk])
        return read

    monkeypatch.setattr(storage, "_bytes_of", history_deleted_meanwhile)
    storage.measure_team(team.pk, timezone.now())

    assert storage.measured_usage([team.pk])[team.pk].stale


def test_metrics_keep_a_stale_figures_measuring_time_and_say_it_is_stale(
    client, metrics_on, team, time_machine, django_capture_on_commit_callbacks
):
    """A figure the team's history has changed since was served as measured
    at 0 (1970): an alert on the figure's age (time() - the timestamp) went
    off at every monitor deleted. The timestamp is when the figure served
    was measured; pagewatch_team_history_stale says it is known to be old."""
    time_machine.move_to(timezone.now(), tick=False)
    storage.measure_team(team.pk, timezone.now())
    measured_at = timezone.now().timestamp()
    label = (("team", str(team.pk)),)
    time_machine.shift(timedelta(seconds=30))

    fresh = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):
        storage.forget_team_usage([team.pk])
    stale = scrape(client)
    storage.measure_stale_teams(timezone.now())
    again = scrape(client)

    times = [
        samples[("pagewatch_team_history_measured_timestamp_seconds", label)]
        for samples in (fresh, stale, again)
    ]
    marks = [
        samples[("pagewatch_team_history_stale", label)]
        for samples in (fresh, stale, again)
    ]
    assert times == [measured_at, measured_at, measured_at + 30]
    assert marks == [0, 1, 0]
