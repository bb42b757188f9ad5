#!/usr/bin/env bash
cat >/dev/null
echo "output contains a secret-looking token; do not repeat it" >&2
exit 2
