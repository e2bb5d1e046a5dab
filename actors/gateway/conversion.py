"""Conversion between the runtime's plain data and the SDK's MCP types, for the gateway.

Pure functions, no state: what a `ToolSpec`, `ResourceSpec`, `PromptSpec` or `ToolResult` is
as an MCP type, and which results are protocol errors rather than tool errors.
"""

from __future__ import annotations

import re

import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.gateway.access.audit_request import note_result
from actors.gateway.external import ExternalNames
from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.tools import ErrorType, RefusalReason, ToolResult, ToolSpec

__all__ = [
    "call_result",
    "is_not_offered",
    "prompt",
    "protocol_error",
    "refused",
    "resource",
    "template",
    "template_pattern",
    "tool",
    "tool_answer",
]

"""The ``reason`` a result's metadata gives when the tool, prompt or resource is not offered."""


def is_not_offered(result: ToolResult) -> bool:
    """Whether ``result`` says the backend does not offer what was asked for (a client's
    mistake: the gateway answers it with a protocol error, not a tool error).

    The one place this is decided, on the classified value the one check gives
    (`ToolResult.refusal`, `RefusalReason.NOT_OFFERED`), never on the result's text.
    """
    return result.refusal is RefusalReason.NOT_OFFERED


def call_result(result: ToolResult) -> types.CallToolResult:
    """A tool call's result as MCP: its content, or the error as a tool error the model reads."""
    note_result(result)  # the error type, for the request's audit record
    if result.success:
        output = result.output or {}
        if "content" in output:
            return types.CallToolResult.model_validate(
                {"content": output["content"], "structuredContent": output.get("structuredContent")}
            )
        # A built-in tool: its output as JSON text and as structured content.
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], structured_content=output
        )
    content = result.metadata.get("content")
    if isinstance(content, list) and content:
        return types.CallToolResult.model_validate({"content": content, "isError": True})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.error or "")], is_error=True
    )


def tool_answer(result: ToolResult, external: str) -> types.CallToolResult:
    """A tool call's result for the client: a protocol error where the backend's was one the
    client must see as it was (-32021), or where the tool is not offered; else `call_result`."""
    relayed = result.metadata.get("jsonrpc_error")
    if isinstance(relayed, dict) and isinstance(relayed.get("code"), int):
        raise MCPError(relayed["code"], str(relayed.get("message") or result.error), relayed.get("data"))
    if is_not_offered(result):
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {external} ({result.error})")
    return call_result(result)


def refused(error_type: ErrorType, message: str) -> types.CallToolResult:
    """A tool error the model can read and correct (not a protocol error)."""
    return call_result(ToolResult.fail(error_type, message))


def protocol_error(result: ToolResult) -> MCPError:
    """A failed read, prompt or completion as a JSON-RPC error."""
    note_result(result)
    # An unknown resource or prompt, or bad arguments, is the client's mistake: invalid params.
    caller = result.error_type in (ErrorType.NOT_FOUND, ErrorType.VALIDATION)
    return MCPError(types.INVALID_PARAMS if caller else types.INTERNAL_ERROR, result.error or "")


def tool(spec: ToolSpec, names: ExternalNames) -> types.Tool:
    annotations = spec.metadata.get("annotations") or None
    return types.Tool(
        name=names.external(spec.name),
        description=spec.description or None,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations.model_validate(annotations) if annotations else None,
    )


def prompt(spec: PromptSpec, names: ExternalNames) -> types.Prompt:
    return types.Prompt(
        name=names.external(spec.name),
        title=spec.title,
        description=spec.description,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in spec.arguments
        ],
    )


def resource(spec: ResourceSpec) -> types.Resource:
    return types.Resource(
        uri=spec.uri,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        mime_type=spec.mime_type,
        size=spec.size,
    )


def template(spec: ResourceTemplateSpec) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=spec.uri_template,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        mime_type=spec.mime_type,
    )


def template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 template as a pattern: ``{x}`` one path segment, ``{+x}``/``{/x*}`` more."""
    parts = re.split(r"(\{[^}]*\})", template)
    pattern = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            expression = part[1:-1]
            pattern.append(".*" if expression[:1] in "+#/?&" or expression.endswith("*") else "[^/]*")
        else:
            pattern.append(re.escape(part))
    return re.compile("".join(pattern))
