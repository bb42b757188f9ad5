#!/usr/bin/env python3
# PreToolUse rewrite: adds --dry-run to deploy commands.
import json, sys
p = json.load(sys.stdin)
cmd = p["tool_input"].get("command", "")
if "deploy" in cmd and "--dry-run" not in cmd:
    out = dict(p["tool_input"])
    out["command"] = cmd + " --dry-run"
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                             "permissionDecisionReason": "deploys run dry here", "updatedInput": out}}))
