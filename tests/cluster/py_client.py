"""Drives an MCP server (a cluster behind a load balancer) with the official
Python SDK's client: CALLS mixed calls, one after another, each answer
checked; when the transport is lost (the SDK ends the session on a
dropped connection), the call in flight is counted as failed and a new
session goes on with the next. Prints `progress N` after every 25 calls,
then one JSON report:
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


def leaf(e: BaseException) -> BaseException:
    """The first error inside (possibly nested) exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


async def main(url: str, calls: int) -> None:
    ok, failed = 0, []
    i = 0

    def done_one() -> None:
        nonlocal i
        i += 1
        if i % 25 == 0:
            print(f"progress {i}", flush=True)

    while i < calls:
        try:
            async with streamable_http_client(url) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    while i < calls:
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
                        done_one()
        except Exception as e:  # noqa: BLE001 - a lost transport fails the call in flight
            # The SDK's transport ends the whole session when one POST loses
            # its connection (a replica killed under the call, the balancer
            # closing the client's connection): that call failed, and, like
            # any client of a stateless cluster, this one opens a new session
            # and goes on with the next.
            e = leaf(e)
            failed.append({"call": i, "error": f"session lost: {type(e).__name__}: {e}"})
            done_one()
    # The first failures say why; the count says how many.
    print(json.dumps({"ok": ok, "failures": len(failed), "failed": failed[:10]}), flush=True)


anyio.run(main, sys.argv[1], int(sys.argv[2]))
