"""The official Python SDK client (`mcp`), pinned to 2026-07-28, against `kelson serve` behind an OAuth
authorization server (kelson-auth), with a bearer token the caller obtained:

    python py_auth_client.py URL TOKEN

Steps: connect, list tools, call list_tables. The last line on stdout is one JSON summary: the
steps' outcomes and `errors`.
"""

import json
import sys
import traceback
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

STEP_TIMEOUT = 15.0


async def main() -> int:
    if len(sys.argv) != 3:
        print("usage: py_auth_client.py URL TOKEN", file=sys.stderr)
        return 2
    url, token = sys.argv[1], sys.argv[2]
    summary: dict[str, Any] = {"sdk": "mcp (Python)", "steps": {}, "errors": []}
    http_client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30.0)
    client = Client(
        streamable_http_client(url, http_client=http_client),
        mode="2026-07-28",
        client_info=types.Implementation(name="interop-py-auth-client", version="2.3.0"),
        read_timeout_seconds=STEP_TIMEOUT,
    )

    async def step(name: str, run: Any) -> None:
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                summary["steps"][name] = await run()
        except Exception:
            summary["errors"].append(f"{name}: {traceback.format_exc()}")

    async def list_tools() -> Any:
        return sorted(tool.name for tool in (await client.list_tools()).tools)

    async def list_tables() -> Any:
        result = await client.call_tool("list_tables", {})
        texts = [c.text for c in result.content if getattr(c, "text", None) is not None]
        return {"isError": bool(result.is_error), "text": texts[0] if texts else None}

    try:
        async with client:
            summary["steps"]["connect"] = True
            await step("listTools", list_tools)
            await step("listTables", list_tables)
    except Exception:
        summary["errors"].append(f"connect: {traceback.format_exc()}")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
