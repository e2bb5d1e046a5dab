"""``login``, ``logout`` and ``status``: the logins to remote servers (`actors.mcp.auth`), and
the ``auth:`` lines that ``check`` prints.

The login machinery loads the SDK's auth and HTTP client (hundreds of ms): it is imported
where a command needs it, so the commands that never log in (a cached listing above all) do
not pay for it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from actors.cli.output import error_line, table
from actors.cli.startup import resolve_config
from actors.config import RuntimeConfig
from actors.mcp.config import ServerConfig

if TYPE_CHECKING:
    from actors.mcp.auth import TokenStore

__all__ = ["add_auth_commands", "login_command", "logout_command", "status_command", "write_auth_lines"]


def add_auth_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """``login``, ``logout`` and ``status``, added with ``command(name, help)``."""
    login = command("login", "log in to a remote server (OAuth): open the browser, store the tokens")
    login.add_argument("namespace", metavar="NS")
    login.add_argument(
        "--no-browser", action="store_true", help="only print the URL to open (in a browser on this machine)"
    )
    login.add_argument(
        "--timeout", type=float, default=300.0, metavar="S", help="how long to wait for the login"
    )
    command("logout", "forget the stored login of a remote server").add_argument("namespace", metavar="NS")
    command("status", "list the configured servers and whether each remote one has a login")


def login_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    server = _remote_server(config, args.namespace)
    if server is None:
        return 1

    def show(url: str) -> None:
        out.write(f"Open this URL to log in to {server.name}:\n  {url}\n")
        out.flush()

    # Deferred (see the module's docstring), as in every command here.
    from actors.mcp.auth import AuthError, TokenStore, login  # noqa: PLC0415

    try:
        result = login(
            server, TokenStore(), open_browser=not args.no_browser, timeout=args.timeout, on_url=show
        )
    except AuthError as exc:
        print(error_line("auth", str(exc)), file=sys.stderr)
        return 1
    asked = "" if result.authorization_url is not None else " (not asked: no login was needed)"
    out.write(f"{server.name}: auth: {result.status}{asked}\n")
    return 0 if result.status == "ok" else 1


def logout_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    server = _remote_server(config, args.namespace)
    if server is None:
        return 1
    from actors.mcp.auth import TokenStore, logout  # noqa: PLC0415

    forgot = logout(server, TokenStore())
    out.write(f"{server.name}: logged out\n" if forgot else f"{server.name}: no login was stored\n")
    return 0


def status_command(args: argparse.Namespace, out: TextIO) -> int:
    config, source = resolve_config(args.config)
    from actors.mcp.auth import TokenStore  # noqa: PLC0415

    store = TokenStore()
    rows = [
        [s.name, s.transport, _auth_of(s, store) or "-", _boundary_of(s)] for s in config.servers.values()
    ]
    out.write(f"{source}\n" + table(["server", "transport", "auth", "boundary"], rows) + "\n")
    if store.problem:
        out.write(f"warning: the token store {store.path} cannot be read: {store.problem}\n")
    return 0


def _boundary_of(server: ServerConfig) -> str:
    """A server's boundary in a few words: ``sandbox (no network)``, ``none``, ``-`` (remote)."""
    if server.transport != "stdio":
        return "-"
    from actors.sandbox.boundary import summary  # noqa: PLC0415

    return summary(server.sandbox)


def write_auth_lines(config: RuntimeConfig, out: TextIO) -> None:
    """``  NS: auth: ok / expired / needs login`` for each remote server, read from the token store."""
    from actors.mcp.auth import TokenStore  # noqa: PLC0415

    store = TokenStore()
    for server in config.servers.values():
        auth = _auth_of(server, store)
        if auth is None:
            continue
        hint = f" (run `mcp-actors login {server.name}`)" if auth in ("expired", "needs login") else ""
        out.write(f"  {server.name}: auth: {auth}{hint}\n")
    if store.problem:
        out.write(f"warning: the token store {store.path} cannot be read: {store.problem}\n")


def _remote_server(config: RuntimeConfig, namespace: str) -> ServerConfig | None:
    """The remote server ``namespace``, or None after saying on stderr why there is none."""
    server = config.servers.get(namespace)
    if server is None:
        known = ", ".join(config.servers) or "none"
        print(error_line("not_found", f"no server {namespace!r} (servers: {known})"), file=sys.stderr)
        return None
    if server.transport == "stdio":
        print(
            error_line("validation", f"server {namespace!r} runs locally (stdio): it has no login"),
            file=sys.stderr,
        )
        return None
    return server


def _auth_of(server: ServerConfig, store: TokenStore) -> str | None:
    """A remote server's ``ok``, ``expired`` or ``needs login`` (read from ``store``, on the
    command's thread); ``header`` when its config sends its own credentials (an ``Authorization``
    header, or headers of its own such as an API key, with no ``oauth`` and no stored login);
    ``per caller`` for a per-user server (the caller's token); None for stdio."""
    if server.transport == "stdio" or not server.url:
        return None
    if server.affinity == "user":
        # The gateway sends each caller's own (or exchanged) token: there is nothing to log in to.
        return "per caller"
    if server.oauth is None and any(name.lower() == "authorization" for name in server.headers):
        return "header"
    from actors.mcp.auth import auth_status  # noqa: PLC0415

    status: str = auth_status(server, store)
    if status == "needs login" and server.oauth is None and server.headers:
        # Header values are its credentials (they are masked as secrets everywhere): a server
        # that takes an API key in a header of its own works without a login.
        return "header"
    return status
