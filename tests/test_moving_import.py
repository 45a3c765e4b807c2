"""Importing planned monitors: what is created, paused, skipped as a
duplicate, and the baselines that make the first check compare."""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from django.db import DatabaseError
from django.utils import timezone

from checks import runner
from checks.models import Check, PageState
from monitors import moving, schedule
from monitors.models import Channel, ImportRun, Monitor, Target
from monitors.moving import importing, plan
from monitors.tasks import import_monitors_task
from teams.models import Activity
from tests.moving import PRICING_UUID, backup_files, backup_zip, fixture, zip_files

pytestmark = pytest.mark.django_db


def prepared(team, source: str, data: bytes, filename: str = ""):
    return plan.prepare(team, moving.read(source, data=data, filename=filename))


def test_importing_a_backup_creates_its_monitors_and_lists_the_rest(team):
    items = prepared(team, "changedetection", backup_zip())
    report = importing.run_import(team, items, timezone.now())
    assert report.created == 2
    assert report.count("not imported") == 2
    pricing = Monitor.objects.get(team=team, name="Pricing")
    assert pricing.tag_names == ["Shop"]
    assert pricing.fetch_with == "browser"
    assert pricing.schedule_cron == "1-59/5 * * * *"
    assert pricing.run_interval_minutes == 5
    assert pricing.next_run_at is not None
    widget = Monitor.objects.get(team=team, name="Widget stock")
    assert widget.status == Monitor.Status.PAUSED and widget.next_run_at is None


def test_the_last_snapshot_is_stored_as_the_pages_baseline(team):
    items = prepared(team, "changedetection", backup_zip())
    importing.run_import(team, items, timezone.now())
    pricing = Monitor.objects.get(team=team, name="Pricing")
    state = PageState.objects.get(monitor=pricing)
    assert state.has_baseline
    assert state.url == "https://shop.example.com/pricing"
    assert state.target_id == pricing.targets.get().id
    assert state.snapshot.text == "Pricing\nBasic plan 12 EUR\nPro plan 24 EUR\n"
    assert state.metadata == {"importedFrom": PRICING_UUID}


def _backup_of(url: str, snapshot: str) -> bytes:
    uuid = "11111111-2222-4333-8444-555555555555"
    datastore = json.dumps(
        {"settings": {}, "watching": {uuid: {"url": url, "title": "Plans"}}}
    )
    return zip_files(
        {
            "changedetection.json": datastore.encode(),
            f"{uuid}/history.txt": b"1700000000,abc.txt\n",
            f"{uuid}/abc.txt": snapshot.encode(),
        }
    )


def _check(monitor: Monitor) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return runner.run(check)


def test_the_first_check_after_an_import_compares_with_the_snapshot(
    team, site, settings
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    site.page("/plans", "<p>Basic plan 12 EUR</p>")
    url = site.url("/plans")
    items = prepared(team, "changedetection", _backup_of(url, "Basic plan 12 EUR\n"))
    importing.run_import(team, items, timezone.now())
    monitor = Monitor.objects.get(team=team)
    assert _check(monitor).pages.get().status == "same"
    site.page("/plans", "<p>Basic plan 15 EUR</p>")
    assert _check(monitor).pages.get().status == "changed"


def test_a_page_without_a_snapshot_is_new_on_its_first_check(team, site, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    site.page("/plans", "<p>Basic plan 12 EUR</p>")
    items = prepared(team, "csv", site.url("/plans").encode())
    importing.run_import(team, items, timezone.now())
    assert _check(Monitor.objects.get(team=team)).pages.get().status == "new"


def test_addresses_the_team_watches_are_duplicates_skipped_unless_chosen(team):
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(
        monitor=existing, type="scrape", urls=["https://shop.example.com/pricing"]
    )
    items = prepared(team, "changedetection", backup_zip())
    duplicate = next(i for i in items if i.ref == PRICING_UUID)
    assert duplicate.duplicate
    report = importing.run_import(team, items, timezone.now())
    assert report.count("duplicate") == 1
    assert Monitor.objects.filter(team=team).count() == 2
    again = prepared(team, "changedetection", backup_zip())
    importing.run_import(team, again, timezone.now(), include_duplicates={PRICING_UUID})
    assert Monitor.objects.filter(team=team, name="Pricing").count() == 1


def test_the_same_address_twice_in_one_source_is_a_duplicate_the_second_time(team):
    items = prepared(team, "csv", b"https://a.example/\nhttps://a.example/\n")
    assert [i.duplicate for i in items] == [False, True]


def test_a_monitor_that_fails_to_save_leaves_nothing_half_made(team, monkeypatch):
    items = prepared(team, "changedetection", backup_zip())
    real = importing.create_monitors

    def failing(team_, batch, now, by=""):
        monitors = real(team_, batch, now, by)
        if any(data["name"] == "Pricing" for data in batch):
            raise DatabaseError("disk full")
        return monitors

    monkeypatch.setattr(importing, "create_monitors", failing)
    report = importing.run_import(team, items, timezone.now())
    assert report.count("failed") == 1 and report.created == 1
    (failed,) = [o for o in report.outcomes if o.result == "failed"]
    assert failed.error == importing.NOT_SAVED and "disk full" not in failed.error
    assert list(Monitor.objects.filter(team=team).values_list("name", flat=True)) == [
        "Widget stock"
    ]
    assert Target.objects.filter(monitor__team=team).count() == 1
    assert PageState.objects.filter(monitor__team=team).count() == 1


def test_a_large_import_runs_as_a_task_with_progress(
    team, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(importing, "INLINE_MAX", 1)
    sent = []
    monkeypatch.setattr(
        importing.current_app, "send_task", lambda name, args: sent.append(args)
    )
    items = prepared(team, "changedetection", backup_zip())
    run = importing.preview_run(team, "changedetection", items)
    with django_capture_on_commit_callbacks(execute=True):
        run = importing.start_run(run, [], timezone.now())
    assert run.status == ImportRun.Status.QUEUED
    assert sent == [[str(run.pk)]]
    assert Monitor.objects.filter(team=team).count() == 0
    import_monitors_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE
    assert run.done == run.total == 4
    assert run.report["created"] == 2
    assert Monitor.objects.filter(team=team).count() == 2
    import_monitors_task(str(run.pk))  # a second delivery does nothing
    assert Monitor.objects.filter(team=team).count() == 2


def test_an_import_whose_worker_was_lost_is_finished_when_its_message_comes_back(
    team, monkeypatch, django_capture_on_commit_callbacks
):
    """Ctrl-C past the worker's wait, or the out-of-memory killer, mid-import:
    the run said "running" for ever, and the message Celery handed out again
    found it not queued and did nothing."""
    monkeypatch.setattr(importing, "INLINE_MAX", 1)
    monkeypatch.setattr(importing.current_app, "send_task", lambda name, args: None)
    items = prepared(team, "changedetection", backup_zip())
    run = importing.preview_run(team, "changedetection", items)
    with django_capture_on_commit_callbacks(execute=True):
        run = importing.start_run(run, [], timezone.now())
    assert run.claim()  # the worker that was then killed

    import_monitors_task(str(run.pk))  # a copy while it ran: nothing to do
    run.refresh_from_db()
    assert run.status == ImportRun.Status.RUNNING
    import_monitors_task.push_request(delivery_info={"redelivered": True})
    try:
        import_monitors_task.run(str(run.pk))
    finally:
        import_monitors_task.pop_request()

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE
    assert run.report["created"] == 2
    assert Monitor.objects.filter(team=team).count() == 2


def test_a_preview_is_imported_once_however_often_it_is_confirmed(team):
    items = prepared(team, "csv", fixture("addresses.txt"))
    run = importing.preview_run(team, "csv", items)
    importing.start_run(run, [], timezone.now())
    importing.start_run(run, [], timezone.now())
    assert Monitor.objects.filter(team=team).count() == 2


def test_files_of_other_layouts_still_import_their_watches(team):
    # A backup whose datastore is url-watches.json inside a folder of its own.
    files = {f"backup/{k}": v for k, v in backup_files().items()}
    files["backup/url-watches.json"] = files.pop("backup/changedetection.json")
    items = prepared(team, "changedetection", zip_files(files))
    assert sum(i.importable for i in items) == 2
    assert next(i for i in items if i.ref == PRICING_UUID).baselines


def test_old_import_runs_are_purged_but_not_running_ones_or_the_monitors(team):
    from datetime import timedelta

    from checks import retention

    items = prepared(team, "csv", fixture("addresses.txt"))
    done = importing.preview_run(team, "csv", items)
    importing.start_run(done, [], timezone.now())
    running = importing.preview_run(team, "csv", items)
    ImportRun.objects.filter(pk=running.pk).update(status=ImportRun.Status.RUNNING)
    fresh = importing.preview_run(team, "csv", items)
    old = timezone.now() - timedelta(days=8)
    ImportRun.objects.exclude(pk=fresh.pk).update(created_at=old)
    retention.purge_expired(timezone.now())
    assert set(ImportRun.objects.values_list("pk", flat=True)) == {
        running.pk,
        fresh.pk,
    }
    assert Monitor.objects.filter(team=team).count() == 2


def test_a_preview_is_shown_again_as_judged_and_judged_afresh_on_import(team):
    items = prepared(team, "changedetection", backup_zip())
    run = importing.preview_run(team, "changedetection", items)
    shown = importing.previewed_items(run)
    assert [i.importable for i in shown] == [i.importable for i in items]
    assert [i.validated for i in shown] == [i.validated for i in items]
    # A monitor of the same address made meanwhile makes it a duplicate now.
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(
        monitor=existing, type="scrape", urls=["https://shop.example.com/pricing"]
    )
    judged = importing.planned_items(run)
    assert next(i for i in judged if i.ref == PRICING_UUID).duplicate


def test_an_import_that_breaks_ends_failed_and_the_worker_goes_on(
    team, monkeypatch, caplog
):
    items = prepared(team, "csv", fixture("addresses.txt"))
    run = importing.preview_run(team, "csv", items)
    ImportRun.objects.filter(pk=run.pk).update(status=ImportRun.Status.QUEUED)

    def broken(run_, now):
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(importing, "execute_run", broken)
    import_monitors_task(str(run.pk))  # returns: nothing escapes to the worker
    run.refresh_from_db()
    assert run.status == ImportRun.Status.FAILED
    # The person is told in words; the exception goes to the log.
    assert run.error == (
        f"The import stopped after 0 of {run.total} watches because of an error "
        "in Pagewatch (its log has the details)."
    )
    assert "something unforeseen" in caplog.text


def _secret_run(team):
    """A previewed run whose watches notify an Apprise URL (a secret): one
    imported, one a duplicate left out."""
    telegram = "tgram://123456789:AAEbcdefghijklmnop/-100123"
    watching = {
        ref: {"url": "https://a.example.com/", "notification_urls": [telegram]}
        for ref in ("one", "two")
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    items = prepared(team, "changedetection", data, "url-watches.json")
    assert items[1].duplicate
    return importing.preview_run(team, "changedetection", items)


def test_a_finished_import_keeps_no_notification_url(team):
    run = _secret_run(team)
    assert "AAEb" in json.dumps(run.items)

    run = importing.start_run(run, [], timezone.now())

    run.refresh_from_db()
    assert run.status == ImportRun.Status.DONE
    assert "AAEb" not in json.dumps(run.items)
    assert [s["channels"] for s in run.items] == [
        [{"name": "Telegram (imported)", "new": True}]
    ] * 2
    assert "AAEb" not in json.dumps(run.report)
    assert run.report["items"][0]["channels"] == ["Telegram (imported)"]


def test_a_failed_import_keeps_no_notification_url(team, monkeypatch):
    run = _secret_run(team)
    ImportRun.objects.filter(pk=run.pk).update(status=ImportRun.Status.QUEUED)

    def broken(run_, now):
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(importing, "execute_run", broken)
    import_monitors_task(str(run.pk))

    run.refresh_from_db()
    assert run.status == ImportRun.Status.FAILED
    assert "AAEb" not in json.dumps(run.items)


def test_the_activity_log_says_a_monitor_was_imported_and_from_where(team):
    from teams.models import Activity

    run = importing.preview_run(
        team, "csv", prepared(team, "csv", b"https://a.test/p\n"), None
    )
    importing.start_run(run, [], timezone.now())

    entry = Activity.objects.get(team=team, kind=Activity.Kind.MONITOR_CREATED)
    assert entry.what_words == "Imported from a list of addresses"


# --- spread per team, duplicates however the address is written --------------------


def _every_three_hours(count: int) -> bytes:
    watching = {
        f"uuid-{n}": {
            "url": f"https://site{n}.example.com/page",
            "time_between_check": {"hours": 3},
            "time_between_check_use_default": False,
        }
        for n in range(count)
    }
    return json.dumps({"watching": watching, "settings": {}}).encode()


def crons_of(items) -> list[str]:
    return [item.validated["schedule"]["cron"] for item in items]


def test_two_teams_importing_the_same_list_run_it_at_different_minutes(
    team, other_team
):
    data = _every_three_hours(60)
    ours = crons_of(prepared(team, "changedetection", data, "url-watches.json"))
    theirs = crons_of(prepared(other_team, "changedetection", data, "url-watches.json"))

    # 60 watches over the 180 minutes of the gap: by chance a few share one.
    assert sum(a == b for a, b in zip(ours, theirs, strict=True)) <= 5
    # Each team's own import again keeps its schedules.
    again = crons_of(prepared(team, "changedetection", data, "url-watches.json"))
    assert again == ours


def test_an_address_written_another_way_is_a_duplicate_of_one_the_team_watches(team):
    first = prepared(team, "csv", b"http://Example.com/pricing\n")
    importing.run_import(team, first, timezone.now())

    items = prepared(
        team,
        "csv",
        b"http://example.com/pricing\n"
        b"HTTP://EXAMPLE.COM:80/pricing#plans\n"
        b"http://example.com/Pricing\n"
        b"https://example.com/pricing\n",
    )

    assert [i.duplicate for i in items] == [True, True, False, False]


def test_the_same_address_written_two_ways_in_one_source_is_a_duplicate(team):
    items = prepared(team, "csv", b"http://Example.com/\nhttp://example.com\n")

    first, second = items
    assert not first.duplicate
    assert second.duplicate and second.same_address_as == "http://Example.com/"


def _notifying(urls_by_watch: dict[str, list[str]]) -> bytes:
    watching = {
        ref: {"url": f"https://{ref}.example.com/", "notification_urls": urls}
        for ref, urls in urls_by_watch.items()
    }
    return json.dumps({"watching": watching, "settings": {}}).encode()


def test_notification_urls_become_channels_the_monitors_send_to(team):
    telegram = "tgram://123456789:AAEbcdefghijklmnop/-100123"
    data = _notifying(
        {
            "one": [telegram, "mailtos://me:secret@mail.example.com"],
            "two": [telegram, "tgram:123456789:AAEsecretsecret"],
        }
    )
    items = prepared(team, "changedetection", data, "url-watches.json")
    report = importing.run_import(team, items, timezone.now())
    assert report.created == 2
    (channel,) = Channel.objects.filter(team=team)
    assert (channel.kind, channel.name) == ("apprise", "Telegram (imported)")
    assert channel.settings["url"] == telegram
    assert {m.name for m in channel.monitors.all()} == {
        "https://one.example.com/",
        "https://two.example.com/",
    }
    (refused,) = [n for n in items[0].notes if "notification URL" in n]
    assert refused.startswith("A notification URL (mailtos://…) not imported: ")
    assert "secret" not in refused
    assert refused.endswith(
        "For e-mail, add the addresses in the monitor's e-mail settings, or use "
        "an “E-mail to team members” channel on the Channels page."
    )
    (malformed,) = [n for n in items[1].notes if "notification URL" in n]
    assert malformed.startswith("A notification URL not imported: Not an Apprise URL")
    assert "secret" not in malformed and "123456789" not in malformed
    logged = Activity.objects.filter(team=team, kind=Activity.Kind.CHANNEL_CREATED)
    assert [a.details["name"] for a in logged] == ["Telegram (imported)"]


def test_a_notification_url_the_team_has_a_channel_for_is_that_channel(team):
    telegram = "tgram://123456789:AAEbcdefghijklmnop/-100123"
    ops = Channel.objects.create(
        team=team, name="Ops chat", kind="apprise", settings={"url": telegram}
    )
    items = prepared(
        team, "changedetection", _notifying({"one": [telegram]}), "url-watches.json"
    )
    assert items[0].channels == [{"url": telegram, "name": "Ops chat", "new": False}]
    importing.run_import(team, items, timezone.now())
    assert Channel.objects.filter(team=team).count() == 1
    assert list(Monitor.objects.get(team=team).channels.all()) == [ops]


def test_a_watch_with_more_notification_urls_than_a_monitor_takes_keeps_the_first(
    team,
):
    urls = [f"tgram://123456789:AAEbcdefghijklmnop/-100{n}" for n in range(53)]
    items = prepared(
        team, "changedetection", _notifying({"one": urls}), "url-watches.json"
    )
    (item,) = items
    assert [c["url"] for c in item.channels] == urls[:50]
    assert (
        "3 notification URLs not imported: a monitor sends to at most 50 channels."
        in item.notes
    )

    importing.run_import(team, items, timezone.now())

    monitor = Monitor.objects.get(team=team)
    assert monitor.channels.count() == 50


def test_a_channel_refused_when_the_import_runs_is_said_not_reported_made(
    team, monkeypatch
):
    telegram = "tgram://123456789:AAEbcdefghijklmnop/-100123"
    items = prepared(
        team, "changedetection", _notifying({"one": [telegram]}), "url-watches.json"
    )
    assert items[0].as_dict()["channels"] == ["Telegram (imported)"]
    # The rules changed between the preview and the import.
    real = importing.ChannelInputSerializer.is_valid
    monkeypatch.setattr(
        importing.ChannelInputSerializer, "is_valid", lambda self, **kw: False
    )

    report = importing.run_import(team, items, timezone.now())

    monkeypatch.setattr(importing.ChannelInputSerializer, "is_valid", real)
    assert report.created == 1
    assert not Channel.objects.filter(team=team).exists()
    (outcome,) = report.as_dict()["items"]
    assert outcome["channels"] == []
    assert any(
        n.startswith("Its channel “Telegram (imported)” was not made")
        for n in outcome["notes"]
    )
    assert "AAEb" not in json.dumps(report.as_dict())


def _backup_of_watches(count: int, hours: int) -> bytes:
    """A backup of `count` watches of different addresses, each checked every
    `hours` hours, so their schedules are spread over that gap."""
    every = {"weeks": None, "days": None, "hours": hours, "minutes": None}
    watching = {
        f"{n:08d}-2222-4333-8444-555555555555": {
            "url": f"https://site{n}.example.com/page",
            "title": f"Page {n}",
            "time_between_check_use_default": False,
            "time_between_check": every | {"seconds": None},
        }
        for n in range(count)
    }
    datastore = {"settings": {}, "watching": watching}
    return zip_files({"changedetection.json": json.dumps(datastore).encode()})


def test_a_large_preview_walks_each_schedule_once_however_many_watches_share_it(
    team, monkeypatch
):
    """Every 12 hours spreads over 720 places, more than the schedule check
    remembers: in the file's order most would be walked again. (The clock
    stands still: a schedule is walked again in the next minute.)"""
    walked = []
    real = schedule._runs
    monkeypatch.setattr(
        schedule, "_runs", lambda s, moment: walked.append(s) or real(s, moment)
    )
    schedule._check_runs.cache_clear()
    data = _backup_of_watches(1000, hours=12)
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC), tick=False):
        items = prepared(team, "changedetection", data)
    assert all(item.importable for item in items)
    distinct = {tuple(item.validated["schedule"].values()) for item in items}
    assert len(distinct) > 256
    assert len(walked) == len(distinct)


def test_a_preview_judges_every_watch_with_one_serializer(team, monkeypatch):
    built = []

    class Counted(plan.MonitorWriteSerializer):
        def __init__(self, *args, **kwargs):
            built.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(plan, "MonitorWriteSerializer", Counted)
    items = prepared(team, "changedetection", _backup_of_watches(50, hours=3))
    assert sum(item.importable for item in items) == 50
    assert len(built) == 1


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def test_the_importer_and_exporter_import_nothing_of_the_api():
    """They judge and write bodies with monitors.wire, as the API does; the API
    calls them, so an import back would tie the two doors in a loop."""
    package = Path(moving.__file__).parent
    reaching = {
        path.name: sorted(
            name
            for name in _imported_modules(path)
            if name == "monitors.api" or name.startswith("monitors.api.")
        )
        for path in sorted(package.rglob("*.py"))
    }
    assert {name: found for name, found in reaching.items() if found} == {}
