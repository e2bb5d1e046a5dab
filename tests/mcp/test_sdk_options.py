"""What an `SDKTransport` is built from: targets, options, and `SDKTransport.for_server`."""

from __future__ import annotations

import os
import shutil
import ssl
from typing import Any

import pytest

from actors.mcp.config import ServerConfig
from actors.mcp.sdk_transport import HTTPEndpoint, SDKOptions, SDKTransport, StdioCommand


def test_targets_and_options_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="needs a command"):
        StdioCommand("")
    with pytest.raises(ValueError, match="needs a url"):
        HTTPEndpoint("")
    with pytest.raises(ValueError, match="unknown HTTP transport kind"):
        HTTPEndpoint("http://x", kind="websocket")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown protocol"):
        SDKOptions(protocol="2024-01-01")
    with pytest.raises(ValueError, match="must not be negative"):
        SDKOptions(close_grace=-1)
    with pytest.raises(ValueError, match="handler_timeout must be positive"):
        SDKOptions(handler_timeout=0)
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        SDKOptions(log_level="loud")  # type: ignore[arg-type]


def test_targets_keep_copies_of_what_they_were_given() -> None:
    args, env = ["-m", "server"], {"TOKEN": "secret-value"}
    spec = StdioCommand("python", args, env)  # type: ignore[arg-type]
    args.append("--extra")
    env["TOKEN"] = "changed"
    assert spec.args == ("-m", "server")
    assert spec.env == {"TOKEN": "secret-value"}


def _no_file_system(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("building a transport touched the file system")

    monkeypatch.setattr(shutil, "which", refuse)
    monkeypatch.setattr(os.path, "isfile", refuse)
    monkeypatch.setattr(os, "access", refuse)
    monkeypatch.setattr(ssl, "create_default_context", refuse)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", refuse)


def test_for_server_builds_a_stdio_transport_from_a_config(monkeypatch: pytest.MonkeyPatch) -> None:
    config = ServerConfig.model_validate(
        {
            "name": "gh",
            "command": "no-such-mcp-server-command",
            "args": ["--stdio"],
            "env": {"GITHUB_TOKEN": "ghp_secret123"},
            "cwd": "/tmp",
            "protocol": "legacy",
            "connectTimeout": 12,
            "elicitation": "accept-defaults",
        }
    )
    _no_file_system(monkeypatch)  # cheap: it runs on the event-loop thread
    transport = SDKTransport.for_server(config)
    assert transport.kind == "stdio"
    assert transport.target == StdioCommand(
        "no-such-mcp-server-command", ("--stdio",), {"GITHUB_TOKEN": "ghp_secret123"}, "/tmp"
    )
    assert transport.options == SDKOptions(
        server_name="gh", protocol="legacy", connect_timeout=12, elicitation="accept-defaults"
    )
    assert transport.server_name == "gh"
    assert transport.memo_key == "stdio:no-such-mcp-server-command --stdio@/tmp"
    assert transport.pid is None and transport.closed_reason is None


@pytest.mark.parametrize("kind", ["streamable-http", "sse"])
def test_for_server_builds_an_http_transport_with_the_given_ssl_context(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    config = ServerConfig.model_validate(
        {"name": "remote", "type": kind, "url": "https://example.invalid/mcp", "headers": {"X-A": "b"}}
    )
    _no_file_system(monkeypatch)
    transport = SDKTransport.for_server(config, ssl_context=context)
    assert transport.kind == kind
    assert transport.target == HTTPEndpoint("https://example.invalid/mcp", {"X-A": "b"}, kind)  # type: ignore[arg-type]
    assert transport.options.ssl_context is context
    assert transport.options.connect_timeout == config.connect_timeout
    assert transport.memo_key == f"{kind}:https://example.invalid/mcp"
