#!/usr/bin/env python3
"""A PostToolUse formatter keyed on the absolute tool_response.filePath, as
formatters written for Claude Code are: it normalizes the file the tool just
wrote and logs what it touched."""
import json
import os
import sys

payload = json.load(sys.stdin)
path = payload.get("tool_response", {}).get("filePath")
if not path or not os.path.isabs(path):
    print(f"no absolute filePath in {payload.get('tool_name')} response", file=sys.stderr)
    sys.exit(1)
with open(path) as f:
    text = f.read()
formatted = "\n".join(line.rstrip().replace("\t", "    ") for line in text.splitlines()) + "\n"
if not formatted.startswith("# formatted\n"):
    formatted = "# formatted\n" + formatted
with open(path, "w") as f:
    f.write(formatted)
with open(os.environ["FORMAT_LOG"], "a") as f:
    f.write(f"{payload['tool_name']} {path}\n")
