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
#
# Every stage ends with a line `== stage NAME: N s` (and a run of all stages with a summary of
# them), so a log shows where the time went.
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

# The files whose tests spend their time waiting for the runtime's own clock (a cron schedule's
# minute ticks, the idle eviction of hibernating sockets) with next to no work meanwhile: a full
# run starts them beside the others instead of after them.
CLOCK_FILES=(tests/e2e/runtime-clock.test.mjs)

stage_node() {
  echo "== node tests"
  . scripts/node-env.sh
  shopt -s nullglob
  local files=("$@")
  if [ "${#files[@]}" -gt 0 ]; then
    node --test --test-concurrency=1 "${files[@]}"
    return
  fi
  # Pass files, not directories (newer Node treats `node --test dir/` differently).
  local f clock=() rest=()
  for f in tests/e2e/*.test.mjs tests/browser/*.test.mjs tests/support/*.test.mjs; do
    if [[ " ${CLOCK_FILES[*]} " == *" $f "* ]]; then clock+=("$f"); else rest+=("$f"); fi
  done
  if [ "${#rest[@]}" -eq 0 ]; then
    echo "test: no node test files found" >&2
    exit 1
  fi
  # The clock-bound files run in a second `node --test` beside the rest; their report is
  # printed after the rest's, and a failure of either fails the stage.
  local clock_log clock_pid="" clock_status=0 status=0
  clock_log="$(mktemp)"
  if [ "${#clock[@]}" -gt 0 ]; then
    node --test --test-concurrency=1 "${clock[@]}" >"$clock_log" 2>&1 &
    clock_pid=$!
  fi
  node --test --test-concurrency=1 "${rest[@]}" || status=$?
  if [ -n "$clock_pid" ]; then
    wait "$clock_pid" || clock_status=$?
    echo "== node tests that wait for the runtime's clock (run beside the others): ${clock[*]}"
    cat "$clock_log"
  fi
  rm -f "$clock_log"
  [ "$status" -eq 0 ] && [ "$clock_status" -eq 0 ]
}

stage_packaged() {
  echo "== the packaged crate from outside the repository (a new agent from its starter: wrangler dev, RPC, cargo test)"
  bash scripts/check-packaged.sh
}

# Runs stage function `stage_$1` with the remaining arguments and prints its wall time (`== stage
# NAME: N s`); a full run ends with every stage's time and the total. A stage that fails (the
# script exits) still gets its line, marked failed, after the times of the stages before it.
TIMES=()
STAGE=""
STAGE_BEGAN=0
BEGAN_ALL=$SECONDS
summary() {
  echo "== stage times"
  [ "${#TIMES[@]}" -eq 0 ] || printf '   %s\n' "${TIMES[@]}"
}
on_exit() {
  [ -n "$STAGE" ] || return 0
  TIMES+=("$STAGE: $((SECONDS - STAGE_BEGAN)) s (failed)")
  summary
}
trap on_exit EXIT
timed() {
  STAGE="$1"
  STAGE_BEGAN=$SECONDS
  shift
  "stage_$STAGE" "$@"
  TIMES+=("$STAGE: $((SECONDS - STAGE_BEGAN)) s")
  echo "== stage ${TIMES[-1]}"
  STAGE=""
}

if [ "$#" -eq 0 ]; then
  timed setup
  timed checks
  timed native
  timed build
  timed node
  timed packaged
  TIMES+=("total: $((SECONDS - BEGAN_ALL)) s")
  summary
  exit 0
fi

[ "$1" = "--only" ] && [ "$#" -ge 2 ] || usage
stage="$2"
shift 2
case "$stage" in
  checks|native|build|packaged) [ "$#" -eq 0 ] || usage; timed "$stage" ;;
  core) timed core "$@" ;;
  node|e2e) timed node "$@" ;;
  *) usage ;;
esac
