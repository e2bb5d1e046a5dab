"""What an `SDKTransport` reaches (a stdio command or an HTTP endpoint) and how (`SDKOptions`).

All three are frozen and cheap to build: transports are built on the event-loop thread.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, get_args

from mcp_types import LoggingLevel

from actors.mcp.elicitation import ElicitationPolicy
from actors.mcp.eras import AUTO, PROTOCOLS
from actors.mcp.transport import ClientHandlers
from actors.sandbox.profile import SandboxProfile

if TYPE_CHECKING:
    import httpx2

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "HTTP_KINDS", "HTTPEndpoint", "SDKOptions", "StdioCommand"]

HTTP_KINDS = ("streamable-http", "sse")

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The longest message a stdio server may send (``maxMessageBytes``): 64 MiB."""


@dataclass(frozen=True)
class StdioCommand:
    """A server run as a child process that speaks MCP on its stdin and stdout."""

    kind: ClassVar[str] = "stdio"

    command: str
    """A program on ``PATH``, or a path (relative paths are taken from ``cwd``)."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    """Set for the server over the SDK's default environment; its ``PATH`` is searched first."""
    cwd: str | None = None
    sandbox: SandboxProfile | None = None
    """Its boundary (`actors.sandbox`); None: it runs with the host's authority."""

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("a stdio transport needs a command")
        # Copies: a caller's later change to its list or dict must not reach a running server.
        object.__setattr__(self, "args", tuple(self.args))
        if self.env is not None:
            object.__setattr__(self, "env", dict(self.env))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", os.fspath(self.cwd))


@dataclass(frozen=True)
class HTTPEndpoint:
    """A server reached over HTTP: streamable HTTP, or the legacy SSE transport."""

    url: str
    headers: Mapping[str, str] | None = None
    kind: Literal["streamable-http", "sse"] = "streamable-http"

    def __post_init__(self) -> None:
        if self.kind not in HTTP_KINDS:
            raise ValueError(
                f"unknown HTTP transport kind {self.kind!r}; expected one of {', '.join(HTTP_KINDS)}"
            )
        if not self.url:
            raise ValueError(f"a {self.kind} transport needs a url")
        if self.headers is not None:
            object.__setattr__(self, "headers", dict(self.headers))


@dataclass(frozen=True)
class SDKOptions:
    """How an `SDKTransport` behaves; the defaults suit most servers."""

    server_name: str = ""
    """The server's name in logs and errors (default: its command line or url)."""
    protocol: str = AUTO
    """``legacy`` (initialize handshake), ``auto`` (the SDK discovers the era; a remembered era
    is pinned) or ``2026-07-28``. SSE is always legacy."""
    protocol_memo: MutableMapping[str, str] | None = None
    """Where negotiated eras are remembered; None: `SDKTransport.default_protocol_memo`."""
    request_timeout: float | None = 60.0
    """Bounds `list_tools` and `probe`."""
    connect_timeout: float | None = None
    """Bounds `connect`, with a ``ConnectionError`` that carries the diagnostics."""
    close_grace: float = 0.5
    """How long a stdio server may take to exit after its stdin closes before it gets SIGTERM."""
    kill_grace: float = 1.0
    """How long after SIGTERM before SIGKILL."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """The longest message a stdio server may send; a longer one ends the session."""
    elicitation: ElicitationPolicy | None = None
    """How to answer ``elicitation/create`` without a handler (`actors.mcp.elicitation`); None
    and no ``handlers.elicitation`` declares no elicitation capability."""
    handlers: ClientHandlers | None = None
    """The host's answers to sampling, elicitation (over the policy) and roots requests; a
    capability without a handler is not declared."""
    handler_timeout: float = 600.0
    """The longest a handler may take before the server gets an error answer: a backstop, since
    each handler bounds itself."""
    log_level: LoggingLevel | None = None
    """The least severe log message the server should send (``logging/setLevel`` in the
    handshake era, the per-request opt-in on 2026-07-28); None: the server's default (on
    2026-07-28: none)."""
    ssl_context: ssl.SSLContext | None = None
    """For HTTP and SSE; None: `actors.mcp.tls.default_ssl_context`, built off the loop."""
    auth: Callable[[], httpx2.Auth] | None = None
    """For HTTP and SSE: makes the session's credentials (`actors.mcp.auth.oauth_provider`), a
    fresh one per connection; called on the loop, so it must be cheap and do no I/O. None: only
    the ``headers``. Either way a refusal (HTTP 401 or 403) ends the session as ``auth``."""

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {self.protocol!r}; expected one of {', '.join(PROTOCOLS)}")
        if self.close_grace < 0 or self.kill_grace < 0:
            raise ValueError("close_grace and kill_grace must not be negative")
        if self.max_message_bytes <= 0:
            raise ValueError("max_message_bytes must be positive")
        if self.handler_timeout <= 0:
            raise ValueError("handler_timeout must be positive")
        if self.log_level is not None and self.log_level not in get_args(LoggingLevel):
            raise ValueError(
                f"unknown log level {self.log_level!r}; expected one of {', '.join(get_args(LoggingLevel))}"
            )
