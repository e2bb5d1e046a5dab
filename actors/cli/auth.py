"""``login``, ``logout`` and ``status``: the logins to remote servers (`actors.mcp.auth`), and
the ``auth:`` lines that ``check`` prints.

The login machinery loads the SDK's auth and HTTP client (hundreds of ms): it is imported
where a command needs it, so the commands that never log in (a cached listing above all) do
not pay for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from actors.cli.output import error_line
from actors.cli.startup import resolve_config
from actors.cli.tables import write_table
from actors.config import RuntimeConfig
from actors.mcp.config import ServerConfig

if TYPE_CHECKING:
    from actors.mcp.auth import TokenStore

__all__ = [
    "add_auth_commands",
    "auth_states",
    "login_command",
    "logout_command",
    "status_command",
    "write_auth_lines",
]


def add_auth_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """``login``, ``logout`` and ``status``, added with ``command(name, help)``."""
    login = command("login", "log in to a remote server (OAuth): open the browser, store the tokens")
    login.add_argument("namespace", metavar="NS", help="the remote server to log in to")
    login.add_argument(
        "--no-browser", action="store_true", help="only print the URL to open (in a browser on this machine)"
    )
    login.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for the login (default: %(default)s)",
    )
    logout = command("logout", "forget the stored login of a remote server")
    logout.add_argument("namespace", metavar="NS", help="the remote server whose login to forget")
    status = command("status", "list the configured servers and whether each remote one has a login")
    status.add_argument("--json", action="store_true", help="machine-readable output")


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
    logins, problem = auth_states(config)
    servers = [
        {
            "name": s.name,
            "transport": s.transport,
            "auth": logins.get(s.name),
            "boundary": _boundary_of(s) if s.transport == "stdio" else None,
        }
        for s in config.servers.values()
    ]
    if args.json:
        listing = {"source": source, "servers": servers, "warnings": [problem] if problem else []}
        out.write(json.dumps(listing, indent=2) + "\n")
        return 0
    rows = [[s["name"], s["transport"], s["auth"] or "-", s["boundary"] or "-"] for s in servers]
    out.write(f"{source}\n")
    write_table(out, ["server", "transport", "auth", "boundary"], rows)
    if problem:
        out.write(f"warning: {problem}\n")
    return 0


def _boundary_of(server: ServerConfig) -> str:
    """A server's boundary in a few words: ``sandbox (no network)``, ``none``, ``-`` (remote)."""
    if server.transport != "stdio":
        return "-"
    from actors.sandbox.boundary import summary  # noqa: PLC0415

    return summary(server.sandbox)


def write_auth_lines(config: RuntimeConfig, out: TextIO) -> None:
    """``  NS: auth: ok / expired / needs login`` for each remote server, read from the token store."""
    logins, problem = auth_states(config)
    for name, auth in logins.items():
        hint = f" (run `mcp-actors login {name}`)" if auth in ("expired", "needs login") else ""
        out.write(f"  {name}: auth: {auth}{hint}\n")
    if problem:
        out.write(f"warning: {problem}\n")


def auth_states(config: RuntimeConfig) -> tuple[dict[str, str], str | None]:
    """Each remote server's login state (`_auth_of`), and why the token store cannot be read
    (None when it can)."""
    from actors.mcp.auth import TokenStore  # noqa: PLC0415

    store = TokenStore()
    states = {
        s.name: auth
        for s in config.servers.values()
        if (auth := _auth_of(s, store, per_user=config.cluster.per_user(s.name))) is not None
    }
    problem = f"the token store {store.path} cannot be read: {store.problem}" if store.problem else None
    return states, problem


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


def _auth_of(server: ServerConfig, store: TokenStore, *, per_user: bool) -> str | None:
    """A remote server's ``ok``, ``expired`` or ``needs login`` (read from ``store``, on the
    command's thread); ``header`` when its config sends its own credentials (an ``Authorization``
    header, or headers of its own such as an API key, with no ``oauth`` and no stored login);
    ``per caller`` for a per-user server (``per_user``: the caller's token); None for stdio."""
    if server.transport == "stdio" or not server.url:
        return None
    if per_user:
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
