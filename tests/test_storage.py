"""How much a team's history takes: on the team page, and per monitor with
`manage.py storage`."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.urls import reverse

from checks import storage
from checks.content import compare_texts
from checks.models import Check, PageResult, Snapshot
from monitors.models import Monitor, Target

pytestmark = pytest.mark.django_db


def monitor_with_a_change(team, name: str, size: int) -> Monitor:
    monitor = Monitor.objects.create(team=team, name=name, schedule_cron="0 * * * *")
    target = Target.objects.create(
        monitor=monitor, type="scrape", urls=["https://e.x/"]
    )
    check = Check.objects.create(
        monitor=monitor, trigger=Check.Trigger.MANUAL, status=Check.Status.COMPLETED
    )
    before = " ".join(f"word{i}" for i in range(size))
    after = before.replace("word1 ", "changed ")
    PageResult.objects.create(
        check_run=check,
        target_id=target.pk,
        url="https://e.x/",
        status=PageResult.Status.CHANGED,
        previous_snapshot=Snapshot.store(before),
        current_snapshot=Snapshot.store(after),
        diff=compare_texts(before, after)[2],
    )
    return monitor


def test_a_monitor_counts_its_diffs_and_the_snapshots_it_refers_to(team):
    monitor = monitor_with_a_change(team, "Big", 20_000)
    page = PageResult.objects.get(check_run__monitor=monitor)
    snapshots = len(page.previous_snapshot.data) + len(page.current_snapshot.data)

    usage = storage.usage_of(monitor)

    assert usage.snapshot_bytes == snapshots
    assert usage.results_bytes >= len(page.packed_diff)
    assert usage.total == usage.snapshot_bytes + usage.results_bytes


def test_the_command_lists_the_biggest_monitors_first(team, other_team):
    monitor_with_a_change(team, "Small", 100)
    monitor_with_a_change(team, "Large", 50_000)
    monitor_with_a_change(other_team, "Theirs", 80_000)
    out = StringIO()

    call_command("storage", "--team", team.slug, "--top", "5", stdout=out)

    lines = out.getvalue().splitlines()
    assert "Large" in lines[1] and "Small" in lines[2]
    assert "Theirs" not in out.getvalue()


def test_the_command_lists_a_deleted_monitor_while_it_still_holds_its_history(
    team,
):
    """A monitor deleted on the dashboard keeps its history for its
    retentionDays: the command left it out, so the room it took was nowhere."""
    monitor_with_a_change(team, "Small", 100)
    deleted = monitor_with_a_change(team, "Old crawl", 50_000)
    deleted.soft_delete(datetime(2026, 5, 1, 12, 0, tzinfo=UTC))
    out = StringIO()

    call_command("storage", "--team", team.slug, stdout=out)

    lines = out.getvalue().splitlines()
    assert "Old crawl" in lines[1]
    assert "deleted, its history goes on 2026-05-31" in lines[1]
    assert "Small" in lines[2] and "deleted" not in lines[2]


def test_the_command_names_an_unknown_team(db):
    with pytest.raises(CommandError, match="No team has the slug 'nope'"):
        call_command("storage", "--team", "nope")


def test_the_team_page_says_how_much_the_history_takes(client, team, django_user_model):
    from monitors.models import Membership

    user = django_user_model.objects.create_user("ana", password="pw-long-enough-1")
    Membership.objects.create(team=team, user=user, role="owner")
    monitor_with_a_change(team, "Big", 50_000)
    cache.clear()
    client.force_login(user)

    text = client.get(reverse("team-members")).content.decode()

    expected = storage.team_usage(team).total
    assert expected > 10_000
    assert "takes about" in text and "KB" in text


def test_the_team_page_says_how_much_deleted_monitors_still_take_and_until_when(
    client, team, django_user_model
):
    """Deleting a monitor frees nothing for its retentionDays: the page said
    only that checks go after as many days as each monitor keeps them."""
    from monitors.models import Membership

    user = django_user_model.objects.create_user("ana", password="pw-long-enough-1")
    Membership.objects.create(team=team, user=user, role="owner")
    monitor_with_a_change(team, "Kept", 100)
    deleted = monitor_with_a_change(team, "Old crawl", 50_000)
    deleted.soft_delete(datetime(2026, 5, 1, 12, 0, tzinfo=UTC))
    cache.clear()
    client.force_login(user)

    text = client.get(reverse("team-members")).content.decode()

    usage = storage.team_usage(team)
    assert usage.deleted_bytes == storage.usage_of(deleted).total
    assert 0 < usage.deleted_bytes < usage.total
    assert "of it belongs to deleted monitors" in text
    assert "kept until as many days after they were deleted" in text


def test_the_team_page_says_nothing_of_deleted_monitors_when_none_hold_anything(
    client, team, django_user_model
):
    from monitors.models import Membership

    user = django_user_model.objects.create_user("ana", password="pw-long-enough-1")
    Membership.objects.create(team=team, user=user, role="owner")
    monitor_with_a_change(team, "Kept", 100)
    cache.clear()
    client.force_login(user)

    text = client.get(reverse("team-members")).content.decode()

    assert storage.team_usage(team).deleted_bytes == 0
    assert "deleted monitors" not in text


def _cached(team) -> object:
    """The team's figure as cached (total and deleted bytes), if it is."""
    value = cache.get(f"storage:team:{team.pk}")
    return value[:2] if value else None


def test_deleting_a_monitor_for_good_marks_only_its_teams_cached_figure_stale(
    team, other_team, django_capture_on_commit_callbacks
):
    from checks.deleting import delete_monitors

    kept = monitor_with_a_change(team, "Kept", 100)
    going = monitor_with_a_change(team, "Going", 50_000)
    monitor_with_a_change(other_team, "Theirs", 100)
    cache.clear()
    before = storage.team_usage(team)
    theirs = storage.team_usage(other_team)

    with django_capture_on_commit_callbacks(execute=True):
        delete_monitors(Monitor.objects.filter(pk=going.pk))

    assert _cached(team) == [before.total, before.deleted_bytes]  # for /metrics
    assert storage.measured_usage([team.pk])[team.pk].stale  # measured again
    assert storage.team_usage(team).total == storage.usage_of(kept).total
    assert storage.team_usage(team).total < before.total
    assert _cached(other_team) == [theirs.total, theirs.deleted_bytes]


def test_retention_removing_a_teams_history_marks_its_cached_figure_stale(
    team, other_team, django_capture_on_commit_callbacks
):
    from checks.retention import purge_expired

    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    old = monitor_with_a_change(team, "Old", 50_000)
    Monitor.objects.filter(pk=old.pk).update(retention_days=1)
    Check.objects.filter(monitor=old).update(
        created_at=datetime(2026, 11, 1, tzinfo=UTC)
    )
    monitor_with_a_change(other_team, "Theirs", 100)
    cache.clear()
    before = storage.team_usage(team).total
    assert before > 10_000
    theirs = storage.team_usage(other_team)

    with django_capture_on_commit_callbacks(execute=True):
        assert purge_expired(now).checks == 1

    assert _cached(team)[0] == before  # for /metrics, until measured again
    assert storage.measured_usage([team.pk])[team.pk].stale
    assert storage.team_usage(team).total < 10_000
    assert _cached(other_team) == [theirs.total, theirs.deleted_bytes]


def test_deleting_a_monitor_in_the_dashboard_shows_its_history_as_deleted_at_once(
    client, team, django_user_model, django_capture_on_commit_callbacks
):
    from monitors.models import Membership

    user = django_user_model.objects.create_user("ana", password="pw-long-enough-1")
    Membership.objects.create(team=team, user=user, role="owner")
    going = monitor_with_a_change(team, "Going", 50_000)
    cache.clear()
    client.force_login(user)
    assert storage.team_usage(team).deleted_bytes == 0

    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("monitor-delete", args=[going.pk]))

    assert Monitor.objects.get(pk=going.pk).deleted_at is not None
    text = client.get(reverse("team-members")).content.decode()
    assert storage.team_usage(team).deleted_bytes == storage.usage_of(going).total
    assert "of it belongs to deleted monitors" in text


def test_deleting_a_monitor_through_the_api_shows_its_history_as_deleted_at_once(
    client, team, api_key, django_capture_on_commit_callbacks
):
    going = monitor_with_a_change(team, "Going", 50_000)
    cache.clear()
    assert storage.team_usage(team).deleted_bytes == 0

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.delete(
            f"/v2/monitor/{going.pk}", headers={"Authorization": f"Bearer {api_key}"}
        )

    assert answer.status_code == 200
    assert storage.team_usage(team).deleted_bytes == storage.usage_of(going).total
