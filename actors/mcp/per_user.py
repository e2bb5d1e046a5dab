"""What a per-user server's entry may hold: placeholders filled in per caller, and the keys of
the token exchange that gets a backend its caller's own token.

A server with ``"affinity": "user"`` runs one instance per caller through the gateway
(`actors.gateway.access.per_user`). Its ``env``, ``args``, ``headers`` and ``cwd`` may name the
caller, beside the ``${VAR}`` / ``${VAR:-default}`` of the gateway's own environment (expanded
once, when the file loads):

- ``${claim:NAME}`` (``${claim:NAME:-default}``): the claim ``NAME`` of the caller's verified
  access token (a list joined with commas, a number or an object as JSON);
- ``${caller:token}``: the caller's own bearer token (``headers`` only), or with
  ``tokenExchange`` the token the issuer exchanged it for (RFC 8693);
- ``${caller:key}``: a stable name of the caller that is safe in names and paths.

They are expanded per caller by the gateway, never from the gateway's environment. This module
is the syntax and the load-time rules (`per_user_problems`); the expansion is the gateway's
(`actors.gateway.access.claims`). Immutable values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic.alias_generators import to_camel

from actors.mcp.config import ConfigProblem, ServerConfig

__all__ = [
    "CALLER_FIELDS",
    "PLACEHOLDER",
    "PerUserKeys",
    "TokenExchangeKeys",
    "per_user_problems",
    "placeholders",
]

PLACEHOLDER = re.compile(r"\$\{(claim|caller):((?:[^}:]|:(?!-))+)(?::-([^}]*))?\}")
"""``${claim:NAME}``, ``${claim:NAME:-default}``, ``${caller:FIELD}``: groups kind, name,
default. A claim's name may hold ``:`` and ``/`` (``https://example.com/groups``)."""

CALLER_FIELDS = frozenset({"token", "key"})
"""What ``${caller:...}`` may name."""

_WHERE = ("env", "args", "headers", "cwd")
"""The keys per-user placeholders may appear in."""

_KEYS = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)


class TokenExchangeKeys(BaseModel):
    """``tokenExchange`` of a remote per-user server: the caller's token is exchanged at the
    issuer (RFC 8693) for one meant for this backend, which the gateway sends instead."""

    model_config = _KEYS

    audience: str = Field(min_length=1)
    """The backend's identifier at the issuer (the exchanged token's ``aud``)."""
    resource: str | None = Field(default=None, min_length=1)
    """The backend's URL as an RFC 8707 ``resource``, for issuers that want it."""
    scope: str | None = None
    """The scopes to ask for (a list, or one space-separated string); unset: the issuer's choice."""
    client_id: str = Field(min_length=1)
    """The gateway's own client at the issuer, which the exchange authenticates as."""
    client_secret: SecretStr
    """That client's secret: write ``${VAR}``, so that it stays in the environment. Never logged."""
    token_endpoint: str | None = None
    """Where to exchange; unset: the ``token_endpoint`` of ``access.auth.issuer``'s metadata."""

    @field_validator("scope", mode="before")
    @classmethod
    def _scope_words(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return " ".join(str(word) for word in value)
        return value

    @field_validator("token_endpoint", "resource")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/]", value):
            raise ValueError("must be an http:// or https:// URL")
        return value


class PerUserKeys(BaseModel):
    """``access.perUserServers``: how many per-user instances a gateway replica keeps."""

    model_config = _KEYS

    max_copies: int = Field(default=100, ge=1, le=100_000)
    """Per-user instances registered at once, all servers together; past it the least recently
    used idle one is unregistered."""
    unregister_after: float = Field(default=3600.0, gt=0, allow_inf_nan=False)
    """Seconds without a request after which an instance is unregistered (its process stopped
    long before, after the server's ``idleTimeout``)."""


def placeholders(value: Any, where: str = "") -> Iterator[tuple[str, re.Match[str]]]:
    """``(key, match)`` for every per-user placeholder in ``value``, at any depth."""
    if isinstance(value, str):
        for match in PLACEHOLDER.finditer(value):
            yield where, match
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            yield from placeholders(inner, f"{where}[{index}]")
    elif isinstance(value, dict):
        for name, inner in value.items():
            yield from placeholders(inner, f"{where}.{name}" if where else str(name))


def per_user_problems(
    server: ServerConfig, affinity: str, exchange: TokenExchangeKeys | None
) -> list[ConfigProblem]:
    """What is wrong with the per-user keys of ``server``'s entry."""
    problems: list[ConfigProblem] = []

    def problem(key: str, message: str) -> None:
        problems.append(ConfigProblem(server=server.name, key=key, message=message))

    found = list(placeholders(server.model_dump(mode="json", exclude={"name"})))
    for where, match in found:
        kind, name = match.group(1), match.group(2)
        top = where.split(".")[0].split("[")[0]
        if top not in _WHERE:
            problem(where, f"{match.group(0)} is filled in per caller only in {', '.join(_WHERE)}")
        elif kind == "caller" and name not in CALLER_FIELDS:
            problem(where, f"{match.group(0)}: ${{caller:...}} is one of {', '.join(sorted(CALLER_FIELDS))}")
        elif kind == "caller" and name == "token" and top != "headers":
            problem(where, "${caller:token} goes in headers only (never a process's env or args)")
    if exchange is not None and server.transport == "stdio":
        problem("tokenExchange", "'tokenExchange' is for remote servers (streamable-http, sse)")
    if (found or exchange is not None) and affinity != "user":
        problem(
            found[0][0] if found else "tokenExchange",
            'per-caller values need "affinity": "user" (one instance per caller)',
        )
    return problems
