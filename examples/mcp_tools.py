"""The tool list as an MCP client sees it: starts `toolhost serve` over
stdio with the official Python MCP SDK, prints each tool's name and
description, and makes one call.

    python3 examples/mcp_tools.py [TOOLHOST] [CONFIG]
"""

import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client


async def main() -> None:
    toolhost = sys.argv[1] if len(sys.argv) > 1 else "target/release/toolhost"
    config = sys.argv[2] if len(sys.argv) > 2 else "toolhost.toml"
    params = StdioServerParameters(command=toolhost, args=["serve", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print(f"connected to {init.server_info.name} {init.server_info.version} "
                  f"(MCP {init.protocol_version})")
            if init.instructions:
                print(f"instructions: {init.instructions}")
            for tool in (await session.list_tools()).tools:
                print(f"  {tool.name:<12} {tool.description}")
            result = await session.call_tool("calc", {"expression": "6 * 7"})
            print(f"tools/call calc 6 * 7 -> {result.content[0].text}")


anyio.run(main)
