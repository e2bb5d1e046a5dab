"""The loopback redirect URI of an authorization-code login and the port it listens on."""

from __future__ import annotations

import contextlib
import socket
from urllib.parse import urlparse

from mcp.shared.auth import OAuthClientInformationFull

__all__ = ["free_port", "loopback_port", "port_free", "redirect_uri_for"]

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_CALLBACK_PATH = "/callback"


def redirect_uri_for(port: int) -> str:
    """The loopback redirect URI of a login that listens on ``port``."""
    return f"http://127.0.0.1:{port}{_CALLBACK_PATH}"


def loopback_port(client: OAuthClientInformationFull | None) -> int:
    """The port of a registration's loopback redirect URI, or 0."""
    for uri in (client.redirect_uris or ()) if client is not None else ():
        parsed = urlparse(str(uri))
        if parsed.scheme == "http" and parsed.hostname in _LOOPBACK_HOSTS and parsed.port:
            return parsed.port
    return 0


def port_free(port: int) -> bool:
    """Whether ``port`` on the loopback can be listened on now (blocking: call it on a worker)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):
            sock.bind(("127.0.0.1", port))
            return True
    return False


def free_port() -> int:
    """A loopback port free now (blocking: call it on a worker)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
