"""The client command that the official MCP conformance suite runs against its scenario servers.

    conformance client --command "<venv python> tests/conformance/client.py [--protocol auto]" \
        --scenario initialize

The suite starts a scenario server, runs this script with the server's URL as the last argument
and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, then judges what the server saw. Every
scenario goes through the actor runtime: a `Runtime` with one streamable-HTTP server entry, calls
through the registry actor (`CallTool` messages), then a clean shutdown.

Exit status: 0 when the runtime did what the scenario asks, 1 otherwise (the suite records it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors import Runtime
from actors.runtime.messages import CallTool

NAMESPACE = "conformance"
CALL_TIMEOUT = 20.0

# What each scenario's server expects the client to call once it has listed the tools.
SCENARIO_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def server_entry(url: str, protocol: str) -> dict[str, Any]:
    # The scenario servers speak the handshake era (2025-06-18 / 2025-11-25) only: ``auto``
    # (the default) must fall back to it, ``legacy`` goes straight to it.
    return {
        "type": "streamable-http",
        "url": url,
        "protocol": protocol,
        "connectTimeout": 15,
        "callTimeout": CALL_TIMEOUT,
        "healthCheckInterval": 0,
        "idleTimeout": 0,
        "restart": "temporary",
        # There is no user to ask: accept with the schema's defaults (SEP-1034).
        "elicitation": "accept-defaults",
    }


def run(scenario: str, url: str, protocol: str) -> int:
    config = {"mcpServers": {NAMESPACE: server_entry(url, protocol)}, "builtin": {"enabled": False}}
    with Runtime.start(config) as rt:
        # initialize + tools/list: the handshake every scenario starts with.
        try:
            status = rt.start_server(NAMESPACE)
        except Exception as exc:  # a ToolError: the server refused us (the auth scenarios)
            print(f"{scenario}: the server did not start: {exc}", file=sys.stderr)
            return 1
        tools = sorted(spec.name for spec in rt.list_tools(NAMESPACE))
        print(f"{scenario}: connected, protocol {status.protocol_version}, tools {tools}")
        call = SCENARIO_CALLS.get(scenario)
        if call is None:
            return 0
        tool, arguments = call
        message = CallTool(namespace=NAMESPACE, tool=tool, arguments=arguments, timeout=CALL_TIMEOUT)
        rt.registry.tell(message)
        result = message.reply.result(timeout=CALL_TIMEOUT + 5)
        print(f"{scenario}: {tool} -> success={result.success} {result.text or result.error!r}")
        return 0 if result.success else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="The mcp-actors client for the MCP conformance suite.")
    parser.add_argument("--protocol", choices=("auto", "legacy", "2026-07-28"), default="auto")
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("url", help="the scenario server's URL (the suite appends it)")
    args = parser.parse_args(argv[1:])
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(relativeCreated)6.0fms %(levelname)s %(name)s: %(message)s",
    )
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not scenario:
        parser.error("MCP_CONFORMANCE_SCENARIO is not set")
    return run(scenario, args.url, args.protocol)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
