#!/usr/bin/env bash
# Runs dsh's whole test suite on a fresh machine with Go: installs what the
# tests need (tmux and ripgrep from Debian, Node packages from the committed
# lock file), then runs every Go test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "test.sh: please install: ${need[*]}" >&2
  fi
fi

if [ -f package-lock.json ] && command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error
fi

go test -race -timeout 15m ./...
