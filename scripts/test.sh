#!/usr/bin/env bash
# THE test command (also what CI runs via .ci/run): set-up (incl. chromium), native cargo tests,
# the worker build and the example agent's build, then the Node end-to-end (incl. `wrangler deploy
# --dry-run` and the example agent), browser and support tests (node:test, one file at a time),
# then the packaged crate as a new user gets it (scripts/check-packaged.sh).
# Exits non-zero on any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false  # no network: skip fetching the Request.cf placeholder
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

echo "== setup"
bash scripts/setup.sh --browser
. scripts/node-env.sh
echo "node $(node --version)"

echo "== layers (no lower layer names a higher one, no import circle in src/)"
python3 scripts/check-layers.py

echo "== gate (no input parsed outside src/protocol/gate.rs but at reviewed call sites)"
python3 scripts/check-gate.py

echo "== cargo test (native)"
cargo test
echo "== the starter's own tests (the test kit, as an author runs them)"
cargo test -p starter-agent

echo "== cargo doc (the author's API pages build with no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

echo "== build worker (the quick build wrangler dev uses, the release build a deploy uploads, then the test build: release + debug-routes)"
bash scripts/build.sh --dev
bash scripts/build.sh --release
bash scripts/build.sh --test

echo "== build the example agent (examples/support-agent, the crate as a library)"
bash examples/support-agent/build.sh --dev

echo "== node tests"
shopt -s nullglob
# Pass files, not directories (newer Node treats `node --test dir/` differently).
files=(tests/e2e/*.test.mjs tests/browser/*.test.mjs tests/support/*.test.mjs)
if [ "${#files[@]}" -eq 0 ]; then
  echo "test: no node test files found" >&2
  exit 1
fi
node --test --test-concurrency=1 "${files[@]}"

echo "== the packaged crate from outside the repository (a new agent from its starter: wrangler dev, RPC, cargo test)"
bash scripts/check-packaged.sh
