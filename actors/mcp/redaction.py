"""Keeping secrets out of logs, status and errors.

A server's env values, header values and OAuth client secret are taken to be secrets (tokens,
keys); OAuth tokens never enter a message in the first place (`actors.mcp.auth`). Every message
the adapter produces from a failure is scrubbed of them before it reaches a log, a
`ToolResult`, a `ToolError` or a status snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.mcp.config import ServerConfig

__all__ = ["MASK", "Redactor", "config_secrets"]

MASK = "***"

# Shorter values are too likely to be words ("1", "true", "UTC") to be worth masking.
_MIN_SECRET_LENGTH = 6


class Redactor:
    """Replaces known secret values (and their bearer-token parts) with ``***``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found: set[str] = set()
        for value in secrets:
            found.add(value)
            # "Bearer abc123" leaks as "abc123" too, in an error that quotes only the token.
            scheme, _, token = value.partition(" ")
            if token and scheme.isalpha():
                found.add(token)
        self._secrets = sorted((s for s in found if len(s) >= _MIN_SECRET_LENGTH), key=len, reverse=True)

    @classmethod
    def for_server(cls, env: Mapping[str, str], headers: Mapping[str, str]) -> Redactor:
        return cls([*env.values(), *headers.values()])

    @classmethod
    def for_config(cls, config: ServerConfig) -> Redactor:
        """The secrets of ``config``: env values, header values, the OAuth client secret."""
        return cls(config_secrets(config))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self._secrets)


def config_secrets(config: ServerConfig) -> list[str]:
    """What is taken for a secret in a server's entry: env values, header values, the OAuth
    client secret (one `Redactor` may hold those of several servers: the gateway's audit)."""
    oauth = config.oauth
    secret = [oauth.client_secret] if oauth is not None and oauth.client_secret else []
    return [*config.env.values(), *config.headers.values(), *secret]
