"""Drives an MCP server (a cluster behind a load balancer) with the official
Python SDK's client: CALLS mixed calls, one after another, each answer
checked. Prints `progress N` after every 25 calls, then one JSON report:
{"ok": N, "failures": M, "failed": [{"call": i, "error": "..."}, ... the first 10]}.

    python3 py_client.py URL CALLS
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def plan(i: int):
    """The i-th call and the text its answer must contain."""
    if i % 3 == 0:
        return "echo", {"text": f"call {i}"}, f"call {i}"
    if i % 3 == 1:
        return "calc", {"expression": f"{i} * 2"}, str(i * 2)
    return "stats", {"numbers": [i, i + 2]}, f"mean {i + 1}"


async def main(url: str, calls: int) -> None:
    ok, failed = 0, []
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for i in range(calls):
                name, args, expected = plan(i)
                try:
                    result = await session.call_tool(name, args)
                    text = " ".join(c.text for c in result.content if c.type == "text")
                    if result.is_error or expected not in text:
                        failed.append({"call": i, "error": f"{name}: {text!r}"})
                    else:
                        ok += 1
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    failed.append({"call": i, "error": f"{name}: {type(e).__name__}: {e}"})
                if (i + 1) % 25 == 0:
                    print(f"progress {i + 1}", flush=True)
    # The first failures say why; the count says how many.
    print(json.dumps({"ok": ok, "failures": len(failed), "failed": failed[:10]}), flush=True)


anyio.run(main, sys.argv[1], int(sys.argv[2]))
