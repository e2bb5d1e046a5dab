"""The ``mcp-actors`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from actors.tools import ToolCapabilities, ToolRegistry, ToolRunner, ToolSpec

__all__ = ["main"]


def _demo(out: object) -> int:
    write = getattr(out, "write")  # noqa: B009 - any text stream
    registry = ToolRegistry()
    registry.register(
        ToolSpec(
            name="demo/add",
            description="Add two integers.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            capabilities=ToolCapabilities(read_only=True),
            handler=lambda i: {"sum": i["a"] + i["b"]},
        )
    )
    runner = ToolRunner(registry)
    write("tools: " + ", ".join(t.name for t in registry.list()) + "\n")
    for args in ({"a": 2, "b": 40}, {"a": "two"}):
        result = runner.execute("demo/add", args)
        outcome = result.output if result.success else f"{result.error_type}: {result.error}"
        write(f"demo/add {args} -> {outcome} ({result.duration_ms:.2f} ms)\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status."""
    parser = argparse.ArgumentParser(prog="mcp-actors", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="show the runtime at work on the built-in default configuration")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(sys.stdout)
    parser.error(f"unknown command {args.command}")
    return 2
