"""GET /metrics: Prometheus's text format behind METRICS_TOKEN, computed from
the database, so its counters move as checks run in any worker."""

from __future__ import annotations

import logging
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from checks.metrics import DatabaseCollector
from tests.test_history import make_check, make_page
from tests.test_history import make_monitor as history_monitor
from tests.test_runner import make_monitor, run_check

pytestmark = pytest.mark.django_db

TOKEN = "m" * 40


@pytest.fixture
def metrics_on(settings, redis_server):
    settings.METRICS_TOKEN = TOKEN
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def scrape(client: Client) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one scrape."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def test_counters_move_when_checks_run(client, metrics_on, team, site):
    urls = [site.html(f"/{n}", f"P{n}", f"<p>{n}</p>") for n in range(3)]
    monitor = make_monitor(team, urls)
    before = scrape(client)

    run_check(monitor)
    after = scrape(client)

    def moved(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert moved("pagewatch_checks_total", status="completed", trigger="manual") == 1
    assert moved("pagewatch_pages_total", status="new") == 3
    assert moved("pagewatch_check_duration_seconds_count") == 1
    assert moved("pagewatch_check_duration_seconds_bucket", le="+Inf") == 1
    assert moved("pagewatch_check_queue_wait_seconds_count") == 1
    assert after[("pagewatch_check_duration_seconds_sum", ())] > 0


def test_every_promised_family_is_there(client, metrics_on, team):
    families = {
        family.name
        for family in text_string_to_metric_families(
            client.get(
                "/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
            ).content.decode()
        )
    }

    assert families >= {
        "pagewatch_checks", "pagewatch_pages", "pagewatch_deliveries",
        "pagewatch_check_duration_seconds", "pagewatch_check_queue_wait_seconds",
        "pagewatch_judge_calls", "pagewatch_search_calls", "pagewatch_browser_pages",
        "pagewatch_browser_failures", "pagewatch_monitors_due_not_dispatched",
        "pagewatch_scheduler_lag_seconds", "pagewatch_last_seen_seconds",
        "pagewatch_queue_depth",
    }  # fmt: skip


def test_due_monitors_nobody_dispatched_show_as_scheduler_lag(
    client, metrics_on, team, time_machine
):
    now = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    time_machine.move_to(now, tick=False)
    monitor = make_monitor(team, ["https://example.com/"])
    type(monitor).objects.filter(pk=monitor.pk).update(
        next_run_at=now - timedelta(seconds=90)
    )

    samples = scrape(client)

    assert samples[("pagewatch_monitors_due_not_dispatched", ())] == 1
    assert samples[("pagewatch_scheduler_lag_seconds", ())] == 90


def test_without_a_token_configured_there_is_no_such_page(client, settings):
    settings.METRICS_TOKEN = ""

    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer x").status_code == 404


@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", f"Basic {TOKEN}", TOKEN, "Bearer "]
)
def test_a_missing_or_wrong_token_gets_401(client, metrics_on, header):
    extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}

    response = client.get("/metrics", **extra)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"pagewatch_" not in response.content


def test_every_metric_the_readme_names_or_alerts_on_is_rendered(metrics_on, team):
    """The metric names in "Monitoring Pagewatch" (its list and its sample
    alert rules) are families /metrics renders, with the labels the alerts
    select on, so an alert copied from the README cannot watch a series that
    never exists."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Monitoring Pagewatch", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"\b(pagewatch_[a-z_]+)", section))
    alerted = section.split("# pagewatch-alerts.yml", 1)[1]
    selectors = set(re.findall(r"\b(pagewatch_[a-z_]+)(?:\{([^}]*)\})?", alerted))
    # What /metrics renders, label names included even for a family without
    # rows yet (no samples to read them from). A query names a counter with
    # _total, a histogram by its family.
    labels_of = {}
    for family in DatabaseCollector(datetime.now(UTC)).collect():
        suffix = "_total" if family.type == "counter" else ""
        labels_of[family.name + suffix] = set(family._labelnames)

    assert len(named) > 10 and selectors  # the section is still found
    assert sorted(named - set(labels_of)) == []
    for name, labels in selectors:
        wanted = set(re.findall(r'(\w+)="[^"]*"', labels))
        assert wanted <= labels_of[name], (name, wanted)


def test_a_failed_delivery_series_is_there_at_zero_before_the_first_failure(
    client, metrics_on, team
):
    """The README's alert is increase(pagewatch_deliveries_total{outcome=
    "failed"}[30m]) > 0; Prometheus sees no increase in a series whose first
    sample is already 1, so the first delivery to fail for good would never
    alert unless the series was there, at 0, before it."""
    samples = scrape(client)

    for kind in ("firecrawl_webhook", "email", "webhook", "slack"):
        key = (
            "pagewatch_deliveries_total",
            (("kind", kind), ("outcome", "failed")),
        )
        assert samples.get(key) == 0, kind
    assert (
        "pagewatch_checks_total",
        (("status", "failed"), ("trigger", "scheduled")),
    ) in samples


def test_an_unreachable_broker_leaves_out_the_queue_depths_quickly_and_in_one_line(
    client, metrics_on, settings, tmp_path, caplog, monkeypatch
):
    """While Redis is down the scrape is what an operator needs most: it
    answered after six seconds per queue (24 s, past Prometheus's 10 s scrape
    time-out, so every series was lost) with a traceback for each queue."""
    from celery import current_app

    dead = f"unix://{tmp_path}/nobody.sock?db=0"
    settings.REDIS_LOCATION = dead
    monkeypatch.setattr(
        current_app.conf, "broker_url", f"redis+socket://{tmp_path}/nobody.sock"
    )
    started = time.monotonic()

    with caplog.at_level("WARNING"):
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert time.monotonic() - started < 5
    assert response.status_code == 200
    families = {
        f.name: f for f in text_string_to_metric_families(response.content.decode())
    }
    assert families["pagewatch_queue_depth"].samples == []
    assert {"pagewatch_checks", "pagewatch_last_seen_seconds"} <= set(families)
    said = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(said) == 1
    assert said[0].exc_info is None


def test_an_unreachable_database_is_a_503_and_one_line_in_the_log(
    client, metrics_on, monkeypatch, caplog
):
    """Django added "Service Unavailable: /metrics" at ERROR to the view's
    own line, on every scrape for as long as the database was down."""

    def refuse(self: object) -> None:
        raise OperationalError("connection failed: connection to server refused")

    monkeypatch.setattr(DatabaseCollector, "collect", refuse)

    with caplog.at_level("INFO"):
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 503
    [said] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (said.name, said.levelname) == ("config.views", "WARNING")
    assert said.exc_info is None


def test_prometheus_scraping_a_web_host_by_its_address_gets_the_metrics(
    client, metrics_on, settings
):
    """Scraping each web host names that host, not the public name."""
    settings.ALLOWED_HOSTS = ["pagewatch.example.com"]

    response = client.get(
        "/metrics", HTTP_HOST="10.1.2.3:8000", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    refused = client.get("/metrics", HTTP_HOST="10.1.2.3:8000")

    assert response.status_code == 200
    assert b"pagewatch_checks_total" in response.content
    assert refused.status_code == 401


def test_with_no_token_set_metrics_is_missing_on_any_host(client, settings):
    settings.ALLOWED_HOSTS = ["pagewatch.example.com"]

    assert client.get("/metrics", HTTP_HOST="10.1.2.3:8000").status_code == 404


def test_changed_pages_are_counted_by_what_the_judge_made_of_them(
    client, metrics_on, team
):
    check = make_check(history_monitor(team), datetime.now(UTC), changed=4, new=1)
    for index, verdict in enumerate(("meaningful", "noise", "noise", "not_judged")):
        page = make_page(check, f"https://e.com/{index}")
        page.verdict = verdict
        page.save(update_fields=["verdict"])
    make_page(check, "https://e.com/added", status="new")

    counted = scrape(client)

    def changes(verdict: str) -> float:
        return counted[("pagewatch_changes_total", (("verdict", verdict),))]

    assert changes("meaningful") == 1
    assert changes("noise") == 2
    assert changes("not_judged") == 1
    assert changes("not_judging") == 0


def test_a_scrape_counts_pages_by_status_and_changes_by_verdict_in_one_query(
    client, metrics_on, team
):
    check = make_check(history_monitor(team), datetime.now(UTC), changed=2, new=1)
    page = make_page(check, "https://e.com/changed")
    page.verdict = "noise"
    page.save(update_fields=["verdict"])
    make_page(check, "https://e.com/added", status="new")

    with CaptureQueriesContext(connection) as queries:
        counted = scrape(client)

    grouped = [
        q["sql"]
        for q in queries
        if "checks_pageresult" in q["sql"] and "GROUP BY" in q["sql"].upper()
    ]
    assert len(grouped) == 1
    assert counted[("pagewatch_pages_total", (("status", "changed"),))] == 1
    assert counted[("pagewatch_pages_total", (("status", "new"),))] == 1
    assert counted[("pagewatch_changes_total", (("verdict", "noise"),))] == 1
    assert counted[("pagewatch_changes_total", (("verdict", "meaningful"),))] == 0
