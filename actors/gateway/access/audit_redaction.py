"""What of a request's arguments the audit may keep: their digest always, the arguments
themselves only where configured, and never a secret.

`Scrubber` works on the audit's writer thread (`actors.gateway.access.audit_sink`), never on
the gateway's loop: canonical JSON, SHA-256 and regular expressions over arguments of up to
``maxArgumentBytes`` are CPU work.

A value is withheld (``***``) when:

- its key looks like a secret's (``password``, ``token``, ``apiKey``, ``authorization``,
  ``client_secret``, ...: by the words of the key, so ``max_tokens`` or ``author`` are kept),
  or is one of ``access.audit.redact``;
- it holds a secret of the configuration: any server's env or header value, an OAuth client
  secret (`actors.mcp.redaction.config_secrets`), masked wherever it appears in a string;
- it looks like a credential whatever its key: a JWT, ``Bearer ...``, a PEM private key, or
  the token formats of the common providers.

A key is scrubbed as a value is, at every depth: a client may send a secret as a key as well
(``{"<token>": ...}``). Keys that become alike once scrubbed are kept apart (``***``, ``***#2``),
so that no argument is lost from the record.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from actors.mcp.redaction import MASK, Redactor

__all__ = ["MASK", "Scrubber", "canonical_json", "digest", "secret_key"]

_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "cookie",
        "bearer",
        "jwt",
        "otp",
    }
)
# Compounds that are secrets only together ("api" or "key" alone are not).
_SECRET_JOINED = ("apikey", "privatekey", "accesskey", "secretkey", "clientsecret", "sessionkey")

_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

_CREDENTIALS = re.compile(
    "|".join(
        (
            r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",  # a JWT (JWS compact)
            r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}",
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\bsk-[A-Za-z0-9_-]{20,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            r"\bAKIA[0-9A-Z]{16}\b",
        )
    )
)

_QUERY_PARAM = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&;#]+)=(?P<value>[^&;#]*)")

_SCAN_CHARS = 64 * 1024
"""A string is looked at up to this length: the record shows far less of it (`_SHOWN_CHARS`)."""
_SHOWN_CHARS = 1024
_MAX_DEPTH = 32


def secret_key(key: str, also: frozenset[str] = frozenset()) -> bool:
    """Whether a value under ``key`` is withheld: its words name a secret, or it is configured."""
    if key.lower() in also:
        return True
    words = [word.lower() for word in _WORDS.findall(key)]
    if _SECRET_WORDS.intersection(words):
        return True
    joined = "".join(words)
    return any(compound in joined for compound in _SECRET_JOINED)


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no spaces: the same arguments, the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def digest(arguments: Mapping[str, Any] | None) -> str:
    """``sha256:<hex>`` of the arguments' canonical JSON (``{}`` for none)."""
    text = canonical_json(dict(arguments or {}))
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Scrubber:
    """Redacts arguments for the record: keys that name secrets, values that are ones.

    Immutable once made; a reload makes a new one (new servers' secrets, new ``redact`` keys).
    """

    def __init__(self, secrets: Iterable[str] = (), redact: Iterable[str] = ()) -> None:
        self._known = Redactor(secrets)
        self._keys = frozenset(key.lower() for key in redact)

    def arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``arguments`` fit to record."""
        return self._object(arguments, 0)

    def text(self, text: str) -> str:
        """Free text (an error's detail) without known secrets or credentials."""
        return self._string(text)

    def uri(self, uri: str) -> str:
        """A resource's URI, its query's secret-looking parameters withheld too."""

        def param(match: re.Match[str]) -> str:
            withheld = secret_key(match["name"], self._keys)
            return f"{match['sep']}{match['name']}={MASK if withheld else match['value']}"

        return self._string(_QUERY_PARAM.sub(param, uri))

    def _object(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        scrubbed: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            shown = self._string(name)
            if shown in scrubbed:
                # Two keys alike once scrubbed: numbered, never merged.
                shown = next(
                    f"{shown}#{n}" for n in range(2, len(value) + 2) if f"{shown}#{n}" not in scrubbed
                )
            # Whether the key names a secret is read from the key as sent.
            scrubbed[shown] = MASK if secret_key(name, self._keys) else self._scrub(item, depth)
        return scrubbed

    def _scrub(self, value: Any, depth: int) -> Any:
        if depth >= _MAX_DEPTH:
            return "…"
        if isinstance(value, str):
            return self._string(value)
        if isinstance(value, Mapping):
            return self._object(value, depth + 1)
        if isinstance(value, list | tuple):
            return [self._scrub(item, depth + 1) for item in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return self._string(repr(value))

    def _string(self, text: str) -> str:
        cut = len(text) - _SCAN_CHARS
        text = self._known(text[:_SCAN_CHARS])
        text = _CREDENTIALS.sub(MASK, text)
        more = len(text) - _SHOWN_CHARS + max(0, cut)
        return text[:_SHOWN_CHARS] + f"…(+{more} chars)" if more > 0 else text
