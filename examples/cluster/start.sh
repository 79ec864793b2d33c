#!/usr/bin/env bash
# Three stateless toolhost replicas behind HAProxy, all on 127.0.0.1:
#
#   examples/cluster/start.sh [FRONT_PORT]     # default 8800
#
# MCP clients connect to http://127.0.0.1:FRONT_PORT/mcp; any replica can
# answer any request. The replicas share one compiled-code cache. Stop it
# all with Ctrl-C. Needs HAProxy (`make setup` installs it) and
# target/release/toolhost (`make run` builds it).
set -euo pipefail
cd "$(dirname "$0")"
TOOLHOST=${TOOLHOST:-../../target/release/toolhost}
front=${1:-8800}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
for i in 1 2 3; do
    port=$(free_port)
    "$TOOLHOST" serve --config toolhost.toml --http "127.0.0.1:$port" --stateless &
    pids+=($!)
    export "CLUSTER_R$i=127.0.0.1:$port"
done
# Each replica answers /readyz with 200 once its plugins are loaded.
for i in 1 2 3; do
    var="CLUSTER_R$i"
    until python3 -c "import urllib.request, sys; urllib.request.urlopen('http://${!var}/readyz', timeout=1)" 2>/dev/null; do
        sleep 0.2
    done
done
export CLUSTER_BIND="127.0.0.1:$front"
haproxy -f haproxy.cfg -db &
pids+=($!)
echo "cluster: http://127.0.0.1:$front/mcp (replicas at $CLUSTER_R1, $CLUSTER_R2, $CLUSTER_R3)"
wait
