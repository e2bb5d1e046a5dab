"""The runtime's own ``_meta`` keys on the wire (reverse-DNS prefixed, as the specification asks)."""

from __future__ import annotations

__all__ = ["FORWARDED_CALL"]

FORWARDED_CALL = "io.github.mcp-actors/forwarded-call"
"""On a request one gateway replica forwards to another, and on each log message the owner sends
for that request: which of the forwarder's requests the message belongs to (the forwarder sends
many requests over one connection, and a log message names no request)."""
