#!/usr/bin/env bash
# Does what a new user of the published crate does, from the package alone: packages the crate
# (scripts/package.sh, offline), unpacks the .crate in a temporary folder outside the tree, makes a
# new agent crate with the package's own generator (scripts/new-agent.sh, the crate as a path
# dependency), installs what its package.json pins (npm ci, from the npm cache when it can) and
# then runs tests/packaged/packaged-agent.test.mjs: `wrangler dev` of that crate (its own
# wrangler, its build.sh), a chat turn with a tool over a real WebSocket with the plain-JS client
# example and the scripted model, and a JS parent's `chat()` over Durable Object RPC; and the
# new crate's native tests (`cargo test`). worker-build and wasm-bindgen come from ~/.cargo/bin.
# The new crate builds into this repository's target/ (CARGO_TARGET_DIR), so the dependencies
# compiled for the repository are reused. KEEP_PACKAGED=1 keeps the folder.
#
#   bash scripts/check-packaged.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export WRANGLER_SEND_METRICS=false
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
. scripts/node-env.sh
say() { echo "check-packaged: $*"; }
began=$SECONDS

# One folder outside the tree, the same on every run (one run at a time): the new crate's path
# dependency keeps its path, so cargo's incremental build of it is reused, and target/ does not
# collect a copy per run.
WORK="${TMPDIR:-/tmp}/durable-chat-packaged-check"
exec 8>"$WORK.lock"
flock 8
rm -rf "$WORK"
mkdir -p "$WORK"
cleanup() {
  if [ -n "${KEEP_PACKAGED:-}" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

say "cargo package (offline, the starter in the package)"
bash scripts/package.sh --allow-dirty --no-verify --offline --quiet
VERSION="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)"
CRATE="${CARGO_TARGET_DIR:-$ROOT/target}/package/durable-chat-$VERSION.crate"
[ -f "$CRATE" ] || { echo "check-packaged: $CRATE missing after cargo package" >&2; exit 1; }
tar -xzf "$CRATE" -C "$WORK"
PACKAGE="$WORK/durable-chat-$VERSION"

say "a new agent from the package's starter"
AGENT="$WORK/packaged-agent"
bash "$PACKAGE/scripts/new-agent.sh" packaged-agent "$AGENT" --durable-chat-path "$PACKAGE"
# The repository's lock file: the versions its target/ was built with (cargo drops the rest).
cp Cargo.lock "$AGENT/Cargo.lock"
(cd "$AGENT" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_NET_OFFLINE=true
say "the new agent's native tests (cargo test)"
(cd "$AGENT" && cargo test --quiet)

say "wrangler dev, a chat turn with a tool, a JS parent's chat() over RPC"
PACKAGED_AGENT="$AGENT" node --test --test-concurrency=1 tests/packaged/packaged-agent.test.mjs
say "ok in $((SECONDS - began)) s"
