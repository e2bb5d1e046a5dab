"""Robot keywords for the tool runtime core (a `ToolRegistry` and its `ToolRunner`), and the
last result that every keyword of `actors.testing.robotlib` that calls something keeps."""

from __future__ import annotations

import json
from typing import Any

from actors.mcp.content import ContentText
from actors.tools import ToolRegistry, ToolResult, ToolRunner, ToolSpec

__all__ = ["ToolCoreKeywords"]


class ToolCoreKeywords:
    """Register and run tools of the core registry; check the last result."""

    def __init__(self) -> None:
        self._registry = ToolRegistry()
        self._runner = ToolRunner(self._registry)
        self._last: ToolResult | None = None

    def register_python_tool(self, name: str, expression: str, input_schema: str = "") -> None:
        """Register tool ``name`` whose output is ``{"result": eval(expression)}``.

        The expression sees the validated inputs as ``inputs``. Only for acceptance suites.
        """
        code = compile(expression, f"<tool {name}>", "eval")

        def handler(inputs: dict[str, Any]) -> Any:
            return eval(code, {"__builtins__": __builtins__}, {"inputs": inputs})

        schema = json.loads(input_schema) if input_schema else {"type": "object"}
        self._registry.register(ToolSpec(name=name, input_schema=schema, handler=handler))

    def registered_tools_should_be(self, *names: str) -> None:
        """Fail unless exactly ``names`` are registered (in any order)."""
        have = sorted(t.name for t in self._registry.list())
        if have != sorted(names):
            raise AssertionError(f"registered tools are {have}, expected {sorted(names)}")

    def execute_tool(self, name: str, arguments: str = "{}") -> ToolResult:
        """Run a tool of the core registry with JSON ``arguments``; return its `ToolResult`."""
        self._last = self._runner.execute(name, json.loads(arguments))
        return self._last

    def last_result_should_succeed(self) -> None:
        result = self._require_last()
        if not result.success:
            raise AssertionError(f"tool failed: {result.error_type}: {result.error}")

    def last_result_should_fail_with(self, error_type: str, message_part: str = "") -> None:
        """Fail unless the last result failed with ``error_type`` and mentions ``message_part``."""
        result = self._require_last()
        if result.success:
            raise AssertionError(f"tool succeeded with {result.output}, expected {error_type}")
        if result.error_type != error_type:
            raise AssertionError(f"error type is {result.error_type!r}, expected {error_type!r}")
        if message_part not in (result.error or ""):
            raise AssertionError(f"error {result.error!r} does not mention {message_part!r}")

    def last_output_should_be(self, expected_json: str) -> None:
        """Fail unless the last result's output equals the JSON ``expected_json``."""
        result = self._require_last()
        if result.output != json.loads(expected_json):
            raise AssertionError(f"output is {result.output}, expected {expected_json}")

    def _last_lines(self, field: str, keyword: str) -> str:
        result = self._require_last()
        if not result.success:
            raise AssertionError(f"{keyword} failed: {result.error_type}: {result.error}")
        items = (result.output or {}).get(field)
        if not isinstance(items, list):
            raise AssertionError(f"the last result has no {field} (use {keyword} first)")
        text = ContentText()
        lines = text.contents(items) if field == "contents" else text.messages(items)
        return "\n".join(lines)

    def _require_last(self) -> ToolResult:
        if self._last is None:
            raise AssertionError("no tool has been called yet")
        return self._last
