#!/usr/bin/env python3
"""A long mixed load on `toolhost serve --http`, checked answer by answer.

Starts the server on 127.0.0.1 with well-behaved and hostile plugins, drives
it from several MCP sessions at once for --seconds, and checks:

- every request gets exactly one answer, with its own id and the outcome its
  kind calls for (nothing lost, nothing duplicated, no answer meant for
  another session: each fast call carries operands only its caller knows);
- the server's RSS and open descriptors at the end are within a margin of
  their level after warm-up (a leak check);
- the server's log holds no panic.

The mix: fast wasm calls (calc), slow ones (nap), calls that spin past their
deadline or block in a host call past it, traps, panics, memory over the
limit, arguments the schema refuses, tools/list, malformed bodies, calls
cancelled by the client, and clients that disconnect mid-call. toolhost has
no plugin reloading, so tools/list runs against a fixed set.

Writes target/soak/summary.json, samples.csv and soak.svg (RSS and
descriptors over time). Exit status 0 when every check holds.

Uses only the standard library, speaking streamable HTTP itself, so each
request's bytes and answer are in its hands: a client SDK would hide a
duplicate or a lost answer.
"""

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WASM = ROOT / "target" / "wasm32-wasip2" / "release"
OUT = ROOT / "target" / "soak"

PROTOCOL = "2025-06-18"


def config_text(cache_dir):
    return f"""
[host]
call_timeout_ms = 10000
cache_dir = "{cache_dir}"

[plugins.calc]
wasm = "{WASM / 'calc.wasm'}"
max_instances = 16

[plugins.runaway]
wasm = "{WASM / 'runaway.wasm'}"
memory_mb = 32
timeout_ms = 4000
max_instances = 16
"""


class Server:
    """`toolhost serve --http` on a free port, its log in a file."""

    def __init__(self, binary, workdir):
        cfg = workdir / "toolhost.toml"
        cfg.write_text(config_text(workdir / "cache"))
        self.log_path = workdir / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--config", str(cfg), "--http", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.time() + 120
        while time.time() < deadline:
            text = self.log_path.read_text(errors="replace")
            for line in text.splitlines():
                if "over MCP at http://" in line:
                    addr = line.split("http://", 1)[1].split("/", 1)[0]
                    host, port = addr.rsplit(":", 1)
                    self.host, self.port = host, int(port)
                    return
            if self.proc.poll() is not None:
                sys.exit(f"the server exited:\n{text}")
            time.sleep(0.1)
        sys.exit("the server did not start within 120 s")

    def sample(self):
        pid = self.proc.pid
        rss_kb = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss_kb, fds

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return self.log_path.read_text(errors="replace")


def parse_answer(resp, body):
    """The JSON-RPC messages in a POST's answer (JSON or an SSE stream)."""
    kind = resp.getheader("content-type", "")
    if kind.startswith("application/json"):
        return [json.loads(body)] if body.strip() else []
    messages = []
    for event in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        data = [l[5:].lstrip(" ") for l in event.split("\n") if l.startswith("data:")]
        if data and "".join(data).strip():
            messages.append(json.loads("\n".join(data)))
    return messages


class Session:
    """One MCP session over one keep-alive connection."""

    def __init__(self, server):
        self.server = server
        self.conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
        self.sid = None
        self.next_id = 1
        init = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "soak", "version": "0"},
            },
        )
        assert "result" in init, init
        status, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, status

    def headers(self):
        h = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        return h

    def post(self, message, raw=None):
        body = raw if raw is not None else json.dumps(message).encode()
        self.conn.request("POST", "/mcp", body=body, headers=self.headers())
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.getheader("mcp-session-id"):
            self.sid = resp.getheader("mcp-session-id")
        return resp.status, parse_answer(resp, data) if data else []

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        status, messages = self.post(
            {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        )
        answers = [m for m in messages if "result" in m or "error" in m]
        if len(answers) != 1:
            raise Failure(f"{method} id {rid}: {len(answers)} answers (HTTP {status}): {messages}")
        if answers[0].get("id") != rid:
            raise Failure(f"{method} id {rid} answered as id {answers[0].get('id')}")
        return answers[0]

    def call(self, tool, arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments})


class Failure(Exception):
    pass


def text_of(answer):
    result = answer.get("result") or {}
    return "".join(c.get("text", "") for c in result.get("content", []))


def expect_error(answer, *words):
    """A tool result marked isError (or a JSON-RPC error) mentioning words."""
    if "error" in answer:
        said = json.dumps(answer["error"])
    elif answer["result"].get("isError"):
        said = text_of(answer)
    else:
        raise Failure(f"expected a failure, got {answer}")
    if not any(w in said for w in words):
        raise Failure(f"expected one of {words}: {said}")


def fast(s, rng):
    a, b = rng.randrange(10**6), rng.randrange(10**6)
    ans = s.call("calc", {"expression": f"{a} + {b}"})
    if text_of(ans) != str(a + b) or ans["result"].get("isError"):
        raise Failure(f"{a} + {b} answered {ans}")


def slow(s, rng):
    ms = rng.randrange(20, 200)
    ans = s.call("nap", {"ms": ms})
    if text_of(ans) != f"napped {ms}":
        raise Failure(f"nap {ms} answered {ans}")


def spin(s, rng):
    expect_error(s.call("spin", {}), "timed out")


def block(s, rng):
    expect_error(s.call("block", {}), "timed out")


def trap(s, rng):
    expect_error(s.call("trap", {}), "trapped")


def panic(s, rng):
    expect_error(s.call("panic", {}), "panicked")


def memory(s, rng):
    expect_error(s.call("grow", {}), "memory limit")


def bad_args(s, rng):
    expect_error(s.call("calc", {"expression": rng.randrange(100)}), "invalid arguments")


def list_tools(s, rng):
    ans = s.request("tools/list", {})
    names = {t["name"] for t in ans["result"]["tools"]}
    if not {"calc", "nap", "spin", "grow"} <= names:
        raise Failure(f"tools/list gave {sorted(names)}")


def malformed(s, rng):
    body = rng.choice([b'{"jsonrpc":"2.0","id":', b"[" * 100, b"not json", b'{"id":1}'])
    status, messages = s.post(None, raw=body)
    if status != 400 or not messages or "error" not in messages[0]:
        raise Failure(f"malformed body answered HTTP {status}: {messages}")


def cancelled(s, rng):
    """A call cancelled by the client while it waits in a host call: never
    a success, and stopped by the cancellation, not by its deadline (no
    answer, or one that says it was cancelled rather than timed out)."""
    rid = s.next_id
    s.next_id += 1
    holder = {}

    def run():
        conn = http.client.HTTPConnection(s.server.host, s.server.port, timeout=60)
        msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
               "params": {"name": "block", "arguments": {}}}
        conn.request("POST", "/mcp", body=json.dumps(msg).encode(), headers=s.headers())
        resp = conn.getresponse()
        holder["messages"] = parse_answer(resp, resp.read())
        conn.close()

    t = threading.Thread(target=run)
    t.start()
    # The client cannot see when the call reaches the server, and a
    # cancellation that arrives first names a request the server does not
    # know yet, so it is ignored. So the cancellation is sent again every
    # quarter second until the answer comes: however slow the machine, the
    # call is cancelled within a quarter second of reaching the server,
    # long before its 4 s deadline (which starts when it reaches the
    # server). A server that is sent it and still runs the call to its
    # deadline fails the check below.
    time.sleep(0.25)
    while t.is_alive():
        status, _ = s.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": rid, "reason": "soak"}})
        if status != 202:
            raise Failure(f"the cancellation answered HTTP {status}")
        t.join(0.25)
    t.join(60)
    answers = [m for m in holder.get("messages", []) if "result" in m or "error" in m]
    if len(answers) > 1 or any(m.get("id") != rid for m in answers):
        raise Failure(f"a cancelled call answered {answers}")
    if answers:
        said = json.dumps(answers[0])
        if "result" in answers[0] and not answers[0]["result"].get("isError"):
            raise Failure(f"a cancelled call succeeded: {said}")
        if "timed out" in said:
            raise Failure(f"a cancelled call ran to its deadline: {said}")


def disconnect(s, rng):
    """A client that sends a slow call and goes away without reading."""
    sock = socket.create_connection((s.server.host, s.server.port), timeout=10)
    msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "nap", "arguments": {"ms": 500}}}).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {s.server.host}:{s.server.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Mcp-Session-Id: {s.sid}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
        f"Content-Length: {len(msg)}\r\n\r\n"
    ).encode()
    sock.sendall(head + msg)
    time.sleep(rng.random() * 0.1)
    sock.close()


KINDS = {
    # kind: (function, weight)
    "fast": (fast, 40),
    "slow": (slow, 10),
    "spin": (spin, 3),
    "block": (block, 3),
    "trap": (trap, 4),
    "panic": (panic, 4),
    "memory": (memory, 3),
    "bad_args": (bad_args, 5),
    "list": (list_tools, 5),
    "malformed": (malformed, 5),
    "cancelled": (cancelled, 2),
    "disconnect": (disconnect, 2),
}


def worker(server, seed, stop, stats, errors, lock):
    rng = random.Random(seed)
    names = list(KINDS)
    weights = [KINDS[k][1] for k in names]
    session = None
    while not stop.is_set():
        try:
            if session is None or rng.random() < 0.002:
                # Now and then a client leaves and a new one arrives.
                session = Session(server)
            kind = rng.choices(names, weights)[0]
            KINDS[kind][0](session, rng)
            with lock:
                stats[kind] += 1
        except Failure as e:
            with lock:
                errors.append(str(e))
        except (OSError, http.client.HTTPException) as e:
            with lock:
                errors.append(f"transport: {e!r}")
            session = None


def svg(samples, path):
    """RSS (MiB) and open descriptors over time, as one SVG."""
    w, h, pad = 900, 360, 50
    t_max = max(s[0] for s in samples) or 1
    rss = [s[1] / 1024 for s in samples]
    fds = [s[2] for s in samples]
    rss_max = max(rss) * 1.2 or 1
    fd_max = max(fds) * 1.2 or 1

    def line(values, vmax, colour):
        pts = " ".join(
            f"{pad + (s[0] / t_max) * (w - 2 * pad):.1f},{h - pad - (v / vmax) * (h - 2 * pad):.1f}"
            for s, v in zip(samples, values)
        )
        return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{pts}"/>'

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
        f'<line x1="{w - pad}" y1="{pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
        line(rss, rss_max, "#1f77b4"),
        line(fds, fd_max, "#d62728"),
        f'<text x="{pad}" y="{pad - 10}" fill="#1f77b4">RSS, MiB (0–{rss_max:.0f})</text>',
        f'<text x="{w - pad}" y="{pad - 10}" fill="#d62728" text-anchor="end">open descriptors (0–{fd_max:.0f})</text>',
        f'<text x="{w / 2}" y="{h - 15}" text-anchor="middle">seconds (0–{t_max:.0f})</text>',
        "</svg>",
    ]
    path.write_text("\n".join(parts) + "\n")


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=1800)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--warmup", type=float, default=None,
                    help="seconds before the leak baseline (default: a fifth of the run)")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "toolhost"))
    args = ap.parse_args()
    warmup = args.warmup if args.warmup is not None else args.seconds / 5
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(args.binary), Path(tmp))
        stop = threading.Event()
        stats, errors, lock = Counter(), [], threading.Lock()
        threads = [
            threading.Thread(target=worker, args=(server, i, stop, stats, errors, lock), daemon=True)
            for i in range(args.clients)
        ]
        started = time.time()
        for t in threads:
            t.start()
        samples = []
        while time.time() - started < args.seconds:
            time.sleep(1)
            rss, fds = server.sample()
            samples.append((time.time() - started, rss, fds))
        stop.set()
        for t in threads:
            t.join(60)
        # Let abandoned and cancelled calls finish, then take the last sample.
        time.sleep(5)
        rss, fds = server.sample()
        samples.append((time.time() - started, rss, fds))
        log = server.stop()

    base = [s for s in samples if warmup <= s[0] < warmup + max(10, args.seconds / 10)]
    base_rss = median([s[1] for s in base]) if base else samples[0][1]
    base_fds = median([s[2] for s in base]) if base else samples[0][2]
    end_rss, end_fds = samples[-1][1], samples[-1][2]
    checks = {
        "every answer right": not errors,
        "rss within margin": end_rss <= base_rss * 1.25 + 16 * 1024,
        "descriptors within margin": end_fds <= base_fds + 8,
        "no panic in the log": "panicked" not in log,
    }
    total = sum(stats.values())
    summary = {
        "seconds": round(samples[-1][0], 1),
        "clients": args.clients,
        "requests": total,
        "requests_per_second": round(total / args.seconds, 1),
        "by_kind": dict(stats),
        "errors": errors[:50],
        "error_count": len(errors),
        "rss_kib": {"after_warmup": base_rss, "end": end_rss,
                    "max": max(s[1] for s in samples)},
        "descriptors": {"after_warmup": base_fds, "end": end_fds,
                        "max": max(s[2] for s in samples)},
        "checks": checks,
    }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    with open(OUT / "samples.csv", "w") as f:
        f.write("seconds,rss_kib,descriptors\n")
        for s in samples:
            f.write(f"{s[0]:.1f},{s[1]},{s[2]}\n")
    svg(samples, OUT / "soak.svg")
    (OUT / "server.log").write_text(log)
    print(json.dumps(summary, indent=2))
    if not all(checks.values()):
        sys.exit("soak: a check failed: " + ", ".join(k for k, v in checks.items() if not v))


if __name__ == "__main__":
    main()
