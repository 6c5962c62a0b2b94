#!/usr/bin/env bash
# Builds the worker into build/ (build/index.js + build/index_bg.wasm) with worker-build, pointing it
# at local wasm-bindgen, wasm-opt (npm binaryen) and esbuild (npm) so it never downloads anything;
# first bundles the demo page (demo/build.mjs), and afterwards wraps every agent class in a bridge
# class that extends `DurableObject` (scripts/rpc-bridge.mjs) so that other Workers and agents can
# call it over Durable Object RPC. Run scripts/setup.sh first on a fresh machine.
#
#   bash scripts/build.sh [--dev|--release|--test] [worker-build args…]
#
# --release (the default; `wrangler deploy`): cargo profile `release` (full LTO) and wasm-opt.
# --test (the end-to-end tests, the benchmark): the same, plus the cargo feature `debug-routes`
# (the `DEBUG_TOOLS` / `DEBUG_MEMORY` switches and their routes, which a deploy never has).
# --dev (the default when wrangler runs it for `wrangler dev`, which sets WRANGLER_COMMAND=dev):
# cargo profile `wasm-dev` (no LTO, incremental) and no wasm-opt.
# When no input changed since the last build of the same kind, nothing is rebuilt: wrangler dev runs
# this command twice per start (once to find the entry point, once when its file watcher is ready).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

. scripts/node-env.sh

MODE=release
[ "${WRANGLER_COMMAND:-}" = dev ] && MODE=dev
case "${1:-}" in
  --dev) MODE=dev; shift ;;
  --release) MODE=release; shift ;;
  --test) MODE=test; shift ;;
esac

WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen || true)}"
WASM_OPT_BIN="${WASM_OPT_BIN:-$ROOT/node_modules/.bin/wasm-opt}"
ESBUILD_BIN="${ESBUILD_BIN:-$ROOT/node_modules/@esbuild/linux-x64/bin/esbuild}"

# worker-build silently falls back to downloading when a *_BIN path is wrong: check them here.
missing=0
for pair in "wasm-bindgen:$WASM_BINDGEN_BIN" "wasm-opt:$WASM_OPT_BIN" "esbuild:$ESBUILD_BIN"; do
  name="${pair%%:*}"; path="${pair#*:}"
  if [ -z "$path" ] || [ ! -x "$path" ]; then
    echo "build: $name not found (${path:-not on PATH}); run: bash scripts/setup.sh" >&2
    missing=1
  fi
done
if ! command -v worker-build >/dev/null 2>&1; then
  echo "build: worker-build not found; run: bash scripts/setup.sh" >&2
  missing=1
fi
[ "$missing" = 0 ] || exit 1

export WASM_BINDGEN_BIN WASM_OPT_BIN ESBUILD_BIN

# The inputs' names and contents, and the kind of build: equal to the last build's ⇒ that build is
# current (contents, not modification times: an edit undone is no change).
fingerprint() {
  {
    echo "mode=$MODE args=$*"
    find src demo/src demo/index.html demo/basic.html demo/build.mjs build.rs Cargo.toml Cargo.lock \
      scripts/build.sh scripts/rpc-bridge.mjs -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
# One build at a time per checkout (wrangler, a test and a user may start one together).
mkdir -p target
exec 9>target/.build.lock
flock 9

# build/ holds the last build of either kind; target/worker-<kind>/ keeps a copy of each, so that
# switching between `wrangler dev` and the tests or a deploy does not rebuild.
STAMP=.inputs
KEPT="target/worker-$MODE"
want="$(fingerprint "$@")"
current() { [ -f "$1/index.js" ] && [ -f "$1/index_bg.wasm" ] && [ "$(cat "$1/$STAMP" 2>/dev/null)" = "$want" ]; }
if current build; then
  echo "build: up to date ($MODE build of the current sources)"
  exit 0
fi
if current "$KEPT"; then
  rm -rf build && cp -a "$KEPT" build
  echo "build: up to date ($MODE build of the current sources, restored from $KEPT)"
  exit 0
fi

# Bundle the demo page (build.rs embeds demo/dist/index.html when present). demo/build.mjs only
# rewrites the page when its content changed, so cargo does not recompile for an unchanged page.
if [ -f demo/build.mjs ]; then
  echo "build: node demo/build.mjs"
  node demo/build.mjs
fi

# This repository's worker is the demo: its classes, page and fetch entry are the `demo` feature,
# which the library leaves out by default.
if [ "$MODE" = dev ]; then
  echo "build: worker-build --profile wasm-dev --no-opt . --features demo $*"
  worker-build --profile wasm-dev --no-opt . --features demo "$@"
elif [ "$MODE" = test ]; then
  echo "build: worker-build --release . --features demo,debug-routes $*"
  worker-build --release . --features demo,debug-routes "$@"
else
  echo "build: worker-build --release . --features demo $*"
  worker-build --release . --features demo "$@"
fi
for f in build/index.js build/index_bg.wasm; do
  [ -f "$f" ] || { echo "build: expected $f after worker-build" >&2; exit 1; }
done
# The agent classes become reachable over Durable Object RPC (see scripts/rpc-bridge.mjs).
node scripts/rpc-bridge.mjs build
echo "$want" > "build/$STAMP"
rm -rf "$KEPT" && cp -a build "$KEPT"
echo "build: ok ($MODE, $(du -h build/index_bg.wasm | cut -f1) wasm)"
