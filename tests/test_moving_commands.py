"""manage.py importmonitors and exportmonitors."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from monitors.models import Monitor, Team
from tests.moving import FIXTURES, backup_zip

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def test_a_dry_run_lists_what_would_happen_and_creates_nothing(team, tmp_path):
    backup = tmp_path / "backup.zip"
    backup.write_bytes(backup_zip())
    out = run("importmonitors", str(backup), "--team", "acme", "--dry-run")
    assert "would create  Pricing" in out
    assert "not imported  Cloud metadata" in out
    assert "· XPath filter" in out
    assert "→ tells channel “Discord (imported)”" in out
    assert "Dry run: 2 of 4 would be created." in out
    assert not Monitor.objects.exists()


def test_an_import_guesses_the_source_and_creates_the_monitors(team):
    out = run("importmonitors", str(FIXTURES / "urls.yaml"), "--team", "acme")
    assert "Created 3 of 5 monitors in team 'acme'." in out
    assert Monitor.objects.filter(team=team).count() == 3


def test_unknown_teams_and_unreadable_files_are_command_errors(team, tmp_path):
    with pytest.raises(CommandError, match="No team has the slug"):
        run("importmonitors", str(FIXTURES / "urls.yaml"), "--team", "nope")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(CommandError, match="not valid JSON"):
        run("importmonitors", str(bad), "--team", "acme", "--source", "distill")
    with pytest.raises(CommandError, match="Cannot read"):
        run("importmonitors", str(tmp_path / "missing.zip"), "--team", "acme")


def test_a_directory_given_as_the_file_is_a_command_error(team, tmp_path):
    # It passed the size check and ended in an IsADirectoryError traceback.
    with pytest.raises(CommandError, match="Cannot read .*Is a directory"):
        run("importmonitors", str(tmp_path), "--team", "acme")
    assert not Monitor.objects.exists()


def test_an_export_imports_into_an_empty_team(team, tmp_path):
    run("importmonitors", str(FIXTURES / "distill-export.json"), "--team", "acme")
    document = tmp_path / "export.json"
    document.write_text(run("exportmonitors", "--team", "acme"))
    assert json.loads(document.read_text())["format"] == "pagewatch-export"
    empty = Team.objects.create(name="Empty", slug="empty")
    out = run("importmonitors", str(document), "--team", "empty")
    assert "Created 2 of 2 monitors" in out
    made = {m.name: m for m in Monitor.objects.filter(team=empty)}
    for original in Monitor.objects.filter(team=team):
        copy = made[original.name]
        assert (copy.status, copy.schedule_cron, copy.fetch_with) == (
            original.status,
            original.schedule_cron,
            original.fetch_with,
        )


def test_the_csv_export_writes_formulas_as_text(team):
    run("importmonitors", str(FIXTURES / "addresses.csv"), "--team", "acme")
    out = run("exportmonitors", "--team", "acme", "--csv")
    assert "\"'=HYPERLINK(" in out


def test_monitors_an_import_creates_are_in_the_activity_log(team):
    from teams.models import Activity

    run("importmonitors", str(FIXTURES / "urls.yaml"), "--team", "acme")

    made = set(Monitor.objects.filter(team=team).values_list("pk", flat=True))
    logged = Activity.objects.filter(team=team, kind=Activity.Kind.MONITOR_CREATED)
    assert {entry.monitor_id for entry in logged} == made
    assert {(e.via, e.details["imported"]) for e in logged} == {("command", True)}


def test_a_service_read_by_the_command_shows_how_many_watches_are_read(
    team, site, settings
):
    from tests.test_moving_api import CD_KEY
    from tests.test_moving_remote_preview import _many_watches

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    _many_watches(site, 60)
    out, err = StringIO(), StringIO()
    call_command(
        "importmonitors",
        site.base_url,
        "--team",
        "acme",
        "--source",
        "changedetection",
        "--api-key",
        CD_KEY,
        "--dry-run",
        stdout=out,
        stderr=err,
    )
    assert err.getvalue().splitlines()[:4] == [
        "Reading watches from changedetection.io…",
        "Read 0 of 60 watches",
        "Read 25 of 60 watches",
        "Read 50 of 60 watches",
    ]
    assert "Dry run: 60 of 60 would be created." in out.getvalue()
