#!/usr/bin/env bash
# UserPromptSubmit: plain stdout becomes context.
cat >/dev/null
echo "Project note: this repository uses Go 1.26 and tabs."
