#!/usr/bin/env bash
# Bounded-time fuzzing with cargo-fuzz (libFuzzer): runs each target for N seconds (default 60)
# starting from the committed seed corpus in fuzz/corpus/<target>/, and prints the executions
# count and whether anything crashed. Installs cargo-fuzz from crates.io if missing. cargo-fuzz
# needs nightly-only rustc flags (-Z options for the sancov coverage passes): it runs on the
# installed stable toolchain with RUSTC_BOOTSTRAP=1, so no other toolchain is downloaded. No
# sanitizer (`-s none`): the crate has no unsafe code, and ASan would cost 3x the executions.
# New inputs libFuzzer finds go to fuzz/target/fuzz-corpus/<target>/ (not committed); crash
# reproducers to fuzz/artifacts/<target>/ (replayed by `cargo test` in fuzz/). Exits non-zero on
# a crash.
# usage: bash scripts/fuzz.sh [seconds-per-target] [target...]   (targets: frame_parser core_events)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/fuzz"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

SECS="${1:-60}"
shift || true
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(frame_parser core_events)

CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION from crates.io"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

echo "fuzz: building targets (release; no sanitizer: the crate has no unsafe code)"
cargo fuzz build -O -s none

status=0
summary=()
for target in "${TARGETS[@]}"; do
  scratch="target/fuzz-corpus/$target"
  log="target/fuzz-$target.log"
  mkdir -p "$scratch" "corpus/$target"
  echo "fuzz: $target for ${SECS}s (seeds: $(ls "corpus/$target" | wc -l))"
  set +e
  timeout $((SECS + 300)) cargo fuzz run -O -s none "$target" "$scratch" "corpus/$target" -- \
    -max_total_time="$SECS" -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)"
  if [ "$rc" -ne 0 ]; then
    status=1
    tail -n 60 "$log" >&2
    summary+=("$target: CRASH (exit $rc) after ${execs:-?} executions; reproducer in fuzz/artifacts/$target/, log fuzz/$log")
  else
    summary+=("$target: ${execs:-?} executions in ${SECS}s, no crash (corpus now $(ls "$scratch" | wc -l) inputs)")
  fi
done
echo "fuzz: summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$status"
