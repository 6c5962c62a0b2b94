#!/usr/bin/env bash
# Packages (or publishes) the crate with the starter in it: writes starter-template/, a copy of
# the files of examples/starter that git tracks with its manifest as Cargo.toml.in (cargo leaves any folder
# holding a Cargo.toml out of a package), then runs `cargo package` (or `cargo publish`) with the
# remaining arguments. scripts/new-agent.sh in the package copies that template.
#
#   bash scripts/package.sh [publish] [cargo arguments…]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

COMMAND=package
if [ "${1:-}" = publish ]; then
  COMMAND=publish
  shift
fi

rm -rf starter-template
mkdir starter-template
git ls-files -z examples/starter | while IFS= read -r -d '' file; do
  target="starter-template/${file#examples/starter/}"
  [ "$target" = starter-template/Cargo.toml ] && target=starter-template/Cargo.toml.in
  mkdir -p "$(dirname "$target")"
  cp -p "$file" "$target"
done
[ -f starter-template/Cargo.toml.in ] || { echo "package: examples/starter has no committed Cargo.toml" >&2; exit 1; }

cargo "$COMMAND" "$@"
