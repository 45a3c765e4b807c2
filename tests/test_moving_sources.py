"""Each source's reader, on fixture files written to each tool's documented
layout: what every watch becomes, what is left behind and why."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from monitors import moving
from monitors.models import Team
from monitors.moving import plan
from monitors.moving.base import ImportRefused, Planned, schedule_for_seconds
from monitors.schedule import shortest_interval_minutes
from tests.moving import (
    FTP_UUID,
    METADATA_UUID,
    PRICING_UUID,
    WIDGET_UUID,
    backup_zip,
    fixture,
    zip_files,
)


def planned(source: str, data: bytes, filename: str = "") -> dict[str, Planned]:
    """A source's items as a team's preview judges them (the team unsaved:
    spreading schedules needs only its slug)."""
    items = moving.read(source, data=data, filename=filename)
    plan.spread_for(Team(slug="acme"), items)
    plan.validate(items)
    return {item.ref: item for item in items}


def notes_of(item: Planned) -> str:
    return "\n".join(item.notes)


def gap_of(item: Planned) -> int:
    """Minutes between the runs of an item's schedule; imported intervals
    run at a place of their own within the gap, so the cron is not fixed."""
    moment = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    return shortest_interval_minutes(item.validated["schedule"]["cron"], moment)


# --- changedetection.io backup ---------------------------------------------------


def test_a_changedetection_watch_keeps_its_filters_headers_rules_and_browser():
    item = planned("changedetection", backup_zip())[PRICING_UUID]
    assert item.importable
    # Its tag is a tag, not a part of its name.
    assert item.label == "Pricing"
    assert item.validated["tags"] == ["Shop"]
    target = item.validated["targets"][0]
    assert target["urls"] == ["https://shop.example.com/pricing"]
    options = target["scrapeOptions"]
    assert options["includeTags"] == ["#prices"]
    assert options["excludeTags"] == [".ads"]
    assert options["headers"] == {"X-Team": "blue", "Accept-Language": "en"}
    assert item.validated["ignoreLines"] == ["Last updated", r"/\d+ people viewing/"]
    assert item.validated["fetchWith"] == "browser"


def test_a_one_minute_interval_is_raised_to_five_minutes_and_says_so():
    item = planned("changedetection", backup_zip())[PRICING_UUID]
    assert gap_of(item) == 5
    assert "Checked every minute there" in notes_of(item)
    assert "every 5 minutes" in notes_of(item)


def test_what_has_no_equal_is_listed_per_watch_with_the_reason():
    notes = notes_of(planned("changedetection", backup_zip())[PRICING_UUID])
    assert "XPath filter “xpath://div[@class='deal']” not imported, because" in notes
    assert "JSON filter “json:$.price” not imported, because" in notes
    assert "1 browser step not imported, because" in notes


def test_an_ai_intent_becomes_the_goal_and_other_settings_are_named():
    from monitors.moving.changedetection import draft_of

    watch = {
        "url": "https://a.test/",
        "llm_intent": "Tell me when a new article about climate appears",
        "llm_change_summary": "Summarise in French",
        "time_schedule_limit": {"enabled": True},
        "extract_lines_containing": ["price"],
        "conditions": [{"field": "page_filtered_text", "operator": "contains"}],
        "notification_body": "{{diff}}",
        "webdriver_js_execute_code": "document.querySelector('#ok').click()",
        "ignore_status_codes": True,
    }
    draft = draft_of("w", watch, {})
    assert draft.goal == "Tell me when a new article about climate appears"
    notes = notes_of(draft)
    assert "AI change summary prompt not imported" in notes
    assert "checking hours (days and times) not imported" in notes
    assert "Keeping only lines containing some text not imported" in notes
    assert "conditions not imported" in notes
    assert "Its own notification title and text not imported" in notes
    assert "JavaScript to run before reading the page not imported" in notes
    assert "Ignoring error status codes not imported" in notes
    plain = draft_of("p", {"url": "https://a.test/", "time_schedule_limit": "x"}, {})
    assert plain.goal is None and plain.notes == []


def test_what_changedetection_counts_as_a_change_becomes_the_change_rules():
    from monitors.moving.changedetection import draft_of

    watch = {
        "url": "https://shop.test/lamp",
        "filter_text_removed": False,
        "trigger_text": ["/back in stock/i", "Re-stocked (today)"],
        "text_should_not_be_present": ["Out of stock"],
    }
    draft = draft_of("w", watch, {})

    assert draft.plan().payload["changeRules"] == {
        "lines": "added",
        "containing": [],
        "appears": "/(?i)(?:back in stock|Re\\-stocked\\ \\(today\\))/",
        "disappears": "Out of stock",
    }
    notes = notes_of(draft)
    assert (
        "Trigger text “/back in stock/i”, “Re-stocked (today)” now tells when one "
        "of them appears on the page (changedetection.io told of every change "
        "while one was there)."
    ) in notes
    assert (
        "Text that should not be present “Out of stock” now tells when one of them "
        "disappears from the page (changedetection.io told of every change while "
        "none was there)."
    ) in notes
    assert "Pagewatch tells when either happens" in notes
    assert "not imported" not in notes


def test_a_changedetection_pattern_without_flags_ignores_case_as_it_did_there():
    from monitors.moving.changedetection import draft_of

    watch = {"url": "https://a.test/", "trigger_text": ["/In stock/"]}
    case_kept = {"url": "https://a.test/", "trigger_text": ["/In stock/s", "/x/"]}

    appears = draft_of("w", watch, {}).plan().payload["changeRules"]["appears"]
    kept = draft_of("k", case_kept, {}).plan().payload["changeRules"]["appears"]

    assert appears == "/(?i)In stock/"
    assert kept == "/(?:(?s:In stock))|(?i:x)/"


def test_change_kinds_pagewatch_cannot_tell_apart_are_named_not_imported():
    from monitors.moving.changedetection import draft_of

    changed_only = {"url": "https://a.test/", "filter_text_added": False,
                    "filter_text_removed": False}  # fmt: skip
    no_changed = {"url": "https://a.test/", "filter_text_replaced": False}
    bad_pattern = {"url": "https://a.test/", "trigger_text": ["/(?<=x)y/"]}

    assert "Telling only of changed lines not imported" in notes_of(
        draft_of("a", changed_only, {})
    )
    assert "Leaving changed lines out not imported" in notes_of(
        draft_of("b", no_changed, {})
    )
    refused = draft_of("c", bad_pattern, {})
    assert "Trigger text “/(?<=x)y/” not imported: Not a pattern" in notes_of(refused)
    for draft in (draft_of("a", changed_only, {}), refused):
        assert "changeRules" not in draft.plan().payload


def test_an_address_written_as_a_template_is_not_imported_and_says_why():
    url = "https://a.test/news/{% now 'Europe/London', '%Y-%m-%d' %}"
    watching = {"w": {"url": url, "title": "Daily news"}}
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    item = planned("changedetection", data, "url-watches.json")["w"]
    assert not item.importable and item.urls == [url]
    assert item.reason.startswith("Its address is a template changedetection.io")


def test_a_group_that_overrides_its_watches_is_named_as_not_imported():
    from monitors.moving.changedetection import draft_of

    tagged = {"url": "https://a.test/", "tags": ["t"]}
    overriding = {
        "application": {"tags": {"t": {"title": "Ops", "overrides_watch": True}}}
    }
    assert "The group “Ops” overrides its watches' settings there" in notes_of(
        draft_of("o", tagged, overriding)
    )
    plain_tag = {"application": {"tags": {"t": {"title": "Ops"}}}}
    assert "overrides" not in notes_of(draft_of("b", tagged, plain_tag))


def test_a_watch_notifies_its_own_urls_else_its_tags_else_the_systems():
    from monitors.moving.changedetection import draft_of

    settings = {
        "application": {
            "notification_urls": ["ntfy://everyone"],
            "tags": {"t": {"title": "Ops", "notification_urls": ["ntfy://ops"]}},
        }
    }
    own = {"url": "https://a.test/", "tags": ["t"], "notification_urls": ["ntfy://me"]}
    assert draft_of("a", own, settings).notify_urls == ["ntfy://me"]
    tagged = {"url": "https://a.test/", "tags": ["t"]}
    assert draft_of("b", tagged, settings).notify_urls == ["ntfy://ops"]
    plain = {"url": "https://a.test/"}
    assert draft_of("c", plain, settings).notify_urls == ["ntfy://everyone"]
    muted = own | {"notification_muted": True}
    draft = draft_of("d", muted, settings)
    assert draft.notify_urls == ["ntfy://me"]
    assert draft.plan().payload["mutedUntil"] == "9999-12-31T00:00:00.000Z"
    assert "muted until you unmute it" in notes_of(draft)


def test_the_last_snapshot_of_a_watch_becomes_its_baseline():
    item = planned("changedetection", backup_zip())[PRICING_UUID]
    (baseline,) = item.baselines
    # The newer of the two history entries, stored Brotli-compressed.
    assert baseline.text == "Pricing\nBasic plan 12 EUR\nPro plan 24 EUR\n"
    assert baseline.url == "https://shop.example.com/pricing"
    assert baseline.taken_at.timestamp() == 1700086400


def test_a_paused_restock_watch_is_imported_paused_with_its_processor_named():
    item = planned("changedetection", backup_zip())[WIDGET_UUID]
    assert item.importable and item.paused
    # The team's default interval (3 hours) applies to a watch that uses it.
    assert gap_of(item) == 3 * 60
    assert "Restock and price detection not imported, because" in notes_of(item)


def test_watches_the_api_would_refuse_are_rows_saying_why():
    items = planned("changedetection", backup_zip())
    assert not items[FTP_UUID].importable
    assert "Only http:// and https:// URLs are allowed" in items[FTP_UUID].reason
    assert not items[METADATA_UUID].importable
    assert "cloud metadata address" in items[METADATA_UUID].reason


def test_a_zip_that_is_not_a_changedetection_backup_is_refused():
    from tests.moving import zip_files

    with pytest.raises(ImportRefused, match="not a changedetection.io backup"):
        moving.read("changedetection", data=zip_files({"notes.txt": b"hi"}))


def test_a_changedetection_datastore_uploaded_without_its_zip_is_read():
    data = fixture("changedetection-backup/changedetection.json")
    items = planned("changedetection", data, "url-watches.json")
    assert items[PRICING_UUID].label == "Pricing"
    assert items[PRICING_UUID].validated["tags"] == ["Shop"]
    assert gap_of(items[PRICING_UUID]) == 5
    assert items[WIDGET_UUID].importable and items[WIDGET_UUID].paused
    assert not items[FTP_UUID].importable
    # The datastore alone holds no snapshots.
    assert items[PRICING_UUID].baselines == []


def test_a_json_file_that_is_not_a_changedetection_datastore_is_refused():
    with pytest.raises(ImportRefused, match="not a changedetection.io backup"):
        moving.read("changedetection", data=b'{"monitors": []}', filename="x.json")


def _backup_of_053(watches: dict[str, dict], tags: dict[str, dict]) -> bytes:
    return zip_files(backup_files_of_053(watches, tags))


def backup_files_of_053(
    watches: dict[str, dict], tags: dict[str, dict] | None = None
) -> dict[str, bytes]:
    """A backup as changedetection.io 0.53 and later pack it: the datastore
    keeps only the settings, each watch and each tag a folder of its own."""
    settings = {
        "note": "Settings file - watches are in {uuid}/watch.json, tags are in "
        "{uuid}/tag.json",
        "settings": {
            "application": {"tags": {}},
            "requests": {"time_between_check": {"hours": 3}},
        },
        "version_tag": "0.53.3",
    }
    files = {"changedetection.json": json.dumps(settings).encode()}
    files |= {f"{u}/watch.json": json.dumps(w).encode() for u, w in watches.items()}
    files |= {f"{u}/tag.json": json.dumps(t).encode() for u, t in (tags or {}).items()}
    files["url-list.txt"] = b"\r\n".join(w["url"].encode() for w in watches.values())
    return files


def test_a_backup_of_a_recent_changedetection_reads_each_watch_from_its_folder():
    data = _backup_of_053(
        {
            "w-1": {
                "url": "https://news.example.com/",
                "title": "News",
                "tags": ["t-1"],
            },
            "w-2": {"url": "https://shop.example.com/", "paused": True},
        },
        {"t-1": {"title": "Work", "uuid": "t-1"}},
    )
    items = planned("changedetection", data, "changedetection-backup.zip")
    assert sorted(items) == ["w-1", "w-2"]
    assert items["w-1"].label == "News"
    assert items["w-1"].validated["tags"] == ["Work"]
    assert gap_of(items["w-1"]) == 180
    assert items["w-2"].importable and items["w-2"].paused
    assert not any("backup holds only its list" in notes_of(i) for i in items.values())


def test_a_damaged_watch_or_snapshot_in_a_backup_costs_only_itself():
    files = backup_files_of_053(
        {
            "w-1": {"url": "https://news.example.com/"},
            "w-2": {"url": "https://shop.example.com/"},
        }
    )
    files["w-1/history.txt"] = b"1700000000,abc.txt.br\n"
    files["w-1/abc.txt.br"] = b"not brotli at all"
    files["w-2/watch.json"] = b'{"url": "https://shop.exam'
    items = planned("changedetection", zip_files(files), "backup.zip")
    assert items["w-1"].importable and items["w-1"].baselines == []
    assert "Its last snapshot is damaged in the backup: none kept." in notes_of(
        items["w-1"]
    )
    assert not items["w-2"].importable
    assert items["w-2"].reason.startswith(
        "It cannot be read: w-2/watch.json is not valid JSON ("
    )


def test_a_recent_changedetection_json_uploaded_alone_asks_for_the_zip():
    settings = {"note": "Settings file", "settings": {"application": {}}}
    with pytest.raises(ImportRefused, match="Upload the whole backup zip"):
        moving.read(
            "changedetection",
            data=json.dumps(settings).encode(),
            filename="changedetection.json",
        )


# --- urlwatch ----------------------------------------------------------------------


def test_urlwatch_filters_become_selectors_and_line_rules():
    items = planned("urlwatch", fixture("urls.yaml"))
    notes = items["job 1"]
    options = notes.validated["targets"][0]["scrapeOptions"]
    assert options == {"includeTags": ["main"], "excludeTags": [".sidebar"]}
    assert notes.validated["ignoreLines"] == [r"/^Posted \d+ minutes ago$/"]
    assert "Retries (max_tries) not imported" in notes_of(notes)
    status = items["job 2"]
    assert status.validated["fetchWith"] == "browser"
    assert status.validated["targets"][0]["scrapeOptions"]["includeTags"] == [
        "#incidents"
    ]


def test_urlwatch_shell_jobs_jq_and_private_addresses_are_explained():
    items = planned("urlwatch", fixture("urls.yaml"))
    assert not items["job 3"].importable
    assert "shell command" in items["job 3"].reason
    assert "Filter jq not imported, because" in notes_of(items["job 4"])
    assert "private address" in items["job 5"].reason


def test_urlwatch_tags_become_tags_and_options_without_equal_are_named():
    data = (
        b"name: Prices\nurl: https://a.example.com/\ntags: [shop, daily]\n"
        b"https_proxy: http://proxy.example:3128\ntimeout: 30\n"
        b"user_visible_url: https://a.example.com/public\n"
        b"---\nnavigate: https://b.example.com/\nwait_for: '#app'\n"
        b"useragent: Firefox\n"
    )
    items = planned("urlwatch", data, "urls.yaml")
    assert items["job 1"].label == "Prices"
    assert items["job 1"].validated["tags"] == ["shop", "daily"]
    notes = notes_of(items["job 1"]) + notes_of(items["job 2"])
    for words in (
        "The proxy (https_proxy) not imported",
        "The time-out (timeout) not imported",
        "The address shown in reports (user_visible_url) not imported",
        "Waiting for an element (wait_for) not imported",
        "The user agent (useragent) not imported",
    ):
        assert words in notes


def test_yaml_tags_that_would_construct_objects_are_refused_not_run(tmp_path):
    marker = tmp_path / "ran"
    hostile = f'!!python/object/apply:os.system ["touch {marker}"]\n'.encode()
    with pytest.raises(ImportRefused, match="not YAML urlwatch could read"):
        moving.read("urlwatch", data=hostile)
    assert not marker.exists()


def test_malformed_yaml_names_the_line():
    with pytest.raises(ImportRefused, match=r"line 2"):
        moving.read("urlwatch", data=b"url: https://a.example\n  bad: [\n")


# --- Distill -----------------------------------------------------------------------


def test_distill_sieves_keep_selections_interval_tags_and_pause():
    items = planned("distill", fixture("distill-export.json"))
    careers = items["c9f1e2d3a4b5"]
    assert careers.label == "Careers"
    assert careers.validated["tags"] == ["Hiring"]
    assert gap_of(careers) == 30
    assert careers.validated["fetchWith"] == "browser"
    options = careers.validated["targets"][0]["scrapeOptions"]
    assert options["includeTags"] == ["#roles"]
    assert options["excludeTags"] == [".cookie-banner"]
    assert "XPath selection" in notes_of(careers)
    blog = items["d0a1b2c3d4e5"]
    assert blog.paused
    assert gap_of(blog) == 24 * 60
    assert "regular expression" in notes_of(blog)
    assert not items["e1b2c3d4e5f6"].importable


def test_malformed_json_is_a_clear_error():
    with pytest.raises(ImportRefused, match="not valid JSON"):
        moving.read("distill", data=b'{"data": [')
    with pytest.raises(ImportRefused, match="not valid JSON"):
        moving.read("distill", data=b"[" * 100_000 + b"]" * 100_000)


# --- lists ---------------------------------------------------------------------------


def test_csv_rows_take_name_schedule_and_goal():
    items = planned("csv", fixture("addresses.csv"), "addresses.csv")
    pricing = items["row 2"]
    assert pricing.validated["schedule"]["cron"] == "*/30 * * * *"
    assert pricing.validated["goal"] == "Tell me when a plan's price changes"
    assert pricing.validated["judgeEnabled"] is True
    assert items["row 6"].validated["schedule"]["cron"] == "0 9 * * *"


def test_csv_formulas_are_kept_as_text_and_bad_rows_are_explained():
    items = planned("csv", fixture("addresses.csv"), "addresses.csv")
    formula = items["row 3"]
    assert formula.validated["name"] == '=HYPERLINK("https://evil.example","click")'
    assert "spreadsheet formula" in notes_of(formula)
    too_often = items["row 4"]
    assert gap_of(too_often) == 5
    assert "“* * * * *” runs more often than Pagewatch checks" in notes_of(too_often)
    assert "Only http:// and https://" in items["row 5"].reason


@pytest.mark.parametrize(
    ("data", "filename"),
    [
        ("url;name\nhttps://a.example.com/;Café\n".encode(), "liste.csv"),
        ("url;name\nhttps://a.example.com/;Café\n".encode(), "liste.txt"),
        ("url,name\r\nhttps://a.example.com/,Café\r\n".encode("cp1252"), "l.csv"),
        ("url\tname\r\nhttps://a.example.com/\tCafé\r\n".encode("utf-16"), "l.txt"),
    ],
)
def test_a_spreadsheets_csv_is_read_whatever_it_was_saved_as(data, filename):
    (item,) = planned("csv", data, filename).values()
    assert item.label == "Café"
    assert item.validated["targets"][0]["urls"] == ["https://a.example.com/"]


def test_a_csv_from_another_tool_takes_its_name_column_and_names_the_rest():
    data = (
        b"URL,Description,Frequency,Mode\n"
        b"https://a.example.com/,Pricing page,Every day,Visual\n"
        b"https://b.example.com/,,,\n"
    )
    first, second = planned("csv", data, "visualping-jobs.csv").values()
    assert first.label == "Pricing page"
    assert first.notes == [
        "The frequency column (“Every day”) not imported: a list's columns are "
        "url, name, schedule, time zone and goal.",
        "The mode column (“Visual”) not imported: a list's columns are url, "
        "name, schedule, time zone and goal.",
        "No check interval given: checked every hour.",
    ]
    assert second.label == "https://b.example.com/"
    assert not any("column" in note for note in second.notes)


def test_a_plain_list_is_one_monitor_per_url_comments_skipped():
    items = planned("csv", fixture("addresses.txt"))
    assert [i.urls for i in items.values()] == [
        ["https://a.example.com/"],
        ["https://b.example.com/page"],
        ["javascript:alert(1)"],
    ]
    assert [i.importable for i in items.values()] == [True, True, False]


# --- shared --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "cron"),
    [
        (None, "0 * * * *"),
        (60, "*/5 * * * *"),
        (600, "*/10 * * * *"),
        (420, "*/10 * * * *"),
        (45 * 60, "0 * * * *"),
        (59 * 60, "0 * * * *"),
        (3 * 3600, "0 */3 * * *"),
        (5 * 3600, "0 */6 * * *"),
        (86400, "0 0 * * *"),
        (14 * 86400, "0 0 * * 0"),
    ],
)
def test_intervals_become_schedules_a_cron_can_keep(seconds, cron):
    assert schedule_for_seconds(seconds, [])["cron"] == cron


def test_an_interval_in_an_unknown_unit_is_named_and_checked_hourly():
    watching = {
        "w": {
            "url": "https://a.example.com/",
            "time_between_check_use_default": False,
            "time_between_check": {"fortnights": 2, "hours": "3", "days": None},
        },
        "x": {
            "url": "https://b.example.com/",
            "time_between_check_use_default": False,
            "time_between_check": {"fortnights": 2},
        },
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    items = planned("changedetection", data, "url-watches.json")
    assert gap_of(items["w"]) == 180
    unknown = (
        "Its check interval's “2 fortnights” is not imported: Pagewatch does not "
        "know that unit."
    )
    assert items["w"].notes == [unknown]
    assert gap_of(items["x"]) == 60
    assert items["x"].notes == [unknown, "No check interval given: checked every hour."]


def test_a_distill_schedule_it_cannot_keep_is_said_once():
    sieve = {"id": "s", "uri": "https://a.test/", "schedule": '{"type": "LIVE"}'}
    data = json.dumps({"data": [sieve]}).encode()
    item = planned("distill", data, "distill.json")["s"]
    assert gap_of(item) == 60
    assert item.notes == [
        "Schedule “LIVE” not imported, because Pagewatch runs checks on a timer: "
        "checked every hour."
    ]


@pytest.mark.parametrize(
    "interval",
    [{"weeks": "1e308"}, {"weeks": "1e308", "days": "1e308"}, {"days": 30}],
)
def test_an_interval_longer_than_a_week_is_checked_weekly_and_says_so(interval):
    watching = {
        "w": {
            "url": "https://a.example.com/",
            "time_between_check_use_default": False,
            "time_between_check": interval,
        }
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    item = planned("changedetection", data, "url-watches.json")["w"]
    assert item.importable
    assert gap_of(item) == 7 * 24 * 60
    assert item.notes == [
        "Checked less often than once a week there; it is checked every week "
        "(its schedule can be changed after the import)."
    ]


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), 10**400])
def test_an_absurd_interval_still_gives_a_schedule(seconds):
    schedule = schedule_for_seconds(seconds, [])
    assert schedule["cron"] in ("0 * * * *", "0 0 * * 0")


def test_a_45_minute_interval_is_checked_hourly_and_says_so():
    watching = {
        "w": {
            "url": "https://a.example.com/",
            "time_between_check_use_default": False,
            "time_between_check": {"minutes": 45},
        }
    }
    data = json.dumps({"watching": watching, "settings": {}}).encode()
    item = planned("changedetection", data, "url-watches.json")["w"]
    assert gap_of(item) == 60
    assert "Every 45 minutes is not a gap a schedule can keep evenly" in notes_of(item)
    csv = planned("csv", b"url,schedule\nhttps://a.example.com/,every 45 minutes\n")
    assert gap_of(csv["row 2"]) == 60


def test_sources_are_a_registry_of_their_classes():
    names = set(moving.sources())
    assert names == {
        "changedetection",
        "urlwatch",
        "distill",
        "firecrawl",
        "pagewatch",
        "csv",
    }
    for name, cls in moving.sources().items():
        assert cls.name == name and cls.label and cls.steps


def test_files_are_told_apart_by_name_and_content():
    assert moving.guess_source("backup.zip", backup_zip()) == "changedetection"
    assert moving.guess_source("urls.yaml", b"url: x") == "urlwatch"
    assert moving.guess_source("x.json", fixture("distill-export.json")) == "distill"
    export = json.dumps({"format": "pagewatch-export", "monitors": []}).encode()
    assert moving.guess_source("x.json", export) == "pagewatch"
    assert moving.guess_source("list.txt", b"https://a.example") == "csv"
    datastore = fixture("changedetection-backup/changedetection.json")
    assert moving.guess_source("url-watches.json", datastore) == "changedetection"


def test_a_backup_with_only_its_url_list_imports_the_addresses():
    from tests.moving import zip_files

    listed = fixture("changedetection-backup/url-list.txt")
    items = planned("changedetection", zip_files({"url-list.txt": listed}))
    assert [i.importable for i in items.values()] == [True, True, False, False]
    assert "only its list of addresses" in notes_of(items["row 1"])


def test_a_repeated_address_names_the_watch_above_it_and_a_watched_one_does_not():
    items = moving.read("csv", data=b"https://a.test/p\nhttps://a.test/p\n")
    team_urls: set[str] = set()
    plan.validate(items)
    plan.mark_duplicates_of(team_urls, items)
    first, second = items
    assert not first.duplicate
    assert second.duplicate and second.same_address_as == "https://a.test/p"
    assert second.as_dict()["sameAddressAs"] == "https://a.test/p"


def test_notes_quote_what_was_left_behind_as_written_not_as_python_strings():
    from monitors.moving.changedetection import draft_of

    watch = {
        "url": "https://a.test/",
        "include_filters": ["xpath://div[@id='x']", "json:$.price"],
        "ignore_text": [r"/(\d+ visitors/"],
    }
    notes = notes_of(draft_of("u", watch, {}))
    assert "XPath filter “xpath://div[@id='x']” not imported" in notes
    assert "JSON filter “json:$.price” not imported" in notes
    assert r"Ignored text “/(\d+ visitors/” not imported" in notes
    assert "\\\\" not in notes


@pytest.mark.parametrize(
    ("source", "data", "words"),
    [
        ("distill", b'{"monitors": []}',
         "The file is not a Distill export: it holds no list of monitors."),
        ("pagewatch", b'{"format": "other"}',
         "The file is not a Pagewatch export: upload the file Export gave."),
        ("pagewatch", b'{"format": "pagewatch-export"}',
         "The export holds no monitors."),
        ("urlwatch", b'{"watching": {"a": {"url": "https://a.test/"}}}',
         "The file holds no urlwatch jobs: it is not a urls.yaml. It looks like "
         "a file for “changedetection.io”: choose that instead."),
        ("distill", b'{"watching": {"a": {"url": "https://a.test/"}}}',
         "The file is not a Distill export: it holds no list of monitors. It "
         "looks like a file for “changedetection.io”: choose that instead."),
        ("csv", b"name: Prices\nurl: https://a.test/\n---\nurl: https://b.test/\n",
         "The file is not a list of addresses. It looks like a file for "
         "“urlwatch”: choose that instead."),
        ("csv", b'{"client": {}, "data": [{"uri": "https://a.test/"}]}',
         "The file is not a list of addresses. It looks like a file for "
         "“Distill”: choose that instead."),
        ("csv", b'{"some": "other tool"}', "The file is not a list of addresses."),
        ("csv", backup_zip(),
         "The file is not a list of addresses. It looks like a file for "
         "“changedetection.io”: choose that instead."),
        ("pagewatch", b'{"success": true, "data": [{"name": "A", "targets": [],'
         b' "schedule": {"cron": "0 * * * *"}}]}',
         "The file is not a Pagewatch export: upload the file Export gave. It "
         "looks like a file for “Firecrawl or another Pagewatch”: choose that "
         "instead."),
    ],
)  # fmt: skip
def test_a_file_of_another_kind_is_refused_in_plain_words(source, data, words):
    with pytest.raises(ImportRefused) as refused:
        moving.read(source, data=data, filename="x")
    assert refused.value.message == words
    assert '"' not in refused.value.message


def test_a_monitor_the_api_would_refuse_is_told_in_words_not_field_paths():
    base = {"name": "A", "schedule": {"cron": "0 * * * *"}}
    page = {"type": "scrape", "urls": ["https://a.test/"]}
    monitors = [
        base | {"id": "a", "targets": [page], "webhook": {"url": "http://10.0.0.1/"}},
        base
        | {
            "id": "b",
            "targets": [page | {"scrapeOptions": {"includeTags": ["##bad"]}}],
        },
        base | {"id": "c", "targets": [page], "ignoreLines": ["/(/"]},
        base | {"id": "d", "targets": [page], "retentionDays": 9999},
    ]
    data = json.dumps({"success": True, "data": monitors}).encode()
    reasons = {ref: i.reason for ref, i in planned("firecrawl", data).items()}
    assert reasons["a"].startswith("The webhook: Pagewatch can never connect")
    assert reasons["b"].startswith("The parts of the page to watch: '##bad'")
    assert reasons["c"].startswith("The lines to ignore: ")
    assert reasons["d"].startswith("How long its history is kept: ")
    assert not any("[0]" in reason for reason in reasons.values())


def test_a_saved_firecrawl_monitor_list_is_read_from_a_file():
    monitor = {
        "id": "mon_1",
        "name": "Pricing",
        "status": "paused",
        "schedule": {"cron": "*/30 * * * *", "timezone": "Europe/Berlin"},
        "targets": [{"id": "t1", "type": "scrape", "urls": ["https://a.test/p"]}],
        "goal": "Tell me when a plan's price changes",
        "createdAt": "2026-01-01T00:00:00Z",
    }
    listed = json.dumps({"success": True, "data": [monitor]}).encode()
    assert moving.guess_source("monitors.json", listed) == "firecrawl"
    item = planned("firecrawl", listed, "monitors.json")["mon_1"]
    assert item.importable and item.paused
    assert item.validated["schedule"] == {
        "cron": "*/30 * * * *",
        "timezone": "Europe/Berlin",
    }
    assert item.validated["goal"] == "Tell me when a plan's price changes"
    one = json.dumps({"success": True, "data": monitor}).encode()
    assert list(planned("firecrawl", one, "monitor.json")) == ["mon_1"]


def test_a_list_schedule_of_an_uneven_gap_is_rounded_up_as_intervals_are():
    listing = (
        b"url,schedule\n"
        b"https://a.test/7,every 7 minutes\n"
        b"https://a.test/5h,every 5 hours\n"
        b"https://a.test/moon,every blue moon\n"
    )
    items = planned("csv", listing, "list.csv")
    seven, five_hours, moon = items["row 2"], items["row 3"], items["row 4"]
    assert gap_of(seven) == 10
    assert "Every 7 minutes is not a gap a schedule can keep evenly" in notes_of(seven)
    assert gap_of(five_hours) == 6 * 60
    assert not moon.importable


@pytest.mark.parametrize("as_csv", [False, True])
def test_watches_past_the_most_one_import_takes_are_named_not_dropped(as_csv):
    from monitors.moving.base import MAX_ITEMS

    lines = [f"https://a.test/{n}" for n in range(MAX_ITEMS + 3)]
    data = ("url\n" if as_csv else "") + "\n".join(lines) + "\n"

    items = moving.read("csv", data=data.encode(), filename="x.csv" if as_csv else "")

    assert len(items) == MAX_ITEMS + 1
    last = items[-1]
    assert not last.importable and last.payload is None
    assert last.reason == (
        "Not read: one import takes at most 5,000 watches. Import the rest "
        "from a second file holding only them."
    )
    assert last.label == "The watches after the first 5,000"


def test_distill_alerts_point_to_the_channels_page():
    from monitors.moving.distill import _draft

    sieve = {"uri": "https://a.test/", "name": "A", "actions": [{"type": "email"}]}
    draft = _draft(1, sieve)
    assert (
        "Alerts and actions not imported: add a channel on the Channels page "
        "and pick it in this monitor's form." in notes_of(draft)
    )


# --- spreading imported intervals ----------------------------------------------------


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


def test_watches_of_the_same_interval_are_spread_over_it_not_run_at_once():
    from collections import Counter

    items = planned("changedetection", _every_three_hours(200), "url-watches.json")
    crons = [item.validated["schedule"]["cron"] for item in items.values()]
    minutes = Counter(cron.split()[0] for cron in crons)
    hours = Counter(cron.split()[1] for cron in crons)
    # 200 watches over 60 minutes: about 3 each, none piled up.
    assert len(minutes) >= 45
    assert max(minutes.values()) <= 10
    # ... and over the 3 hours of the gap as well.
    assert len(hours) == 3


def test_a_reader_leaves_spreading_to_the_team_it_is_imported_for():
    data = _every_three_hours(20)
    read = moving.read("changedetection", data=data, filename="url-watches.json")
    assert {item.payload["schedule"]["cron"] for item in read} == {"0 */3 * * *"}
    plan.spread_for(Team(slug="acme"), read)
    spread = [item.payload["schedule"]["cron"] for item in read]
    assert len(set(spread)) > 10
    assert spread == [
        item.validated["schedule"]["cron"]
        for item in planned("changedetection", data, "url-watches.json").values()
    ]


def test_a_spread_schedule_keeps_the_interval_exactly():
    items = planned("changedetection", _every_three_hours(200), "url-watches.json")
    moment = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    gaps = {
        shortest_interval_minutes(item.validated["schedule"]["cron"], moment)
        for item in items.values()
    }
    assert gaps == {180}


def test_the_same_watch_imported_twice_gets_the_same_schedule():
    first = planned("changedetection", _every_three_hours(20), "url-watches.json")
    again = planned("changedetection", _every_three_hours(20), "url-watches.json")
    assert [i.validated["schedule"] for i in first.values()] == [
        i.validated["schedule"] for i in again.values()
    ]


@pytest.mark.parametrize(
    "seconds", [None, 300, 1800, 3600, 3 * 3600, 86400, 14 * 86400]
)
def test_every_interval_is_spread_and_kept(seconds):
    moment = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    crons = {
        schedule_for_seconds(seconds, [], f"https://{n}.example/")["cron"]
        for n in range(100)
    }
    assert len(crons) > 1
    wanted = {None: 60, 14 * 86400: 7 * 1440}.get(seconds, (seconds or 0) // 60)
    assert {shortest_interval_minutes(cron, moment) for cron in crons} == {wanted}


def test_a_list_schedule_in_everyday_words_is_read_as_a_phrase_not_cron():
    listing = (
        b"url,schedule\n"
        b"https://a.test/1,9am daily\n"
        b"https://a.test/2,every weekday at 9 am\n"
        b"https://a.test/3,twice a day\n"
    )
    items = planned("csv", listing, "list.csv")

    crons = [items[f"row {n}"].validated["schedule"]["cron"] for n in (2, 3, 4)]
    assert crons == ["0 9 * * *", "0 9 * * 1-5", "0 */12 * * *"]
