"""An MCP client written with the official Python SDK (`mcp` 2.x), for the interop tests of kelson.

It connects to a server of the interop profile (see README.md beside this file), PINNED to protocol
revision 2026-07-28 (the SDK's default mode is `auto`), runs every step, and prints one JSON summary
on stdout (diagnostics go to stderr).

    python py_client.py http URL
    python py_client.py stdio COMMAND [ARGS...]

The summary records what went over the wire, not only what the SDK reports: every outgoing
message's method and `_meta` protocol version, and on HTTP every `MCP-Protocol-Version` header.
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
from mcp.shared.subscriptions import event_to_notification

VERSION = "2026-07-28"
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
    if len(args) < 2 or args[0] not in ("http", "stdio"):
        print("usage: py_client.py http URL | stdio COMMAND [ARGS...]", file=sys.stderr)
        return 2
    kind, target, rest = args[0], args[1], args[2:]
    wire = Wire()
    summary: dict[str, Any] = {"sdk": "mcp 2.3.0 (Python)", "transport": kind, "steps": {}, "errors": []}

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

    asked: list[str] = []

    async def on_elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "interop"})

    async def step(name: str, run: Callable[[], Awaitable[Any]]) -> None:
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                summary["steps"][name] = await run()
        except Exception:
            summary["errors"].append(f"{name}: {traceback.format_exc()}")

    client = Client(
        transport,
        mode=VERSION,
        elicitation_callback=on_elicit,
        client_info=types.Implementation(name="interop-py-client", version="2.3.0"),
        read_timeout_seconds=STEP_TIMEOUT,
    )
    summary["connected"] = False
    summary["era"] = None
    summary["negotiatedVersion"] = None
    try:
        async with client:
            summary["connected"] = True
            await run_steps(client, summary, asked, step)
            version = client.protocol_version
            summary["era"] = "modern" if version == VERSION else ("legacy" if version else None)
            summary["negotiatedVersion"] = version
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


async def run_steps(
    client: Client,
    summary: dict[str, Any],
    asked: list[str],
    step: Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[None]],
) -> None:
    async def discover() -> Any:
        # Pinned mode adopts a synthesized DiscoverResult without a request, so send one for real.
        raw = await client.session.send_discover(VERSION)
        result = types.DiscoverResult.model_validate(raw)
        meta = raw.get("_meta") if isinstance(raw.get("_meta"), dict) else {}
        info = meta.get("io.modelcontextprotocol/serverInfo") or {}
        return {"supportedVersions": result.supported_versions, "serverName": info.get("name")}

    async def progress() -> Any:
        seen: list[dict[str, Any]] = []

        async def on_progress(value: float, total: float | None, _message: str | None) -> None:
            seen.append({"progress": value, "total": total})

        result = await client.call_tool("count_with_progress", {"steps": 3}, progress_callback=on_progress)
        return {"result": text(result), "notifications": seen}

    async def read() -> Any:
        result = await client.read_resource("interop://greeting")
        return "".join(c.text for c in result.contents if isinstance(c, types.TextResourceContents))

    async def prompt() -> Any:
        result = await client.get_prompt("greet", {"name": "interop"})
        return "".join(m.content.text for m in result.messages if isinstance(m.content, types.TextContent))

    async def elicitation() -> Any:
        result = await client.call_tool("ask_name", {})
        return {"result": text(result), "asked": list(asked)}

    async def listen() -> Any:
        async with client.listen(tools_list_changed=True) as subscription:
            honored = subscription.honored.model_dump(by_alias=True, exclude_none=True)
            trigger = text(await client.call_tool("change_tools", {}))
            received: list[str] = []
            async for event in subscription:
                received.append(event_to_notification(event, {}).method)
                break
        return {"honored": honored, "trigger": trigger, "received": received}

    await step("discover", discover)
    await step("listTools", lambda: _names(client.list_tools(), "tools", "name"))
    await step("add", lambda: _text_of(client.call_tool("add", {"a": 2, "b": 3})))
    await step("progress", progress)
    await step("listResources", lambda: _names(client.list_resources(), "resources", "uri"))
    await step("read", read)
    await step("listPrompts", lambda: _names(client.list_prompts(), "prompts", "name"))
    await step("prompt", prompt)
    await step("elicitation", elicitation)
    await step("listen", listen)


async def _names(call: Awaitable[Any], field: str, key: str) -> list[str]:
    result = await call
    return sorted(str(getattr(item, key)) for item in getattr(result, field))


async def _text_of(call: Awaitable[Any]) -> str:
    return text(await call)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
