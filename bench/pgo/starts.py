"""Starts `toolhost serve` many times, for `make pgo`'s profile.

The benchmark run that trains the profile starts each server only a few
times against millions of calls. Trained on that alone, the profile
marked `serve`'s own start (its command line, its configuration, its log,
listing the plugins from the cache) as rarely run, and a start was 3-6 %
slower than in a build without a profile (BENCHMARKS.md, "What the
profile-guided build changed here"). This runs the start the benchmark
measures: spawn `serve` over stdio with the benchmark's configuration,
`initialize`, the first `tools/list`, one `echo`, then end the session.

    python3 bench/pgo/starts.py TOOLHOST [--starts N]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "bench/mcp/toolhost.toml"


def start(toolhost: str) -> None:
    """One start, to the first echo; exits with the server's words on any failure."""
    with tempfile.TemporaryFile() as log:
        try:
            server = subprocess.Popen(
                [toolhost, "serve", "--config", str(CONFIG)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        except OSError as error:
            sys.exit(f"starts.py: cannot start {toolhost}: {error}")

        def ask(message: dict) -> dict:
            server.stdin.write((json.dumps(message) + "\n").encode())
            server.stdin.flush()
            line = server.stdout.readline()
            if not line:
                raise RuntimeError(f"no answer to {message['method']}")
            return json.loads(line)

        try:
            ask({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "pgo-starts", "version": "1"}}})
            server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            listed = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            names = [tool["name"] for tool in listed.get("result", {}).get("tools", [])]
            if "echo" not in names:
                raise RuntimeError(f"tools/list has no echo: {listed}")
            called = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"text": "hi"}}})
            if "result" not in called or called["result"].get("isError"):
                raise RuntimeError(f"the echo failed: {called}")
            server.stdin.close()
            server.wait(timeout=60)
        except Exception as error:
            server.kill()
            server.wait()
            log.seek(0)
            sys.exit(f"starts.py: {toolhost} serve --config {CONFIG}: {error}\n"
                     f"{log.read().decode(errors='replace')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("toolhost", help="the toolhost binary to start")
    parser.add_argument("--starts", type=int, default=2000, help="how many starts (2000)")
    args = parser.parse_args()
    for i in range(args.starts):
        start(args.toolhost)
        if (i + 1) % 50 == 0:
            print(f"starts.py: {i + 1} of {args.starts} starts", file=sys.stderr)


if __name__ == "__main__":
    main()
