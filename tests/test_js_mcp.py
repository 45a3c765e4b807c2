"""The Firecrawl MCP server (firecrawl-mcp), unmodified, against a live
Pagewatch: an AI agent's MCP client starts it over stdio with
FIRECRAWL_API_URL pointing at us and calls its eight monitor tools.

Versions are pinned in tests/js/package.json (installed by `make test`, which
runs `npm ci --prefix tests/js` when npm exists). tests/js/drive_mcp.mjs is the
agent's side: the MCP SDK's Client and StdioClientTransport, relaying one tool
call per line; the assertions live here.

What the server does on the wire: plain fetch to `<FIRECRAWL_API_URL>/v2/monitor…`
with `Authorization: Bearer <FIRECRAWL_API_KEY>` and `X-Origin: mcp-…`, no
`origin` in bodies, and no body at all on run. Any non-2xx or
`success: false` becomes a tool error whose text is
"Tool '<name>' execution failed: <body.error>". A success is the whole JSON
body as text plus `structuredContent`: the body checked against the tool's
output schema, which keeps `success`, `data` (and `pagination`, `next`) and
drops any other top-level key (run's `id`). The client checks that structured
content against the schema the server listed, so a relayed success means the
agent accepted our answer.

Checks run inline, as in tests/test_js_sdk.py, against pages on 127.0.0.1.
Without node or the pinned packages these tests skip with the reason, except
under CI=true, where that is a failure.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from checks.models import Check, PageResult
from monitors.models import Monitor, Target
from tests.test_js_sdk import (  # noqa: F401 - fixtures
    JS_DIR,
    TIMEOUT,
    UNKNOWN_ID,
    _pinned,
    checks_run_inline,
    missing_packages,
    node_env,
    require_toolchain,
    site,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DRIVER = JS_DIR / "drive_mcp.mjs"
MONITOR_TOOLS = {
    "firecrawl_monitor_create",
    "firecrawl_monitor_list",
    "firecrawl_monitor_get",
    "firecrawl_monitor_update",
    "firecrawl_monitor_delete",
    "firecrawl_monitor_run",
    "firecrawl_monitor_checks",
    "firecrawl_monitor_check",
}


@pytest.fixture(autouse=True)
def toolchain() -> None:
    require_toolchain(missing_packages("firecrawl-mcp", "@modelcontextprotocol/sdk"))


class Agent:
    """An MCP client session with firecrawl-mcp, one tool call at a time."""

    def __init__(self, live_server, api_key: str, home: Path) -> None:
        home.mkdir(exist_ok=True)
        self.stderr = (home / "mcp.stderr").open("w+")
        self.process = subprocess.Popen(
            ["node", str(DRIVER)],
            cwd=JS_DIR,
            env=node_env(
                HOME=str(home),
                FIRECRAWL_API_URL=live_server.url,
                FIRECRAWL_API_KEY=api_key,
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        # A reader thread, so that a server that never answers fails the test
        # after TIMEOUT instead of hanging it.
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        hello = self._next()
        assert hello["ready"] is True
        self.version = hello["mcp"]
        self.tools = {tool["name"]: tool for tool in hello["tools"]}

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")

    def _next(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            line = ""
        if not line:
            self.stderr.seek(0)
            pytest.fail(f"drive_mcp.mjs gave no answer; stderr:\n{self.stderr.read()}")
        return json.loads(line)

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        self.process.stdin.write(json.dumps({"tool": tool, "arguments": arguments}))
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        answer = self._next()
        assert answer["ok"], f"the MCP client refused {tool}'s answer: {answer}"
        return answer["result"]

    def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured content of a successful call, which the client has
        checked against the tool's output schema."""
        result = self.call(tool, **arguments)
        assert result["isError"] is False, (tool, result)
        [text] = result["content"]
        body = json.loads(text["text"])
        assert body["success"] is True
        structured = result["structuredContent"]
        assert structured == {k: v for k, v in body.items() if k in structured}
        return structured

    def fails(self, tool: str, **arguments: Any) -> str:
        """The message of a tool error."""
        result = self.call(tool, **arguments)
        assert result["isError"] is True, (tool, result)
        [text] = result["content"]
        prefix = f"Tool '{tool}' execution failed: "
        assert text["text"].startswith(prefix), text
        return text["text"].removeprefix(prefix)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            assert self.process.wait(timeout=TIMEOUT) == 0
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.stderr.close()


@pytest.fixture
def agent(live_server, api_key, tmp_path):
    session = Agent(live_server, api_key, tmp_path)
    yield session
    session.close()


def test_mcp_server_offers_every_monitor_tool_with_an_output_schema(agent):
    assert agent.version == _pinned("firecrawl-mcp")
    assert set(agent.tools) >= MONITOR_TOOLS
    for name in MONITOR_TOOLS:
        schema = agent.tools[name]["outputSchema"]
        # Strict: a key the schema does not name is dropped by the server,
        # never passed on to the agent's structured content.
        assert schema["additionalProperties"] is False, name
        assert {"success", "data"} <= set(schema["properties"]), name


def test_mcp_monitor_tools_drive_monitors_and_checks(
    agent,
    team,
    site,  # noqa: F811
    checks_run_inline,  # noqa: F811
):
    urls = [site.url("/a"), site.url("/b")]

    # create, the agent's short form: pages, a goal, schedule words, e-mail.
    created = agent.ok(
        "firecrawl_monitor_create",
        pages=urls,
        goal="Tell me when a price changes",
        name="MCP pricing",
        scheduleText="every 30 minutes",
        timezone="Europe/Berlin",
        email="alerts@example.com",
        webhookUrl="https://hooks.example.com/pw",
    )["data"]
    monitor_id = created["id"]
    assert created["status"] == "active"
    assert created["schedule"] == {"cron": "*/30 * * * *", "timezone": "Europe/Berlin"}
    assert (created["goal"], created["judgeEnabled"]) == (
        "Tell me when a price changes",
        True,
    )
    [target] = created["targets"]
    assert (target["type"], target["urls"]) == ("scrape", urls)
    assert created["notification"]["email"]["recipients"] == ["alerts@example.com"]
    assert created["webhook"]["events"] == ["monitor.page", "monitor.check.completed"]
    stored = Monitor.objects.get(pk=monitor_id)
    assert (stored.team, stored.name) == (team, "MCP pricing")
    assert (stored.schedule_cron, stored.schedule_timezone) == (
        "*/30 * * * *",
        "Europe/Berlin",
    )
    assert stored.next_run_at is not None
    assert list(
        Target.objects.filter(monitor=stored).values_list("urls", flat=True)
    ) == [urls]

    # create, the full body: every target kind.
    second = agent.ok(
        "firecrawl_monitor_create",
        body={
            "name": "MCP blog",
            "schedule": {"cron": "0 * * * *"},
            "targets": [
                {"type": "crawl", "url": urls[0], "crawlOptions": {"limit": 5}},
                {"type": "search", "queries": ["pagewatch release"], "maxResults": 5},
            ],
            "goal": "New Pagewatch releases",
        },
    )["data"]
    assert [t["type"] for t in second["targets"]] == ["crawl", "search"]
    assert second["schedule"] == {"cron": "0 * * * *", "timezone": "UTC"}

    # list: newest first, limit/offset paging.
    listed = agent.ok("firecrawl_monitor_list")["data"]
    assert [m["id"] for m in listed] == [second["id"], monitor_id]
    paged = agent.ok("firecrawl_monitor_list", limit=1, offset=1)["data"]
    assert [m["id"] for m in paged] == [monitor_id]
    assert agent.ok("firecrawl_monitor_list", limit=1, offset=2)["data"] == []

    assert agent.ok("firecrawl_monitor_get", id=monitor_id)["data"] == created

    # update: pause (a paused monitor refuses to run), then resume and reschedule.
    paused = agent.ok(
        "firecrawl_monitor_update", id=monitor_id, body={"status": "paused"}
    )["data"]
    assert (paused["status"], paused["nextRunAt"]) == ("paused", None)
    assert Monitor.objects.get(pk=monitor_id).next_run_at is None
    assert agent.fails("firecrawl_monitor_run", id=monitor_id) == (
        "Monitor is paused. Resume it before running a check."
    )
    assert not Check.objects.filter(monitor_id=monitor_id).exists()
    resumed = agent.ok(
        "firecrawl_monitor_update",
        id=monitor_id,
        body={"status": "active", "schedule": {"text": "daily at 9am"}},
    )["data"]
    assert resumed["status"] == "active"
    assert resumed["schedule"] == {"cron": "0 9 * * *", "timezone": "Europe/Berlin"}
    stored = Monitor.objects.get(pk=monitor_id)
    assert (stored.schedule_cron, stored.next_run_at is not None) == ("0 9 * * *", True)

    # run: a POST without a body queues a manual check, which runs.
    run = agent.call("firecrawl_monitor_run", id=monitor_id)
    assert run["isError"] is False, run
    queued = run["structuredContent"]["data"]
    assert (queued["status"], queued["trigger"]) == ("queued", "manual")
    assert queued["monitorId"] == monitor_id
    # The top-level `id` is in the text the agent reads; the output schema
    # has no place for it, so structured content carries data.id only.
    assert json.loads(run["content"][0]["text"])["id"] == queued["id"]
    assert "id" not in run["structuredContent"]
    assert checks_run_inline == [queued["id"]]
    check = Check.objects.get(monitor_id=monitor_id)
    assert (str(check.pk), check.trigger, check.status) == (
        queued["id"],
        "manual",
        "completed",
    )

    # checks: the history, paged and filtered by status.
    [summary] = agent.ok("firecrawl_monitor_checks", id=monitor_id, limit=10)["data"]
    assert (summary["id"], summary["status"]) == (queued["id"], "completed")
    assert (summary["summary"]["totalPages"], summary["summary"]["new"]) == (2, 2)
    assert agent.ok("firecrawl_monitor_checks", id=monitor_id, offset=1)["data"] == []
    assert (
        agent.ok("firecrawl_monitor_checks", id=monitor_id, status="failed")["data"]
        == []
    )

    # check: one check with its pages, paged by limit/skip, filtered by status.
    detail = agent.ok("firecrawl_monitor_check", id=monitor_id, checkId=queued["id"])
    assert detail["data"]["id"] == queued["id"]
    assert sorted((p["url"], p["status"]) for p in detail["data"]["pages"]) == [
        (urls[0], "new"),
        (urls[1], "new"),
    ]
    assert "next" not in detail
    first = agent.ok(
        "firecrawl_monitor_check", id=monitor_id, checkId=queued["id"], limit=1
    )
    assert len(first["data"]["pages"]) == 1
    assert first["next"] == first["data"]["next"]
    assert first["next"].endswith(f"/checks/{queued['id']}?skip=1&limit=1")
    rest = agent.ok(
        "firecrawl_monitor_check",
        id=monitor_id,
        checkId=queued["id"],
        limit=1,
        skip=1,
    )
    assert {first["data"]["pages"][0]["url"], rest["data"]["pages"][0]["url"]} == set(
        urls
    )
    changed = agent.ok(
        "firecrawl_monitor_check",
        id=monitor_id,
        checkId=queued["id"],
        pageStatus="changed",
    )
    assert changed["data"]["pages"] == []
    assert sorted(
        PageResult.objects.filter(check_run=check).values_list("url", "status")
    ) == [(urls[0], "new"), (urls[1], "new")]

    # delete: the monitor is gone to every later call.
    assert agent.ok("firecrawl_monitor_delete", id=monitor_id) == {"success": True}
    assert Monitor.objects.get(pk=monitor_id).deleted_at is not None
    assert agent.fails("firecrawl_monitor_get", id=monitor_id) == "Monitor not found"
    assert agent.fails("firecrawl_monitor_run", id=monitor_id) == "Monitor not found"
    listed = agent.ok("firecrawl_monitor_list")["data"]
    assert [m["id"] for m in listed] == [second["id"]]
    assert agent.ok("firecrawl_monitor_delete", id=second["id"]) == {"success": True}
    assert agent.ok("firecrawl_monitor_list")["data"] == []


def test_mcp_monitor_tools_report_our_errors_as_tool_errors(
    agent, live_server, team, tmp_path
):
    assert agent.fails(
        "firecrawl_monitor_create",
        body={
            "name": "Web",
            "schedule": {"text": "hourly"},
            "targets": [{"type": "search", "queries": ["pagewatch"]}],
        },
    ).startswith("goal: A search target requires a non-empty goal")
    assert (
        agent.fails(
            "firecrawl_monitor_create",
            page="https://a.example/pricing",
            goal="Prices",
            scheduleText="every minute",
        )
        == "schedule: Schedule must not run more often than every 5 minutes"
    )
    assert not Monitor.objects.exists()

    for tool in ("firecrawl_monitor_get", "firecrawl_monitor_delete"):
        assert agent.fails(tool, id=UNKNOWN_ID) == "Monitor not found"
    assert agent.fails("firecrawl_monitor_get", id="mon_abc123") == "Monitor not found"
    assert (
        agent.fails("firecrawl_monitor_update", id=UNKNOWN_ID, body={"name": "x"})
        == "Monitor not found"
    )
    assert agent.fails("firecrawl_monitor_checks", id=UNKNOWN_ID) == "Monitor not found"

    monitor = agent.ok(
        "firecrawl_monitor_create", page="https://a.example/pricing", goal="Prices"
    )["data"]
    assert (
        agent.fails("firecrawl_monitor_update", id=monitor["id"], body={})
        == "Update body cannot be empty."
    )
    assert (
        agent.fails("firecrawl_monitor_check", id=monitor["id"], checkId=UNKNOWN_ID)
        == "Check not found"
    )
    assert Monitor.objects.get(pk=monitor["id"]).team == team

    # A wrong key: the agent sees our 401 message.
    stranger = Agent(live_server, "pw_not-a-key", tmp_path / "stranger")
    try:
        assert "Invalid token" in stranger.fails("firecrawl_monitor_list")
    finally:
        stranger.close()


def test_mcp_credit_usage_tool_reports_the_teams_credits(agent, team):
    team.credit_allowance = 2000
    team.save(update_fields=["credit_allowance"])
    monitor = Monitor.objects.create(team=team, name="P", schedule_cron="0 * * * *")
    Check.objects.create(
        monitor=monitor, status=Check.Status.COMPLETED, finished_at=timezone.now(),
        actual_credits=500, billing_status=Check.Billing.CONFIRMED,
    )  # fmt: skip

    result = agent.call("firecrawl_credit_usage")

    assert result["isError"] is False, result
    usage = result["structuredContent"]
    assert (usage["remainingCredits"], usage["planCredits"]) == (1500, 2000)
    assert usage["billingPeriodStart"] < usage["billingPeriodEnd"]


def test_mcp_credit_usage_tool_reports_the_teams_credits_month_by_month(agent, team):
    monitor = Monitor.objects.create(team=team, name="P", schedule_cron="0 * * * *")
    now = timezone.now()
    last_month = now.replace(day=1, hour=12) - timedelta(days=2)
    for finished_at, credits in ((last_month, 120), (now, 30)):
        Check.objects.create(
            monitor=monitor, status=Check.Status.COMPLETED, finished_at=finished_at,
            actual_credits=credits, billing_status=Check.Billing.CONFIRMED,
        )  # fmt: skip

    result = agent.call("firecrawl_credit_usage", view="historical")

    assert result["isError"] is False, result
    periods = result["structuredContent"]["periods"]
    assert [p["creditsUsed"] for p in periods] == [120, 30]
    assert periods[0]["endDate"] == periods[1]["startDate"]
    assert periods[1]["startDate"] <= now.isoformat() < periods[1]["endDate"]


def test_mcp_tools_for_endpoints_pagewatch_does_not_have_are_tool_errors(
    agent,
    site,  # noqa: F811
):
    # Pagewatch has no /v2/scrape: the agent hears our 404, and the page is
    # never fetched.
    assert agent.fails("firecrawl_scrape", url=site.url("/a")) == "Not found"
    assert site.requests == []
