"""Drive an MCP server with the official Python MCP client (PyPI package `mcp`) for tests/e2e/mcp.rs.

Reads a plan as JSON on stdin:

    {"transport": "stdio", "command": "...", "args": [...], "env": {...}, "cwd": "..."}
    {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "..."}

plus "steps": a list of {"op": "list_tools"}, {"op": "call_tool", "name": ..., "arguments": {...}},
{"op": "list_resources"} or {"op": "read_resource", "uri": ...}. Prints one JSON object on stdout:
the server's initialize result and each step's result as the client parsed it, or the exception a
step raised (a protocol error), so the Rust test can assert on everything and show it when it fails.
"""

import asyncio
import contextlib
import json
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run_steps(session, steps):
    results = []
    for step in steps:
        op = step["op"]
        try:
            if op == "list_tools":
                result = await session.list_tools()
            elif op == "call_tool":
                result = await session.call_tool(step["name"], step.get("arguments") or {})
            elif op == "list_resources":
                result = await session.list_resources()
            elif op == "read_resource":
                result = await session.read_resource(step["uri"])
            else:
                raise ValueError(f"unknown op {op!r}")
            results.append({"op": op, "result": dump(result)})
        except Exception as e:  # a protocol error is a result the test looks at
            results.append({"op": op, "exception": f"{type(e).__name__}: {e}"})
    return results


async def main():
    plan = json.load(sys.stdin)
    async with contextlib.AsyncExitStack() as stack:
        if plan["transport"] == "stdio":
            params = StdioServerParameters(
                command=plan["command"], args=plan.get("args", []), env=plan.get("env"), cwd=plan.get("cwd")
            )
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            headers = {"Authorization": f"Bearer {plan['token']}"} if plan.get("token") else None
            client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            read, write = await stack.enter_async_context(streamable_http_client(plan["url"], http_client=client))
        session = await stack.enter_async_context(ClientSession(read, write))
        init = await session.initialize()
        results = await run_steps(session, plan["steps"])
    json.dump({"initialize": dump(init), "results": results}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
