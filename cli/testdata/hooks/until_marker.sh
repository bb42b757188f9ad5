#!/usr/bin/env bash
# A Stop hook in the style of Claude Code's "keep going" loops: it reads the
# transcript named in its payload and blocks the stop until the last
# assistant text contains $MARKER.
set -euo pipefail
input=$(cat)
transcript=$(jq -r '.transcript_path' <<<"$input")
if [[ ! -f "$transcript" ]]; then
  echo "no transcript at $transcript" >&2
  exit 1
fi
last=$(grep '"role":"assistant"' "$transcript" | tail -n 100 | jq -rs 'map(.message.content[]? | select(.type == "text") | .text) | last // ""')
if [[ "$last" == *"$MARKER"* ]]; then
  exit 0
fi
jq -n --arg r "Not finished: say $MARKER when you are done." '{decision: "block", reason: $r}'
