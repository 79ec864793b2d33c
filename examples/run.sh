#!/usr/bin/env bash
# `make run`: the main job on the bundled example. Plugins are built; the
# example configuration is checked; tools are called through the pipeline;
# an MCP client lists them through `toolhost serve`; and a few actions the
# policies forbid are refused with their reasons.
set -uo pipefail
cd "$(dirname "$0")/.."
TOOLHOST=${TOOLHOST:-target/release/toolhost}
# Only errors on stderr: the refusals below print their one-line reason.
export RUST_LOG=${RUST_LOG:-error}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ toolhost %s\n' "$*"; "$TOOLHOST" "$@"; }
# Calls that must be refused: show the refusal, and fail the demo if not.
refused() {
    printf '$ toolhost %s\n' "$*"
    if "$TOOLHOST" "$@"; then echo "!! this call should have been refused"; exit 1; fi
}

# The example site the fetch plugin may reach.
python3 -m http.server 8765 --bind 127.0.0.1 --directory examples/site >/dev/null 2>&1 &
SERVER=$!
REGISTRY=
trap 'kill $SERVER $REGISTRY 2>/dev/null' EXIT
for _ in $(seq 50); do
    python3 - <<'PY' 2>/dev/null && break
import socket; socket.create_connection(("127.0.0.1", 8765), 0.2).close()
PY
    sleep 0.1
done

step "What each plugin is granted"
show check || exit 1

step "A pure computation (calc: nothing granted)"
show call calc '{"expression": "(2 + 3) * 7 ^ 2"}' || exit 1
# --trace: where one call's time went (on stderr), beside its result.
show call --trace calc '{"expression": "6 * 7"}' || exit 1
show call stats '{"numbers": [4, 8, 15, 16, 23, 42]}' || exit 1

step "Files, only in the granted directory (notes: examples/notes as /notes)"
show call note_write '{"name": "demo.md", "text": "written by the notes plugin"}' || exit 1
show call note_list || exit 1
show call note_read '{"name": "demo.md"}' || exit 1

step "Hooks that change calls (guard: masks secrets in arguments and results)"
show call note_write '{"name": "keys.md", "text": "my key is AKIAIOSFODNN7EXAMPLE"}' || exit 1
show call note_read '{"name": "keys.md"}' || exit 1
rm -f examples/notes/keys.md

step "HTTP, only to the granted host (fetch: http://127.0.0.1:8765)"
show call fetch '{"url": "http://127.0.0.1:8765/hello.txt"}' || exit 1

step "Code in the sandbox (run_code: JavaScript and Python, nothing granted)"
show call run_code '{"language": "javascript", "code": "[1, 2, 3].map(x => x * x)"}' || exit 1
show call run_code '{"language": "python", "code": "import statistics\nstatistics.mean([4, 8, 15, 16, 23, 42])"}' || exit 1

step "Settings, secrets and rules (examples/secrets/toolhost.toml)"
# A secret in a private file; a page of the site echoes it back, and the
# result shows only its name.
mkdir -p target/example-secrets
(umask 077 && printf 'site-token-%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" > target/example-secrets/site_token)
printf 'your token is %s\n' "$(cat target/example-secrets/site_token)" > examples/site/token.txt
show check --config examples/secrets/toolhost.toml || exit 1
show call --config examples/secrets/toolhost.toml echo '{"text": "hello"}' || exit 1
show call --config examples/secrets/toolhost.toml fetch '{"url": "http://127.0.0.1:8765/token.txt"}' || exit 1
rm -f examples/site/token.txt
# A rule of toolhost.toml that asks a person before a private note is written.
show explain note_write '{"name": "private/plan.md", "text": "x"}' || exit 1

step "Plugins in Python and JavaScript (examples/languages/toolhost.toml)"
show call --config examples/languages/toolhost.toml word_count '{"text": "the cat and the hat", "top": 2}' || exit 1
show call --config examples/languages/toolhost.toml slugify '{"text": "Héllo, World! Ça va?"}' || exit 1
# An uncaught exception reaches the user with its traceback.
refused call --config examples/languages/toolhost.toml ratio '{"part": 1, "whole": 0}'

step "A plugin from an OCI registry: signed, pushed, locked, pulled (examples/registry)"
# A registry on 127.0.0.1:5077 (Debian's docker-registry), in a scratch
# directory; the plugin is signed with a fresh key and pushed, all by toolhost.
REG=target/registry-example
rm -rf "$REG" && mkdir -p "$REG"
printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:5077\n' \
    "$PWD/$REG/data" > "$REG/registry.yml"
docker-registry serve "$REG/registry.yml" >/dev/null 2>&1 &
REGISTRY=$!
for _ in $(seq 100); do
    python3 - <<'PY' 2>/dev/null && break
import socket; socket.create_connection(("127.0.0.1", 5077), 0.2).close()
PY
    sleep 0.1
done
show keygen --out "$REG/demo" || exit 1
show sign --key "$REG/demo.key" target/wasm32-wasip2/release/calc.wasm \
    -o "$REG/calc.signed.wasm" || exit 1
show push "$REG/calc.signed.wasm" oci://127.0.0.1:5077/examples/calc:1.0 || exit 1
show lock --config examples/registry/toolhost.toml || exit 1
show check --locked --config examples/registry/toolhost.toml || exit 1
show call --locked --config examples/registry/toolhost.toml calc '{"expression": "6 * 7"}' || exit 1
kill $REGISTRY 2>/dev/null; wait $REGISTRY 2>/dev/null; REGISTRY=
echo "(the registry is stopped: a locked run takes the plugin from the store)"
show call --locked --config examples/registry/toolhost.toml calc '{"expression": "6 * 7"}' || exit 1

step "The same tools as an MCP client sees them (toolhost serve, over stdio)"
printf '$ python3 examples/mcp_tools.py\n'
python3 examples/mcp_tools.py "$TOOLHOST" toolhost.toml || exit 1

step "Denied: what the policies forbid"
refused call note_read '{"name": "../../toolhost.toml"}'
refused call fetch '{"url": "http://localhost:8765/hello.txt"}'
refused call fetch '{"url": "https://example.com/"}'
refused call calc '{"expression": 42}'
refused call run_code '{"language": "python", "code": "open(\"/etc/passwd\").read()"}'
rm -f examples/notes/demo.md
echo
echo "Done: every call above went through the same pipeline (validation, the guard"
echo "extension's hooks, a timeout), each plugin in a fresh sandboxed instance."
