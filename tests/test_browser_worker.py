"""Browser pages through real Celery workers: a plain worker and a browser
worker on its own queue (as `make run` starts them), against Redis and
PostgreSQL, driven through the official Python SDK.

Needs Redis, PostgreSQL (see tests/test_worker_integration.py) and Chromium;
skips with the reason without them (CI=true: fails)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from checks.models import PageResult
from tests.sites import Site
from tests.test_browser_pages import APP, CHROMIUM
from tests.test_worker_integration import (  # noqa: F401 - fixtures
    Worker,
    broker,
    by_url,
    database_url,
    redis_url,
    run_and_wait,
    sdk,
    wait_for,
    worker_env,
    worker_sessions,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def workers(
    broker: str,  # noqa: F811
    database_url: str,  # noqa: F811
    tmp_path: Path,
) -> Iterator[tuple[Worker, Worker]]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium")
    env = worker_env(broker, database_url, tmp_path) | {"BROWSER_QUEUE": "browser"}
    # As make run starts it: the plain worker names its queues, never "browser".
    plain = Worker(env, tmp_path / "worker.log", "-Q", "celery,upkeep")
    browser = Worker(env, tmp_path / "browser.log", "-Q", "browser")
    try:
        plain.wait_ready()
        browser.wait_ready()
        yield plain, browser
    finally:
        plain.stop()
        browser.stop()
        wait_for(lambda: worker_sessions() == 0, "the workers' sessions to end")


def test_browser_pages_go_to_the_browser_worker_and_come_back_rendered(
    sdk,  # noqa: F811
    workers,
    live_server,
):
    plain, browser = workers
    with Site() as site:
        app = site.page("/", APP)
        pictured = site.html("/shot", "Shot", "<h1>Picture this</h1>")
        docs = site.html("/docs", "Docs", "<p>" + "Written out in full. " * 20 + "</p>")
        monitor = sdk.create_monitor(
            name="Browser",
            schedule={"cron": "0 3 * * *"},
            targets=[
                {"type": "scrape", "urls": [docs, app]},
                {
                    "type": "scrape",
                    "urls": [pictured],
                    "scrapeOptions": {"formats": ["markdown", "screenshot"]},
                },
            ],
        )

        first = run_and_wait(sdk, monitor.id, plain)
        second = run_and_wait(sdk, monitor.id, plain)

    assert first.status == "completed", plain.log() + browser.log()
    pages = by_url(first)
    assert pages[docs].metadata["fetchedWith"] == "http"
    assert pages[app].metadata["fetchedWith"] == "browser"
    rendered = PageResult.objects.get(check_run_id=first.id, url=app)
    assert "Starter costs $19" in rendered.current_snapshot.text
    link = pages[pictured].metadata["screenshot"]
    assert link.startswith(live_server.url.replace("localhost", "127.0.0.1")) or (
        "/captures/" in link
    )
    shot = httpx.get(live_server.url + link[link.index("/captures/") :])
    assert shot.status_code == 200 and shot.content.startswith(b"\x89PNG")
    again = by_url(second)
    assert again[app].status == "same"
    assert "earlier check" in again[app].metadata["fetchedWithReason"]
    assert "Started Chromium" in browser.log()
    assert "Started Chromium" not in plain.log()
