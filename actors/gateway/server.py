"""Building the gateway's MCP server: the SDK's low-level ``Server`` with the gateway's handlers.

Its handlers run per request (so lists may change at any time), on the loop the gateway serves
on (stdio or Streamable HTTP, `actors.gateway.serve`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from importlib.metadata import version
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from actors.gateway.skills import DECLARED as SKILLS_DECLARED
from actors.gateway.skills import DirectoryParams, SkillParams
from actors.gateway.tasks import TaskIdParams, TaskUpdateParams
from actors.mcp.tasks import TASKS_EXTENSION

__all__ = ["LIST_CHANGES", "Handlers", "build_server"]

INSTRUCTIONS = (
    "mcp-actors gateway: the tools, resources and prompts of several MCP servers in one. "
    "Tool and prompt names are 'server__name' unless a server is configured without a prefix."
)

LIST_CHANGES = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
"""What the gateway declares: list changes of tools, resources and prompts."""

EXTENSIONS: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}, **SKILLS_DECLARED}
"""The extensions the gateway serves: tasks, passed through to the backends that make them, and
skills, every backend's under its namespace (`actors.gateway.skills`)."""

Handler = Callable[[Any, Any], Awaitable[Any]]

logger = logging.getLogger(__name__)


def _answerable(handler: Handler) -> Handler:
    """``handler``, its failures turned into errors a client can read: the SDK answers any other
    exception of a handshake-era request as ``{"code": 0, "message": str(exc)}``, which for a
    bare `TimeoutError` is ``{"code": 0, "message": ""}``."""

    @functools.wraps(handler)
    async def answer(ctx: Any, params: Any) -> Any:
        try:
            return await handler(ctx, params)
        except (MCPError, ValidationError):  # the SDK maps these itself
            raise
        except TimeoutError as exc:
            logger.warning("gateway: %s: no answer in time", getattr(handler, "__name__", "a request"))
            raise MCPError(types.INTERNAL_ERROR, "the gateway got no answer in time (timed out)") from exc
        except Exception as exc:
            logger.exception("gateway: %s failed", getattr(handler, "__name__", "a request"))
            raise MCPError(
                types.INTERNAL_ERROR, f"the gateway could not answer: {type(exc).__name__}"
            ) from exc

    return answer


@dataclass(frozen=True)
class Handlers:
    """One coroutine function per request the gateway answers: ``(ctx, params) -> result``."""

    list_tools: Handler
    call_tool: Handler
    list_resources: Handler
    list_resource_templates: Handler
    read_resource: Handler
    subscribe_resource: Handler
    unsubscribe_resource: Handler
    subscriptions_listen: Handler
    list_prompts: Handler
    get_prompt: Handler
    completion: Handler
    set_level: Handler
    tasks_get: Handler
    tasks_update: Handler
    tasks_cancel: Handler
    list_skills: Handler
    get_skill: Handler
    read_directory: Handler


class _GatewayServer(Server[Any]):
    """The SDK's low-level server, declaring list changes unless told otherwise: its Streamable
    HTTP session manager asks for the initialization options without saying (stdio passes them).

    ``get_tool_input_schema`` (read by the SDK for each 2026-07-28 ``tools/call`` over HTTP) is
    ``input_schema`` while ``direct()`` says a lookup not scoped to the caller is right, else
    None: the SDK then runs the caller's own ``tools/list``, as a policy's visibility needs.
    """

    input_schema: Callable[[str], Mapping[str, Any] | None] | None = None
    direct: Callable[[], bool] = staticmethod(lambda: False)

    @property
    def get_tool_input_schema(self) -> Callable[[str], Mapping[str, Any] | None] | None:
        return self.input_schema if self.input_schema is not None and self.direct() else None

    @get_tool_input_schema.setter
    def get_tool_input_schema(self, lookup: Callable[[str], Mapping[str, Any] | None] | None) -> None:
        self.input_schema = lookup

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or LIST_CHANGES, experimental_capabilities, extensions
        )


def build_server(
    handlers: Handlers,
    input_schema: Callable[[str], Mapping[str, Any] | None] | None = None,
    direct: Callable[[], bool] = lambda: False,
) -> Server[Any]:
    """The gateway's server, answering with ``handlers``; ``input_schema`` looks a tool's input
    schema up by its external name while ``direct()`` (see `_GatewayServer`)."""
    handlers = Handlers(**{f.name: _answerable(getattr(handlers, f.name)) for f in fields(handlers)})
    server = _GatewayServer(
        "mcp-actors",
        version=version("mcp-actors"),
        instructions=INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_resource_templates,
        on_read_resource=handlers.read_resource,
        on_subscribe_resource=handlers.subscribe_resource,
        on_unsubscribe_resource=handlers.unsubscribe_resource,
        on_subscriptions_listen=handlers.subscriptions_listen,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
        on_completion=handlers.completion,
        get_tool_input_schema=input_schema,
    )
    server.direct = direct
    # Registered apart from the constructor, which warns that logging is deprecated in
    # 2026-07-28: handshake-era clients (and the conformance suite) still set a level.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, handlers.set_level)
    server.extensions = dict(EXTENSIONS)  # advertised on both eras' handshakes and discovery
    server.add_request_handler("tasks/get", TaskIdParams, handlers.tasks_get)
    server.add_request_handler("tasks/update", TaskUpdateParams, handlers.tasks_update)
    server.add_request_handler("tasks/cancel", TaskIdParams, handlers.tasks_cancel)
    server.add_request_handler("skills/list", types.PaginatedRequestParams, handlers.list_skills)
    server.add_request_handler("skills/get", SkillParams, handlers.get_skill)
    server.add_request_handler("resources/directory/read", DirectoryParams, handlers.read_directory)
    return server
