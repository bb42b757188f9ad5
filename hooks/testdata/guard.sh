#!/usr/bin/env bash
# PreToolUse guard: blocks rm -rf (exit 2, reason on stderr).
input=$(cat)
if printf '%s' "$input" | grep -q 'rm -rf'; then
  echo "rm -rf is not allowed in this repository" >&2
  exit 2
fi
exit 0
