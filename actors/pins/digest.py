"""`digest`: a definition's fingerprint, SHA-256 over its canonical JSON (RFC 8785, JCS).

Two servers that say the same thing in different key orders, spacing or number spellings get
the same digest; one changed character anywhere (a description, a schema keyword, an
annotation) gives another. A definition JCS cannot encode (an integer beyond IEEE 754's exact
range, which JSON Schema ``maximum`` keywords sometimes hold) falls back to sorted, compact JSON
under its own prefix, so it is still pinned, and never equal to a JCS digest by accident.
Pure; any thread.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

__all__ = ["canonical", "digest"]

_JCS = "sha256:"
_FALLBACK = "sha256-json:"


def canonical(definition: Any) -> bytes:
    """``definition`` (JSON values) as RFC 8785 canonical JSON, UTF-8."""
    return rfc8785.dumps(definition)


def digest(definition: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``definition``."""
    try:
        return _JCS + hashlib.sha256(canonical(definition)).hexdigest()
    except rfc8785.CanonicalizationError:
        text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
        return _FALLBACK + hashlib.sha256(text.encode()).hexdigest()
