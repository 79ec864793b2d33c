"""What one `toolhost call` costs from the shell, start to exit, with the
bundled configuration (five plugins and extensions, two interpreters)
against a configuration holding only the tool called (`make bench` runs
it).

    python3 bench/cli/one_call.py [--runs N] [--toolhost PATH]

Each configuration is run N times (after two warm-up runs that fill the
compiled-code cache and the cached tool lists); the table gives the median
and the 90th percentile of the wall time, and the ratio of the medians.
Plugins and interpreters the call does not need are not loaded, so the
bundled configuration should cost little more than the tool alone: the
goal is at most 1.5 times.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARGS = '{"expression": "(2 + 3) * 7"}'


def run(toolhost: str, config: Path, runs: int) -> list[float]:
    command = [toolhost, "call", "--config", str(config), "calc", ARGS]
    for _ in range(2):
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--toolhost", default=str(ROOT / "target/release/toolhost"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        alone = Path(tmp) / "calc-only.toml"
        alone.write_text(
            "[host]\n"
            f'cache_dir = "{ROOT / "target/toolhost-cache"}"\n\n'
            "[plugins.calc]\n"
            f'wasm = "{ROOT / "target/wasm32-wasip2/release/calc.wasm"}"\n'
        )
        rows = [
            ("calc alone", run(args.toolhost, alone, args.runs)),
            ("bundled toolhost.toml", run(args.toolhost, ROOT / "toolhost.toml", args.runs)),
        ]
    base = statistics.median(rows[0][1])
    print("| configuration | median | p90 | vs calc alone |")
    print("|---|---:|---:|---:|")
    for name, times in rows:
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"| {name} | {median:.1f} ms | {p90:.1f} ms | {median / base:.2f}x |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
