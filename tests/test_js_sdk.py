"""The official Firecrawl JS SDK (@mendable/firecrawl-js) and the `firecrawl` CLI
(firecrawl-cli), unmodified, against a live Pagewatch.

Versions are pinned in tests/js/package.json (installed by `make test`, which
runs `npm ci --prefix tests/js` when npm exists). tests/js/drive_sdk.mjs runs
the SDK scenario and prints one JSON line per step; the assertions live here.

What these clients do on the wire (reference §2.1):
* JS SDK: success only on exactly HTTP 200 + `success` + non-null `data`
  (DELETE: 200 + `success`); `origin: "js-sdk@<version>"` is added to every
  POST/PATCH body (run's `{}` too); errors become SdkError with
  message = body.error, status, code = body.code, details = body.details.
* CLI: plain fetch, header `X-Origin: cli`, no `origin`, and no body at all on
  `monitor run`. Base URL and key come from FIRECRAWL_API_URL /
  FIRECRAWL_API_KEY (or --api-url / --api-key); a non-2xx or `success: false`
  prints `Error: <body.error>` on stderr and exits 1.

Checks run inline: `enqueue` is replaced so a queued check runs right after
its transaction commits, against pages served on 127.0.0.1 (tests/sites.py).

Without node or tests/js/node_modules these tests skip with the reason, except
under CI=true, where a missing toolchain is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import transaction
from django.utils import timezone

from checks import dispatch, runner
from checks.models import Check, PageResult
from checks.notify import outbox
from monitors.models import Monitor, Target
from tests.proxy import SubPathProxy
from tests.sites import Site

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

JS_DIR = Path(__file__).resolve().parent / "js"
CLI = JS_DIR / "node_modules" / ".bin" / "firecrawl"
DRIVER = JS_DIR / "drive_sdk.mjs"
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
TIMEOUT = 60


def _pinned(package: str) -> str:
    return json.loads((JS_DIR / "package.json").read_text())["dependencies"][package]


def missing_packages(*packages: str) -> str | None:
    """Why node or one of these pinned packages cannot be used, or None."""
    if shutil.which("node") is None:
        # Node 20 is what this machine and CI run them on; firecrawl-js and
        # firecrawl-mcp declare 22 in their engines, but pass on 20.
        return (
            "node is not installed: the JS SDK, CLI and MCP tests run the pinned "
            "packages with Node 20 or newer (firecrawl-js and firecrawl-mcp ask "
            "for 22, and pass on 20)"
        )
    for package in packages:
        manifest = JS_DIR / "node_modules" / package / "package.json"
        if not manifest.exists():
            return (
                f"{package} is not installed in tests/js/node_modules; "
                "run `npm ci --prefix tests/js` (make test does it when npm exists)"
            )
        installed = json.loads(manifest.read_text())["version"]
        if installed != _pinned(package):
            return (
                f"tests/js/node_modules has {package} {installed}, package.json pins "
                f"{_pinned(package)}; run `npm ci --prefix tests/js`"
            )
    return None


def _missing_toolchain() -> str | None:
    reason = missing_packages("@mendable/firecrawl-js", "firecrawl-cli")
    if reason is None and not CLI.exists():
        return "tests/js/node_modules/.bin/firecrawl is missing; run npm ci again"
    return reason


def require_toolchain(reason: str | None) -> None:
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the JS toolchain is missing: {reason}")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def toolchain() -> None:
    require_toolchain(_missing_toolchain())


@pytest.fixture
def site():
    with Site() as running:
        running.page("/a", "<h1>Plans</h1><p>Starter costs $19 a month.</p>")
        running.page("/b", "<h1>Blog</h1><p>Nothing new yet.</p>")
        yield running


@pytest.fixture
def checks_run_inline(monkeypatch, settings) -> list[str]:
    """Queued checks run as soon as their transaction commits (in the live
    server's request thread, before the response), against 127.0.0.1."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    ran: list[str] = []

    def run_after_commit(check_id: uuid.UUID) -> None:
        def run() -> None:
            ran.append(str(check_id))
            runner.run(Check.objects.get(pk=check_id))

        transaction.on_commit(run)

    monkeypatch.setattr(dispatch, "enqueue", run_after_commit)
    # Notifications stay rows; nothing is put on the real broker.
    monkeypatch.setattr(outbox, "enqueue", lambda delivery_id: None)
    return ran


def node_env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("FIRECRAWL_")
    }
    env.update(
        FIRECRAWL_NO_UPDATE_CHECK="1",  # the CLI would ask the npm registry
        FIRECRAWL_NO_TELEMETRY="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


# ------------------------------------------------------------------ the JS SDK


def drive(api_url: str, api_key: str, urls: list[str], home: Path) -> dict[str, dict]:
    result = subprocess.run(
        [
            "node",
            str(DRIVER),
            "--api-url",
            api_url,
            "--api-key",
            api_key,
            "--urls",
            ",".join(urls),
        ],
        cwd=JS_DIR,
        env=node_env(HOME=str(home)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    steps = {}
    for line in result.stdout.splitlines():
        entry = json.loads(line)
        steps[entry["step"]] = entry
    assert "done" in steps, result.stdout + result.stderr
    return steps


def ok(steps: dict[str, dict], name: str) -> Any:
    entry = steps[name]
    assert entry["ok"], f"{name}: {entry}"
    return entry["value"]


def sdk_error(steps: dict[str, dict], name: str) -> dict[str, Any]:
    entry = steps[name]
    assert not entry["ok"], f"{name} should have failed: {entry}"
    error = entry["error"]
    assert error["name"] == "FirecrawlSdkError", f"{name}: {error}"
    return error


def test_js_sdk_drives_monitors_and_checks(
    live_server, api_key, team, site, checks_run_inline, tmp_path
):
    urls = [site.url("/a"), site.url("/b")]
    steps = drive(live_server.url, api_key, urls, tmp_path)
    assert ok(steps, "sdk")["version"] == _pinned("@mendable/firecrawl-js")

    # create: text schedule normalised to cron, the zone kept, defaults filled.
    created = ok(steps, "create")
    assert created["status"] == "active"
    assert created["schedule"] == {"cron": "*/30 * * * *", "timezone": "Europe/Berlin"}
    assert created["nextRunAt"] is not None
    assert created["retentionDays"] == 14
    assert created["estimatedCreditsPerMonth"] == 1440
    assert (created["goal"], created["judgeEnabled"]) == (None, False)
    [target] = created["targets"]
    assert target["type"] == "scrape"
    assert target["urls"] == [urls[0]]
    uuid.UUID(target["id"])
    second = ok(steps, "create_second")
    assert second["schedule"] == {"cron": "0 * * * *", "timezone": "UTC"}
    crawl, search = second["targets"]
    assert crawl["crawlOptions"] == {"limit": 5}
    assert (search["maxResults"], search["searchWindow"]) == (5, "7d")
    assert (second["goal"], second["judgeEnabled"]) == ("New Pagewatch releases", True)
    assert second["webhook"] == {
        "url": "https://hooks.example.com/pw",
        "headers": {"Authorization": "Bearer hook-secret"},
        "metadata": {"env": "test"},
        "events": ["monitor.check.completed"],
    }
    assert second["notification"]["email"]["recipients"] == ["alerts@example.com"]
    [subscription] = second["emailRecipientSubscriptions"]
    assert (subscription["email"], subscription["status"]) == (
        "alerts@example.com",
        "pending",
    )

    # list: newest first, limit/offset paging, this team's monitors only.
    assert [m["id"] for m in ok(steps, "list")] == [second["id"], created["id"]]
    assert [m["id"] for m in ok(steps, "list_page_1")] == [second["id"]]
    assert [m["id"] for m in ok(steps, "list_page_2")] == [created["id"]]
    assert ok(steps, "list_past_end") == []

    assert ok(steps, "get") == created

    # pause / resume.
    paused = ok(steps, "pause")
    assert (paused["status"], paused["nextRunAt"]) == ("paused", None)
    resumed = ok(steps, "resume")
    assert resumed["status"] == "active"
    assert resumed["nextRunAt"] is not None

    # schedule text without a zone keeps the monitor's zone.
    rescheduled = ok(steps, "reschedule")
    assert rescheduled["schedule"] == {"cron": "0 9 * * *", "timezone": "Europe/Berlin"}
    next_run = datetime.fromisoformat(rescheduled["nextRunAt"])
    local = next_run.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (9, 0)

    # targets sent back with their id keep it; new ones get a new id.
    kept, added = ok(steps, "retarget")["targets"]
    assert kept["id"] == target["id"]
    assert kept["urls"] == urls
    assert added["id"] != target["id"]
    [back] = ok(steps, "retarget_back")["targets"]
    assert back == kept

    with_goal = ok(steps, "set_goal")
    assert (with_goal["goal"], with_goal["judgeEnabled"]) == (
        "Tell me when a price changes",
        True,
    )
    cleared = ok(steps, "clear_goal")
    assert (cleared["goal"], cleared["judgeEnabled"]) == (None, False)

    # errors surface as SdkError carrying our status, message, code, details.
    invalid = sdk_error(steps, "create_search_without_goal")
    assert invalid["status"] == 400
    assert invalid["code"] == "BAD_REQUEST"
    assert invalid["message"].startswith(
        "goal: A search target requires a non-empty goal"
    )
    assert invalid["details"][0]["path"] == ["goal"]
    empty = sdk_error(steps, "update_empty")
    assert (empty["status"], empty["message"]) == (400, "Update body cannot be empty.")
    for name in ("get_unknown", "get_malformed", "update_unknown", "delete_unknown"):
        missing = sdk_error(steps, name)
        assert (missing["status"], missing["message"]) == (404, "Monitor not found")
    unauthorized = sdk_error(steps, "wrong_key")
    assert unauthorized["status"] == 401
    assert unauthorized["code"] == "UNAUTHORIZED"
    assert "Invalid token" in unauthorized["message"]

    # checks: a paused monitor refuses to run; run queues a manual check.
    refused = sdk_error(steps, "run_paused")
    assert refused["status"] == 409
    assert refused["message"] == "Monitor is paused. Resume it before running a check."
    queued = ok(steps, "run")
    assert (queued["status"], queued["trigger"]) == ("queued", "manual")
    assert queued["monitorId"] == created["id"]
    assert queued["summary"] == dict.fromkeys(
        ("totalPages", "same", "changed", "new", "removed", "error"), 0
    )
    assert checks_run_inline == [queued["id"]]
    [listed] = ok(steps, "list_checks")
    assert listed["id"] == queued["id"]
    assert listed["status"] == "completed"
    assert listed["summary"]["totalPages"] == 2
    assert listed["summary"]["new"] == 2
    assert ok(steps, "list_checks_past_end") == []

    # check detail: limit 1 + the SDK's auto-pagination follows our `next`.
    detail = ok(steps, "get_check")
    assert detail["id"] == queued["id"]
    # Pages come in the order they finished; fetches run concurrently.
    assert sorted((p["url"], p["status"]) for p in detail["pages"]) == [
        (urls[0], "new"),
        (urls[1], "new"),
    ]
    assert all(p["targetId"] == target["id"] for p in detail["pages"])
    assert detail["next"] is None
    one_page = ok(steps, "get_check_one_page")
    assert [p["url"] for p in one_page["pages"]] == [detail["pages"][0]["url"]]
    assert one_page["next"] == (
        f"{live_server.url}/v2/monitor/{created['id']}/checks/{queued['id']}"
        "?skip=1&limit=1"
    )
    assert ok(steps, "get_check_filtered")["pages"] == []
    gone_check = sdk_error(steps, "get_check_unknown")
    assert (gone_check["status"], gone_check["message"]) == (404, "Check not found")
    no_monitor = sdk_error(steps, "list_checks_unknown")
    assert (no_monitor["status"], no_monitor["message"]) == (404, "Monitor not found")

    # delete: true, then the monitor is gone to every call.
    assert ok(steps, "delete") is True
    for name in ("get_deleted", "delete_again", "run_deleted"):
        gone = sdk_error(steps, name)
        assert (gone["status"], gone["message"]) == (404, "Monitor not found")
    assert [m["id"] for m in ok(steps, "list_after_delete")] == [second["id"]]
    # null clears the webhook and the notification settings (JS types allow it).
    cleared_second = ok(steps, "clear_webhook_and_notification")
    assert (cleared_second["webhook"], cleared_second["notification"]) == (None, {})
    assert cleared_second["emailRecipientSubscriptions"] == []
    assert ok(steps, "delete_second") is True
    # Token usage is the team's credits at 15 tokens a credit; no allowance
    # here, so plenty left and no plan (the SDK turns our null to undefined).
    tokens = ok(steps, "token_usage")
    assert (tokens["remainingTokens"], tokens.get("planTokens")) == (99_999_999, None)
    credit_months = ok(steps, "credit_usage_historical")["periods"]
    token_months = ok(steps, "token_usage_historical")["periods"]
    assert tokens["billingPeriodStart"] == token_months[-1]["startDate"]
    assert [(p["startDate"], p["tokensUsed"]) for p in token_months] == [
        (p["startDate"], p["creditsUsed"] * 15) for p in credit_months
    ]
    assert token_months[-1]["tokensUsed"] > 0

    # ...and the database agrees.
    stored = Monitor.objects.get(pk=created["id"])
    assert stored.team == team
    assert stored.deleted_at is not None
    assert (stored.schedule_cron, stored.schedule_timezone) == (
        "0 9 * * *",
        "Europe/Berlin",
    )
    assert (stored.goal, stored.judge_enabled, stored.retention_days) == (
        None,
        False,
        14,
    )
    [stored_target] = Target.objects.filter(monitor=stored)
    assert str(stored_target.pk) == target["id"]
    assert stored_target.urls == urls
    check = Check.objects.get(monitor=stored)
    assert (str(check.pk), check.trigger, check.status) == (
        queued["id"],
        "manual",
        "completed",
    )
    assert sorted(
        PageResult.objects.filter(check_run=check).values_list("url", "status")
    ) == [(urls[0], "new"), (urls[1], "new")]
    assert Monitor.objects.get(pk=second["id"]).deleted_at is not None
    assert Monitor.objects.filter(name="Web").count() == 0


@pytest.fixture
def under_sub_path(settings, live_server) -> Iterator[SubPathProxy]:
    """Pagewatch at PUBLIC_BASE_URL=http://127.0.0.1:<port>/pagewatch, behind
    a proxy that passes on /pagewatch/ only (README's nginx example without
    its `location /v2/`): a client that drops the path gets the proxy's 404."""
    with SubPathProxy(live_server.url, "/pagewatch") as proxy:
        settings.PUBLIC_BASE_URL = proxy.url
        settings.PUBLIC_BASE_URL_SET = True
        settings.FORCE_SCRIPT_NAME = "/pagewatch"
        settings.SESSION_COOKIE_PATH = settings.CSRF_COOKIE_PATH = "/pagewatch"
        settings.STATIC_URL = "/pagewatch/static/"
        yield proxy


def test_js_sdk_keeps_the_api_urls_sub_path_and_follows_next_under_it(
    under_sub_path, api_key, team, site, checks_run_inline, tmp_path
):
    """The JS SDK joins `/v2/...` onto apiUrl whole (axios' baseURL), path
    and all, and follows `next` as given: under a sub-path it needs no
    `/v2/` passed on at the proxy's root."""
    proxy = under_sub_path
    urls = [site.url("/a"), site.url("/b")]

    steps = drive(proxy.url, api_key, urls, tmp_path)

    created = ok(steps, "create")
    assert Monitor.objects.get(pk=created["id"]).team == team
    assert [m["id"] for m in ok(steps, "list_page_1")] == [
        ok(steps, "create_second")["id"]
    ]
    queued = ok(steps, "run")
    assert checks_run_inline == [queued["id"]]
    # limit 1: the second page came by following `next`, under the sub-path.
    detail = ok(steps, "get_check")
    assert sorted(p["url"] for p in detail["pages"]) == urls
    assert ok(steps, "get_check_one_page")["next"] == (
        f"{proxy.url}/v2/monitor/{created['id']}/checks/{queued['id']}?skip=1&limit=1"
    )
    assert ok(steps, "delete") is True
    assert Monitor.objects.get(pk=created["id"]).deleted_at is not None
    paths = [path for _, path in proxy.requests]
    assert paths and all(path.startswith("/pagewatch/v2/") for path in paths), paths
    assert any("skip=1" in path for path in paths)


# ------------------------------------------------------------------ the CLI


class Cli:
    def __init__(self, live_server, api_key: str, home: Path) -> None:
        self.env = node_env(
            HOME=str(home),
            FIRECRAWL_API_URL=live_server.url,
            FIRECRAWL_API_KEY=api_key,
        )

    def __call__(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), "monitor", *args],
            cwd=JS_DIR,
            env=env or self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    def json(self, *args: str) -> dict[str, Any]:
        result = self(*args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        body = json.loads(result.stdout)
        assert body["success"] is True, body
        return body

    def fails(self, *args: str) -> str:
        result = self(*args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert result.stdout == ""
        return result.stderr.strip()


@pytest.fixture
def cli(live_server, api_key, tmp_path) -> Cli:
    return Cli(live_server, api_key, tmp_path)


def test_cli_monitor_flow(cli, live_server, api_key, team, site, checks_run_inline):
    page = site.url("/a")
    created = cli.json(
        "create",
        "--name", "CLI pricing",
        "--schedule", "every 30 minutes",
        "--timezone", "Europe/Berlin",
        "--page", page,
        "--goal", "Tell me when a price changes",
        "--retention-days", "7",
        "--email", "alerts@example.com",
        "--webhook-url", "https://hooks.example.com/pw",
        "--webhook-events", "monitor.check.completed",
    )["data"]  # fmt: skip
    monitor_id = created["id"]
    assert created["schedule"] == {"cron": "*/30 * * * *", "timezone": "Europe/Berlin"}
    assert created["targets"][0]["urls"] == [page]
    assert (created["goal"], created["judgeEnabled"]) == (
        "Tell me when a price changes",
        True,
    )
    assert created["retentionDays"] == 7
    assert created["notification"]["email"]["recipients"] == ["alerts@example.com"]
    assert created["webhook"]["events"] == ["monitor.check.completed"]
    stored = Monitor.objects.get(pk=monitor_id)
    assert (stored.team, stored.name) == (team, "CLI pricing")

    listed = cli.json("list", "--limit", "5", "--offset", "0")["data"]
    assert [m["id"] for m in listed] == [monitor_id]
    assert cli.json("list", "--offset", "1")["data"] == []
    assert cli.json("get", monitor_id)["data"]["id"] == monitor_id

    paused = cli.json("update", monitor_id, "--state", "paused")["data"]
    assert (paused["status"], paused["nextRunAt"]) == ("paused", None)
    assert Monitor.objects.get(pk=monitor_id).next_run_at is None
    assert cli.fails("run", monitor_id) == (
        "Error: Monitor is paused. Resume it before running a check."
    )
    resumed = cli.json(
        "update",
        monitor_id,
        "--state",
        "active",
        "--schedule",
        "hourly",
        "--name",
        "CLI",
    )["data"]
    assert (resumed["status"], resumed["name"]) == ("active", "CLI")
    assert resumed["schedule"] == {"cron": "0 * * * *", "timezone": "Europe/Berlin"}
    assert Monitor.objects.get(pk=monitor_id).next_run_at is not None
    # --timezone alone sends {"schedule": {"timezone": ...}}: the cron stays.
    moved = cli.json("update", monitor_id, "--timezone", "America/New_York")["data"]
    assert moved["schedule"] == {"cron": "0 * * * *", "timezone": "America/New_York"}
    stored = Monitor.objects.get(pk=monitor_id)
    assert (stored.schedule_cron, stored.schedule_timezone) == (
        "0 * * * *",
        "America/New_York",
    )

    # run: a POST without any body.
    run = cli.json("run", monitor_id)
    check_id = run["id"]
    assert (run["data"]["id"], run["data"]["status"]) == (check_id, "queued")
    assert checks_run_inline == [check_id]
    [check] = cli.json("checks", monitor_id, "--limit", "10")["data"]
    assert (check["id"], check["status"]) == (check_id, "completed")
    detail = cli.json("check", monitor_id, check_id, "--page-status", "new")
    assert [(p["url"], p["status"]) for p in detail["data"]["pages"]] == [(page, "new")]
    assert "next" not in detail

    # flags instead of the environment.
    flags_only = {
        k: v
        for k, v in cli.env.items()
        if k not in ("FIRECRAWL_API_URL", "FIRECRAWL_API_KEY")
    }
    result = cli(
        "get",
        monitor_id,
        "--api-url",
        live_server.url,
        "--api-key",
        api_key,
        env=flags_only,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["data"]["id"] == monitor_id

    assert cli.json("delete", monitor_id) == {"success": True}
    assert Monitor.objects.get(pk=monitor_id).deleted_at is not None
    assert cli.fails("get", monitor_id) == "Error: Monitor not found"
    assert cli.json("list")["data"] == []


def test_cli_reports_our_errors(cli, live_server, tmp_path):
    payload = tmp_path / "web.json"
    payload.write_text(
        json.dumps(
            {
                "name": "Web",
                "schedule": {"text": "hourly"},
                "targets": [{"type": "search", "queries": ["pagewatch"]}],
            }
        )
    )
    assert cli.fails("create", str(payload)).startswith(
        "Error: goal: A search target requires a non-empty goal"
    )
    assert cli.fails(
        "create",
        "--name",
        "Fast",
        "--cron",
        "*/2 * * * *",
        "--page",
        "https://a.example",
    ) == ("Error: schedule: Schedule must not run more often than every 5 minutes")
    assert cli.fails("get", UNKNOWN_ID) == "Error: Monitor not found"
    assert cli.fails("update", UNKNOWN_ID, "--state", "paused") == (
        "Error: Monitor not found"
    )
    assert cli.fails("delete", "mon_abc123") == "Error: Monitor not found"
    assert cli.fails("checks", UNKNOWN_ID) == "Error: Monitor not found"
    assert Monitor.objects.count() == 0

    wrong_key = dict(cli.env, FIRECRAWL_API_KEY="pw_not-a-key")
    result = cli("list", env=wrong_key)
    assert result.returncode == 1
    assert "Invalid token" in result.stderr


def test_cli_status_and_credit_usage_report_the_teams_credits(cli, live_server, team):
    """`firecrawl --status` and `firecrawl credit-usage` read /v2/team/*: they
    show the team's allowance instead of "Could not fetch account info"."""
    team.credit_allowance = 2000
    team.save(update_fields=["credit_allowance"])
    monitor = Monitor.objects.create(team=team, name="P", schedule_cron="0 * * * *")
    Check.objects.create(
        monitor=monitor, status=Check.Status.COMPLETED, finished_at=timezone.now(),
        actual_credits=500, billing_status=Check.Billing.CONFIRMED,
    )  # fmt: skip

    def run(*args: str) -> str:
        result = subprocess.run(
            [str(CLI), *args], cwd=JS_DIR, env=cli.env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result.stdout

    status = run("--status")
    assert "Could not fetch" not in status
    assert "Credits:" in status and "1,500" in status and "2,000" in status
    usage = run("credit-usage")
    assert "Remaining Credits: 1,500" in usage
    assert "Used Credits: 500 (25.0%)" in usage
