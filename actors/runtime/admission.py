"""`refusal`: why a request cannot go to its server, decided without waking the server.

The request's own shape and size (the one check, `actors.tools.check`), then what the server is
known to offer (once it ran, or the schema cache knew): a tool or prompt whose changed definition
waits for an approval (`actors.pins`), an unknown tool or prompt (started as a task, or a
completion of one), a task-only tool, arguments that do not fit the tool's schema, a prompt's
missing arguments. Pure: called on the server actor's thread with what it owns.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.mcp.catalog import Catalog
from actors.mcp.config import ServerConfig
from actors.pins.definitions import KIND_WORDS, PinKind
from actors.pins.model import Ref
from actors.runtime.messages import CallTool, Complete, GetPrompt, ServerRequest
from actors.runtime.task_messages import StartTask
from actors.tools import ErrorType, RefusalReason, ToolSpec
from actors.tools.check import Refusal, not_offered

__all__ = ["held", "refusal"]


def refusal(
    call: ServerRequest,
    config: ServerConfig,
    tools: Mapping[str, ToolSpec] | None,
    catalog: Catalog,
    *,
    schema: bool = True,
    hidden: frozenset[Ref] = frozenset(),
) -> Refusal | None:
    """Why ``call`` must be refused now, classified, or None if it may go to the server.

    ``schema``: check a tool call's arguments against its input schema here too. A running
    server's adapter checks the schema off this mailbox (a pattern may take up to its budget);
    a call that would wake the server is checked whole, so that bad arguments do not start it.
    ``hidden``: the server's definitions held until approved (`actors.pins.PinBook.hidden`).
    """
    namespace, max_argument_bytes = config.name, config.max_argument_bytes
    if hidden and (refused := held(call, hidden, namespace)) is not None:
        return refused
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
        case StartTask(tool=str(name)) if tools is not None and name not in tools:
            # As its plain call is: a backend would answer a tool it lacks in words of its own.
            if (refused := call.refusal(max_argument_bytes)) is not None:
                return refused
            return not_offered("tool", name, tools, namespace)
        case Complete(ref={"type": "ref/prompt", "name": str(name)}) if tools is not None:
            # A completion of a prompt the server does not offer is refused as its ``prompts/get``
            # is: a server may answer it with an empty completion, which would set it apart
            # from a prompt the gateway's policy hides.
            if (refused := call.refusal(max_argument_bytes)) is not None:
                return refused
            offered = {p.prompt_name for p in catalog.prompts}
            if name not in offered:
                return not_offered("prompt", name, offered, namespace)
    return call.refusal(max_argument_bytes)


def held(call: ServerRequest, hidden: frozenset[Ref], namespace: str) -> Refusal | None:
    """The refusal of a call of a tool (or prompt) of ``namespace`` whose changed definition is
    ``hidden`` until approved: ``not_found``, as a tool not offered, `RefusalReason.NOT_APPROVED`."""
    kind: PinKind
    match call:
        case CallTool(tool=str(name)) | StartTask(tool=str(name)) if ("tools", name) in hidden:
            kind = "tools"
        case GetPrompt(prompt=str(name)) if ("prompts", name) in hidden:
            kind = "prompts"
        case Complete(ref={"type": "ref/prompt", "name": str(name)}) if ("prompts", name) in hidden:
            # Its completion is refused as its ``prompts/get`` is: a server's completion of the
            # changed prompt would reach the host before the host approved what it now asks.
            kind = "prompts"
        case _:
            return None
    return Refusal(
        ErrorType.NOT_FOUND,
        RefusalReason.NOT_APPROVED,
        f"the {KIND_WORDS[kind]} {name!r} of {namespace!r} changed since it was pinned and is not "
        f"offered until approved (mcp-actors approve {namespace} {name})",
    )
