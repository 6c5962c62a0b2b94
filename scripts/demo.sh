#!/usr/bin/env bash
# THE demo command: set-up, then `wrangler dev` on 127.0.0.1:${PORT:-8787} (wrangler runs
# scripts/build.sh itself). Without a real OPENAI_BASE_URL (environment or .dev.vars) it also starts
# the scripted model server on 127.0.0.1:${MODEL_PORT:-8788} and points the worker at it. Unless
# MCP_DEMO_URL is set (to a server of your own, or to "" for none), it starts the repository's MCP
# server (tests/support/mcp-server.mjs) on 127.0.0.1:${MCP_PORT:-8790}, allows that host and port for
# the agent's outbound fetches (OUTBOUND_ALLOW_HOSTS, unless set) and connects the demo agent to it.
# Extra args go to wrangler dev (e.g. --persist-to .wrangler/demo-state).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false  # no network: skip fetching the Request.cf placeholder

bash scripts/setup.sh
. scripts/node-env.sh

PORT="${PORT:-8787}"
MODEL_PORT="${MODEL_PORT:-8788}"
VAR_ARGS=()
MODEL_PID=""
MCP_PORT="${MCP_PORT:-8790}"
MCP_PID=""
cleanup() {
  if [ -n "$MODEL_PID" ]; then kill "$MODEL_PID" 2>/dev/null || true; fi
  if [ -n "$MCP_PID" ]; then kill "$MCP_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Whether .dev.vars sets a var whose name matches the extended regex $1 (to the value pattern $2).
dev_vars_set() { [ -f .dev.vars ] && grep -Eq "^[[:space:]]*($1)[[:space:]]*=${2:-}" .dev.vars; }

has_base_url=0
if [ -n "${OPENAI_BASE_URL:-}" ]; then
  has_base_url=1
  VAR_ARGS+=(--var "OPENAI_BASE_URL:$OPENAI_BASE_URL")
elif dev_vars_set OPENAI_BASE_URL '[[:space:]]*"?[^"[:space:]]'; then
  has_base_url=1
fi

if [ "$has_base_url" = 0 ]; then
  echo "demo: no OPENAI_BASE_URL set: starting the scripted model server on 127.0.0.1:$MODEL_PORT"
  node tests/support/model-server.mjs --host 127.0.0.1 --port "$MODEL_PORT" &
  MODEL_PID=$!
  for _ in $(seq 1 50); do
    if node -e "fetch('http://127.0.0.1:$MODEL_PORT/v1/models').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then break; fi
    kill -0 "$MODEL_PID" 2>/dev/null || { echo "demo: model server failed to start" >&2; exit 1; }
    sleep 0.1
  done
  VAR_ARGS+=(--var "OPENAI_BASE_URL:http://127.0.0.1:$MODEL_PORT/v1")
fi

# With a real model the agents refuse anonymous requests unless AUTH_TOKEN or ALLOW_ANONYMOUS is
# set (docs/guides/configuration.md#access). A local run with a model of the user's and neither of
# them in .dev.vars gets a random token of its own, and the page's URL is printed with it: another
# program or web page on this machine cannot spend the model without it.
PAGE_QUERY=""
if [ "$has_base_url" = 1 ] && ! dev_vars_set 'AUTH_TOKEN|ALLOW_ANONYMOUS'; then
  DEMO_TOKEN="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  echo "demo: a model of your own and no AUTH_TOKEN in .dev.vars: this run's token is generated (AUTH_TOKEN)"
  VAR_ARGS+=(--var "AUTH_TOKEN:$DEMO_TOKEN")
  PAGE_QUERY="?token=$DEMO_TOKEN"
fi

# The demo's Coordinator reaches ChatAgents over the sub-agent channel, which is closed without a
# CHANNEL_SECRET: a local run gets a random one unless the environment or .dev.vars sets it.
if [ -z "${CHANNEL_SECRET:-}" ] && ! dev_vars_set CHANNEL_SECRET; then
  VAR_ARGS+=(--var "CHANNEL_SECRET:demo-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')")
elif [ -n "${CHANNEL_SECRET:-}" ]; then
  VAR_ARGS+=(--var "CHANNEL_SECRET:$CHANNEL_SECRET")
fi
if [ -z "${MCP_DEMO_URL+set}" ]; then
  echo "demo: starting the demo MCP server on 127.0.0.1:$MCP_PORT"
  node tests/support/mcp-server.mjs --host 127.0.0.1 --port "$MCP_PORT" &
  MCP_PID=$!
  for _ in $(seq 1 50); do
    if node -e "fetch('http://127.0.0.1:$MCP_PORT/__calls').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then break; fi
    kill -0 "$MCP_PID" 2>/dev/null || { echo "demo: MCP server failed to start" >&2; exit 1; }
    sleep 0.1
  done
  MCP_DEMO_URL="http://127.0.0.1:$MCP_PORT/mcp"
  # The agent fetches no loopback host unless allowed: this run allows its own MCP server's.
  if [ -z "${OUTBOUND_ALLOW_HOSTS:-}" ] && ! dev_vars_set OUTBOUND_ALLOW_HOSTS; then
    VAR_ARGS+=(--var "OUTBOUND_ALLOW_HOSTS:127.0.0.1:$MCP_PORT")
  elif [ -n "${OUTBOUND_ALLOW_HOSTS:-}" ]; then
    VAR_ARGS+=(--var "OUTBOUND_ALLOW_HOSTS:$OUTBOUND_ALLOW_HOSTS")
  fi
fi
if [ -n "$MCP_DEMO_URL" ]; then
  VAR_ARGS+=(--var "MCP_DEMO_URL:$MCP_DEMO_URL")
fi

echo "demo: starting wrangler dev (it builds the worker first: a few minutes the first time, then seconds)"
echo "demo: open http://127.0.0.1:$PORT/$PAGE_QUERY in a browser"
npx wrangler dev --ip 127.0.0.1 --port "$PORT" "${VAR_ARGS[@]}" "$@"
