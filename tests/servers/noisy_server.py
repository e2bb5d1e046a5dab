"""A working stdio MCP server (legacy handshake) that writes garbage between its messages.

Hand-written JSON-RPC, so the garbage is exactly what we choose: before every response it
prints a line that is not JSON, then a JSON object that is not JSON-RPC, then the answer.
Tools: ``echo(text)``. Unknown methods get a JSON-RPC "method not found" error.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }
]


def _write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "noisy", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": _TOOLS}
    if method == "tools/call" and params.get("name") == "echo":
        text = str((params.get("arguments") or {}).get("text", ""))
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "no such tool"}], "isError": True}
    raise LookupError(method)


def main() -> None:
    _write("noisy: starting up, this line is not JSON-RPC")
    for count, line in enumerate(sys.stdin):
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(request, dict) or "id" not in request or "method" not in request:
            continue  # a notification or a response
        _write(f"noise {count} {{not json")
        _write(json.dumps({"noise": count}))
        try:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"], "result": _answer(request)}
        except LookupError:
            reply = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32601, "message": f"method not found: {request['method']}"},
            }
        _write(json.dumps(reply))


if __name__ == "__main__":
    main()
