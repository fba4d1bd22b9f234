#!/usr/bin/env bash
# Run every tests/test_*.lua in its own headless Neovim with isolated XDG dirs.
# Usage: tests/run.sh [test_file.lua ...]   (NVIM=/path/to/nvim to pick the binary)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
nvim="${NVIM:-nvim}"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=("$here"/tests/test_*.lua); fi
env_dir="${TETHER_TEST_ENV:-$(mktemp -d)}"
[ -n "${TETHER_TEST_ENV:-}" ] || trap 'rm -rf "$env_dir"' EXIT
status=0
for f in "${files[@]}"; do
  for d in config data state cache; do mkdir -p "$env_dir/$d"; done
  echo "== $(basename "$f")"
  XDG_CONFIG_HOME="$env_dir/config" XDG_DATA_HOME="$env_dir/data" XDG_STATE_HOME="$env_dir/state" \
    XDG_CACHE_HOME="$env_dir/cache" \
    "$nvim" --headless -i NONE -u "$here/tests/minimal_init.lua" -l "$f" || {
      rc=$?
      # 77: the file skipped itself and said why (no tether, or no fake API).
      [ $rc -eq 77 ] || status=1
    }
done
exit $status
