#!/usr/bin/env python3
"""A minimal MCP server over stdio (newline-delimited JSON-RPC), for tests.

Tools:
  echo      returns its "text" argument
  video     returns a content block of an unknown type ("video")
  badimage  returns an image whose data is not valid base64
  big       returns one text block of "A" * 12 MiB
  pid       returns the server's process id

With --banner it prints a non-JSON line on stdout before serving, and
another one before each tools/call answer ("noisy" servers). With
--exit-on-call it exits when a tool is called (a crash mid-call).
"""
import json
import os
import sys

BANNER = "--banner" in sys.argv
EXIT_ON_CALL = "--exit-on-call" in sys.argv

TOOLS = [
    {"name": name, "description": desc, "inputSchema": {"type": "object", "properties": props}}
    for name, desc, props in [
        ("echo", "Echo the text.", {"text": {"type": "string"}}),
        ("video", "Return an unknown content type.", {}),
        ("badimage", "Return an image with invalid base64 data.", {}),
        ("big", "Return 12 MiB of text.", {}),
        ("pid", "Return the process id.", {}),
    ]
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def call(name, args):
    if name == "echo":
        return {"content": [{"type": "text", "text": args.get("text", "")}]}
    if name == "video":
        return {"content": [{"type": "video", "mimeType": "video/mp4", "data": "AAAA"}]}
    if name == "badimage":
        return {"content": [{"type": "image", "mimeType": "image/png", "data": "!!!not base64!!!"}]}
    if name == "big":
        return {"content": [{"type": "text", "text": "A" * (12 << 20)}]}
    if name == "pid":
        return {"content": [{"type": "text", "text": str(os.getpid())}]}
    return {"isError": True, "content": [{"type": "text", "text": "unknown tool " + name}]}


def main():
    if BANNER:
        say("starting… (a banner on stdout)")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue  # a notification
        params = msg.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "pyserver", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            if EXIT_ON_CALL:
                os._exit(3)
            if BANNER:
                say("calling " + params.get("name", "?"))
            result = call(params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
