# toolhost: the only entry points a newcomer needs.
#   make run    build and run the bundled example
#   make test   everything CI checks, from a fresh clone
#   make bench  criterion benchmarks (figures in BENCHMARKS.md)
#
# Everything builds in the release profile, so wasmtime and the other
# dependencies are compiled once and shared by run, test and bench.

CARGO ?= cargo

.PHONY: setup plugins run run-native test lint bench

# Plugins build for wasm32-wasip2 into the shared target directory:
# target/wasm32-wasip2/release/<crate>.wasm
WASM_BUILD = CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --release --target wasm32-wasip2

## Installs what the build and the tests need on a fresh machine.
setup:
	rustup target add wasm32-wasip2

## Builds the example plugins and the hostile test plugins.
plugins: setup
	cd plugins && $(WASM_BUILD)
	cd tests/plugins && $(WASM_BUILD)

## Runs toolhost's main job on the bundled example.
run: plugins
	$(CARGO) build --release -p toolhost --bin toolhost
	examples/run.sh

## The native pipeline on its own: a mixed-mode batch and what the hooks saw.
run-native:
	$(CARGO) run --release -p toolhost --example mixed_batch

## Formatting check, then every test of the workspace.
test: plugins
	$(CARGO) fmt --all -- --check
	$(CARGO) test --release --workspace --exclude toolhost-bench

## Lints every target with warnings as errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

## Criterion benchmarks; see BENCHMARKS.md.
bench: plugins
	$(CARGO) bench -p toolhost-bench
