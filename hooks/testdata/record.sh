#!/usr/bin/env bash
# Appends the payload to $HOOK_LOG (one line per call).
cat >> "$HOOK_LOG"
echo >> "$HOOK_LOG"
