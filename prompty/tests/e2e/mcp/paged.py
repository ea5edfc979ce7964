"""An MCP server (official Python SDK, stdio) whose tools/list is split into pages.

`python paged.py [TOOLS] [PAGE]`: TOOLS tools named `tool_00`, `tool_01`, ... (default 25), PAGE per
page (default 7), so the default list takes 4 pages. The cursor is an opaque token that encodes the
offset; an unknown cursor is a JSON-RPC error. Every request is logged on stderr (`list <cursor>`).
`python paged.py endless`: every page holds one tool and names a next page, forever (a client must
bound the pages it follows).
"""

import sys

import anyio
import mcp.server.stdio
import mcp_types as types
from mcp.server.lowlevel import Server

ENDLESS = sys.argv[1:2] == ["endless"]
TOTAL = 10**9 if ENDLESS else int(sys.argv[1]) if len(sys.argv) > 1 else 25
PAGE = 1 if ENDLESS else int(sys.argv[2]) if len(sys.argv) > 2 else 7
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}}


def cursor_for(offset: int) -> str:
    return f"page-token-{offset * 31 + 7}"


def offset_of(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if ENDLESS and cursor.startswith("page-token-"):
        return (int(cursor.removeprefix("page-token-")) - 7) // 31
    for offset in range(0, TOTAL, PAGE):
        if cursor_for(offset) == cursor:
            return offset
    raise ValueError(f"unknown cursor {cursor!r}")


async def list_tools(ctx, params):
    cursor = params.cursor if params is not None else None
    print(f"list {cursor}", file=sys.stderr, flush=True)
    start = offset_of(cursor)
    end = min(start + PAGE, TOTAL)
    tools = [
        types.Tool(name=f"tool_{i:02}", description=f"Tool number {i}.", input_schema=SCHEMA)
        for i in range(start, end)
    ]
    return types.ListToolsResult(tools=tools, next_cursor=cursor_for(end) if end < TOTAL else None)


async def call_tool(ctx, params):
    x = (params.arguments or {}).get("x", 0)
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name}({x})")])


server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
