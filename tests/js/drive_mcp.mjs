#!/usr/bin/env node
// Starts the Firecrawl MCP server (firecrawl-mcp, unmodified) over stdio, the
// way an AI agent's MCP client does, and relays tool calls to it for
// tests/test_js_mcp.py. The server reads FIRECRAWL_API_URL and
// FIRECRAWL_API_KEY from the environment this driver was given.
//
// Protocol (one JSON object per line):
//   first line out:  {"ready": true, "mcp": "<firecrawl-mcp version>",
//                     "server": {name, version}, "tools": [{name, outputSchema, annotations}]}
//   each line in:    {"tool": "firecrawl_monitor_get", "arguments": {"id": "..."}}
//   each line out:   {"ok": true, "result": {isError, content, structuredContent}}
//                    {"ok": false, "error": {name, message, code}}  (the MCP client
//                    refused the answer, e.g. structured output that does not
//                    match the tool's output schema)
// End of input closes the client, which stops the server; exit status 0.
//
// The SDK's Client validates every structuredContent against the outputSchema
// the server listed (it caches the validators during listTools), so an "ok"
// line means the client accepted Pagewatch's response as the tool promised it.

import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const require = createRequire(import.meta.url);
const manifestPath = require.resolve("firecrawl-mcp/package.json");
const manifest = require(manifestPath);
const serverScript = join(dirname(manifestPath), manifest.bin["firecrawl-mcp"]);

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [serverScript],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "pagewatch-tests", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
emit({
  ready: true,
  mcp: manifest.version,
  server: client.getServerVersion(),
  tools: tools.map(({ name, outputSchema, annotations }) => ({
    name,
    outputSchema: outputSchema ?? null,
    annotations: annotations ?? null,
  })),
});

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const { tool, arguments: toolArguments } = JSON.parse(line);
  try {
    const result = await client.callTool({ name: tool, arguments: toolArguments ?? {} });
    emit({
      ok: true,
      result: {
        isError: result.isError ?? false,
        content: result.content ?? [],
        structuredContent: result.structuredContent ?? null,
      },
    });
  } catch (err) {
    emit({
      ok: false,
      error: { name: err?.name ?? null, message: err?.message ?? String(err), code: err?.code ?? null },
    });
  }
}
await client.close();
