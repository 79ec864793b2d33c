"""Round-trip latency of an MCP `tools/call` to `toolhost serve`, measured
from the official Python SDK's client: the template plugin's `echo` over
stdio and over streamable HTTP (`make bench` runs it).

    python3 bench/mcp/roundtrip.py [--calls N] [--toolhost PATH]

Each transport gets a fresh server, a warm-up, then N sequential calls, each
timed from `call_tool` to its parsed result. For reference, the same calls
are also made by a minimal client (JSON lines on the pipes; one HTTP/1.1
keep-alive connection with TCP_NODELAY), which shows how much of the time is
the SDK's own. Prints a Markdown table.
"""

import argparse
import asyncio
import json
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "bench/mcp/toolhost.toml"
TOOLHOST = str(ROOT / "target/release/toolhost")
WARMUP = 100


async def measure(session: ClientSession, calls: int) -> list[float]:
    await session.initialize()
    for _ in range(WARMUP):
        await session.call_tool("echo", {"text": "warm"})
    times = []
    for i in range(calls):
        start = time.perf_counter()
        result = await session.call_tool("echo", {"text": f"call {i}"})
        times.append(time.perf_counter() - start)
        assert not result.is_error and result.content[0].text == f"call {i}", result
    return times


async def over_stdio(calls: int) -> list[float]:
    params = StdioServerParameters(command=TOOLHOST, args=["serve", "--config", str(CONFIG)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await measure(session, calls)


class HttpServer:
    """`toolhost serve --http 127.0.0.1:0`, its URL read from stderr."""

    def __enter__(self):
        self.process = subprocess.Popen(
            [TOOLHOST, "serve", "--config", str(CONFIG), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for line in self.process.stderr:
            if line.startswith("toolhost: serving "):
                self.url = line.split()[-1]
                return self
        raise SystemExit("toolhost serve --http did not start")

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait()


async def over_http(calls: int) -> list[float]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    with HttpServer() as server:
        http = httpx2.AsyncClient(timeout=60)
        async with http, streamable_http_client(server.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                return await measure(session, calls)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def echo_request(i: int) -> dict:
    return {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f"call {i}"}}}


def timed(calls: int, one) -> list[float]:
    for i in range(WARMUP):
        one(i)
    times = []
    for i in range(calls):
        start = time.perf_counter()
        one(i)
        times.append(time.perf_counter() - start)
    return times


def raw_stdio(calls: int) -> list[float]:
    server = subprocess.Popen(
        [TOOLHOST, "serve", "--config", str(CONFIG)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )

    def send(message: dict) -> None:
        server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()

    def one(i: int) -> None:
        send(echo_request(i))
        answer = json.loads(server.stdout.readline())
        assert answer["result"]["content"][0]["text"] == f"call {i}", answer

    try:
        send(INITIALIZE)
        server.stdout.readline()
        send(INITIALIZED)
        return timed(calls, one)
    finally:
        server.stdin.close()
        server.wait()


def raw_http(calls: int) -> list[float]:
    with HttpServer() as server:
        addr = server.url.removeprefix("http://").removesuffix("/mcp")
        host, port = addr.rsplit(":", 1)
        conn = socket.create_connection((host, int(port)))
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = b""
        headers = f"Host: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"

        def post(message: dict) -> tuple[bytes, bytes]:
            nonlocal pending
            body = json.dumps(message).encode()
            conn.sendall(f"POST /mcp HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            while b"\r\n\r\n" not in pending:
                pending += conn.recv(65536)
            head, pending = pending.split(b"\r\n\r\n", 1)
            if b"chunked" in head.lower():
                while b"0\r\n\r\n" not in pending:
                    pending += conn.recv(65536)
                end = pending.index(b"0\r\n\r\n") + 5
            else:
                length = re.search(rb"content-length: (\d+)", head, re.I)
                end = int(length.group(1)) if length else 0
                while len(pending) < end:
                    pending += conn.recv(65536)
            answer, pending = pending[:end], pending[end:]
            return head, answer

        head, _ = post(INITIALIZE)
        session = re.search(rb"mcp-session-id: (\S+)", head, re.I).group(1).decode()
        headers += f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
        post(INITIALIZED)

        def one(i: int) -> None:
            _, answer = post(echo_request(i))
            assert f'"text":"call {i}"'.encode() in answer, answer

        return timed(calls, one)


def row(name: str, times: list[float]) -> str:
    us = sorted(t * 1e6 for t in times)
    pct = lambda p: us[min(len(us) - 1, int(p * len(us)))]  # noqa: E731
    return (
        f"| {name} | **{statistics.median(us):.0f} µs** | {pct(0.9):.0f} µs | "
        f"{pct(0.99):.0f} µs | {statistics.mean(us):.0f} µs |"
    )


def main() -> None:
    global TOOLHOST
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--toolhost", default=TOOLHOST)
    args = parser.parse_args()
    TOOLHOST = args.toolhost
    rows = [
        ("stdio, Python SDK client", asyncio.run(over_stdio(args.calls))),
        ("streamable HTTP, Python SDK client", asyncio.run(over_http(args.calls))),
        ("stdio, minimal client", raw_stdio(args.calls)),
        ("streamable HTTP, minimal client", raw_http(args.calls)),
    ]
    print(f"MCP tools/call round trip, echo, {args.calls} sequential calls after {WARMUP} warm-up calls")
    print()
    print("| transport, client | median | p90 | p99 | mean |")
    print("|---|---|---|---|---|")
    for name, times in rows:
        print(row(name, times))


if __name__ == "__main__":
    sys.exit(main())
