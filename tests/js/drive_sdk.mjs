#!/usr/bin/env node
// Drives Pagewatch's /v2/monitor API with the official Firecrawl JS SDK
// (@mendable/firecrawl-js, unmodified) and prints one JSON object per line,
// one per step:
//
//   {"step": "create", "ok": true, "value": <what the SDK returned>}
//   {"step": "get_unknown", "ok": false, "error": {"name", "message", "status", "code", "details"}}
//
// The driver only reports; tests/test_js_sdk.py asserts on the lines and on the
// database. A step that needs an earlier step's result is still printed (as
// ok:false with error.name "Skipped") so the test sees every step.
//
// Usage:
//   node drive_sdk.mjs --api-url http://127.0.0.1:8000 --api-key pw_... \
//        --urls http://127.0.0.1:9000/a,http://127.0.0.1:9000/b
// Falls back to env FIRECRAWL_API_URL, FIRECRAWL_API_KEY and PAGEWATCH_URLS.
// --no-checks leaves out run / list checks / get check.
// Exit status: 0 when the scenario ran to its end (whatever each step
// returned), 2 for bad arguments.

import { createRequire } from "node:module";
import Firecrawl from "@mendable/firecrawl-js";

const require = createRequire(import.meta.url);
const SDK_VERSION = require("@mendable/firecrawl-js/package.json").version;

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--no-checks") args.noChecks = true;
    else if (arg.startsWith("--") && i + 1 < argv.length) {
      args[arg.slice(2)] = argv[++i];
    } else {
      args.bad = arg;
    }
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const apiUrl = args["api-url"] ?? process.env.FIRECRAWL_API_URL;
const apiKey = args["api-key"] ?? process.env.FIRECRAWL_API_KEY;
const urls = (args.urls ?? process.env.PAGEWATCH_URLS ?? "https://example.com/a,https://example.com/b")
  .split(",")
  .map((u) => u.trim())
  .filter(Boolean);
if (args.bad || !apiUrl || !apiKey || urls.length < 2) {
  console.error(
    "usage: drive_sdk.mjs --api-url URL --api-key KEY [--urls URL1,URL2] [--no-checks]",
  );
  process.exit(2);
}

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
// Any later 5xx is a server bug, not something to retry quietly.
const sdk = new Firecrawl({ apiKey, apiUrl, maxRetries: 1, timeoutMs: 20000 });

function describe(err) {
  return {
    name: err?.name ?? null,
    message: err?.message ?? String(err),
    status: err?.status ?? null,
    code: err?.code ?? null,
    details: err?.details ?? null,
  };
}

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function step(name, fn) {
  try {
    const value = await fn();
    emit({ step: name, ok: true, value: value ?? null });
    return value;
  } catch (err) {
    emit({ step: name, ok: false, error: describe(err) });
    return undefined;
  }
}

function needs(value, what) {
  if (value == null) {
    const err = new Error(`skipped: ${what} is missing`);
    err.name = "Skipped";
    throw err;
  }
  return value;
}

emit({ step: "sdk", ok: true, value: { version: SDK_VERSION, node: process.version } });

// --- Monitor CRUD -------------------------------------------------------------
const created = await step("create", () =>
  sdk.createMonitor({
    name: "JS pricing",
    schedule: { text: "every 30 minutes", timezone: "Europe/Berlin" },
    targets: [{ type: "scrape", urls: [urls[0]] }],
    retentionDays: 14,
  }),
);
const id = created?.id;

// A second, newer monitor (every target kind, webhook, e-mail) so listing has
// something to page through.
const second = await step("create_second", () =>
  sdk.createMonitor({
    name: "JS blog",
    schedule: { cron: "0 * * * *" },
    targets: [
      { type: "crawl", url: urls[0], crawlOptions: { limit: 5 } },
      { type: "search", queries: ["pagewatch release"], maxResults: 5, searchWindow: "7d" },
    ],
    goal: "New Pagewatch releases",
    webhook: {
      url: "https://hooks.example.com/pw",
      headers: { Authorization: "Bearer hook-secret" },
      metadata: { env: "test" },
      events: ["monitor.check.completed"],
    },
    notification: { email: { enabled: true, recipients: ["alerts@example.com"] } },
  }),
);

await step("list", () => sdk.listMonitors());
await step("list_page_1", () => sdk.listMonitors({ limit: 1, offset: 0 }));
await step("list_page_2", () => sdk.listMonitors({ limit: 1, offset: 1 }));
await step("list_past_end", () => sdk.listMonitors({ limit: 1, offset: 2 }));

const fetched = await step("get", () => sdk.getMonitor(needs(id, "monitor id")));

await step("pause", () => sdk.updateMonitor(needs(id, "monitor id"), { status: "paused" }));
if (!args.noChecks) {
  await step("run_paused", () => sdk.runMonitor(needs(id, "monitor id")));
}
await step("resume", () => sdk.updateMonitor(needs(id, "monitor id"), { status: "active" }));

// No timezone sent: Pagewatch keeps the monitor's (Europe/Berlin).
await step("reschedule", () =>
  sdk.updateMonitor(needs(id, "monitor id"), { schedule: { text: "daily at 9am" } }),
);

// Send the stored target back exactly as GET returned it (with its id) plus
// a second URL, and add a brand-new target without an id.
await step("retarget", () => {
  const [kept] = needs(fetched?.targets, "fetched targets");
  return sdk.updateMonitor(needs(id, "monitor id"), {
    targets: [
      { ...kept, urls: [urls[0], urls[1]] },
      { type: "scrape", urls: [urls[1]] },
    ],
  });
});
// ...then drop the added one again, keeping the first by id.
await step("retarget_back", async () => {
  const current = await sdk.getMonitor(needs(id, "monitor id"));
  return sdk.updateMonitor(id, { targets: [current.targets[0]] });
});

await step("set_goal", () =>
  sdk.updateMonitor(needs(id, "monitor id"), { goal: "Tell me when a price changes" }),
);
await step("clear_goal", () => sdk.updateMonitor(needs(id, "monitor id"), { goal: null }));

// --- Errors ---------------------------------------------------------------------
await step("create_search_without_goal", () =>
  sdk.createMonitor({
    name: "Web",
    schedule: { text: "hourly" },
    targets: [{ type: "search", queries: ["pagewatch release"] }],
  }),
);
// The SDK still adds `origin`, so the server sees {"origin": "js-sdk@..."}.
await step("update_empty", () => sdk.updateMonitor(needs(id, "monitor id"), {}));
await step("get_unknown", () => sdk.getMonitor(UNKNOWN_ID));
await step("get_malformed", () => sdk.getMonitor("mon_abc123"));
await step("update_unknown", () => sdk.updateMonitor(UNKNOWN_ID, { name: "x" }));
await step("delete_unknown", () => sdk.deleteMonitor(UNKNOWN_ID));
await step("wrong_key", () =>
  new Firecrawl({ apiKey: "pw_not-a-key", apiUrl, maxRetries: 1 }).listMonitors(),
);

// --- Checks ---------------------------------------------------------------------
if (!args.noChecks) {
  const check = await step("run", () => sdk.runMonitor(needs(id, "monitor id")));
  const checkId = check?.id;
  await step("list_checks", () =>
    sdk.listMonitorChecks(needs(id, "monitor id"), { limit: 10, offset: 0 }),
  );
  await step("list_checks_past_end", () =>
    sdk.listMonitorChecks(needs(id, "monitor id"), { limit: 10, offset: 1 }),
  );
  // limit 1 with the SDK's default auto-pagination: it follows `next`.
  await step("get_check", () =>
    sdk.getMonitorCheck(needs(id, "monitor id"), needs(checkId, "check id"), { limit: 1 }),
  );
  await step("get_check_one_page", () =>
    sdk.getMonitorCheck(needs(id, "monitor id"), needs(checkId, "check id"), {
      limit: 1,
      autoPaginate: false,
    }),
  );
  await step("get_check_filtered", () =>
    sdk.getMonitorCheck(needs(id, "monitor id"), needs(checkId, "check id"), {
      status: "changed",
    }),
  );
  await step("get_check_unknown", () =>
    sdk.getMonitorCheck(needs(id, "monitor id"), UNKNOWN_ID),
  );
  await step("list_checks_unknown", () => sdk.listMonitorChecks(UNKNOWN_ID));
}

// --- Delete -----------------------------------------------------------------------
await step("delete", () => sdk.deleteMonitor(needs(id, "monitor id")));
await step("get_deleted", () => sdk.getMonitor(needs(id, "monitor id")));
await step("delete_again", () => sdk.deleteMonitor(needs(id, "monitor id")));
if (!args.noChecks) {
  await step("run_deleted", () => sdk.runMonitor(needs(id, "monitor id")));
}
await step("list_after_delete", () => sdk.listMonitors());
// The JS types allow null to clear a webhook or the notification settings.
await step("clear_webhook_and_notification", () =>
  sdk.updateMonitor(needs(second?.id, "second monitor id"), {
    webhook: null,
    notification: null,
  }),
);
await step("delete_second", () => sdk.deleteMonitor(needs(second?.id, "second monitor id")));
await step("token_usage", () => sdk.getTokenUsage());
await step("credit_usage_historical", () => sdk.getCreditUsageHistorical());
await step("token_usage_historical", () => sdk.getTokenUsageHistorical(true));

emit({ step: "done", ok: true, value: null });
