"""`refusal`: why a request cannot go to its server, decided without waking the server.

The request's own shape and size (the one check, `actors.tools.check`), then what the server is
known to offer (once it ran, or the schema cache knew): an unknown tool or prompt, a task-only
tool, arguments that do not fit the tool's schema, a prompt's missing arguments. Pure: called on
the server actor's thread with what it owns.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.runtime.messages import CallTool, GetPrompt, ServerRequest
from actors.tools import ErrorType, RefusalReason, ToolSpec
from actors.tools.check import Refusal, not_offered

__all__ = ["refusal"]


def refusal(
    call: ServerRequest,
    config: ServerConfig,
    tools: Mapping[str, ToolSpec] | None,
    catalog: Catalog,
    *,
    schema: bool = True,
) -> Refusal | None:
    """Why ``call`` must be refused now, classified, or None if it may go to the server.

    ``schema``: check a tool call's arguments against its input schema here too. A running
    server's adapter checks the schema off this mailbox (a pattern may take up to its budget);
    a call that would wake the server is checked whole, so that bad arguments do not start it.
    """
    namespace, max_argument_bytes = config.name, config.max_argument_bytes
    match call:
        case CallTool():
            return call.refusal(max_argument_bytes, offered=tools, server=namespace, schema=schema)
        case GetPrompt() if tools is not None:
            if (refused := call.refusal(max_argument_bytes)) is not None:
                return refused
            prompts = {p.prompt_name: p for p in catalog.prompts}
            prompt = prompts.get(call.prompt)
            if prompt is None:
                return not_offered("prompt", call.prompt, prompts, namespace)
            missing = [name for name in prompt.required if name not in call.arguments]
            if missing:
                return Refusal(
                    ErrorType.VALIDATION,
                    RefusalReason.SCHEMA,
                    f"prompt {call.prompt!r} needs the argument{'s' if len(missing) > 1 else ''} "
                    + ", ".join(repr(m) for m in missing),
                )
    return call.refusal(max_argument_bytes)
