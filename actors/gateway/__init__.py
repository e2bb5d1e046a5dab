"""The gateway: the runtime's registry served as one MCP server (stdio or Streamable HTTP)."""

from actors.gateway.external import ExternalNames, NameCollision
from actors.gateway.gateway import Gateway

__all__ = ["ExternalNames", "Gateway", "NameCollision"]
