"""scrapeOptions Pagewatch validates and keeps but does not act on are said,
never silently dropped: each page of a check lists them in
`metadata.notApplied`, as the README's "Not built yet" promises."""

from __future__ import annotations

from typing import Any

import pytest
from firecrawl import Firecrawl
from firecrawl.v2.types import MonitorTarget, RedactPIIOptions, ScrapeOptions

from monitors.models import Monitor, Target
from tests.test_runner import run_check

pytestmark = pytest.mark.django_db

UNAPPLIED = {
    "onlyCleanContent": True,
    "lockdown": True,
    "redactPII": True,
    "profile": {"name": "shop-login"},
    "threatProtection": {"mode": "block"},
}


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def test_options_pagewatch_keeps_but_does_not_apply_are_listed_on_each_page(api, site):
    url = site.html("/p", "P", "<p>x</p>")
    created = api.post(
        "/v2/monitor",
        {
            "name": "Pricing",
            "schedule": {"text": "every 30 minutes"},
            "targets": [{"type": "scrape", "urls": [url], "scrapeOptions": UNAPPLIED}],
        },
        format="json",
    )
    assert created.status_code == 200, created.content
    monitor_id = created.json()["data"]["id"]

    check = run_check(Monitor.objects.get(pk=monitor_id))
    answer = api.get(f"/v2/monitor/{monitor_id}/checks/{check.pk}")

    page = answer.json()["data"]["pages"][0]
    assert page["status"] == "new"
    assert page["metadata"]["notApplied"] == list(UNAPPLIED)


@pytest.mark.parametrize(
    "options",
    [
        {"onlyCleanContent": False, "lockdown": False, "redactPII": False},
        {},
    ],
)
def test_those_options_switched_off_or_left_out_are_not_listed(api, site, options):
    url = site.html("/p", "P", "<p>x</p>")
    created = api.post(
        "/v2/monitor",
        {
            "name": "Pricing",
            "schedule": {"text": "every 30 minutes"},
            "targets": [{"type": "scrape", "urls": [url], "scrapeOptions": options}],
        },
        format="json",
    )
    monitor_id = created.json()["data"]["id"]

    check = run_check(Monitor.objects.get(pk=monitor_id))

    assert "notApplied" not in check.pages.get().metadata


# ------------------------------------------- what is not applied is not charged


@pytest.fixture
def sdk(live_server, api_key) -> Firecrawl:
    return Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)


def scrape_target(url: str, **options: Any) -> MonitorTarget:
    return MonitorTarget(
        type="scrape", urls=[url], scrape_options=ScrapeOptions(**options)
    )


@pytest.mark.django_db(transaction=True)
def test_a_lockdown_page_is_charged_as_a_page_fetched_live(sdk, site):
    # Firecrawl prices lockdown +4 because it serves the page from its cache;
    # Pagewatch fetches it live and lists lockdown as not applied, so the
    # estimate and the charge are those of a plain page.
    url = site.html("/p", "P", "<p>x</p>")
    monitor = sdk.create_monitor(
        name="Pricing",
        schedule={"text": "every 30 minutes"},
        targets=[scrape_target(url, lockdown=True)],
    )

    assert monitor.estimated_credits_per_month == 1 * 48 * 30
    check = run_check(Monitor.objects.get(pk=monitor.id))
    page = sdk.get_monitor_check(monitor.id, check.pk).pages[0]
    assert page.metadata["notApplied"] == ["lockdown"]
    assert page.metadata["creditsUsed"] == 1
    check.refresh_from_db()
    assert check.actual_credits == 1


@pytest.mark.django_db(transaction=True)
def test_redact_pii_as_the_sdk_types_its_object_is_stored_and_listed(sdk, site):
    url = site.html("/p", "P", "<p>x</p>")
    redact = RedactPIIOptions(mode="fast", entities=["EMAIL"], replace_style="mask")

    monitor = sdk.create_monitor(
        name="Pricing",
        schedule={"text": "every 30 minutes"},
        targets=[scrape_target(url, redact_pii=redact)],
    )

    given = {"mode": "fast", "entities": ["EMAIL"], "replaceStyle": "mask"}
    stored = Target.objects.get(monitor_id=monitor.id).scrape_options
    assert stored["redactPII"] == given
    assert monitor.targets[0]["scrapeOptions"]["redactPII"] == given
    check = run_check(Monitor.objects.get(pk=monitor.id))
    page = sdk.get_monitor_check(monitor.id, check.pk).pages[0]
    assert page.metadata["notApplied"] == ["redactPII"]


@pytest.mark.parametrize(
    "redact",
    [
        {"mode": "thorough"},
        {"entities": ["SSN"]},
        {"replaceStyle": "blur"},
        {"mode": "fast", "colour": "red"},
        "yes",
        1,
    ],
)
def test_redact_pii_in_a_shape_firecrawl_refuses_is_a_400(api, redact):
    response = api.post(
        "/v2/monitor",
        {
            "name": "Pricing",
            "schedule": {"text": "every 30 minutes"},
            "targets": [
                {
                    "type": "scrape",
                    "urls": ["https://example.com/"],
                    "scrapeOptions": {"redactPII": redact},
                }
            ],
        },
        format="json",
    )

    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith("targets[0].scrapeOptions.redactPII")
    assert Monitor.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_scrape_options_pagewatch_does_not_know_are_listed_as_kept(sdk, site):
    # As unknown crawlOptions are on the target's result. firecrawl-py (4.55)
    # sends a monitor target's options by their Python names, and an unknown
    # one is kept, echoed and listed under the name it came by.
    url = site.html("/p", "P", "<p>x</p>")
    monitor = sdk.create_monitor(
        name="Fast",
        schedule={"text": "every 30 minutes"},
        targets=[scrape_target(url, fast_mode=True)],
    )

    check = run_check(Monitor.objects.get(pk=monitor.id))

    assert Target.objects.get(monitor_id=monitor.id).scrape_options == {
        "fast_mode": True
    }
    page = sdk.get_monitor_check(monitor.id, check.pk).pages[0]
    assert page.metadata["notApplied"] == ["fast_mode"]


def test_unknown_scrape_options_set_to_false_or_null_are_not_listed(api, site):
    # firecrawl-py's typed ScrapeOptions carry fastMode: false as a default:
    # false and null ask for nothing.
    url = site.html("/p", "P", "<p>x</p>")
    options = {"fastMode": False, "useMock": None, "onlyMainContent": True}
    created = api.post(
        "/v2/monitor",
        {
            "name": "Pricing",
            "schedule": {"text": "every 30 minutes"},
            "targets": [{"type": "scrape", "urls": [url], "scrapeOptions": options}],
        },
        format="json",
    )
    monitor = Monitor.objects.get(pk=created.json()["data"]["id"])

    page = run_check(monitor).pages.get()

    assert Target.objects.get(monitor=monitor).scrape_options == options
    assert page.status == "new"
    assert "notApplied" not in page.metadata


def test_unknown_scrape_options_follow_the_ones_pagewatch_knows(api, site):
    url = site.html("/p", "P", "<p>x</p>")
    options = {"shinyNewOption": {"on": True}, "lockdown": True, "proxy": "stealth"}
    created = api.post(
        "/v2/monitor",
        {
            "name": "Pricing",
            "schedule": {"text": "every 30 minutes"},
            "targets": [{"type": "scrape", "urls": [url], "scrapeOptions": options}],
        },
        format="json",
    )
    monitor = Monitor.objects.get(pk=created.json()["data"]["id"])

    page = run_check(monitor).pages.get()

    assert page.metadata["notApplied"] == ["lockdown", "proxy", "shinyNewOption"]


@pytest.mark.parametrize(
    ("parser", "engine", "listed"),
    [
        ({"type": "pdf", "mode": "ocr"}, "/nowhere/tesseract", True),
        ({"type": "pdf", "mode": "auto"}, "/nowhere/tesseract", True),
        ({"type": "pdf", "mode": "ocr"}, "/bin/true", False),
        ({"type": "pdf", "mode": "fast", "maxPages": 3}, "/nowhere/tesseract", False),
        ("pdf", "/nowhere/tesseract", False),
    ],
)
def test_a_pdf_parser_asking_for_text_read_from_images_is_listed_without_ocr(
    api, site, settings, parser, engine, listed
):
    settings.OCR_EXECUTABLE = engine  # any program stands for an installed one
    url = site.html("/p", "P", "<p>x</p>")
    created = api.post(
        "/v2/monitor",
        {
            "name": "Price list",
            "schedule": {"text": "every 30 minutes"},
            "targets": [
                {
                    "type": "scrape",
                    "urls": [url],
                    "scrapeOptions": {"parsers": [parser]},
                }
            ],
        },
        format="json",
    )
    assert created.status_code == 200, created.content
    monitor_id = created.json()["data"]["id"]

    check = run_check(Monitor.objects.get(pk=monitor_id))
    page = api.get(f"/v2/monitor/{monitor_id}/checks/{check.pk}").json()["data"]

    skipped = page["pages"][0]["metadata"].get("notApplied", [])
    assert ("parsers.mode" in skipped) is listed


@pytest.mark.parametrize(
    ("parser", "words"),
    [
        ({"type": "pdf", "maxPages": 0}, "maxPages must be a whole number from 1"),
        ({"type": "pdf", "maxPages": "5"}, "maxPages must be a whole number from 1"),
        ({"type": "pdf", "maxPages": True}, "maxPages must be a whole number from 1"),
        ({"type": "pdf", "mode": "smart"}, 'mode must be "fast", "auto" or "ocr"'),
    ],
)
def test_a_pdf_parser_with_a_bad_max_pages_or_mode_is_a_400(api, parser, words):
    answer = api.post(
        "/v2/monitor",
        {
            "name": "Price list",
            "schedule": {"text": "every 30 minutes"},
            "targets": [
                {
                    "type": "scrape",
                    "urls": ["https://example.com/prices.pdf"],
                    "scrapeOptions": {"parsers": [parser]},
                }
            ],
        },
        format="json",
    )

    assert answer.status_code == 400
    assert words in answer.json()["error"]
