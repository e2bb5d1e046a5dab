"""`AdapterRequests`: one server's requests over its connected transport, each classified.

Every coroutine here runs on the event loop and turns whatever goes wrong into a classified
failure: a failed `ToolResult` for calls and other requests, a `ToolError` for listings and
probes (their callers decide what a failure means for the server).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio

from actors.mcp.catalog import Catalog, PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.mcp.classify import classify
from actors.mcp.freshness import CACHE_HINT, Freshnesses, ListFreshness, Listing, ListKind, freshness_of
from actors.mcp.list_requests import PROMPTS, RESOURCES, TEMPLATES, CatalogList, listed
from actors.mcp.redaction import Redactor
from actors.mcp.skills import SKILL_FAULT, SkillRejected
from actors.mcp.transport import (
    CallOutcome,
    ClientTransport,
    JSONObject,
    Progress,
    RemoteTool,
    RequestTransport,
    ServerReplyError,
    Transport,
)
from actors.tools import ErrorType, ToolError, ToolResult, duration_text

__all__ = ["GUARD_SLACK", "RELAYED_CODES", "RESOURCE_NOT_FOUND", "AdapterRequests", "result_of"]

logger = logging.getLogger(__name__)

_L = TypeVar("_L")

GUARD_SLACK = 1.0
"""Spare time for a transport to report its own timeout before the adapter's guard fires."""

RESOURCE_NOT_FOUND = frozenset({-32002, -32602})
"""How servers say a resource does not exist: -32002 (the 2025 revisions), -32602 (invalid
params: 2026-07-28, and most servers)."""

RELAYED_CODES = frozenset({-32021})
"""Errors kept with their code and data in a failed result's ``jsonrpc_error`` metadata: -32021,
a client capability the request needs but the client did not declare (2026-07-28)."""


def _outcome_output(outcome: CallOutcome) -> dict[str, Any]:
    output: dict[str, Any] = {"content": outcome.content}
    if outcome.structured_content is not None:
        output["structuredContent"] = outcome.structured_content
    return output


def _outcome_error_text(outcome: CallOutcome) -> str:
    texts = [str(b.get("text", "")) for b in outcome.content if b.get("type") == "text"]
    return "; ".join(t for t in texts if t) or "the tool reported an error"


def result_of(
    outcome: CallOutcome, server: str, duration_ms: float = 0.0, redact: Callable[[str], str] = str
) -> ToolResult:
    """A tool's answer as a `ToolResult`: its error (``isError``) a ``server_error`` whose
    message is its text (``redact``-ed), its content kept; else its content and structured
    content as output."""
    if outcome.is_error:
        return ToolResult.fail(
            ErrorType.SERVER_ERROR,
            redact(_outcome_error_text(outcome)),
            duration_ms=duration_ms,
            server=server,
            content=outcome.content,
        )
    return ToolResult.ok(_outcome_output(outcome), duration_ms=duration_ms, server=server)


class AdapterRequests:
    """The requests of server ``server`` (named in messages), secrets scrubbed by ``redact``.

    Stateless: it holds only its server's name, its timeouts and its redactor.
    """

    def __init__(self, server: str, call_timeout: float, redact: Redactor) -> None:
        self.server = server
        self.call_timeout = call_timeout
        self.redact = redact

    async def call_tool(
        self,
        transport: Transport,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        progress: Progress | None,
        start: float,
    ) -> ToolResult:
        """Send ``tools/call``; ``start`` (``time.monotonic()``) is when the call began."""

        def elapsed() -> float:
            return (time.monotonic() - start) * 1000.0

        try:
            if getattr(transport, "bounds_requests", False):
                # It ends every request within its timeout itself: a guard scope would only
                # cost its ~14 us.
                outcome = await _send_call(transport, tool, arguments, timeout, progress)
            else:
                with anyio.fail_after(timeout + GUARD_SLACK):
                    outcome = await _send_call(transport, tool, arguments, timeout, progress)
        except Exception as exc:
            return self.failed(exc, tool, timeout, elapsed())
        return result_of(outcome, self.server, elapsed(), self.redact)

    def failed(self, exc: Exception, what: str, timeout: float, duration_ms: float) -> ToolResult:
        """The classified result of a request that raised ``exc``."""
        kind, message = classify(exc)
        if kind == ErrorType.TIMEOUT:
            message = (
                f"{what} got no answer within {duration_text(timeout)}; the server was told to cancel it"
            )
        extra: dict[str, Any] = {}
        if isinstance(exc, ServerReplyError) and exc.code in RELAYED_CODES:
            # A protocol error the caller's own client must see as it was (a gateway relays it).
            extra["jsonrpc_error"] = {"code": exc.code, "message": exc.message, "data": exc.data}
        return ToolResult.fail(
            kind, self.redact(message), duration_ms=duration_ms, server=self.server, **extra
        )

    async def ask(
        self,
        transport: Transport | None,
        what: str,
        timeout: float,
        send: Callable[[ClientTransport], Awaitable[JSONObject]],
        missing: frozenset[int] = frozenset(),
    ) -> ToolResult:
        """One request beyond tools, as a classified `ToolResult` whose output is the answer.

        ``missing``: the JSON-RPC error codes by which the server says the thing asked for does
        not exist (classified ``not_found``, not ``server_error``).
        """
        start = time.monotonic()

        def elapsed() -> float:
            return (time.monotonic() - start) * 1000.0

        try:
            if transport is None:
                raise ToolError(self.server, ErrorType.CONNECTION, "not connected")
            if not isinstance(transport, ClientTransport):
                return ToolResult.fail(
                    ErrorType.SERVER_ERROR,
                    f"{what}: the {transport.kind} transport of {self.server!r} speaks tools only",
                    duration_ms=elapsed(),
                )
            with anyio.fail_after(timeout + GUARD_SLACK):
                answer = await send(transport)
        except Exception as exc:
            if isinstance(exc, SkillRejected):
                message = self.redact(f"{what}: {exc.message}")
                fault = {SKILL_FAULT: exc.fault.value}
                return ToolResult.fail(ErrorType.VALIDATION, message, duration_ms=elapsed(), **fault)
            if isinstance(exc, ServerReplyError) and exc.code in missing:
                message = self.redact(f"{what}: {exc.message}")
                return ToolResult.fail(
                    ErrorType.NOT_FOUND, message, duration_ms=elapsed(), server=self.server
                )
            return self.failed(exc, what, timeout, elapsed())
        extra: dict[str, Any] = {}
        if CACHE_HINT in answer:
            # A read's caching hint is bookkeeping beside the answer, not part of it.
            answer = dict(answer)
            extra[CACHE_HINT] = answer.pop(CACHE_HINT)
        return ToolResult.ok(answer, duration_ms=elapsed(), server=self.server, **extra)

    async def probe(self, transport: Transport, timeout: float) -> None:
        """Completes when the server answered a probe; a classified `ToolError` if not."""
        try:
            with anyio.fail_after(timeout):
                await transport.probe()
        except Exception as exc:
            kind, message = classify(exc)
            raise ToolError(self.server, kind, f"health probe failed: {self.redact(message)}") from exc

    async def list_tools(self, transport: Transport) -> Listing[RemoteTool]:
        """Every page of ``tools/list``, with their caching hint."""
        try:
            with anyio.fail_after(self.call_timeout):
                listed = await transport.list_tools()
                return Listing(tuple(listed), freshness_of(listed))
        except ToolError:
            raise
        except Exception as exc:
            kind, message = classify(exc)
            raise ToolError(self.server, kind, f"listing tools failed: {self.redact(message)}") from exc

    async def list_catalog(
        self, transport: Transport, capabilities: dict[str, Any], protocol_version: str | None
    ) -> tuple[Catalog, Freshnesses]:
        """The resources, templates and prompts the server says it has (capabilities), listed
        as request values (`actors.mcp.list_requests`), and the caching hint of each list (a
        kind the server does not offer is left out).

        A server that fails one of these lists (an error answer) keeps the others; a lost
        connection or a timeout fails the whole listing, as for tools.
        """
        if not isinstance(transport, RequestTransport):
            return Catalog(), {}
        ns, timeout = self.server, self.call_timeout

        async def fetch(kind: CatalogList[_L]) -> Listing[_L]:
            return await listed(transport, kind, timeout, protocol_version)

        hints: dict[ListKind, ListFreshness | None] = {}
        resources: list[ResourceSpec] = []
        templates: list[ResourceTemplateSpec] = []
        prompts: list[PromptSpec] = []
        if capabilities.get("resources") is not None:
            listed_resources = await self._listing("resources", lambda: fetch(RESOURCES))
            resources = [ResourceSpec.of(ns, r) for r in listed_resources]
            hints["resources"] = freshness_of(listed_resources)
            found = await self._listing("resource templates", lambda: fetch(TEMPLATES))
            templates = [ResourceTemplateSpec.of(ns, t) for t in found]
            hints["templates"] = freshness_of(found)
        if capabilities.get("prompts") is not None:
            offered = await self._listing("prompts", lambda: fetch(PROMPTS))
            prompts, hints["prompts"] = [PromptSpec.of(ns, p) for p in offered], freshness_of(offered)
        catalog = Catalog(resources=tuple(resources), templates=tuple(templates), prompts=tuple(prompts))
        return catalog, hints

    async def _listing(self, what: str, fetch: Callable[[], Awaitable[Sequence[_L]]]) -> Sequence[_L]:
        try:
            with anyio.fail_after(self.call_timeout):
                return await fetch()
        except Exception as exc:
            kind, message = classify(exc)
            if kind == ErrorType.SERVER_ERROR:
                logger.warning("%s: listing %s failed: %s", self.server, what, self.redact(message))
                return []  # no hint: kept until the server says the list changed
            raise ToolError(self.server, kind, f"listing {what} failed: {self.redact(message)}") from exc


async def _send_call(
    transport: Transport, tool: str, arguments: dict[str, Any], timeout: float, progress: Progress | None
) -> CallOutcome:
    if progress is not None and isinstance(transport, ClientTransport):
        return await transport.call_tool_with_progress(tool, arguments, timeout, progress)
    return await transport.call_tool(tool, arguments, timeout)
