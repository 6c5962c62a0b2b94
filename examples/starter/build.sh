#!/usr/bin/env bash
# Builds the worker into build/ with worker-build (`cargo install worker-build --version 0.8.7`).
# `wrangler dev` gets the quick build (no wasm-opt), `wrangler deploy` the release build.
# Inside this repository, the tools scripts/setup.sh installed are used, so nothing is downloaded;
# elsewhere worker-build finds its own (or set WASM_BINDGEN_BIN, WASM_OPT_BIN, ESBUILD_BIN).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
REPO="$(cd "$HERE/../.." && pwd)"
if [ -x "$REPO/node_modules/.bin/wasm-opt" ]; then
  export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen)}"
  export WASM_OPT_BIN="${WASM_OPT_BIN:-$REPO/node_modules/.bin/wasm-opt}"
  export ESBUILD_BIN="${ESBUILD_BIN:-$REPO/node_modules/@esbuild/linux-x64/bin/esbuild}"
fi
if [ "${WRANGLER_COMMAND:-}" = dev ] || [ "${1:-}" = --dev ]; then
  worker-build --dev
else
  worker-build --release
fi
# The agent classes become reachable over Durable Object RPC (a class extending `DurableObject`
# around each; see scripts/rpc-bridge.mjs of the durable-chat repository, which needs esbuild).
BRIDGE="${DURABLE_CHAT_BRIDGE:-$REPO/scripts/rpc-bridge.mjs}"
if [ -f "$BRIDGE" ]; then
  node "$BRIDGE" build
fi
