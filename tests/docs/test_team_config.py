"""docs/gateway.md, "A complete team config": the page's config file and Cedar policy load with
the gateway's own loaders (`load_config`, `load_policy`), hold every part a team needs (an
issuer, a policy of two groups, audit to stdout with arguments and redaction, limits per user
and per tool, a per-user stdio server and a remote one with the caller's exchanged token), and
the page's command line parses with ``mcp-actors serve``'s own options. Shared with
tests/cluster/test_deploy_files.py, which checks that deploy/k8s ships the same two files."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from actors.config import RuntimeConfig, load_config
from actors.gateway import command as gateway_command
from actors.gateway.access.policy import Policy
from actors.gateway.access.policy_file import load_policy, policy_file
from actors.gateway.access.principal import AuthMode, Principal
from actors.gateway.access.use import Use
from actors.gateway.access.verdict import Decision
from tests.docs.runnable import FENCE
from tests.servers.http_server import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "gateway.md"
HEADING = "### A complete team config"
SECRET_ENV = "MCP_GATEWAY_CLIENT_SECRET"
"""The one variable of the environment the team config reads (the exchange's client secret)."""
ISSUER = "https://login.example.com/realms/team"


def section() -> str:
    """The subsection's text, up to the next heading of its level or above."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(HEADING) == 1, f"docs/gateway.md has {text.count(HEADING)} '{HEADING}'"
    after = text.split(HEADING, 1)[1]
    return re.split(r"(?m)^#{1,3} ", after, maxsplit=1)[0]


def blocks() -> dict[str, str]:
    """The subsection's fenced blocks by their info string (``json file=mcp.json``, ...)."""
    found: dict[str, str] = {}
    for match in FENCE.finditer(section()):
        info = " ".join(match.group("info").split())
        assert info not in found, f"two blocks '{info}'"
        found[info] = match.group("body")
    return found


def team_files(folder: Path) -> tuple[str, str]:
    """The page's config file and policy file, each written into ``folder`` under its name."""
    found = blocks()
    assert sorted(found) == ["cedar file=policy.cedar", "json file=mcp.json", "sh"], sorted(found)
    config, policy = found["json file=mcp.json"], found["cedar file=policy.cedar"]
    (folder / "mcp.json").write_text(config, encoding="utf-8")
    (folder / "policy.cedar").write_text(policy, encoding="utf-8")
    return config, policy


def load_team(folder: Path, secret: str = "the-exchange-secret") -> tuple[RuntimeConfig, Policy]:
    """The config and the policy in ``folder``, read with the gateway's own loaders."""
    config = load_config(folder / "mcp.json", environ={SECRET_ENV: secret})
    policy = load_policy(config)
    assert policy is not None, "the team config names no policy"
    return config, policy


def serve_options(argv: list[str]) -> argparse.Namespace:
    """``argv`` (what follows ``mcp-actors serve``) parsed with the command's own options."""
    parser = argparse.ArgumentParser(prog="mcp-actors serve", exit_on_error=False)
    parser.add_argument("--config")
    gateway_command.add_arguments(parser)
    options, unknown = parser.parse_known_args(argv)
    assert not unknown, f"mcp-actors serve has no option for {shlex.join(unknown)}"
    return options


def test_the_config_loads_with_every_part_a_team_needs(tmp_path: Path) -> None:
    team_files(tmp_path)
    config, _ = load_team(tmp_path)
    access = config.access
    assert access.auth is not None
    assert (access.auth.issuer, access.auth.resource) == (ISSUER, "https://mcp.example.com/mcp")
    assert access.auth.scopes == ["mcp"]
    assert policy_file(config) == tmp_path / "policy.cedar"
    # Audit: JSON lines on stdout (a container's log), some arguments recorded, one key never.
    assert access.audit.file == "-" and access.audit.arguments and access.audit.redact
    # Limits: each user's whole rate, and per tool: per user and everyone's together.
    assert access.limits.per_user is not None
    assert any(t.per_user for t in access.limits.tools.values())
    assert any(t.all for t in access.limits.tools.values())
    # A stdio server run per user, with an argument from the caller's claims.
    [per_user] = [s for s in config.servers.values() if s.transport == "stdio"]
    assert config.cluster.servers[per_user.name].affinity == "user"
    assert any("${claim:" in a for a in per_user.args)
    # A remote server that gets the caller's token, exchanged at the issuer.
    [remote] = [s for s in config.servers.values() if s.transport == "streamable-http"]
    assert config.cluster.servers[remote.name].affinity == "user"
    exchange = config.gateway.servers[remote.name].token_exchange
    assert exchange is not None and exchange.client_secret.get_secret_value() == "the-exchange-secret"


def test_the_config_needs_its_secret_from_the_environment(tmp_path: Path) -> None:
    config, _ = team_files(tmp_path)
    # The secret is never in the file: it is a variable the replicas' environment sets.
    assert f"${{{SECRET_ENV}}}" in config
    with pytest.raises(Exception, match=SECRET_ENV):
        load_config(tmp_path / "mcp.json", environ={})


def test_the_policy_gives_each_of_two_groups_its_own(tmp_path: Path) -> None:
    team_files(tmp_path)
    _, policy = load_team(tmp_path)
    dev = Principal("dana", AuthMode.OAUTH, issuer=ISSUER, groups=("dev",))
    support = Principal("sam", AuthMode.OAUTH, issuer=ISSUER, groups=("support",))
    guest = Principal("gil", AuthMode.OAUTH, issuer=ISSUER, groups=("guests",))
    admin = Principal("ada", AuthMode.OAUTH, issuer=ISSUER, scopes=("mcp", "gateway:admin"))
    for user in (dev, support):
        assert policy.decide(user, Use.call("time", "get_current_time")).allowed, user
        assert policy.decide(user, Use.call("tickets", "search_tickets")).allowed, user
    assert policy.decide(dev, Use.call("tickets", "create_ticket")).allowed
    # What support may not use, it does not see.
    assert policy.decide(support, Use.call("tickets", "create_ticket")).decision is Decision.HIDE
    assert policy.decide(guest, Use.call("time", "get_current_time")).decision is Decision.HIDE
    # An argument condition, named in the refusal.
    closing = Use.call("tickets", "close_ticket", {"project": "billing"})
    assert policy.decide(dev, closing).rules == ("team-tickets-only",)
    assert policy.decide(dev, Use.call("tickets", "close_ticket", {"project": "team-web"})).allowed
    assert policy.decide(admin, Use.admin()).allowed and not policy.decide(dev, Use.admin()).allowed


def test_a_broken_policy_is_refused_by_the_same_loader(tmp_path: Path) -> None:
    _, policy = team_files(tmp_path)
    (tmp_path / "policy.cedar").write_text(policy.replace('Group::"dev"', 'Grop::"dev"', 1))
    with pytest.raises(Exception, match="Grop"):
        load_team(tmp_path)


def test_the_command_line_runs_that_file_as_a_replica() -> None:
    lines = re.sub(r"\\\n\s*", "", blocks()["sh"]).splitlines()
    [serve] = [shlex.split(line) for line in lines if line.startswith("mcp-actors serve ")]
    options = serve_options(serve[2:])
    assert Path(options.config).name == "mcp.json"
    assert options.http and options.cluster and options.cluster.startswith("redis://")
    assert options.token_file is None, "a team signs in at the issuer: no static token"
    [check] = [shlex.split(line) for line in lines if line.startswith("mcp-actors check ")]
    assert check == ["mcp-actors", "check", "--config", options.config]
    # The secret the config reads is set before either command.
    assert lines[0].startswith(f"export {SECRET_ENV}=")
