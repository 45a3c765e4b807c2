"""Deleting in the admin a monitor, a team or a check with a long history:
the confirmation says in counts what goes with it and the delete removes it
in a few statements, without reading the page results and deliveries into
Python (a monitor with 100,000 page results took seconds to confirm and
longer to delete, past the web server's time-out). Every deletion stays in
the logs."""

from __future__ import annotations

import html
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.urls import reverse

from checks.models import (
    Capture,
    Check,
    CheckBatch,
    Crawl,
    CrawlPage,
    Delivery,
    DeliveryAttempt,
    PageResult,
    PageState,
    SearchRun,
)
from monitors.models import (
    ApiKey,
    Channel,
    EmailRecipient,
    Membership,
    Monitor,
    MonitorChannel,
    Target,
    Team,
)
from teams.activity import SYSTEM, record
from teams.models import Activity

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
CHECKS = 3
PAGES = 30


def admin_url(model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def with_history(team: Team, name: str = "Pricing page") -> Monitor:
    """A monitor with CHECKS checks of PAGES page results each, their
    deliveries and attempts, screenshots linked to pages, a crawl, a search,
    baselines, its own webhook channel and a team channel it is linked to."""
    monitor = Monitor.objects.create(
        team=team,
        name=name,
        schedule_cron="*/30 * * * *",
        schedule_timezone="UTC",
        next_run_at=NOW,
    )
    target = Target.objects.create(
        monitor=monitor, type=Target.Type.SCRAPE, urls=["https://example.com/"]
    )
    EmailRecipient.objects.create(
        monitor=monitor,
        email="ops@example.com",
        status=EmailRecipient.Status.CONFIRMED,
        source=EmailRecipient.Source.OPT_IN,
    )
    own = Channel.objects.create(
        team=team, owner_monitor=monitor, name="own", kind="webhook", settings={}
    )
    shared, _ = Channel.objects.get_or_create(
        team=team, owner_monitor=None, name="Ops", kind="webhook", settings={}
    )
    MonitorChannel.objects.create(monitor=monitor, channel=shared)
    capture, _ = Capture.objects.get_or_create(
        content_hash="c" * 64,
        defaults={"media_type": "image/png", "data": b"x", "size": 1},
    )
    for n in range(CHECKS):
        check = Check.objects.create(
            monitor=monitor,
            status=Check.Status.COMPLETED,
            trigger=Check.Trigger.SCHEDULED,
            scheduled_for=NOW - timedelta(hours=n),
            estimated_credits=PAGES,
        )
        pages = PageResult.objects.bulk_create(
            PageResult(
                check_run=check,
                target_id=target.id,
                url=f"https://example.com/p{page}",
                status=PageResult.Status.SAME,
            )
            for page in range(PAGES)
        )
        pages[0].captures.add(capture)
        CheckBatch.objects.create(check_run=check, number=0)
        crawl = Crawl.objects.create(check_run=check, target_id=target.id)
        CrawlPage.objects.create(crawl=crawl, key="p0", url="https://example.com/p0")
        SearchRun.objects.create(check_run=check, target_id=target.id, provider="x")
        for channel in (own, shared):
            delivery = Delivery.objects.create(
                kind="webhook",
                channel=channel,
                monitor=monitor,
                check_run=check,
                event="monitor.check.completed",
                body="{}",
            )
            DeliveryAttempt.objects.create(delivery=delivery, number=1, started_at=NOW)
    # A test message belongs to the monitor, to no check.
    Delivery.objects.create(
        kind="webhook", channel=own, monitor=monitor, event="monitor.test"
    )
    PageState.objects.create(
        monitor=monitor,
        target_id=target.id,
        url="https://example.com/p0",
        url_hash=PageState.hash_url("https://example.com/p0"),
        fetched_at=NOW,
    )
    record(SYSTEM, team, Activity.Kind.MONITOR_PAUSED, monitor)
    return monitor


def history_read(loaded: Counter[type]) -> dict[str, int]:
    """The page results, deliveries and their attempts read into Python."""
    history = (PageResult, PageResult.captures.through, Delivery, DeliveryAttempt)
    return {model.__name__: loaded[model] for model in history if loaded[model]}


def listed(page: str) -> dict[str, int]:
    """The confirmation page's summary, "Page results: 90" → {"Page results": 90}."""
    return {
        name: int(count)
        for name, count in re.findall(r"<li>([A-Za-z -]+): (\d+)</li>", page)
    }


@pytest.fixture
def big(team, admin_user) -> Monitor:
    Membership.objects.create(team=team, user=admin_user, role=Membership.Role.OWNER)
    return with_history(team)


def test_a_monitors_deletion_is_confirmed_in_counts_without_reading_its_history(
    admin_client, big, loaded
):
    loaded.clear()
    page = admin_client.get(admin_url(Monitor, "delete", big.pk)).content.decode()

    summary = listed(page)
    assert summary["Monitors"] == 1
    assert summary["Checks"] == CHECKS
    assert summary["Page results"] == CHECKS * PAGES
    assert summary["Deliveries"] == CHECKS * 2 + 1
    assert "permission" not in page.lower()
    assert history_read(loaded) == {}


def test_deleting_a_monitor_takes_its_history_without_reading_it(
    admin_client, big, loaded
):
    other = with_history(big.team, name="Other")

    loaded.clear()
    response = admin_client.post(admin_url(Monitor, "delete", big.pk), {"post": "yes"})

    assert response.status_code == 302
    assert history_read(loaded) == {}
    assert not Monitor.objects.filter(pk=big.pk).exists()
    assert_history_gone(monitors=[big])
    assert_history_kept(other)
    # What the monitor did stays in the team's log, with its deletion.
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_DELETED)
    assert (entry.monitor_id, entry.monitor_name, entry.via) == (
        None,
        "Pricing page",
        "admin",
    )
    assert Activity.objects.filter(kind=Activity.Kind.MONITOR_PAUSED).count() == 2
    assert LogEntry.objects.filter(
        action_flag=DELETION, object_id=str(big.pk), object_repr="Pricing page"
    ).exists()
    assert Capture.objects.exists()  # shared; retention purges the unused


def test_deleting_selected_monitors_takes_their_history_and_logs_each(
    admin_client, big, loaded
):
    second = with_history(big.team, name="Second")
    kept = with_history(big.team, name="Kept")
    changelist = admin_url(Monitor, "changelist")
    form = {"action": "delete_selected", "_selected_action": [big.pk, second.pk]}

    asked = admin_client.post(changelist, form).content.decode()
    assert listed(asked)["Page results"] == 2 * CHECKS * PAGES
    loaded.clear()
    response = admin_client.post(changelist, form | {"post": "yes"})

    assert response.status_code == 302
    assert history_read(loaded) == {}
    assert list(Monitor.objects.values_list("name", flat=True)) == ["Kept"]
    assert_history_gone(monitors=[big, second])
    assert_history_kept(kept)
    deleted = Activity.objects.filter(kind=Activity.Kind.MONITOR_DELETED)
    assert sorted(deleted.values_list("monitor_name", flat=True)) == [
        "Pricing page",
        "Second",
    ]
    assert LogEntry.objects.filter(action_flag=DELETION).count() == 2


def test_deleting_a_team_takes_its_monitors_histories_without_reading_them(
    admin_client, big, other_team, loaded
):
    with_history(big.team, name="Second")
    kept = with_history(other_team, name="Other team's")
    ApiKey.issue(big.team, name="ci")
    url = admin_url(Team, "delete", big.team.pk)

    loaded.clear()
    asked = admin_client.get(url).content.decode()
    read_asking = history_read(loaded)
    loaded.clear()
    response = admin_client.post(url, {"post": "yes"})

    summary = listed(asked)
    assert (summary["Monitors"], summary["Page results"]) == (2, 2 * CHECKS * PAGES)
    assert summary["API keys"] == 1
    assert "permission" not in asked.lower()
    assert read_asking == {}
    assert response.status_code == 302
    assert history_read(loaded) == {}
    assert list(Team.objects.all()) == [other_team]
    assert not Monitor.objects.filter(team=big.team.pk).exists()
    assert not ApiKey.objects.filter(team=big.team.pk).exists()
    assert not Channel.objects.filter(team=big.team.pk).exists()
    assert_history_kept(kept)
    assert PageResult.objects.count() == CHECKS * PAGES
    assert LogEntry.objects.filter(
        action_flag=DELETION, object_id=str(big.team.pk)
    ).exists()


def test_deleting_a_check_takes_its_pages_without_reading_them(
    admin_client, big, loaded
):
    check = big.checks.first()
    url = admin_url(Check, "delete", check.pk)

    loaded.clear()
    asked = admin_client.get(url).content.decode()
    read_asking = history_read(loaded)
    loaded.clear()
    admin_client.post(url, {"post": "yes"})

    assert listed(asked)["Page results"] == PAGES
    assert read_asking == {}
    assert history_read(loaded) == {}
    assert not Check.objects.filter(pk=check.pk).exists()
    assert not PageResult.objects.filter(check_run=check.pk).exists()
    assert not Delivery.objects.filter(check_run=check.pk).exists()
    assert PageResult.objects.count() == (CHECKS - 1) * PAGES


def test_deleting_a_channel_takes_its_deliveries_and_leaves_the_monitors(
    admin_client, big, loaded
):
    shared = Channel.objects.get(owner_monitor=None)
    url = admin_url(Channel, "delete", shared.pk)

    loaded.clear()
    asked = admin_client.get(url).content.decode()
    read_asking = history_read(loaded)
    loaded.clear()
    admin_client.post(url, {"post": "yes"})

    assert listed(asked)["Deliveries"] == CHECKS
    assert read_asking == {}
    assert history_read(loaded) == {}
    assert not Channel.objects.filter(pk=shared.pk).exists()
    assert not Delivery.objects.filter(channel=shared.pk).exists()
    assert Delivery.objects.filter(monitor=big).count() == CHECKS + 1
    assert not MonitorChannel.objects.exists()
    assert Monitor.objects.filter(pk=big.pk).exists()


def assert_history_gone(monitors: list[Monitor]) -> None:
    ids = [monitor.pk for monitor in monitors]
    assert not Check.objects.filter(monitor__in=ids).exists()
    assert not PageResult.objects.filter(check_run__monitor__in=ids).exists()
    assert not PageResult.captures.through.objects.filter(
        pageresult__check_run__monitor__in=ids
    ).exists()
    assert not Delivery.objects.filter(monitor__in=ids).exists()
    assert not DeliveryAttempt.objects.filter(delivery__monitor__in=ids).exists()
    assert not CheckBatch.objects.filter(check_run__monitor__in=ids).exists()
    assert not Crawl.objects.filter(check_run__monitor__in=ids).exists()
    assert not SearchRun.objects.filter(check_run__monitor__in=ids).exists()
    assert not PageState.objects.filter(monitor__in=ids).exists()
    assert not Target.objects.filter(monitor__in=ids).exists()
    assert not EmailRecipient.objects.filter(monitor__in=ids).exists()
    assert not Channel.objects.filter(owner_monitor__in=ids).exists()
    assert not MonitorChannel.objects.filter(monitor__in=ids).exists()


def assert_history_kept(monitor: Monitor) -> None:
    assert Check.objects.filter(monitor=monitor).count() == CHECKS
    pages = PageResult.objects.filter(check_run__monitor=monitor)
    assert pages.count() == CHECKS * PAGES
    assert (
        PageResult.captures.through.objects.filter(
            pageresult__check_run__monitor=monitor
        ).count()
        == CHECKS
    )
    assert Delivery.objects.filter(monitor=monitor).count() == CHECKS * 2 + 1
    assert DeliveryAttempt.objects.filter(delivery__monitor=monitor).count() == (
        CHECKS * 2
    )
    assert PageState.objects.filter(monitor=monitor).exists()
    assert MonitorChannel.objects.filter(monitor=monitor).exists()


FOR_GOOD = (
    "This deletes for good, with their whole history: checks, what they "
    "found, copies of pages and messages sent. It cannot be undone."
)


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_the_admin_says_a_monitor_goes_for_good_and_the_teams_log_says_so_too(
    admin_client, big, how
):
    if how == "delete page":
        url, form = admin_url(Monitor, "delete", big.pk), {"post": "yes"}
        asked = admin_client.get(url)
    else:
        url = admin_url(Monitor, "changelist")
        form = {"action": "delete_selected", "_selected_action": [big.pk]}
        asked = admin_client.post(url, form)
        form |= {"post": "yes"}

    said = html.unescape(asked.content.decode())
    # What the dashboard and the API do instead, so nobody picks this for it.
    assert FOR_GOOD in said
    assert "the dashboard and the API keep a deleted monitor's history" in said

    assert admin_client.post(url, form).status_code == 302
    assert not Monitor.objects.filter(pk=big.pk).exists()
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_DELETED)
    assert (entry.team_id, entry.via, entry.monitor_name, entry.monitor_id) == (
        big.team_id,
        "admin",
        "Pricing page",
        None,
    )
    assert entry.sentence == (
        "Deleted for good with its history by admin (administration)"
    )
    page = html.unescape(admin_client.get(reverse("team-activity")).content.decode())
    assert "Deleted for good with its history" in page


def test_a_monitor_deleted_on_the_dashboard_keeps_its_history_and_says_deleted(
    admin_client, big
):
    admin_client.post(reverse("monitor-delete", args=[big.pk]))

    big.refresh_from_db()
    assert big.deleted_at is not None and Check.objects.filter(monitor=big).exists()
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_DELETED)
    assert entry.what_words == "Deleted"


@pytest.mark.parametrize("model", [Monitor, Channel])
def test_a_deletion_that_fails_leaves_no_entry_in_the_teams_log(
    admin_client, big, monkeypatch, model
):
    from monitors.admin import channels as channel_admin
    from monitors.admin import monitors as monitor_admin

    def failed(*_: object, **__: object) -> None:
        raise RuntimeError("the database went away mid-deletion")

    if model is Monitor:
        chosen, kind = big, Activity.Kind.MONITOR_DELETED
        monkeypatch.setattr(monitor_admin, "delete_monitors", failed)
    else:
        chosen, kind = (
            Channel.objects.get(owner_monitor=None),
            Activity.Kind.CHANNEL_DELETED,
        )
        monkeypatch.setattr(channel_admin, "delete_channels", failed)
    url = admin_url(model, "changelist")
    form = {"action": "delete_selected", "_selected_action": [chosen.pk], "post": "yes"}

    with pytest.raises(RuntimeError):
        admin_client.post(url, form)

    assert model.objects.filter(pk=chosen.pk).exists()
    assert not Activity.objects.filter(kind=kind).exists()


@pytest.fixture
def pages_fail_at_third_batch(monkeypatch) -> None:
    """Deleting 20 page results a transaction, the third transaction fails
    (the database going away, say)."""
    from checks import deleting

    queryset = type(PageResult.objects.all())
    real = queryset.discard
    calls = []

    def discard(self):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("the database went away mid-deletion")
        return real(self)

    monkeypatch.setattr(deleting, "BATCH_SIZE", 20)
    monkeypatch.setattr(queryset, "discard", discard)


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_a_monitors_history_goes_in_batches_before_the_monitor_and_its_entry(
    admin_client, big, pages_fail_at_third_batch, how
):
    """A monitor with 100,000 page results held its locks in one huge
    transaction. Its history now goes a batch a transaction first: a delete
    that fails part way leaves the monitor whole and unlogged, less the
    batches already gone, and deleting it again takes the rest."""
    if how == "delete page":
        url, form = admin_url(Monitor, "delete", big.pk), {"post": "yes"}
    else:
        url = admin_url(Monitor, "changelist")
        form = {"action": "delete_selected", "_selected_action": [big.pk]}
        form |= {"post": "yes"}

    with pytest.raises(RuntimeError):
        admin_client.post(url, form)

    assert Monitor.objects.filter(pk=big.pk).exists()
    assert not Activity.objects.filter(kind=Activity.Kind.MONITOR_DELETED).exists()
    pages = PageResult.objects.filter(check_run__monitor=big)
    assert pages.count() == CHECKS * PAGES - 2 * 20
    assert Check.objects.filter(monitor=big).count() == CHECKS

    assert admin_client.post(url, form).status_code == 302
    assert not Monitor.objects.filter(pk=big.pk).exists()
    assert_history_gone(monitors=[big])
    entry = Activity.objects.get(kind=Activity.Kind.MONITOR_DELETED)
    assert (entry.monitor_name, entry.via) == ("Pricing page", "admin")


def test_a_delete_the_admin_refuses_takes_none_of_the_monitors_history(
    client, big, django_user_model
):
    """Staff who may delete monitors but not the checks that go with them
    are refused: the batches that go before the delete do not go either."""
    from django.contrib.auth.models import Permission

    clerk = django_user_model.objects.create_user("cleo", is_staff=True)
    clerk.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_monitor", "delete_monitor"])
    )
    client.force_login(clerk)

    response = client.post(admin_url(Monitor, "delete", big.pk), {"post": "yes"})

    assert response.status_code == 403
    assert Monitor.objects.filter(pk=big.pk).exists()
    assert_history_kept(big)


@pytest.fixture
def page_batches(monkeypatch) -> list[int]:
    """How many page results each transaction deleted, 20 a transaction."""
    from checks import deleting

    queryset = type(PageResult.objects.all())
    real = queryset.discard
    sizes: list[int] = []

    def discard(self):
        sizes.append(self.count())
        return real(self)

    monkeypatch.setattr(deleting, "BATCH_SIZE", 20)
    monkeypatch.setattr(queryset, "discard", discard)
    return sizes


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_a_teams_monitors_histories_go_in_batches_before_the_team(
    admin_client, big, page_batches, how
):
    """A team's delete took every monitor's history in one transaction, its
    locks held for the whole of it; it now goes as a monitor's does, a batch
    a transaction, before the team."""
    with_history(big.team, name="Second")
    if how == "delete page":
        url, form = admin_url(Team, "delete", big.team.pk), {"post": "yes"}
    else:
        url = admin_url(Team, "changelist")
        form = {"action": "delete_selected", "_selected_action": [big.team.pk]}
        form |= {"post": "yes"}

    assert admin_client.post(url, form).status_code == 302

    # The team's own transaction finds none left (its discard of the checks).
    assert [size for size in page_batches if size] == [20] * (2 * CHECKS * PAGES // 20)
    assert not Team.objects.filter(pk=big.team.pk).exists()
    assert_history_gone(monitors=[big])


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_a_team_delete_that_fails_part_way_leaves_the_team_and_deleting_again_ends_it(
    admin_client, big, pages_fail_at_third_batch, how
):
    if how == "delete page":
        url, form = admin_url(Team, "delete", big.team.pk), {"post": "yes"}
    else:
        url = admin_url(Team, "changelist")
        form = {"action": "delete_selected", "_selected_action": [big.team.pk]}
        form |= {"post": "yes"}

    with pytest.raises(RuntimeError):
        admin_client.post(url, form)

    assert Team.objects.filter(pk=big.team.pk).exists()
    assert Monitor.objects.filter(pk=big.pk).exists()
    pages = PageResult.objects.filter(check_run__monitor=big)
    assert pages.count() == CHECKS * PAGES - 2 * 20

    assert admin_client.post(url, form).status_code == 302
    assert not Team.objects.filter(pk=big.team.pk).exists()
    assert_history_gone(monitors=[big])


@pytest.mark.parametrize("how", ["delete page", "bulk action"])
def test_a_team_delete_that_fails_part_way_marks_its_storage_figure_stale(
    admin_client,
    big,
    pages_fail_at_third_batch,
    how,
    django_capture_on_commit_callbacks,
):
    """The batches that went are gone for good: the team's figure counts
    them until it is measured again."""
    from checks import storage

    measured = storage.team_usage(big.team)
    assert not storage.measured_usage([big.team.pk])[big.team.pk].stale
    if how == "delete page":
        url, form = admin_url(Team, "delete", big.team.pk), {"post": "yes"}
    else:
        url = admin_url(Team, "changelist")
        form = {"action": "delete_selected", "_selected_action": [big.team.pk]}
        form |= {"post": "yes"}

    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        admin_client.post(url, form)

    stale = storage.measured_usage([big.team.pk])[big.team.pk]
    assert (stale.total, stale.stale) == (measured.total, True)
    assert storage.team_usage(big.team).total < measured.total
