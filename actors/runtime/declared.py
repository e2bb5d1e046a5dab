"""`declared_capabilities`: the client capabilities a runtime declares to a server.

What a host's handlers (`actors.runtime.handlers.HostHandlers`) and a server's config make the
runtime declare: ``sampling`` where the config allows it, ``elicitation`` (a handler where the
config asks, or the config's own policy) and ``roots``. A server may list differently for each
set, so the schema cache keys its entries by it. Light on purpose: the schema cache reads it
where a warm listing must not load the runtime.
"""

from __future__ import annotations

from typing import Protocol

from actors.mcp.config import ServerConfig

__all__ = ["Answering", "asks_model", "asks_user", "declared_capabilities"]


class Answering(Protocol):
    """What the host answers servers with (`actors.runtime.handlers.HostHandlers`): None for
    what it does not answer."""

    @property
    def sampling(self) -> object: ...

    @property
    def elicitation(self) -> object: ...

    @property
    def roots(self) -> object: ...


def asks_model(config: ServerConfig, handlers: Answering) -> bool:
    """Whether the server may ask the host's model (``"sampling": "allow"`` and a handler)."""
    return handlers.sampling is not None and config.sampling == "allow"


def asks_user(config: ServerConfig, handlers: Answering) -> bool:
    """Whether the server's elicitations go to the host's handler (the config asks, or says nothing)."""
    return handlers.elicitation is not None and config.elicitation in (None, "ask")


def declared_capabilities(config: ServerConfig, handlers: Answering | None) -> frozenset[str]:
    """The client capabilities a runtime with ``handlers`` declares to ``config``'s server:
    ``sampling``, ``elicitation`` (a handler, or the config's elicitation policy) and
    ``roots``. A server may list differently for each set (the schema cache keeps them apart)."""
    declared = set()
    if handlers is not None and asks_model(config, handlers):
        declared.add("sampling")
    if config.elicitation is not None or (handlers is not None and asks_user(config, handlers)):
        declared.add("elicitation")
    if handlers is not None and handlers.roots is not None:
        declared.add("roots")
    return frozenset(declared)
