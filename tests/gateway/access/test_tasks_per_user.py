"""A task made through the gateway is its creator's alone: two users with real tokens from a
real issuer of ours (tests/servers/oidc_issuer.py), each a runtime that follows tasks, before the
SDK task server. Another user's task id finds nothing, as an id that never existed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors import ErrorType, Runtime, TaskStatus, ToolError
from tests.gateway.access.identity import SCOPE, oauth_gateway
from tests.gateway.conftest import GatewayProcess
from tests.harness import forkserver
from tests.runtime.conftest import ROOT
from tests.servers.oidc_issuer import OIDCIssuer

WAIT = 30.0


def user(gateway: GatewayProcess, issuer: OIDCIssuer, subject: str) -> dict[str, Any]:
    token = issuer.mint(sub=subject, aud=gateway.url, scope=SCOPE)
    entry = {
        "url": gateway.url,
        "protocol": "2026-07-28",
        "healthCheckInterval": 0,
        "headers": {"Authorization": f"Bearer {token}"},
    }
    return {"mcpServers": {"gw": entry}, "builtin": {"enabled": False}}


def test_a_task_is_visible_only_to_the_user_who_made_it(issuer: OIDCIssuer, tmp_path: Path) -> None:
    command, *args = forkserver.python_module("tests.servers.task_server", "--poll-ms", "50")
    backend = {"command": command, "args": args, "cwd": str(ROOT), "prefix": False, "protocol": "2026-07-28"}
    with (
        oauth_gateway(tmp_path, issuer, servers={"tasks": backend}) as gateway,
        Runtime.start(user(gateway, issuer, "alice")) as alice,
        Runtime.start(user(gateway, issuer, "bob")) as bob,
    ):
        mine = alice.start_task("gw/slow_compute", {"seconds": 60}, timeout=WAIT)
        assert mine.id is not None
        with pytest.raises(ToolError) as theirs:
            bob.task(mine.id, timeout=WAIT)
        assert theirs.value.error_type == ErrorType.NOT_FOUND
        assert alice.task(mine.id, timeout=WAIT).status().status == TaskStatus.WORKING
        assert mine.cancel().status == TaskStatus.CANCELLED
