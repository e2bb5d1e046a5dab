"""A per-user server's entry filled in for one caller: the `ServerConfig` of their instance.

The placeholders (`actors.mcp.per_user`): ``${claim:NAME}`` from the caller's verified claims,
``${caller:token}`` their token (or the one it was exchanged for), ``${caller:key}`` their safe
name. A caller without identity (`LOCAL`, the static token) has no claims: each claim is its
default, or empty, as for the one user such a gateway serves. An authenticated caller whose token
lacks a claim the entry needs, without a default, is refused (`Unfilled`, an ``auth`` error):
their instance would run as nobody. No caller's value may hold a line break or a NUL (a header
or an environment cannot carry one).

Pure functions over immutable values: called on the gateway's loop (cheap string work).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from actors.gateway.access.principal import AuthMode, Principal
from actors.mcp.config import ServerConfig
from actors.mcp.per_user import PLACEHOLDER, TokenExchangeKeys, placeholders

__all__ = ["Unfilled", "copy_of", "needs_token"]

_TOKEN = "${caller:token}"
_FORBIDDEN = re.compile(r"[\x00\r\n]")


class Unfilled(Exception):
    """A placeholder this caller cannot fill (no token of their own, a claim their token lacks):
    answered as an ``auth`` error. The message names the server and the claim, never a value."""


def needs_token(template: ServerConfig, exchange: TokenExchangeKeys | None) -> bool:
    """Whether ``template``'s instances send their caller's token (or its exchanged one)."""
    if exchange is not None:
        return True
    return any(m.group(1) == "caller" and m.group(2) == "token" for _, m in placeholders(template.headers))


def copy_of(
    template: ServerConfig, principal: Principal, name: str, token: str | None = None
) -> ServerConfig:
    """``template`` filled in for ``principal``, named ``name`` (a name no file can give: it
    holds ``@``, so the copy is never validated as a configured name would be). ``token``: what
    ``${caller:token}`` stands for; with none, an entry that needs it is `Unfilled`."""

    def fill(value: str) -> str:
        def one(match: re.Match[str]) -> str:
            kind, field, default = match.group(1), match.group(2), match.group(3)
            if kind == "caller":
                filled = _caller(template.name, field, principal, token)
            else:
                filled = _claim(template.name, field, default, principal)
            if _FORBIDDEN.search(filled):
                raise Unfilled(f"server {template.name!r}: the value of {match.group(0)} holds a line break")
            return filled

        return PLACEHOLDER.sub(one, value)

    headers = {key: fill(value) for key, value in template.headers.items()}
    if token is not None and not any(_TOKEN in value for value in template.headers.values()):
        # A token exchange with no header that names the token: it goes as a bearer token.
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = f"Bearer {token}"
    update: dict[str, Any] = {
        "name": name,
        "env": {key: fill(value) for key, value in template.env.items()},
        "args": tuple(fill(arg) for arg in template.args),
        "headers": headers,
    }
    if template.cwd is not None:
        update["cwd"] = fill(template.cwd)
    return template.model_copy(update=update)


def _caller(server: str, field: str, principal: Principal, token: str | None) -> str:
    if field == "key":
        return principal.key
    if token is None:
        raise Unfilled(
            f"server {server!r} sends each caller's own token to its backend, and this request "
            "has none: call the gateway with an access token from its issuer"
        )
    return token


def _claim(server: str, name: str, default: str | None, principal: Principal) -> str:
    value = _lookup(principal.claims, name)
    if value is not None:
        return _text(value)
    if default is not None:
        return default
    if principal.mode is not AuthMode.OAUTH:
        return ""  # no identity, no claims: the one user of a gateway without sign-in
    raise Unfilled(f"server {server!r} needs the claim {name!r}, which the caller's token does not hold")


def _lookup(claims: Mapping[str, Any], name: str) -> Any:
    """The claim ``name``, or the nested one its dots name (``realm_access.roles``); None if absent."""
    if name in claims:
        return claims[name]
    found: Any = claims
    for part in name.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _text(value: Any) -> str:
    """A claim as text: a string as it is, a list joined with commas, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ",".join(item if isinstance(item, str) else _json(item) for item in value)
    return _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
