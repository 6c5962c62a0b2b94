#!/usr/bin/env bash
# Builds the worker into build/ (build/index.js + build/index_bg.wasm) with worker-build, then
# makes the agent classes reachable over Durable Object RPC with the bridge that ships in the
# durable-chat package (its scripts/rpc-bridge.mjs, found through `cargo metadata`).
#
#   bash build.sh [--dev|--release]
#
# `wrangler dev` (which sets WRANGLER_COMMAND=dev) and --dev get the quick build: cargo profile
# `wasm-dev` from .cargo/config.toml, no wasm-opt. Otherwise (`wrangler deploy`) the release
# build: profile `release` and wasm-opt. Never `worker-build --dev`: its debug glue breaks
# `worker::Delay` timers.
#
# Tools come from this machine, never from a download: worker-build and wasm-bindgen from cargo
# (`cargo install worker-build --version 0.8.7`, `cargo install wasm-bindgen-cli --version 0.2.130`,
# the version of the `wasm-bindgen` dependency), wasm-opt and esbuild from `npm install` here.
# WASM_BINDGEN_BIN, WASM_OPT_BIN and ESBUILD_BIN name others. A missing tool stops the build
# with a message saying what to install. When nothing changed since the last build of the same
# kind, nothing is rebuilt (wrangler dev runs this command twice per start).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

fail() {
  echo "build: $*" >&2
  exit 1
}

MODE=release
[ "${WRANGLER_COMMAND:-}" = dev ] && MODE=dev
case "${1:-}" in
  --dev) MODE=dev ;;
  --release) MODE=release ;;
  "") ;;
  *) fail "unknown argument $1 (use --dev or --release)" ;;
esac

command -v node >/dev/null 2>&1 || fail "node not found (Node >= 22.12, see README.md)"
command -v worker-build >/dev/null 2>&1 ||
  fail "worker-build not found: cargo install worker-build --version 0.8.7"
[ -d node_modules ] || fail "node_modules missing: run npm install here first"

esbuild_default() {
  local platform
  for platform in node_modules/@esbuild/*/bin/esbuild; do
    [ -x "$platform" ] && { echo "$HERE/$platform"; return; }
  done
  echo "$HERE/node_modules/.bin/esbuild"
}
WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen || true)}"
WASM_OPT_BIN="${WASM_OPT_BIN:-$HERE/node_modules/.bin/wasm-opt}"
ESBUILD_BIN="${ESBUILD_BIN:-$(esbuild_default)}"
# worker-build downloads a tool whose path is unset or wrong: check each first.
for pair in "wasm-bindgen:$WASM_BINDGEN_BIN:cargo install wasm-bindgen-cli --version 0.2.130" \
  "wasm-opt:$WASM_OPT_BIN:npm install" "esbuild:$ESBUILD_BIN:npm install"; do
  name="${pair%%:*}"; rest="${pair#*:}"; path="${rest%%:*}"; fix="${rest#*:}"
  [ -n "$path" ] && [ -x "$path" ] || fail "$name not found (${path:-not on PATH}): $fix"
done
export WASM_BINDGEN_BIN WASM_OPT_BIN ESBUILD_BIN

# The durable-chat package's folder (a path dependency, or the copy cargo downloaded).
DURABLE_CHAT="$(cargo metadata --format-version 1 | node -e '
  let text = "";
  process.stdin.on("data", (d) => (text += d)).on("end", () => {
    const found = JSON.parse(text).packages.find((p) => p.name === "durable-chat");
    if (found) console.log(require("node:path").dirname(found.manifest_path));
  });')" || fail "cargo metadata failed"
[ -n "$DURABLE_CHAT" ] || fail "durable-chat is not a dependency of this crate (cargo metadata)"
BRIDGE="$DURABLE_CHAT/scripts/rpc-bridge.mjs"
[ -f "$BRIDGE" ] || fail "$BRIDGE missing: this durable-chat package has no RPC bridge"

fingerprint() {
  {
    echo "mode=$MODE durable-chat=$DURABLE_CHAT"
    { find src Cargo.toml Cargo.lock build.sh .cargo "$DURABLE_CHAT/src" "$DURABLE_CHAT/Cargo.toml" \
      "$BRIDGE" -type f -print0 2>/dev/null || true; } | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
want="$(fingerprint)"
if [ -f build/index.js ] && [ -f build/index_bg.wasm ] && [ "$(cat build/.inputs 2>/dev/null)" = "$want" ]; then
  echo "build: up to date ($MODE)"
  exit 0
fi

rm -f build/.inputs
if [ "$MODE" = dev ]; then
  echo "build: worker-build --profile wasm-dev --no-opt"
  worker-build --profile wasm-dev --no-opt
else
  echo "build: worker-build --release"
  worker-build --release
fi
for f in build/index.js build/index_bg.wasm; do
  [ -f "$f" ] || fail "expected $f after worker-build"
done

# The agent classes become classes that extend `DurableObject`, so that other Workers and agents
# (a Think parent's `chat()`) can call them over Durable Object RPC.
node "$BRIDGE" build || fail "the RPC bridge ($BRIDGE) failed"
head -n 1 build/index.js | grep -q '^// durable-chat rpc bridge' ||
  fail "the RPC bridge found no agent class in build/index.js (is there a chat_agent! class?)"
echo "$want" > build/.inputs
echo "build: ok ($MODE, $(du -h build/index_bg.wasm | cut -f1) wasm)"
