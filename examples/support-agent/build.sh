#!/usr/bin/env bash
# Builds the example worker into build/ with worker-build, using the repository's local tools
# (scripts/setup.sh installs them) so nothing is downloaded. `wrangler dev` (WRANGLER_COMMAND=dev)
# and `--dev` get the quick build (profile wasm-dev, no wasm-opt); otherwise the release build.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$HERE"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen)}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$REPO/node_modules/.bin/wasm-opt}"
export ESBUILD_BIN="${ESBUILD_BIN:-$REPO/node_modules/@esbuild/linux-x64/bin/esbuild}"
if [ "${WRANGLER_COMMAND:-}" = dev ] || [ "${1:-}" = --dev ]; then
  worker-build --profile wasm-dev --no-opt
else
  worker-build --release
fi
# The agent classes become reachable over Durable Object RPC (a class extending `DurableObject`
# around each; see scripts/rpc-bridge.mjs of the durable-chat repository, which needs esbuild).
# A build it cannot bridge fails: a parent's `chat()` could not reach the classes.
BRIDGE="${DURABLE_CHAT_BRIDGE:-$REPO/scripts/rpc-bridge.mjs}"
[ -f "$BRIDGE" ] || { echo "build: the RPC bridge $BRIDGE is missing" >&2; exit 1; }
node "$BRIDGE" build
