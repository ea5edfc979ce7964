"""An MCP server (official Python SDK, stdio) with the behaviours a client must survive.

Tools:
- `echo {text}`: the text back.
- `crash {code}`: writes `lab: about to crash` (and a long line of filler before it) to stderr,
  then exits the process with `code` in the middle of the call (no response is ever sent).
- `sleep {seconds}`: answers after `seconds`.
- `add_tool {name}`: registers a new tool `name` and sends `notifications/tools/list_changed`.
- `big {bytes}`: a text result of `bytes` bytes.
- `structured`: only `structuredContent` (no content blocks).
- `mixed`: text, image, audio, an embedded text resource, an embedded blob resource and a link.
- `fail`: a result with `isError: true`.
- `raise`: the handler raises; the SDK turns that into an error for the client.
- `pid`: the server's process id.
- `spawn_child`: starts `sleep 300` (in the server's process group) and answers its pid.
On start it writes `lab: started pid <pid>` to stderr.

`python lab.py --http PORT` serves the same tools over streamable HTTP on 127.0.0.1:PORT (`/mcp`);
with `LAB_REQUIRED_KEY` set, every request must carry `x-api-key: <that value>` or
`Authorization: Bearer <that value>` (else 401). Each HTTP request is logged to stderr as
`lab: request <METHOD> <path> session=<mcp-session-id or ->` (and its status once answered, as
`lab: answered <METHOD> <status> session=<id>`), for the tests to see which sessions were closed.
"""

import os
import subprocess
import sys

import anyio
import mcp.server.stdio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server


def tool(name, description, properties=None, required=None):
    schema = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return types.Tool(name=name, description=description, input_schema=schema)


TOOLS = [
    tool("echo", "Echoes the text.", {"text": {"type": "string"}}, ["text"]),
    tool("crash", "Exits the process during the call.", {"code": {"type": "integer"}}),
    tool("sleep", "Answers after a while.", {"seconds": {"type": "number"}}),
    tool("add_tool", "Registers a new tool and notifies the client.", {"name": {"type": "string"}}, ["name"]),
    tool("big", "A large text result.", {"bytes": {"type": "integer"}}),
    tool("structured", "Structured content only."),
    tool("mixed", "Every kind of content block."),
    tool("fail", "A result flagged as an error."),
    tool("raise", "The handler raises."),
    tool("pid", "The server's process id."),
    tool("spawn_child", "Starts a long `sleep` in the server's process group; answers its pid."),
]


def text(t):
    return types.CallToolResult(content=[types.TextContent(text=t)])


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return text(str(args.get("text", "")))
    if name == "crash":
        sys.stderr.write("filler " * 2000 + "\n")
        sys.stderr.write("lab: about to crash\n")
        sys.stderr.flush()
        os._exit(int(args.get("code", 3)))
    if name == "sleep":
        await anyio.sleep(float(args.get("seconds", 1)))
        return text("awake")
    if name == "add_tool":
        new = str(args["name"])
        TOOLS.append(tool(new, f"Added at run time: {new}."))
        await ctx.session.send_tool_list_changed()
        return text(f"added {new}")
    if name == "big":
        return text("x" * int(args.get("bytes", 1024)))
    if name == "structured":
        return types.CallToolResult(content=[], structured_content={"temperature": 21.5, "unit": "C"})
    if name == "mixed":
        return types.CallToolResult(
            content=[
                types.TextContent(text="first"),
                types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                types.AudioContent(data="UklGRg==", mime_type="audio/wav"),
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="note body")
                ),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(uri="file:///data.bin", mime_type="application/octet-stream", blob="AAEC")
                ),
                types.ResourceLink(uri="https://example.invalid/doc", name="doc"),
            ]
        )
    if name == "fail":
        return types.CallToolResult(content=[types.TextContent(text="the tool failed on purpose")], is_error=True)
    if name == "raise":
        raise RuntimeError("raised on purpose")
    if name == "pid":
        return text(str(os.getpid()))
    if name == "spawn_child":
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        return text(str(child.pid))
    if any(t.name == name for t in TOOLS):
        return text(f"{name} ran")
    raise ValueError(f"no tool named {name}")


server = Server("lab", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    print(f"lab: started pid {os.getpid()}", file=sys.stderr, flush=True)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(read, write, options)


def require_key(app, key):
    """An ASGI wrapper answering 401 to a request without `x-api-key: <key>` or a bearer `<key>`."""

    async def guarded(scope, receive, send):
        headers = dict(scope["headers"]) if scope["type"] == "http" else {}
        allowed = headers.get(b"x-api-key") == key.encode() or headers.get(b"authorization") == b"Bearer " + key.encode()
        if scope["type"] == "http" and not allowed:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


def log_requests(app):
    """An ASGI wrapper writing each request's method, path and `mcp-session-id` to stderr."""

    async def logged(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        session = dict(scope["headers"]).get(b"mcp-session-id", b"-").decode()
        method = scope["method"]
        print(f"lab: request {method} {scope['path']} session={session}", file=sys.stderr, flush=True)

        async def answered(message):
            if message["type"] == "http.response.start":
                print(f"lab: answered {method} {message['status']} session={session}", file=sys.stderr, flush=True)
            await send(message)

        await app(scope, receive, answered)

    return logged


if sys.argv[1:2] == ["--http"]:
    import uvicorn

    app = server.streamable_http_app()
    key = os.environ.get("LAB_REQUIRED_KEY")
    print(f"lab: started pid {os.getpid()} (http)", file=sys.stderr, flush=True)
    app = log_requests(require_key(app, key) if key else app)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
else:
    anyio.run(main)
