"""A hand-written MCP server (no SDK, stdio) that answers with broken or hostile output.

It completes the handshake (after a line that is not JSON and a notification nobody knows), lists
odd but valid tools, and answers `tools/call` according to the tool's name:

- `ok`: a normal text result.
- `garbage_then_ok`: a line that is not JSON, a bare number, invalid UTF-8, an answer to a request
  id never sent, then the real answer.
- `wrong_shape`: `content` is a string, not a list.
- `unknown_block`: a content block of an unknown type next to a text block.
- `deep`: `structuredContent` nested 100 000 levels deep.
- `huge`: one 17 MiB line (past the 16 MiB a client should accept), then nothing.
- `odd_error`: a JSON-RPC error whose code is a string and whose message is a number.
- `plain_error`: a well-formed JSON-RPC error (-32000).
- `null_result`: `"result": null`.
- `controls`: text full of control characters and escape sequences.
- `close_stdout`: closes its stdout and keeps running (writes its pid to stderr first).
- `exit_silently`: exits with status 0 and no answer.
`python hostile.py badlist`: tools/list answers with a tool that has no `inputSchema`.
"""

import json
import os
import sys
import time

BADLIST = sys.argv[1:2] == ["badlist"]
out = sys.stdout.buffer


def write_raw(data: bytes):
    out.write(data)
    out.flush()


def send(obj):
    write_raw(json.dumps(obj).encode() + b"\n")


def result(rid, res):
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def text(t):
    return {"content": [{"type": "text", "text": t}]}


SCHEMA = {"type": "object", "properties": {}}
NAMES = ["ok", "garbage_then_ok", "wrong_shape", "unknown_block", "deep", "huge", "odd_error", "plain_error",
         "null_result", "controls", "close_stdout", "exit_silently"]


def tools():
    listed = [{"name": n, "description": f"hostile: {n}", "inputSchema": SCHEMA} for n in NAMES]
    listed.append({"name": "ok", "description": "a second tool named ok", "inputSchema": SCHEMA})
    listed.append({"name": "long_description", "description": "d" * 100_000, "inputSchema": SCHEMA})
    listed.append({"name": "uni\u2028code\u0000name", "inputSchema": SCHEMA, "annotations": {"readOnlyHint": True}})
    if BADLIST:
        listed.append({"name": "no_schema"})
    return listed


def call(rid, name):
    if name == "ok":
        result(rid, text("fine"))
    elif name == "garbage_then_ok":
        write_raw(b"{{{ this is not json\n")
        write_raw(b"42\n")
        write_raw(b"\xff\xfe\xfd\n")
        result(rid + 1000, text("an answer to nobody"))
        result(rid, text("survived"))
    elif name == "wrong_shape":
        result(rid, {"content": "not-a-list"})
    elif name == "unknown_block":
        result(rid, {"content": [{"type": "hologram", "data": 1}, {"type": "text", "text": "still here"}]})
    elif name == "deep":
        depth = 100_000
        write_raw(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":{"content":[],"structuredContent":'
                  + b"[" * depth + b"]" * depth + b"}}\n")
    elif name == "huge":
        write_raw(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":{"content":[{"type":"text","text":"'
                  + b"x" * (17 << 20) + b'"}]}}\n')
    elif name == "odd_error":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": "not-a-number", "message": 5}})
    elif name == "plain_error":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "plain failure"}})
    elif name == "null_result":
        send({"jsonrpc": "2.0", "id": rid, "result": None})
    elif name == "controls":
        result(rid, text("bell\u0007 nul\u0000 esc\u001b[31m red \u202e reversed"))
    elif name == "close_stdout":
        sys.stderr.write(f"hostile: closing stdout, pid {os.getpid()}\n")
        sys.stderr.flush()
        os.close(1)
        time.sleep(120)
    elif name == "exit_silently":
        os._exit(0)
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def main():
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            write_raw(b"this line is not JSON\n")
            send({"jsonrpc": "2.0", "method": "notifications/unheard_of", "params": {"x": 1}})
            result(rid, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                         "serverInfo": {"name": "hostile", "version": "0"}})
        elif method == "tools/list":
            result(rid, {"tools": tools()})
        elif method == "tools/call":
            call(rid, msg["params"]["name"])
        elif method == "ping":
            result(rid, {})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})


main()
