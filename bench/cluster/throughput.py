"""Calls per second through HAProxy to 1, 2 and 3 stateless replicas of
`toolhost serve --http` (`make bench` runs it; the cluster's HAProxy
configuration is examples/cluster/haproxy.cfg with the servers given).

    python3 bench/cluster/throughput.py [--seconds S] [--clients N] [--toolhost PATH]

For each replica count: the replicas and HAProxy start on 127.0.0.1, N
client threads each keep one HTTP/1.1 keep-alive connection to HAProxy and
send `tools/call` of the template plugin's `echo` back to back for S
seconds (after a warm-up), every answer checked. Prints a Markdown table.
The clients run on the same machine as everything else, so on a small
machine they take their share of the cores too.
"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CFG = ROOT / "examples/cluster/haproxy.cfg"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_replica(toolhost: str, config: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [toolhost, "serve", "--config", str(config), "--http", "127.0.0.1:0", "--stateless"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        m = re.search(r"http://([0-9.:]+)/mcp", line)
        if m:
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
            return proc, m.group(1)
    raise RuntimeError("the replica did not start")


def haproxy_config(replicas: list[str]) -> str:
    """The example's configuration with one server line per replica."""
    text = HAPROXY_CFG.read_text()
    text = re.sub(r'\n    server r\d "\$\{CLUSTER_R\d\}" check', "", text)
    return text.rstrip() + "\n" + "".join(
        f"    server r{i + 1} {addr} check\n" for i, addr in enumerate(replicas)
    )


def call(conn: http.client.HTTPConnection, i: int) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"call {i}"}},
        }
    )
    conn.request(
        "POST",
        "/mcp",
        body,
        {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Protocol-Version": "2025-11-25",
        },
    )
    answer = conn.getresponse().read().decode()
    if f'"text":"call {i}"' not in answer:
        raise RuntimeError(f"wrong answer to call {i}: {answer[:200]}")


def load(front: str, clients: int, seconds: float) -> float:
    host, port = front.split(":")
    counts = [0] * clients
    stop = time.monotonic() + seconds
    errors = []

    def client(k: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        i = k * 10_000_000
        try:
            while time.monotonic() < stop:
                call(conn, i)
                counts[k] += 1
                i += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed: {errors[0]}")
    return sum(counts) / (time.monotonic() - start)


def run(toolhost: str, n: int, clients: int, seconds: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "toolhost.toml"
        config.write_text(
            f'[host]\ncache_dir = "{ROOT / "target/bench-cluster-cache"}"\n\n'
            f'[plugins.template]\nwasm = "{ROOT / "target/wasm32-wasip2/release/template.wasm"}"\n'
        )
        procs = []
        try:
            replicas = []
            for _ in range(n):
                proc, addr = start_replica(toolhost, config)
                procs.append(proc)
                replicas.append(addr)
            cfg = Path(tmp) / "haproxy.cfg"
            cfg.write_text(haproxy_config(replicas))
            front = f"127.0.0.1:{free_port()}"
            procs.append(
                subprocess.Popen(
                    ["haproxy", "-f", str(cfg), "-db"],
                    env={**os.environ, "CLUSTER_BIND": front},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            time.sleep(1.5)  # every replica passes its checks (rise 2, 300 ms)
            load(front, clients, 2.0)  # warm-up
            return load(front, clients, seconds)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--toolhost", default=str(ROOT / "target/release/toolhost"))
    args = parser.parse_args()
    rates = {n: run(args.toolhost, n, args.clients, args.seconds) for n in (1, 2, 3)}
    print(f"{args.clients} client threads, {args.seconds:g} s per row, {os.cpu_count()} cores\n")
    print("| replicas | calls/s | vs one replica |")
    print("|---:|---:|---:|")
    for n, rate in rates.items():
        print(f"| {n} | {rate:.0f} | {rate / rates[1]:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
