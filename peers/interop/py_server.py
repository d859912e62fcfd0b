"""An MCP server written with the official Python SDK (`mcp` 2.x), for the interop tests of kelson.

It serves the interop profile (see README.md beside this file) in the 2026-07-28 stateless mode:

    python py_server.py stdio            serve on stdin/stdout
    python py_server.py http [PORT]      serve Streamable HTTP (stateless) on 127.0.0.1:PORT (default 0:
                                         any free port) at /mcp; the first line on stdout is
                                         "listening on http://127.0.0.1:PORT/mcp"

Logs go to stderr only: on stdio, stdout carries protocol messages.
"""

from __future__ import annotations

import socket
import sys

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

GREETING_URI = "interop://greeting"
GREETING_TEXT = "Hello from the interop fixture"

mcp = MCPServer("interop-py-server", version="2.3.0", log_level="WARNING")


@mcp.tool(description="Adds two numbers")
def add(a: float, b: float) -> str:
    total = a + b
    return str(int(total)) if total == int(total) else str(total)


@mcp.tool(description="Counts to `steps` (default 3), reporting progress at each step")
async def count_with_progress(ctx: Context, steps: int = 3) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await anyio.sleep(0.01)
    return f"counted to {steps}"


@mcp.tool(description="Asks the user's name through elicitation (MRTR, key `user`), then greets them")
async def ask_name(ctx: Context) -> str | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("user")
    if answer is None:
        return InputRequiredResult(
            input_requests={
                "user": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message="What is your name?",
                        requested_schema={
                            "type": "object",
                            "properties": {"name": {"type": "string", "description": "Your name"}},
                            "required": ["name"],
                        },
                    )
                )
            }
        )
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        name = answer.content.get("name")
        if isinstance(name, str):
            return f"Hello, {name}!"
    action = answer.action if isinstance(answer, ElicitResult) else type(answer).__name__
    return f"No name given ({action})"


@mcp.tool(description="Announces a tools list change to every listen stream")
async def change_tools(ctx: Context) -> str:
    await ctx.notify_tools_changed()
    return "tools changed"


@mcp.resource(GREETING_URI, name="greeting", description="A fixed greeting", mime_type="text/plain")
def greeting() -> str:
    return GREETING_TEXT


@mcp.prompt(description="Asks to greet someone")
def greet(name: str) -> str:
    return f"Please greet {name}."


async def serve_http(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    # Listening before the address is announced: a client that connects at once waits in the backlog
    # until uvicorn accepts, instead of being refused.
    sock.listen(128)
    app = mcp.streamable_http_app(stateless_http=True, host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await server.serve(sockets=[sock])


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "stdio":
        mcp.run("stdio")
    elif mode == "http":
        anyio.run(serve_http, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    else:
        print("usage: py_server.py stdio | http [PORT]", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
