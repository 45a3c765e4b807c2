"""A monitor after months of running: retention has deleted its oldest checks
and the snapshots only they used, the monitor was edited along the way, and
every change it still keeps reads back every way it is shown (the API, the
dashboard's diff, the team's feed, a digest's excerpt)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from checks.models import Check, PageResult, Snapshot
from checks.notify import reports
from checks.retention import purge_expired
from monitors import history
from monitors.models import Membership, Monitor, Target
from tests.test_runner import make_monitor, run_check

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DAYS = 40
RETENTION = 15


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def prices(version: int) -> str:
    # Every fourth version is the first one again: a page going back to
    # content whose snapshot an old, purged change was the last to use.
    version = version % 4
    return "".join(
        f"<p>Plan {n} costs ${10 * n + version} a month.</p>" for n in (1, 2, 3)
    )


def months_of_history(team, site) -> Monitor:
    """A daily check for DAYS days; the pricing page changes every 3 days,
    the team page is gone for a while, and the monitor is edited twice."""
    pricing = site.html("/pricing", "Pricing", prices(0))
    about = site.html("/about", "About", "<p>We are five people.</p>")
    monitor = make_monitor(team, [pricing, about])
    Monitor.objects.filter(pk=monitor.pk).update(retention_days=RETENTION)
    monitor.refresh_from_db()
    target = Target.objects.get(monitor=monitor)
    for day in range(DAYS):
        if day % 3 == 0:
            site.html("/pricing", "Pricing", prices(day // 3))
        if day == 10:
            site.remove("/about")
        if day == 18:
            site.html("/about", "About", "<p>We are six people now.</p>")
        if day == 28:  # a page added to the monitor, another no longer watched
            jobs = site.html("/jobs", "Jobs", "<p>No openings.</p>")
            Target.objects.filter(pk=target.pk).update(urls=[pricing, jobs])
        if day == 33:
            site.html("/jobs", "Jobs", "<p>One opening: engineer.</p>")
        with time_machine.travel(START + timedelta(days=day), tick=False):
            check = run_check(monitor)
        assert check.status == Check.Status.COMPLETED, check.error
    return monitor


def kept_changes(monitor: Monitor) -> list[PageResult]:
    return list(
        PageResult.objects.filter(
            check_run__monitor=monitor, status=PageResult.Status.CHANGED
        ).order_by("created_at")
    )


def test_every_change_kept_after_months_of_retention_reads_back_every_way(
    team, site, api, web
):
    monitor = months_of_history(team, site)
    before = {page.pk: page.diff for page in kept_changes(monitor)}
    now = START + timedelta(days=DAYS)

    with time_machine.travel(now, tick=False):
        purged = purge_expired(now)

    assert purged.checks == DAYS - RETENTION
    assert purged.snapshots > 0
    kept = kept_changes(monitor)
    assert len(kept) >= 6
    cutoff = now - timedelta(days=RETENTION)
    assert all(page.created_at >= cutoff for page in kept)
    for page in kept:
        assert page.diff == before[page.pk]
        assert page.diff["text"].startswith("--- previous")
        assert page.diff["json"]["files"]
        check = page.check_run

        answer = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}").json()
        (shown,) = [p for p in answer["data"]["pages"] if p["url"] == page.url]
        assert shown["diff"] == before[page.pk]

        for layout in ("text", "split", "inline"):
            diff_page = web.get(page.get_absolute_url(), {"view": layout})
            assert diff_page.status_code == 200
            assert b"no longer available" not in diff_page.content
            assert b'class="word-change"' in diff_page.content or (
                b'id="change-' in diff_page.content
            )

        report = reports.change_report(check)
        reports.attach_diffs(check, report)
        (told,) = [p for p in report.pages if p.pk == page.pk]
        assert told.diff_lines

    # Every kept check and page still opens, the pages of URLs no longer
    # watched included.
    for check in Check.objects.filter(monitor=monitor):
        assert web.get(check.get_absolute_url()).status_code == 200
        answer = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}")
        assert answer.status_code == 200
        for page in check.pages.all():
            assert web.get(page.get_absolute_url()).status_code == 200
    assert PageResult.objects.filter(
        check_run__monitor=monitor, url__endswith="/about"
    ).exists()
    assert web.get(monitor.get_absolute_url()).status_code == 200
    assert web.get("/history/").status_code == 200

    fed = {p.pk: p for p in history.atom_changes(team, monitor)}
    for page in kept:
        if page.pk in fed:
            assert fed[page.pk].diff == before[page.pk]
    assert any(page.pk in fed for page in kept)
    assert Snapshot.objects.exists()
