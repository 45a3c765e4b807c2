"""The Import page in real Chromium: a changedetection.io backup uploaded,
its preview read (what will be created, what will not and why), then the
import confirmed and its report shown; a preview made by a worker while the
page waits. Screenshots of each are looked at."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from django.utils import timezone
from playwright.sync_api import expect

from monitors import tasks
from monitors.models import ImportRun, Monitor
from monitors.moving import importing
from tests.browser.people import PASSWORD, sign_in
from tests.browser.test_accessibility_browser import _require_axe, axe_problems
from tests.moving import backup_zip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_backup_is_previewed_then_imported(
    browser_page, member, team, screenshot, tmp_path
):
    backup = tmp_path / "changedetection-backup.zip"
    backup.write_bytes(backup_zip())
    page = browser_page
    # An init script, as the Content-Security-Policy refuses injected <script> tags.
    page.context.add_init_script(path=str(_require_axe()))
    problems: list[str] = []
    page.goto("/accounts/login/?next=/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="Import", exact=True).click()
    page.wait_for_url(re.compile(r"/import/$"))
    problems += axe_problems(page, "import form")
    screenshot(page, "import-form")

    page.get_by_label("Move from").select_option("changedetection")
    page.get_by_label("File").set_input_files(str(backup))
    page.get_by_role("button", name="Preview the import").click()
    page.wait_for_url(re.compile(r"/import/[0-9a-f-]{36}/$"))

    table = page.get_by_role("table", name="Preview of the import")
    # The watch's changedetection.io tag becomes a tag, said before importing.
    expect(table).to_contain_text("Pricing")
    expect(table).to_contain_text("Tags: Shop")
    expect(table).to_contain_text("Every 5 minutes starting at :01, UTC")
    expect(table).to_contain_text("cloud metadata address")
    expect(table).to_contain_text("XPath filter")
    screenshot(page, "import-preview")
    problems += axe_problems(page, "import preview")
    assert not Monitor.objects.exists()

    page.get_by_role("button", name="Import 2 monitors").click()
    expect(page.get_by_role("status").first).to_contain_text("2 monitors created")
    screenshot(page, "import-done")
    problems += axe_problems(page, "import report")
    assert problems == []
    assert Monitor.objects.filter(team=team).count() == 2
    assert page.problems.csp_violations(page) == []
    assert page.problems.page_errors == []


def test_an_import_that_finishes_while_its_page_is_open_is_read_out_once(
    browser_page, member, team
):
    # Large imports run in a worker while the page polls; the worker's part
    # is done here by moving the run along.
    run = ImportRun.objects.create(
        team=team,
        created_by=member,
        source="changedetection",
        status=ImportRun.Status.RUNNING,
        total=60,
        done=20,
    )
    page = browser_page
    sign_in(page)
    page.goto(f"/import/{run.pk}/")
    page.get_by_text("20 of 60 done").wait_for()
    expect(page.locator("#announcer")).to_have_text("")

    ImportRun.objects.filter(pk=run.pk).update(
        status=ImportRun.Status.DONE,
        done=60,
        report={"created": 60, "items": [], "duplicates": 0},
        finished_at=timezone.now(),
    )
    page.get_by_role("link", name="See your monitors").wait_for()

    expect(page.locator("#announcer")).to_have_text(
        re.compile(r"^60 monitors created from .+ See your monitors$")
    )
    said = page.locator("#announcer").text_content()
    page.wait_for_timeout(1500)  # polling has stopped: nothing is said again
    assert page.locator("#announcer").text_content() == said


def as_a_worker(task, *args: str) -> None:
    """A task run in a thread of its own, as a worker would, on this thread's
    connection when it is to the shared in-memory SQLite database (a second
    one would find its tables locked by the live server's requests)."""
    shared = [
        c for c in connections.all() if c.vendor == "sqlite" and c.is_in_memory_db()
    ]

    def work() -> None:
        for conn in shared:
            connections[conn.alias] = conn
        try:
            task(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(work).result()


def test_a_preview_made_by_a_worker_appears_once_ready(
    browser_page, member, team, screenshot, tmp_path, monkeypatch
):
    # As for a file of thousands of watches: the preview goes to the queue.
    # No broker: the test does the worker's part while the page polls.
    sent: list[str] = []
    monkeypatch.setattr(importing, "PREVIEW_INLINE_MAX", 0)
    monkeypatch.setattr(
        importing.current_app, "send_task", lambda name, args: sent.extend(args)
    )
    backup = tmp_path / "changedetection-backup.zip"
    backup.write_bytes(backup_zip())
    page = browser_page
    page.context.add_init_script(path=str(_require_axe()))
    sign_in(page)
    page.goto("/import/")
    page.get_by_label("Move from").select_option("changedetection")
    page.get_by_label("File").set_input_files(str(backup))
    page.get_by_role("button", name="Preview the import").click()
    page.wait_for_url(re.compile(r"/import/[0-9a-f-]{36}/$"))

    expect(page.locator("#import-progress")).to_contain_text(
        "Preparing the preview of what comes from changedetection.io…"
    )
    expect(page.locator("#import-progress")).to_contain_text("0 of 4 watches checked")
    screenshot(page, "import-preview-preparing")
    problems = axe_problems(page, "import preview being made")
    run = ImportRun.objects.get(team=team)
    assert run.status == ImportRun.Status.PREPARING
    assert sent == [str(run.pk)]

    as_a_worker(tasks.preview_import_task, str(run.pk))
    table = page.get_by_role("table", name="Preview of the import")
    # The watch's changedetection.io tag becomes a tag, said before importing.
    expect(table).to_contain_text("Pricing")
    expect(table).to_contain_text("Tags: Shop")
    expect(table).to_contain_text("cloud metadata address")
    expect(page.locator("#import-progress")).to_have_count(1)
    expect(page.get_by_text("Preparing the preview")).to_have_count(0)
    screenshot(page, "import-preview-ready")
    problems += axe_problems(page, "import preview made by a worker")
    assert problems == []
    assert not Monitor.objects.exists()

    page.get_by_role("button", name="Import 2 monitors").click()
    expect(page.get_by_role("status").first).to_contain_text("2 monitors created")
    assert page.problems.csp_violations(page) == []
    assert page.problems.page_errors == []
