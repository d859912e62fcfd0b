"""An MCP client written with the official Python SDK (`mcp` 2.x), for the dual-era interop tests of
kelson: it runs against `kelson serve` with a writable SQLite database, in the handshake era
(`mode="legacy"`: `initialize`, no `server/discover` probe) or PINNED to 2026-07-28, driven by a plan
given as JSON:

    python py_serve_client.py legacy|2026-07-28 PLAN http URL
    python py_serve_client.py legacy|2026-07-28 PLAN stdio COMMAND [ARGS...]

PLAN: {"query": SQL, "read": URI, "execute": SQL (optional)}

Steps: list tools; call list_tables and query; read PLAN.read; with PLAN.execute, call execute,
declining the approval through the elicitation callback, then print {"awaiting":"declined"} and wait
for a line on stdin (the caller checks that nothing was written), then again, accepting it.

The last line on stdout is one JSON summary (diagnostics go to stderr): each step's outcome,
`errors`, the negotiated version, and what went over the wire (every message's method and `_meta`
protocol version; on HTTP every MCP-Protocol-Version header).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
STEP_TIMEOUT = 15.0


class Wire:
    def __init__(self) -> None:
        self.methods: list[str] = []
        self.meta_versions: set[str] = set()
        self.header_versions: set[str] = set()

    def record(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            self.methods.append(method)
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
            if isinstance(version, str):
                self.meta_versions.add(version)


class RecordingWriteStream:
    """Forwards every message to the transport's write stream, recording it first."""

    def __init__(self, inner: Any, wire: Wire) -> None:
        self._inner = inner
        self._wire = wire

    async def send(self, item: SessionMessage) -> None:
        self._wire.record(item.message.model_dump(by_alias=True, mode="json", exclude_none=True))
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> RecordingWriteStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)


def recording(transport: Any, wire: Wire) -> Any:
    @asynccontextmanager
    async def wrapped():  # type: ignore[no-untyped-def]
        async with transport as (read_stream, write_stream):
            yield read_stream, RecordingWriteStream(write_stream, wire)

    return wrapped()


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def main() -> int:
    args = sys.argv[1:]
    if len(args) < 4 or args[2] not in ("http", "stdio"):
        print("usage: py_serve_client.py legacy|VERSION PLAN http URL | ... PLAN stdio COMMAND [ARGS...]", file=sys.stderr)
        return 2
    mode, plan, kind, target, rest = args[0], json.loads(args[1]), args[2], args[3], args[4:]
    wire = Wire()
    summary: dict[str, Any] = {"sdk": f"mcp 2.3.0 (Python), mode={mode}", "transport": kind, "steps": {}, "errors": []}

    if kind == "http":

        async def on_request(request: httpx2.Request) -> None:
            version = request.headers.get("mcp-protocol-version")
            if version is not None:
                wire.header_versions.add(version)

        http_client = httpx2.AsyncClient(event_hooks={"request": [on_request]}, timeout=30.0)
        transport = recording(streamable_http_client(target, http_client=http_client), wire)
    else:
        params = StdioServerParameters(command=target, args=rest, env=dict(os.environ))
        transport = recording(stdio_client(params), wire)

    # The approval questions in the order asked: declined first, then accepted.
    asked: list[dict[str, Any]] = []

    async def on_elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        schema = getattr(params, "requested_schema", None)
        if schema is not None and not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True)
        fields = sorted((schema or {}).get("properties", {}).keys())
        asked.append({"message": params.message, "fields": fields})
        if len(asked) == 1:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approve": True})

    async def step(name: str, run: Callable[[], Awaitable[Any]]) -> None:
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                summary["steps"][name] = await run()
        except Exception:
            summary["errors"].append(f"{name}: {traceback.format_exc()}")

    client = Client(
        transport,
        mode=mode,
        elicitation_callback=on_elicit,
        client_info=types.Implementation(name="interop-py-serve-client", version="2.3.0"),
        read_timeout_seconds=STEP_TIMEOUT,
    )

    async def list_tools() -> Any:
        return sorted(tool.name for tool in (await client.list_tools()).tools)

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        result = await client.call_tool(name, arguments)
        structured = result.structured_content or {}
        return {
            "isError": bool(result.is_error),
            "text": text(result),
            "tables": sorted(t["name"] for t in structured.get("tables", [])),
            "rows": structured.get("rows"),
            "rowsAffected": structured.get("rows_affected"),
        }

    async def read() -> Any:
        result = await client.read_resource(plan["read"])
        return [{"uri": str(c.uri), "text": getattr(c, "text", None)} for c in result.contents]

    summary["connected"] = False
    summary["negotiatedVersion"] = None
    try:
        async with client:
            summary["connected"] = True
            summary["negotiatedVersion"] = client.protocol_version
            info = client.server_info
            summary["serverName"] = info.name if info is not None else None
            await step("listTools", list_tools)
            await step("listTables", lambda: call("list_tables", {}))
            await step("query", lambda: call("query", {"sql": plan["query"]}))
            await step("read", read)
            if "execute" in plan:
                await step("declined", lambda: call("execute", {"sql": plan["execute"]}))
                print(json.dumps({"awaiting": "declined"}), flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)
                await step("accepted", lambda: call("execute", {"sql": plan["execute"]}))
                summary["steps"]["asked"] = asked
    except Exception:
        summary["errors"].append(f"connection: {traceback.format_exc()}")

    summary["wire"] = {
        "methods": sorted(set(wire.methods)),
        "metaVersions": sorted(wire.meta_versions),
        "headerVersions": sorted(wire.header_versions),
        "sentInitialize": "initialize" in wire.methods,
    }
    print(json.dumps(summary), flush=True)
    return 0 if not summary["errors"] else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
