// Drives an MCP server (a cluster behind a load balancer) with the official
// TypeScript SDK's client: CALLS mixed calls, one after another, each answer
// checked. Prints `progress N` after every 25 calls, then one JSON report:
// {"ok": N, "failures": M, "failed": [{"call": i, "error": "..."}, ... the
// first 10]}. It lives here to use
// the SDK installed beside the conformance suite.
//
//   node cluster_client.mjs URL CALLS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, calls] = [process.argv[2], Number(process.argv[3])];

function plan(i) {
  if (i % 3 === 0) return ["echo", { text: `call ${i}` }, `call ${i}`];
  if (i % 3 === 1) return ["calc", { expression: `${i} * 2` }, String(i * 2)];
  return ["stats", { numbers: [i, i + 2] }, `mean ${i + 1}`];
}

const client = new Client({ name: "cluster-client", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
let ok = 0;
const failed = [];
for (let i = 0; i < calls; i++) {
  const [name, args, expected] = plan(i);
  try {
    const result = await client.callTool({ name, arguments: args });
    const text = result.content.filter((c) => c.type === "text").map((c) => c.text).join(" ");
    if (result.isError || !text.includes(expected)) {
      failed.push({ call: i, error: `${name}: ${JSON.stringify(text)}` });
    } else {
      ok += 1;
    }
  } catch (e) {
    failed.push({ call: i, error: `${name}: ${e}` });
  }
  if ((i + 1) % 25 === 0) console.log(`progress ${i + 1}`);
}
// The first failures say why; the count says how many.
console.log(JSON.stringify({ ok, failures: failed.length, failed: failed.slice(0, 10) }));
await client.close();
