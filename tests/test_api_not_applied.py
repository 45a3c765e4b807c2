"""scrapeOptions Pagewatch validates and keeps but does not act on are said,
never silently dropped: each page of a check lists them in
`metadata.notApplied`, as the README's "Not built yet" promises."""

from __future__ import annotations

import pytest

from monitors.models import Monitor
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
