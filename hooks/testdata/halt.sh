#!/usr/bin/env bash
cat >/dev/null
echo '{"continue": false, "stopReason": "halted by policy"}'
