"""A handshake-era stdio server written by hand (no SDK), that answers some requests badly.

Run as ``python -m tests.mcp.raw_server``. It answers the handshake, ``ping`` and the lists
correctly, except:

- ``resources/read``: ``raw://garbage`` gets a result that is not a ``ReadResourceResult``;
  ``raw://silent`` is never answered; ``raw://cancelled`` answers with the ids of the requests
  the client said it cancelled (``notifications/cancelled``), as JSON text; ``raw://hello``
  reads ``hello``; anything else is an error (``-32602``).
- ``prompts/list`` lists a prompt without a name (not a ``Prompt``).
- ``prompts/get`` is never answered.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_CAPABILITIES = {"resources": {}, "prompts": {}, "tools": {}}


def _answer(request_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _read(uri: str, cancelled: list[Any]) -> tuple[Any, dict[str, Any] | None] | None:
    if uri == "raw://garbage":
        return {"contents": "not a list of contents"}, None
    if uri == "raw://silent":
        return None
    if uri == "raw://cancelled":
        return {"contents": [{"uri": uri, "text": json.dumps(cancelled)}]}, None
    if uri == "raw://hello":
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "hello"}]}, None
    return None, {"code": -32602, "message": f"Unknown resource: {uri}"}


def main() -> None:
    cancelled: list[Any] = []
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "notifications/cancelled":
            cancelled.append(params.get("requestId"))
        if request_id is None:
            continue
        if method == "initialize":
            _answer(
                request_id,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": _CAPABILITIES,
                    "serverInfo": {"name": "raw", "version": "1.0"},
                },
            )
        elif method == "ping":
            _answer(request_id, {})
        elif method == "tools/list":
            _answer(request_id, {"tools": []})
        elif method == "resources/list":
            _answer(request_id, {"resources": [{"uri": "raw://hello", "name": "hello"}]})
        elif method == "resources/read":
            answer = _read(str(params.get("uri")), cancelled)
            if answer is not None:
                _answer(request_id, *answer)
        elif method == "prompts/list":
            _answer(request_id, {"prompts": [{"description": "a prompt without a name"}]})
        elif method == "prompts/get":
            pass  # never answered
        else:
            _answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})


if __name__ == "__main__":
    main()
