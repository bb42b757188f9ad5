#!/usr/bin/env python3
# Stop: ask for one more step unless a Stop hook already did (the guard).
import json, sys
p = json.load(sys.stdin)
if not p.get("stop_hook_active"):
    print(json.dumps({"decision": "block", "reason": "run the tests before stopping"}))
