#!/usr/bin/env bash
# Makes a new agent crate from the starter: a copy of it in DIR, named NAME (the crate, the
# worker and the agent's URL name `/agents/NAME/…`), its Durable Object class NAME in PascalCase
# (`my-agent` → `MyAgent`), depending on durable-chat from crates.io (this package's version) or
# from a folder (--durable-chat-path). It ships in the durable-chat package, beside the starter
# (`starter-template/`, written by scripts/package.sh); in the repository it copies examples/starter.
#
#   bash scripts/new-agent.sh NAME DIR [--durable-chat-path PATH]
#
# Then, in DIR: `npm install`, `npx wrangler dev` (the scripted model, no key), `cargo test`.
set -euo pipefail
PACKAGE="$(cd "$(dirname "$0")/.." && pwd)"

usage() {
  echo "usage: bash scripts/new-agent.sh NAME DIR [--durable-chat-path PATH]" >&2
  echo "  NAME: lower-case letters, digits and '-', starting with a letter (e.g. my-agent)" >&2
  exit 2
}
[ $# -ge 2 ] || usage
NAME="$1"
DIR="$2"
shift 2
SOURCE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --durable-chat-path)
      [ $# -ge 2 ] || usage
      SOURCE="path = \"$(cd "$2" && pwd)\""
      shift 2
      ;;
    *) usage ;;
  esac
done
[[ "$NAME" =~ ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ ]] || usage
[ ! -e "$DIR" ] || [ -z "$(ls -A "$DIR")" ] || { echo "new-agent: $DIR exists and is not empty" >&2; exit 1; }

if [ -f "$PACKAGE/examples/starter/Cargo.toml" ]; then
  TEMPLATE="$PACKAGE/examples/starter" MANIFEST=Cargo.toml
elif [ -f "$PACKAGE/starter-template/Cargo.toml.in" ]; then
  TEMPLATE="$PACKAGE/starter-template" MANIFEST=Cargo.toml.in
else
  echo "new-agent: no starter beside $0 (examples/starter or starter-template/)" >&2
  exit 1
fi
if [ -z "$SOURCE" ]; then
  VERSION="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' "$PACKAGE/Cargo.toml" | head -n 1)"
  SOURCE="version = \"$VERSION\""
fi
CLASS="$(echo "$NAME" | awk -F- '{ for (i = 1; i <= NF; i++) printf "%s", toupper(substr($i, 1, 1)) substr($i, 2) }')"
IDENT="${NAME//-/_}"

mkdir -p "$DIR"
# The starter's own files: not what a build, npm or wrangler left there.
tar -C "$TEMPLATE" --exclude=./build --exclude=./target --exclude=./node_modules \
  --exclude=./.wrangler --exclude='./.dev.vars*' -cf - . | tar -C "$DIR" -xf -
[ "$MANIFEST" = Cargo.toml ] || mv "$DIR/$MANIFEST" "$DIR/Cargo.toml"

# Rewrites file $1 with the sed expressions that follow (no `sed -i`: it differs between systems).
edit() {
  local file="$1"
  shift
  sed "$@" "$file" > "$file.new" && mv "$file.new" "$file"
}
# The names, everywhere they appear; the dependency on durable-chat; a workspace of its own.
find "$DIR" -type f \( -name '*.rs' -o -name '*.toml' -o -name '*.json' -o -name '*.md' \) |
  while IFS= read -r file; do
    edit "$file" -e "s/StarterAgent/$CLASS/g" -e "s/starter-agent/$NAME/g" -e "s/starter_agent/$IDENT/g"
  done
# Every `durable-chat` dependency line of the starter (its features kept) takes the new source.
edit "$DIR/Cargo.toml" -e "/^durable-chat *=/ s|path = \"[^\"]*\"|$SOURCE|"
grep -q '^\[workspace\]' "$DIR/Cargo.toml" || printf '\n# A workspace of its own (not part of any folder above).\n[workspace]\n' >> "$DIR/Cargo.toml"

echo "new-agent: $DIR: crate $NAME, class $CLASS (/agents/$NAME/<name>), durable-chat from $SOURCE"
echo "new-agent: next: cd $DIR && npm install && npx wrangler dev   (and cargo test)"
