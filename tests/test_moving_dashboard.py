"""The dashboard's Import page (file or address → preview → confirm) and
Export download, for a team member, and for an outsider who sees nothing."""

from __future__ import annotations

import html
import json
import logging
import re
from datetime import timedelta

import pytest
import time_machine
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from monitors import tasks
from monitors.models import ImportRun, Membership, Monitor, Target
from monitors.moving import importing, plan
from tests.moving import PRICING_UUID, backup_zip, fixture
from tests.test_moving_remote_preview import _row_holds

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"


@pytest.fixture
def member(team, django_user_model):
    user = django_user_model.objects.create_user("mia", "mia@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user)
    return user


@pytest.fixture
def web(client, member):
    client.force_login(member)
    return client


@pytest.fixture
def outsider_web(other_team, django_user_model):
    user = django_user_model.objects.create_user("oz", "oz@example.com", PASSWORD)
    Membership.objects.create(team=other_team, user=user)
    browser = Client()
    browser.force_login(user)
    return browser


def preview(web, source: str, data: bytes, name: str):
    return web.post(
        "/import/", {"source": source, "file": SimpleUploadedFile(name, data)}
    )


def test_the_import_page_lists_every_source_with_its_steps(web):
    page = web.get("/import/").content.decode()
    assert "changedetection.io" in page and "urlwatch" in page and "Distill" in page
    assert "Download a backup from changedetection.io" in page


def test_a_file_is_previewed_and_nothing_is_created_before_confirming(web, team):
    response = preview(web, "changedetection", backup_zip(), "backup.zip")
    assert response.status_code == 302
    run = ImportRun.objects.get(team=team)
    assert response["Location"] == f"/import/{run.pk}/"
    page = web.get(response["Location"]).content.decode()
    assert "Pricing" in page
    assert "Every 5 minutes starting at :01, UTC" in page
    assert "cloud metadata address" in page
    assert "XPath filter" in page
    assert "Last snapshot kept as the first baseline" in page
    assert not Monitor.objects.exists()


def test_confirming_imports_the_preview_and_shows_the_report(web, team):
    response = preview(web, "changedetection", backup_zip(), "backup.zip")
    run_url = response["Location"]
    done = web.post(run_url + "confirm/", follow=True)
    page = done.content.decode()
    assert "2 monitors created" in page
    assert Monitor.objects.filter(team=team).count() == 2
    pricing = Monitor.objects.get(name="Pricing")
    assert f'href="/monitors/{pricing.pk}/"' in page


def test_duplicates_are_flagged_and_imported_only_when_ticked(web, team):
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(
        monitor=existing, type="scrape", urls=["https://shop.example.com/pricing"]
    )
    run_url = preview(web, "changedetection", backup_zip(), "b.zip")["Location"]
    page = web.get(run_url).content.decode()
    assert "Already monitored" in page and "Import it anyway" in page
    web.post(run_url + "confirm/", {"duplicate": [PRICING_UUID]})
    assert Monitor.objects.filter(team=team, name="Pricing").count() == 1


def test_an_unreadable_file_says_why_in_plain_words(web):
    response = preview(web, "distill", b"{oops", "x.json")
    assert response.status_code == 400
    assert "The file is not valid JSON" in response.content.decode()


def test_a_source_without_a_file_or_address_asks_for_one(web):
    response = web.post("/import/", {"source": "changedetection"})
    assert response.status_code == 400
    assert "Give a file, or its address and API key." in response.content.decode()


def test_an_oversized_upload_is_refused_with_a_clear_page(web, settings):
    settings.IMPORT_MAX_BYTES = 1024
    response = web.post(
        "/import/",
        {"source": "csv", "file": SimpleUploadedFile("a.txt", b"x" * 200_000)},
    )
    assert response.status_code == 413
    assert "The file is larger than" in response.content.decode()


def test_a_large_import_shows_progress_until_done(web, team, monkeypatch):
    monkeypatch.setattr(importing, "INLINE_MAX", 0)
    monkeypatch.setattr(importing.current_app, "send_task", lambda *a, **k: None)
    run_url = preview(web, "csv", fixture("addresses.txt"), "a.txt")["Location"]
    web.post(run_url + "confirm/")
    run = ImportRun.objects.get(team=team)
    polled = web.get(run_url, HTTP_HX_REQUEST="true")
    assert polled.status_code == 200
    assert 'hx-trigger="every 1s"' in polled.content.decode()
    assert run.claim()
    importing.execute_run(run, run.created_at)
    final = web.get(run_url, HTTP_HX_REQUEST="true")
    assert final.status_code == 286
    assert "2 monitors created" in final.content.decode()


def test_the_export_downloads_the_teams_document_and_a_safe_csv(web, team):
    preview_url = preview(web, "csv", fixture("addresses.csv"), "a.csv")["Location"]
    web.post(preview_url + "confirm/")
    response = web.get("/export/")
    assert response["Content-Disposition"].startswith("attachment;")
    document = json.loads(response.content)
    assert document["format"] == "pagewatch-export"
    assert len(document["monitors"]) == 4
    rows = web.get("/export/?format=csv").content.decode().splitlines()
    assert rows[0] == "name,url,schedule,goal"
    assert any(r.startswith("\"'=HYPERLINK(") for r in rows)


def test_another_teams_import_is_a_404(web, outsider_web, team):
    run_url = preview(web, "csv", fixture("addresses.txt"), "a.txt")["Location"]
    assert outsider_web.get(run_url).status_code == 404
    assert outsider_web.post(run_url + "confirm/").status_code == 404
    assert not Monitor.objects.exists()


def test_an_empty_team_is_offered_the_import(web):
    page = web.get("/").content.decode()
    assert 'href="/import/">Import them</a>' in page


def test_a_changedetection_address_and_key_are_previewed(
    web, team, site, settings, monkeypatch
):
    from tests.test_moving_api import CD_KEY, _changedetection

    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    monkeypatch.setattr(importing.current_app, "send_task", lambda *a, **k: None)
    _changedetection(site)

    def previewed(key: str) -> str:
        response = web.post(
            "/import/",
            {"source": "changedetection", "url": site.base_url, "api_key": key},
        )
        assert response.status_code == 302
        # The worker's part: the service is read by the preview task.
        tasks.preview_import_task(response["Location"].split("/")[-2])
        return html.unescape(web.get(response["Location"]).content.decode())

    page = previewed(CD_KEY)
    assert "Pricing" in page and "Every 2 hours from 01:36, UTC" in page
    assert "refused the key" in previewed("nope")


def test_a_refused_file_repeats_what_the_chosen_tool_needs(web, team):
    response = preview(web, "distill", b"url\nhttps://example.com/\n", "list.csv")

    page = html.unescape(response.content.decode())
    alert = re.search(
        r'<div class="callout error" role="alert">(.*?)</div>', page, re.S
    )
    assert response.status_code == 400
    assert "not valid JSON" in alert[1]
    assert "In Distill, select the monitors, choose Export" in alert[1]
    assert "urlwatch" not in alert[1]
    assert not Monitor.objects.filter(team=team).exists()


def _address_list(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_a_preview_of_only_duplicates_does_not_offer_to_import_zero(web, team):
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(monitor=existing, type="scrape", urls=["https://a.test/p"])
    listing = _address_list("https://a.test/p", "not a url")
    run_url = preview(web, "csv", listing, "list.txt")["Location"]

    page = html.unescape(web.get(run_url).content.decode())
    ticked = ImportRun.objects.get().items[0]["ref"]
    web.post(run_url + "confirm/", {"duplicate": [ticked]})

    # Ticking "Import it anyway" imports it, so the button must not say 0.
    assert "Import 0 monitors" not in page
    assert "Import the ones you ticked" in page
    assert Monitor.objects.filter(team=team).count() == 2


def test_a_preview_with_nothing_importable_offers_no_import_button(web, team):
    run_url = preview(web, "csv", _address_list("not a url"), "list.txt")["Location"]

    page = html.unescape(web.get(run_url).content.decode())

    assert f'action="{run_url}confirm/"' not in page
    assert "Nothing here can be imported" in page
    assert "Start again" in page


def test_the_import_page_tells_staff_how_to_export_without_developer_words(web):
    page = html.unescape(web.get("/import/").content.decode())
    steps = re.search(r"A Pagewatch export:</strong>(.*?)</li>", page, re.S)

    assert steps and "Export this team's monitors" in steps[1]
    for word in ("manage.py", "exportmonitors", "GET ", "/v2/"):
        assert word not in page


def _preview_rows(page: str) -> dict[str, str]:
    """Each preview row's words, by the watch it is about."""
    table = page.split('aria-label="Preview of the import"', 1)[1].split("</table>")[0]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
        rows[words.split(" ", 1)[0]] = words
    return rows


def test_a_watch_that_will_not_be_imported_lists_nothing_as_left_behind(web, team):
    listing = _address_list("https://a.test/p", "not a url")
    run_url = preview(web, "csv", listing, "list.txt")["Location"]

    rows = _preview_rows(html.unescape(web.get(run_url).content.decode()))

    assert "No check interval given: checked every hour." in rows["https://a.test/p"]
    refused = rows["not"]
    assert "No check interval given" not in refused
    assert "not a web address" in refused

    web.post(run_url + "confirm/")
    report = html.unescape(web.get(run_url).content.decode())
    table = report.split('aria-label="What the import did"', 1)[1]
    assert table.count("No check interval given") == 1
    assert Monitor.objects.filter(team=team).count() == 1


def test_a_refused_watch_names_the_part_that_is_wrong_plainly(web):
    run_url = preview(web, "csv", _address_list("not a url"), "list.txt")["Location"]

    rows = _preview_rows(html.unescape(web.get(run_url).content.decode()))

    assert "Its address" not in rows["not"]
    assert "The address: “not a url” is not a web address" in rows["not"]


def test_one_duplicate_is_spoken_of_in_the_singular(web, team):
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(monitor=existing, type="scrape", urls=["https://a.test/p"])
    listing = _address_list("https://a.test/p", "https://a.test/q")
    run_url = preview(web, "csv", listing, "list.txt")["Location"]

    page = re.sub(r"\s+", " ", html.unescape(web.get(run_url).content.decode()))

    assert (
        "1 watch is already monitored here and will be skipped unless you tick it."
        in page
    )


def test_the_report_calls_a_skipped_watch_already_monitored_as_the_preview_did(
    web, team
):
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(monitor=existing, type="scrape", urls=["https://a.test/p"])
    listing = _address_list("https://a.test/p", "https://a.test/q")
    run_url = preview(web, "csv", listing, "list.txt")["Location"]

    done = web.post(run_url + "confirm/", follow=True)

    page = re.sub(r"\s+", " ", html.unescape(done.content.decode()))
    assert "1 monitor created</strong> from a list of addresses." in page
    assert "1 already monitored, skipped." in page
    assert ">Already monitored, skipped<" in page
    assert "uplicate" not in page


def test_a_refused_address_keeps_the_scheme_the_refusal_is_about(web):
    run_url = preview(web, "changedetection", backup_zip(), "b.zip")["Location"]

    rows = _preview_rows(html.unescape(web.get(run_url).content.decode()))

    ftp = next(row for row in rows.values() if "Report over FTP" in row)
    assert "ftp://files.example.com/report.csv" in ftp
    assert "Only http:// and https:// URLs are allowed." in ftp


def test_a_watch_repeating_an_address_of_the_same_file_is_not_called_already_monitored(
    web, team
):
    listing = _address_list("https://a.test/p", "https://a.test/p")
    run_url = preview(web, "csv", listing, "list.txt")["Location"]

    page = re.sub(r"\s+", " ", html.unescape(web.get(run_url).content.decode()))

    assert "already monitored" not in page.lower()
    assert (
        "1 watch repeats an address listed above and will be skipped unless you "
        "tick it." in page
    )
    assert "Same address as “https://a.test/p” above" in page


def test_the_report_says_a_repeated_address_was_skipped_as_the_preview_did(web, team):
    listing = _address_list("https://a.test/p", "https://a.test/p")
    run_url = preview(web, "csv", listing, "list.txt")["Location"]

    done = web.post(run_url + "confirm/", follow=True)

    page = re.sub(r"\s+", " ", html.unescape(done.content.decode()))
    assert Monitor.objects.filter(team=team).count() == 1
    assert "already monitored" not in page.lower()
    assert "1 repeated an address listed above, skipped." in page
    assert ">Same address as one above, skipped<" in page


def test_a_long_preview_and_its_report_list_what_needs_a_look_first(web, team):
    existing = Monitor.objects.create(team=team, name="Mine", schedule_cron="0 * * * *")
    Target.objects.create(monitor=existing, type="scrape", urls=["https://a.test/9"])
    lines = [f"https://a.test/{n}" for n in range(10)] + ["not a url"]
    run_url = preview(web, "csv", _address_list(*lines), "list.txt")["Location"]

    page = html.unescape(web.get(run_url).content.decode())
    table = page.split('aria-label="Preview of the import"', 1)[1]
    order = [table.index(words) for words in ("not a url", "a.test/9", "a.test/0")]
    assert order == sorted(order)

    done = html.unescape(web.post(run_url + "confirm/", follow=True).content.decode())
    report = done.split('aria-label="What the import did"', 1)[1]
    order = [report.index(words) for words in ("not a url", "a.test/9", "a.test/0")]
    assert order == sorted(order)


def test_list_schedules_run_in_the_teams_zone_unless_a_row_names_one(web, team):
    team.time_zone = "Europe/Berlin"
    team.save(update_fields=["time_zone"])
    listing = (
        b"url,schedule,Time zone\n"
        b"https://a.test/team,daily at 9am,\n"
        b"https://a.test/own,daily at 9am,America/New_York\n"
        b"https://a.test/odd,daily at 9am,Mars/Base\n"
    )
    run_url = preview(web, "csv", listing, "list.csv")["Location"]

    rows = _preview_rows(html.unescape(web.get(run_url).content.decode()))
    assert "Daily at 09:00, Europe/Berlin" in rows["https://a.test/team"]
    assert (
        "Its times are Europe/Berlin time, the team's zone (the file gives none)."
        in rows["https://a.test/team"]
    )
    assert "Daily at 09:00, America/New_York" in rows["https://a.test/own"]
    assert "Its times are" not in rows["https://a.test/own"]
    assert "“Mars/Base” is not a time zone we know." in rows["https://a.test/odd"]
    assert "Daily at 09:00, Europe/Berlin" in rows["https://a.test/odd"]

    web.post(run_url + "confirm/")
    zones = dict(
        Monitor.objects.filter(team=team).values_list("name", "schedule_timezone")
    )
    assert sorted(zones.values()) == [
        "America/New_York",
        "Europe/Berlin",
        "Europe/Berlin",
    ]


def test_the_preview_shows_the_goal_a_watch_brings(web):
    watching = {
        "w": {"url": "https://a.example.com/", "llm_intent": "New climate articles"}
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    page = web.get(
        preview(web, "changedetection", data, "url-watches.json")["Location"]
    ).content.decode()
    assert "Goal: “New climate articles”" in html.unescape(page)


def test_the_preview_names_the_channel_a_notification_url_becomes_not_the_url(web):
    telegram = "tgram://123456789:AAEbcdefghijklmnop/-100123"
    watching = {"w": {"url": "https://a.example.com/", "notification_urls": [telegram]}}
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    page = web.get(
        preview(web, "changedetection", data, "url-watches.json")["Location"]
    ).content.decode()
    assert "Tells a new channel “Telegram (imported)”" in html.unescape(page)
    assert (
        "Their notifications make 1 new channel: “Telegram (imported)”. Nothing is "
        "created until you confirm."
    ) in html.unescape(page)
    assert "AAEbcdefghijklmnop" not in page


def test_the_preview_says_a_muted_watch_comes_muted_and_still_tells_its_channel(web):
    watching = {
        "w": {
            "url": "https://a.example.com/",
            "notification_urls": ["tgram://123456789:AAEbcdefghijklmnop/-100123"],
            "notification_muted": True,
        }
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    page = html.unescape(
        web.get(
            preview(web, "changedetection", data, "url-watches.json")["Location"]
        ).content.decode()
    )
    assert "Notifications muted until you unmute it" in page
    assert "Tells a new channel “Telegram (imported)”" in page
    assert "it comes with them muted until you unmute it on its page" in page


@pytest.fixture
def queued_previews(monkeypatch) -> list[tuple[str, list[str]]]:
    """Every preview goes through the queue; the tasks sent are listed here
    instead of reaching a broker: a test does the worker's part itself."""
    sent: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(importing, "PREVIEW_INLINE_MAX", 0)
    monkeypatch.setattr(
        importing.current_app, "send_task", lambda name, args: sent.append((name, args))
    )
    return sent


@pytest.fixture
def upload(web, django_capture_on_commit_callbacks):
    """POST a backup to the Import page; what it queues after commit is
    sent (the test's transaction never commits)."""

    def post():
        with django_capture_on_commit_callbacks(execute=True):
            return preview(web, "changedetection", backup_zip(), "backup.zip")

    return post


def test_a_large_upload_is_answered_before_its_preview_is_built(
    web, team, queued_previews, upload
):
    response = upload()
    run = ImportRun.objects.get(team=team)
    assert response["Location"] == f"/import/{run.pk}/"
    assert run.status == ImportRun.Status.PREPARING
    # Read, not judged: no item has been through the API's rules yet.
    assert run.total == len(run.items) == 4
    assert all(state["validated"] is None for state in run.items)
    assert queued_previews == [(importing.PREVIEW_TASK, [str(run.pk)])]
    page = web.get(response["Location"]).content.decode()
    assert "Preview of the import" not in page
    assert "Preparing the preview" in page


def test_the_preview_task_builds_the_preview_the_page_then_shows(
    web, team, queued_previews, upload
):
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED
    assert sum(1 for state in run.items if state["validated"] is not None) == 2
    page = web.get(run_url).content.decode()
    assert "Pricing" in page and "cloud metadata address" in page
    web.post(run_url + "confirm/")
    assert Monitor.objects.filter(team=team).count() == 2


def _preview_section(page: str, run: ImportRun) -> str:
    section = page[
        page.index('<section class="card" aria-labelledby="preview-title"') :
    ]
    section = section[: section.index("</section>")]
    section = section.replace(str(run.pk), "RUN")
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", section)


def test_a_queued_preview_shows_exactly_what_an_immediate_one_does(
    web, team, monkeypatch, upload
):
    at_once = upload()
    first = ImportRun.objects.get(team=team)
    sent: list[object] = []
    monkeypatch.setattr(importing, "PREVIEW_INLINE_MAX", 0)
    monkeypatch.setattr(
        importing.current_app, "send_task", lambda *a, **k: sent.append(a)
    )
    queued = upload()
    second = ImportRun.objects.exclude(pk=first.pk).get(team=team)
    tasks.preview_import_task(str(second.pk))
    page_at_once = web.get(at_once["Location"]).content.decode()
    page_queued = web.get(queued["Location"]).content.decode()
    assert sent and "Pricing" in page_queued
    assert _preview_section(page_queued, second) == _preview_section(
        page_at_once, first
    )


def test_polling_a_preview_shows_its_progress_then_loads_the_preview(
    web, team, queued_previews, upload
):
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)
    polled = web.get(run_url, HTTP_HX_REQUEST="true")
    body = polled.content.decode()
    assert polled.status_code == 200
    assert "Preparing the preview" in body and "0 of 4 watches checked" in body
    assert 'hx-trigger="every 500ms"' in body
    tasks.preview_import_task(str(run.pk))
    ready = web.get(run_url, HTTP_HX_REQUEST="true")
    # The whole page is loaded again: the preview is the page, not a fragment.
    assert ready["HX-Refresh"] == "true"


def test_a_preview_that_fails_says_so_plainly_and_stops_polling(
    web, team, queued_previews, upload, monkeypatch
):
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)

    def broken(*args, **kwargs):
        raise RuntimeError("column items does not exist")

    monkeypatch.setattr(plan, "prepare", broken)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    polled = web.get(run_url, HTTP_HX_REQUEST="true")
    body = html.unescape(polled.content.decode())
    assert polled.status_code == 286
    assert "The preview could not be made" in body
    assert "column items" not in body
    assert "Monitors made before it stopped" not in body


def test_a_preview_that_loses_its_database_is_one_line_and_left_for_the_page(
    web, team, queued_previews, upload, monkeypatch, caplog
):
    upload()
    run = ImportRun.objects.get(team=team)

    def database_gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly\n\tSo.")

    monkeypatch.setattr(plan, "prepare", database_gone)
    tasks.preview_import_task(str(run.pk))

    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.exc_info is None
    assert "the database is not reachable" in line.getMessage()
    # Nothing could be written: the run waits, and its page gives it up in
    # time (test_a_preview_whose_worker_never_came_is_given_up).
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREPARING


def test_a_preview_whose_worker_never_came_is_given_up(
    web, team, queued_previews, upload
):
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)
    assert web.get(run_url, HTTP_HX_REQUEST="true").status_code == 200
    later = run.created_at + ImportRun.PREVIEW_GIVEN_UP_AFTER + timedelta(seconds=1)
    with time_machine.travel(later, tick=False):
        polled = web.get(run_url, HTTP_HX_REQUEST="true")
    assert polled.status_code == 286
    assert "The preview was not made in time" in html.unescape(polled.content.decode())
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    # A worker that takes its message after all leaves the run as the page said.
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED


def test_a_preview_the_queue_cannot_take_says_so(web, team, monkeypatch, upload):
    monkeypatch.setattr(importing, "PREVIEW_INLINE_MAX", 0)

    def unreachable(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr(importing.current_app, "send_task", unreachable)
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    page = html.unescape(web.get(run_url).content.decode())
    assert "cannot reach its task queue" in page
    assert "6379" not in page


def test_a_preview_being_made_counts_the_watches_checked_so_far(
    web, team, queued_previews, monkeypatch, django_capture_on_commit_callbacks
):
    lines = "".join(f"https://site{n}.example.com/\n" for n in range(250))
    with django_capture_on_commit_callbacks(execute=True):
        preview(web, "csv", lines.encode(), "list.txt")
    run = ImportRun.objects.get(team=team)
    counted: list[int] = []
    record = ImportRun.record_progress

    def spy(self: ImportRun, done: int, now) -> None:
        counted.append(done)
        record(self, done, now)

    monkeypatch.setattr(ImportRun, "record_progress", spy)
    tasks.preview_import_task(str(run.pk))
    run.refresh_from_db()
    assert counted == [100, 200]
    # Once shown, the count is the import's again, from nothing.
    assert (run.status, run.done, run.total) == ("previewed", 0, 250)


def test_polling_a_preview_being_made_does_not_read_its_watches(
    web, team, queued_previews, upload
):
    run_url = upload()["Location"]
    with CaptureQueriesContext(connection) as queries:
        polled = web.get(run_url, HTTP_HX_REQUEST="true")
    assert polled.status_code == 200
    # Thousands of watches are megabytes: each poll would read them all.
    assert not [q["sql"] for q in queries if '"items"' in q["sql"]]


@pytest.mark.parametrize("ending", ["failed", "given up"])
def test_a_preview_that_ends_unmade_forgets_the_notification_urls_it_read(
    web, team, queued_previews, monkeypatch, django_capture_on_commit_callbacks, ending
):
    telegram = "tgram://123456789:AAEbcdefghijklmnop/-100123"
    watching = {"w": {"url": "https://a.example.com/", "notification_urls": [telegram]}}
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    with django_capture_on_commit_callbacks(execute=True):
        preview(web, "changedetection", data, "url-watches.json")
    run = ImportRun.objects.get(team=team)
    assert _row_holds(run, "AAEbcdefghijklmnop")
    if ending == "failed":
        monkeypatch.setattr(plan, "prepare", _broken)
        tasks.preview_import_task(str(run.pk))
    else:
        later = run.created_at + ImportRun.PREVIEW_GIVEN_UP_AFTER + timedelta(seconds=1)
        assert run.give_up_preview_if_stale(later)
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEW_FAILED
    # Nothing reads a preview that was never made: the Apprise URLs (each a
    # service's secret) are not kept the week the run is.
    assert not _row_holds(run, "AAEbcdefghijklmnop")
    assert run.items == []


def _broken(*args, **kwargs):
    raise RuntimeError("column items does not exist")


def test_a_preview_that_waited_in_the_queue_is_not_given_up_while_it_is_made(
    web, team, queued_previews, upload, monkeypatch
):
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)
    prepare = plan.prepare
    polled: list[int] = []

    def slow(*args, **kwargs):
        # Ten minutes into the task's twelve, sixteen after the upload.
        with time_machine.travel(run.created_at + timedelta(minutes=16), tick=False):
            polled.append(web.get(run_url, HTTP_HX_REQUEST="true").status_code)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(plan, "prepare", slow)
    # A worker takes the message six minutes after the upload.
    with time_machine.travel(run.created_at + timedelta(minutes=6), tick=False):
        tasks.preview_import_task(str(run.pk))
    assert polled == [200]
    run.refresh_from_db()
    assert run.status == ImportRun.Status.PREVIEWED


def test_a_started_preview_whose_worker_vanished_is_given_up_after_it_started(
    web, team, queued_previews, upload, monkeypatch
):
    run_url = upload()["Location"]
    run = ImportRun.objects.get(team=team)
    started = run.created_at + timedelta(minutes=6)

    def worker_killed(*args, **kwargs):
        raise SystemExit  # out of memory: nothing after it runs

    monkeypatch.setattr(plan, "prepare", worker_killed)
    with time_machine.travel(started, tick=False), pytest.raises(SystemExit):
        tasks.preview_import_task(str(run.pk))
    before = started + ImportRun.PREVIEW_GIVEN_UP_AFTER - timedelta(seconds=1)
    with time_machine.travel(before, tick=False):
        assert web.get(run_url, HTTP_HX_REQUEST="true").status_code == 200
    with time_machine.travel(before + timedelta(seconds=2), tick=False):
        polled = web.get(run_url, HTTP_HX_REQUEST="true")
    assert polled.status_code == 286
    assert "The preview was not finished" in html.unescape(polled.content.decode())


def test_a_page_that_read_the_run_before_a_worker_started_it_does_not_give_it_up(
    team, queued_previews, upload
):
    upload()
    read_by_the_page = ImportRun.objects.get(team=team)
    late = read_by_the_page.created_at + ImportRun.PREVIEW_GIVEN_UP_AFTER
    # A worker takes it after the page read it as never started.
    ImportRun.objects.get(team=team).start_preview_task(late)
    assert not read_by_the_page.give_up_preview_if_stale(late + timedelta(seconds=1))
    assert ImportRun.objects.get(team=team).status == ImportRun.Status.PREPARING
