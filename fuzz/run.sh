#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in fuzz/targets (libFuzzer, via
# cargo-fuzz), each for FUZZ_SECONDS (default 60), then a table of runs and
# coverage in target/fuzz/summary.md. Run by `make fuzz`.
#
# cargo-fuzz passes flags only a nightly compiler accepts (-Zsanitizer=...);
# RUSTC_BOOTSTRAP=1 makes the stable toolchain accept them, so fuzzing needs
# no second toolchain. New inputs go to target/fuzz/corpus/<target> (the
# checked-in seeds in fuzz/corpus/<target> are read, never written); a crash
# stops that target and leaves its input in target/fuzz/artifacts/<target>/,
# to be copied into fuzz/regressions/<target>/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/targets/Cargo.toml | tail -n +2)}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$PWD/target/fuzz/build"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cargo fuzz build --fuzz-dir fuzz/targets -O
# Each target runs from the binary built above: `cargo fuzz run` would
# rebuild first, so a change to the sources during a long run would change
# (or break) the targets still to come.
bin="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
# What cargo-fuzz sets when it runs a target.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}"
mkdir -p target/fuzz
summary=target/fuzz/summary.md
{
  echo "| target | runs | runs/s | coverage (edges) | features | corpus | result |"
  echo "|---|---:|---:|---:|---:|---:|---|"
} > "$summary"
failed=0
for t in $targets; do
  mkdir -p "target/fuzz/corpus/$t" "target/fuzz/artifacts/$t"
  log="target/fuzz/$t.log"
  echo "== $t: ${seconds}s"
  if "$bin/$t" "target/fuzz/corpus/$t" "fuzz/corpus/$t" \
      -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="target/fuzz/artifacts/$t/" > "$log" 2>&1; then
    result=ok
  else
    result="**crash** (see $log)"
    failed=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "| $t | ${runs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $result |" >> "$summary"
  tail -3 "$log"
done
cat "$summary"
exit $failed
