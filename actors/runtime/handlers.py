"""`HostHandlers`: the host's answers to server requests (sampling, elicitation, roots).

A host passes plain functions to `Runtime.start`; `client_handlers` turns them into the
per-server coroutines a transport calls on the loop, each of which runs the host's function
on a `HostCalls` thread within a timeout. What a server may ask is the config's to say:
sampling only where ``"sampling": "allow"`` (it spends the host's model budget), elicitation
where the server's ``elicitation`` key is unset or ``"ask"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from actors.mcp.config import ServerConfig
from actors.mcp.transport import ClientHandlers, JSONObject
from actors.runtime.declared import asks_model, asks_user
from actors.runtime.host import HostCalls

__all__ = ["HostHandlers", "LoginHandlers", "Roots", "client_handlers"]

Roots = Sequence[str | Mapping[str, Any]] | Callable[[str], Sequence[str | Mapping[str, Any]]]
"""Root folders for ``roots/list``: URIs (``file:///...``) or ``{"uri", "name"}`` objects, or a
function of the namespace that returns them."""

_DEFAULT_TIMEOUT = 120.0
_ROOTS_TIMEOUT = 10.0


@dataclass(frozen=True)
class HostHandlers:
    """What the host answers servers with; None declares no such capability."""

    sampling: Callable[[str, JSONObject], JSONObject] | None = None
    """``sampling(namespace, params)`` → a ``CreateMessageResult`` as JSON
    (``{"role": "assistant", "content": {...}, "model": ..., "stopReason": ...}``)."""
    elicitation: Callable[[str, JSONObject], JSONObject] | None = None
    """``elicitation(namespace, params)`` → an ``ElicitResult`` as JSON
    (``{"action": "accept", "content": {...}}``)."""
    roots: Roots | None = None
    timeout: float = _DEFAULT_TIMEOUT
    """How long a sampling or elicitation handler may take (a person may be asked)."""


@dataclass(frozen=True)
class LoginHandlers:
    """How the host takes part in a remote server's OAuth login; all None: nobody can be asked,
    and a server that needs a login fails at once as ``auth`` (``mcp-actors login NS`` fixes it).

    Each runs on a host thread. ``redirect(url)`` sends the user to the authorization URL;
    ``callback()`` waits for the redirect back and returns ``(code, state, iss)``: the ``code``,
    ``state`` and ``iss`` parameters of the redirect (None for one it lacks). ``iss`` is the
    authorization server's RFC 9207 issuer, checked against the one the login expects; a
    callback that returns only ``(code, state)`` says the redirect carried no ``iss``, which
    an authorization server that advertises it refuses. ``assertion(audience, resource)``
    returns an identity assertion (ID-JAG) for the ``identity_assertion`` grant.
    """

    redirect: Callable[[str], None] | None = None
    callback: Callable[[], tuple[str, str | None, str | None] | tuple[str, str | None]] | None = None
    assertion: Callable[[str, str], str] | None = None
    timeout: float = 300.0
    """How long a person has to log in."""


def _root(entry: str | Mapping[str, Any]) -> JSONObject:
    if isinstance(entry, str):
        return {"uri": entry}
    root = {"uri": str(entry["uri"])}
    if isinstance(entry.get("name"), str):
        root["name"] = entry["name"]
    return root


def client_handlers(config: ServerConfig, handlers: HostHandlers, host: HostCalls) -> ClientHandlers:
    """The coroutines a transport to ``config``'s server answers server requests with (each one
    declares its capability: `actors.runtime.declared` says which)."""
    namespace = config.name
    sampling = elicitation = roots = None
    if asks_model(config, handlers):
        ask_model = handlers.sampling
        assert ask_model is not None

        async def sampling(params: JSONObject) -> JSONObject:
            return await host.call(ask_model, namespace, params, timeout=handlers.timeout)

    if asks_user(config, handlers):
        ask_user = handlers.elicitation
        assert ask_user is not None

        async def elicitation(params: JSONObject) -> JSONObject:
            return await host.call(ask_user, namespace, params, timeout=handlers.timeout)

    if handlers.roots is not None:
        given = handlers.roots

        def listed() -> list[JSONObject]:
            entries = given(namespace) if callable(given) else given
            return [_root(entry) for entry in entries]

        async def roots() -> list[JSONObject]:
            if callable(given):
                return await host.call(listed, timeout=_ROOTS_TIMEOUT)
            return listed()

    return ClientHandlers(sampling=sampling, elicitation=elicitation, roots=roots)
