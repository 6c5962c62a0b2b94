#!/usr/bin/env bash
# Builds the worker into build/ (build/index.js + build/index_bg.wasm) with worker-build --release,
# pointing it at local wasm-bindgen, wasm-opt (npm binaryen) and esbuild (npm) so it never
# downloads anything; first runs demo/build.mjs if that exists (demo page bundle). Run
# scripts/setup.sh first on a fresh machine. Extra args go to worker-build.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

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

# Optional pre-step: bundle the demo page (build.rs embeds demo/dist/index.html when present).
if [ -f demo/build.mjs ]; then
  echo "build: node demo/build.mjs"
  node demo/build.mjs
fi

echo "build: worker-build --release $*"
worker-build --release "$@"
for f in build/index.js build/index_bg.wasm; do
  [ -f "$f" ] || { echo "build: expected $f after worker-build" >&2; exit 1; }
done
echo "build: ok ($(du -h build/index_bg.wasm | cut -f1) wasm)"
