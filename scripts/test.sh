#!/usr/bin/env bash
# THE test command (also what CI runs via .ci/run): set-up (incl. chromium), native cargo tests,
# the worker build and the example agent's build, then the Node end-to-end (incl. `wrangler deploy
# --dry-run` and the example agent), browser and support tests (node:test, one file at a time),
# then the packaged crate as a new user gets it (scripts/check-packaged.sh).
# Exits non-zero on any failure.
#
# With no argument it runs everything, in that order (what CI runs). `--only STAGE [ARG...]` runs one
# stage by itself, without the set-up:
#   --only checks                 the layer and gate checks
#   --only native                 cargo test (with the guides' examples as doctests), the starter's
#                                 tests, cargo doc (native and wasm32)
#   --only core [FILTER]          the core suite only (`cargo test --test core FILTER`, e.g. `admit::`)
#   --only build                  the worker's builds and the example agent's build
#   --only node [FILE...]         the Node tests (all, or the given files; `e2e` is the same stage)
#   --only packaged               the packaged crate from outside the repository
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false  # no network: skip fetching the Request.cf placeholder
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

usage() {
  echo "usage: bash scripts/test.sh [--only checks|native|core [FILTER]|build|node [FILE...]|packaged]" >&2
  exit 2
}

stage_setup() {
  echo "== setup"
  bash scripts/setup.sh --browser
  . scripts/node-env.sh
  echo "node $(node --version)"
}

stage_checks() {
  echo "== layers (no lower layer names a higher one, no import circle in src/, core calls one way)"
  python3 scripts/check-layers.py
  python3 scripts/check-layers.py --self-test

  echo "== gate (no input parsed outside src/protocol/gate.rs but at reviewed call sites)"
  python3 scripts/check-gate.py
}

stage_native() {
  echo "== cargo test (native)"
  cargo test
  echo "== the starter's own tests (the test kit, as an author runs them)"
  cargo test -p starter-agent

  echo "== cargo doc (the author's API pages and the guides build with no warnings, natively and for the worker)"
  RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
  RUSTDOCFLAGS="-D warnings" cargo doc --target wasm32-unknown-unknown --no-deps --quiet
}

stage_core() {
  echo "== the core suite (tests/core)"
  cargo test --test core -- "$@"
}

stage_build() {
  echo "== build worker (the quick build wrangler dev uses, the release build a deploy uploads, then the test build: release + debug-routes)"
  bash scripts/build.sh --dev
  bash scripts/build.sh --release
  bash scripts/build.sh --test

  echo "== build the example agent (examples/support-agent, the crate as a library)"
  bash examples/support-agent/build.sh --dev
}

stage_node() {
  echo "== node tests"
  . scripts/node-env.sh
  shopt -s nullglob
  local files=("$@")
  if [ "${#files[@]}" -eq 0 ]; then
    # Pass files, not directories (newer Node treats `node --test dir/` differently).
    files=(tests/e2e/*.test.mjs tests/browser/*.test.mjs tests/support/*.test.mjs)
  fi
  if [ "${#files[@]}" -eq 0 ]; then
    echo "test: no node test files found" >&2
    exit 1
  fi
  node --test --test-concurrency=1 "${files[@]}"
}

stage_packaged() {
  echo "== the packaged crate from outside the repository (a new agent from its starter: wrangler dev, RPC, cargo test)"
  bash scripts/check-packaged.sh
}

if [ "$#" -eq 0 ]; then
  stage_setup
  stage_checks
  stage_native
  stage_build
  stage_node
  stage_packaged
  exit 0
fi

[ "$1" = "--only" ] && [ "$#" -ge 2 ] || usage
stage="$2"
shift 2
case "$stage" in
  checks|native|build|packaged) [ "$#" -eq 0 ] || usage; "stage_$stage" ;;
  core) stage_core "$@" ;;
  node|e2e) stage_node "$@" ;;
  *) usage ;;
esac
