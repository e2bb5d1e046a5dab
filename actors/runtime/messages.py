"""The messages of the actor runtime.

Request messages carry a ``reply`` slot, a `concurrent.futures.Future` that the actor
handling the request completes (``tell`` the message, then wait on ``msg.reply`` with a
timeout). ``ask`` of the registry actor returns that same future at once, without waiting for
a server. Internal messages (ticks and completions) are for the runtime's own actors.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.mcp.adapter import TransportSource
from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.config import ServerConfig
from actors.mcp.freshness import ListFreshness
from actors.mcp.inputs import CallInputs

# The runtime's own messages, importable from here too (as they always were).
from actors.runtime.internal_messages import *  # noqa: F403
from actors.runtime.schema_cache import CachedLists
from actors.runtime.skill_messages import SkillRequest
from actors.runtime.status import ServerStatus
from actors.runtime.task_messages import CancelTask, GetTask, StartTask, UpdateTask
from actors.runtime.telemetry import current_context
from actors.tools import ErrorType, RefusalReason, ToolError, ToolResult, ToolSpec
from actors.tools.check import Refusal, check_call, check_timeout

__all__ = [
    "CallExpired",
    "CallTool",
    "CancelTask",
    "Complete",
    "GetPrompt",
    "GetStatus",
    "GetTask",
    "ListPrompts",
    "ListResourceTemplates",
    "ListResources",
    "ListTools",
    "OnProgress",
    "OnUpdate",
    "ReadResource",
    "RegisterServer",
    "ResourceSubscription",
    "ServerStatus",
    "ShutdownAll",
    "SkillRequest",
    "StartServer",
    "StartTask",
    "StopServer",
    "SubscribeResource",
    "UnregisterServer",
    "UnsubscribeResource",
    "UpdateTask",
    "refuse",
]

OnProgress = Callable[[float, float | None, str | None], None]
"""``progress(progress, total, message)``: called in order, on a host thread (never the loop's)."""

OnUpdate = Callable[[str], None]
"""``on_update(uri)``: a subscribed resource changed; called on a host thread."""


def _slot() -> concurrent.futures.Future[Any]:
    return concurrent.futures.Future()


def _malformed(why: str) -> Refusal:
    return Refusal(ErrorType.VALIDATION, RefusalReason.MALFORMED, why)


def _message(refusal: Refusal | None) -> str | None:
    return None if refusal is None else refusal.message


# ---- public requests -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CallTool:
    """Call ``namespace/tool``; the reply is a `ToolResult` (failures included)."""

    namespace: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    """Seconds; the server's ``callTimeout`` when None."""
    progress: OnProgress | None = field(default=None, repr=False)
    """Asks the server for progress notifications and hands each to this callable."""
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    """The sender's OpenTelemetry context: the request's span is its child."""
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)
    inputs: CallInputs | None = field(default=None, repr=False, compare=False)
    """Answers what the server asks for this call (sampling, elicitation, roots), a round at a
    time; None: the host's handlers (`actors.mcp.inputs`)."""

    @property
    def target(self) -> str:
        """What the call is for, in messages: the tool name."""
        return str(self.tool)

    def with_inputs(self, inputs: CallInputs) -> CallTool:
        """This call, with its server's requests answered by ``inputs``."""
        return dataclasses.replace(self, inputs=inputs, reply=_slot())

    def refusal(
        self,
        max_argument_bytes: int | None = None,
        *,
        offered: Mapping[str, ToolSpec] | None = None,
        server: str = "",
        schema: bool = True,
    ) -> Refusal | None:
        """Why this call must not be sent, classified, or None: `actors.tools.check.check_call`
        on its arguments and timeout, after its own fields (names, progress).

        ``offered``: the tools the server is known to offer (by name without namespace), to
        refuse a tool it does not offer (`RefusalReason.NOT_OFFERED`) and, unless ``schema`` is
        False, arguments that break the tool's input schema.
        """
        if not isinstance(self.namespace, str) or not isinstance(self.tool, str):
            return _malformed(f"the tool name {self.namespace!r}/{self.tool!r} is not text")
        if self.progress is not None and not callable(self.progress):
            return _malformed("progress must be callable")
        return check_call(
            self.arguments,
            timeout=self.timeout,
            max_argument_bytes=max_argument_bytes,
            tool=self.tool,
            offered=offered,
            server=server or self.namespace,
            schema=schema,
        )

    def problem(self, max_argument_bytes: int | None = None) -> str | None:
        """The message of `refusal` (its shape, size and timeout only), or None."""
        return _message(self.refusal(max_argument_bytes))

    @classmethod
    def named(
        cls, name: str, arguments: dict[str, Any] | None = None, timeout: float | None = None
    ) -> CallTool:
        """A call of ``"namespace/tool"``."""
        namespace, _, tool = name.partition("/")
        return cls(namespace=namespace, tool=tool, arguments=dict(arguments or {}), timeout=timeout)


@dataclass(frozen=True, eq=False)
class ReadResource:
    """Read ``uri`` from server ``namespace``; the reply is a `ToolResult` whose output is
    ``{"contents": [{"uri", "mimeType", "text" | "blob"}]}`` (failures included)."""

    namespace: str
    uri: str
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    """The sender's OpenTelemetry context: the request's span is its child."""
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)

    @property
    def target(self) -> str:
        return str(self.uri)

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        """Why this read must not be sent, classified, or None."""
        if not isinstance(self.uri, str) or not self.uri:
            return _malformed(f"the resource uri {self.uri!r} is not text")
        return check_timeout(self.timeout)

    def problem(self, max_argument_bytes: int | None = None) -> str | None:
        """The message of `refusal`, or None."""
        return _message(self.refusal(max_argument_bytes))


@dataclass(frozen=True, eq=False)
class GetPrompt:
    """Get prompt ``prompt`` of server ``namespace`` filled with ``arguments`` (text values);
    the reply is a `ToolResult` whose output is ``{"messages": [...], "description": ...}``."""

    namespace: str
    prompt: str
    arguments: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    """The sender's OpenTelemetry context: the request's span is its child."""
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)
    inputs: CallInputs | None = field(default=None, repr=False, compare=False)
    """Answers what the server asks for this request, as `CallTool.inputs`."""

    @property
    def target(self) -> str:
        return str(self.prompt)

    def with_inputs(self, inputs: CallInputs) -> GetPrompt:
        """This request, with its server's requests answered by ``inputs``."""
        return dataclasses.replace(self, inputs=inputs, reply=_slot())

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        """Why this request must not be sent, classified, or None."""
        if not isinstance(self.prompt, str) or not self.prompt:
            return _malformed(f"the prompt name {self.prompt!r} is not text")
        if isinstance(self.arguments, Mapping):
            wrong = sorted(str(k) for k, v in self.arguments.items() if not isinstance(v, str))
            if wrong:
                return _malformed(f"prompt arguments must be text: {', '.join(wrong)}")
        return check_call(self.arguments, timeout=self.timeout, max_argument_bytes=max_argument_bytes)

    def problem(self, max_argument_bytes: int | None = None) -> str | None:
        """The message of `refusal`, or None."""
        return _message(self.refusal(max_argument_bytes))


@dataclass(frozen=True, eq=False)
class Complete:
    """Ask server ``namespace`` to complete an argument of a prompt or resource template.

    ``ref``: ``{"type": "ref/prompt", "name": ...}`` or ``{"type": "ref/resource", "uri": ...}``;
    ``argument``: ``{"name": ..., "value": ...}``; ``context``: other arguments already given.
    The reply is a `ToolResult` whose output is ``{"values": [...], "total": ..., "hasMore": ...}``.
    """

    namespace: str
    ref: dict[str, Any]
    argument: dict[str, str]
    context: dict[str, str] | None = None
    timeout: float | None = None
    trace_context: Any = field(default_factory=current_context, repr=False, compare=False)
    """The sender's OpenTelemetry context: the request's span is its child."""
    reply: concurrent.futures.Future[ToolResult] = field(default_factory=_slot, repr=False)

    @property
    def target(self) -> str:
        return "completion"

    def refusal(self, max_argument_bytes: int | None = None) -> Refusal | None:
        """Why this request must not be sent, classified, or None."""
        ref = self.ref
        if not isinstance(ref, Mapping) or ref.get("type") not in ("ref/prompt", "ref/resource"):
            return _malformed(
                'ref must be {"type": "ref/prompt", "name": ...} or {"type": "ref/resource", "uri": ...}'
            )
        key = "name" if ref["type"] == "ref/prompt" else "uri"
        if not isinstance(ref.get(key), str):
            return _malformed(f"ref needs a {key!r}")
        argument = self.argument
        if not isinstance(argument, Mapping) or not all(
            isinstance(argument.get(k), str) for k in ("name", "value")
        ):
            return _malformed('argument must be {"name": ..., "value": ...} (text)')
        if self.context is not None and not (
            isinstance(self.context, Mapping) and all(isinstance(v, str) for v in self.context.values())
        ):
            return _malformed("context must map argument names to text")
        return check_timeout(self.timeout)

    def problem(self, max_argument_bytes: int | None = None) -> str | None:
        """The message of `refusal`, or None."""
        return _message(self.refusal(max_argument_bytes))


ServerRequest = (
    CallTool
    | ReadResource
    | GetPrompt
    | Complete
    | SkillRequest
    | StartTask
    | GetTask
    | UpdateTask
    | CancelTask
)
"""The requests a server actor sends to its server, each answered with a `ToolResult`."""

SERVER_REQUESTS = (
    CallTool,
    ReadResource,
    GetPrompt,
    Complete,
    StartTask,
    GetTask,
    UpdateTask,
    CancelTask,
    SkillRequest,
)


@dataclass(frozen=True)
class CallExpired:
    """Internal: a request queued while the server starts ran out of time."""

    call: ServerRequest


@dataclass(frozen=True, eq=False)
class ListResources:
    """The resources of every namespace (or of one); the reply is a list of `ResourceSpec`.

    Answered as `ListTools` is."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[ResourceSpec]] = field(default_factory=_slot, repr=False)
    refresh: bool = True
    """List a running server's stale list again first (see `ListTools`); False: answer from
    what is known at once (a lookup, not a listing)."""
    freshness: concurrent.futures.Future[ListFreshness | None] = field(default_factory=_slot, repr=False)
    """Completed before ``reply``: the freshness left of the answer (see `ListTools`)."""


@dataclass(frozen=True, eq=False)
class ListResourceTemplates:
    """The resource templates of every namespace (or of one); the reply is a list of
    `ResourceTemplateSpec`."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[ResourceTemplateSpec]] = field(default_factory=_slot, repr=False)
    refresh: bool = True
    """List a running server's stale list again first (see `ListTools`); False: answer from
    what is known at once (a lookup, not a listing)."""
    freshness: concurrent.futures.Future[ListFreshness | None] = field(default_factory=_slot, repr=False)
    """Completed before ``reply``: the freshness left of the answer (see `ListTools`)."""


@dataclass(frozen=True, eq=False)
class ListPrompts:
    """The prompts of every namespace (or of one); the reply is a list of `PromptSpec`."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[PromptSpec]] = field(default_factory=_slot, repr=False)
    refresh: bool = True
    """List a running server's stale list again first (see `ListTools`); False: answer from
    what is known at once (a lookup, not a listing)."""
    freshness: concurrent.futures.Future[ListFreshness | None] = field(default_factory=_slot, repr=False)
    """Completed before ``reply``: the freshness left of the answer (see `ListTools`)."""


@dataclass(frozen=True, eq=False)
class SubscribeResource:
    """Follow updates of ``uri`` on server ``namespace``: ``on_update(uri)`` on each one.

    The reply is a `ResourceSubscription` (its ``cancel()`` ends it). The server is started if
    need be and kept running (not stopped when idle) while it has subscribers; after a restart
    the subscription is renewed.
    """

    namespace: str
    uri: str
    on_update: OnUpdate = field(repr=False)
    reply: concurrent.futures.Future[ResourceSubscription] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class UnsubscribeResource:
    """End subscription ``subscription`` of server ``namespace``; the reply is True if it existed."""

    namespace: str
    subscription: int
    reply: concurrent.futures.Future[bool] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class ResourceSubscription:
    """A live subscription to one resource; `cancel` ends it."""

    namespace: str
    uri: str
    id: int
    server: Any = field(repr=False)
    """The server actor's `pykka.ActorRef`."""

    def cancel(self, timeout: float = 10.0) -> bool:
        """End the subscription; True if it was live. Waits at most ``timeout`` seconds."""
        message = UnsubscribeResource(self.namespace, self.id)
        try:
            self.server.tell(message)
            return bool(message.reply.result(timeout=timeout))
        except Exception:  # the server actor is gone (unregistered, shut down): nothing to end
            return False


@dataclass(frozen=True, eq=False)
class ListTools:
    """The tools of every namespace (or of one); the reply is a list of `ToolSpec`.

    Answered from what the registry knows; a server never seen before is started, and a running
    server whose list went stale (its ``ttlMs`` ran out, or it said the list changed: SEP-2549)
    lists it again first, within a bound. ``freshness`` says how much of the answer's freshness
    is left: the shortest TTL left of the merged lists, private if any is (``ttlMs`` 0 if any
    has no hint); None when none of them has a hint (handshake-era servers)."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[ToolSpec]] = field(default_factory=_slot, repr=False)
    refresh: bool = True
    """List a running server's stale list again first (see `ListTools`); False: answer from
    what is known at once (a lookup, not a listing)."""
    freshness: concurrent.futures.Future[ListFreshness | None] = field(default_factory=_slot, repr=False)
    """Completed before ``reply``: the freshness left of the answer (see `ListTools`)."""


@dataclass(frozen=True, eq=False)
class GetStatus:
    """Status snapshots; the reply is a list of `ServerStatus`, sorted by namespace."""

    namespace: str | None = None
    reply: concurrent.futures.Future[list[ServerStatus]] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class StartServer:
    """Start a server now (idempotent; also clears ``failed``); the reply is its `ServerStatus`."""

    namespace: str
    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class StopServer:
    """Stop a server (idempotent); the reply is its `ServerStatus` once stopped."""

    namespace: str
    reply: concurrent.futures.Future[ServerStatus] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class RegisterServer:
    """Add a server under ``config.name``; the reply is None (or a `ToolError` if the name is taken)."""

    config: ServerConfig
    transport: TransportSource | None = None
    """A transport (or factory) to use instead of the one the config describes, e.g. a mock."""
    known: CachedLists | None = None
    """What the server listed when it last ran (`SchemaCache`): lists and argument checks are
    answered from it until the server runs."""
    reply: concurrent.futures.Future[None] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class UnregisterServer:
    """Stop and remove a server and its tools; the reply is True if it existed."""

    namespace: str
    reply: concurrent.futures.Future[bool] = field(default_factory=_slot, repr=False)


@dataclass(frozen=True, eq=False)
class ShutdownAll:
    """Stop every server in parallel, keeping their registrations; the reply is None."""

    reply: concurrent.futures.Future[None] = field(default_factory=_slot, repr=False)


# ---- answering what is left ------------------------------------------------------------


def refuse(message: object, error_type: str, why: str) -> None:
    """Answer ``message``'s reply slot, if it has an open one, with a failure of ``error_type``.

    Calls get a failed `ToolResult` (they promise one); other requests a `ToolError`.
    """
    reply = getattr(message, "reply", None)
    if not isinstance(reply, concurrent.futures.Future) or reply.done():
        return
    try:
        if isinstance(message, SERVER_REQUESTS):
            reply.set_result(ToolResult.fail(error_type, why))
        else:
            reply.set_exception(
                ToolError(str(getattr(message, "namespace", None) or "runtime"), error_type, why)
            )
    except concurrent.futures.InvalidStateError:
        pass  # answered meanwhile on another thread
