"""The ``sandbox`` key: what each form states, and what is refused at load time."""

from __future__ import annotations

from typing import Any

import pytest

from actors import load_config
from actors.config import ConfigError
from actors.sandbox import DEFAULT_LIMITS, SandboxProfile
from actors.sandbox.boundary import describe, summary
from actors.sandbox.profile import parse_size

STDIO = {"command": "server"}


def sandbox_of(value: Any, defaults: dict[str, Any] | None = None) -> SandboxProfile | None:
    data: dict[str, Any] = {"mcpServers": {"s": {**STDIO, "sandbox": value}}}
    if defaults is not None:
        data["defaults"] = defaults
        del data["mcpServers"]["s"]["sandbox"]
    return load_config(data, environ={}).servers["s"].sandbox


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 * 1024**2),
        ("2G", 2 * 1024**3),
        ("1.5GiB", 3 * 1024**3 // 2),
        ("64k", 65536),
        (4096, 4096),
    ],
)
def test_sizes(text: Any, size: int) -> None:
    assert parse_size(text) == size


def test_true_is_the_default_profile_and_false_or_absent_none() -> None:
    profile = sandbox_of(True)
    assert profile == SandboxProfile()
    assert (profile.network, profile.write, profile.limits) == ("none", (), DEFAULT_LIMITS)
    assert sandbox_of(False) is None
    assert load_config({"mcpServers": {"s": STDIO}}, environ={}).servers["s"].sandbox is None


def test_an_object_changes_parts_of_the_default() -> None:
    profile = sandbox_of({"network": ["example.com:443", "*.npmjs.org"], "limits": {"processes": 32}})
    assert profile is not None
    assert profile.network == ("example.com:443", "*.npmjs.org")
    assert profile.limits.processes == 32
    assert profile.limits.memory == DEFAULT_LIMITS.memory
    allow = profile.allow_list
    assert (
        allow is not None and allow.allows("registry.npmjs.org", 443) and not allow.allows("npmjs.org", 443)
    )


def test_defaults_give_every_server_the_profile() -> None:
    assert sandbox_of(None, defaults={"sandbox": {"network": "all"}}) == SandboxProfile(network="all")


@pytest.mark.parametrize(
    "value",
    [{"network": ["https://example.com"]}, {"network": "everything"}, {"limits": {"memory": "lots"}}, "on"],
)
def test_bad_profiles_name_the_server_and_key(value: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        sandbox_of(value)
    assert any(p.server == "s" and (p.key or "").startswith("sandbox") for p in caught.value.problems)


def test_a_remote_server_has_no_sandbox() -> None:
    with pytest.raises(ConfigError, match="'sandbox' is for stdio servers"):
        load_config({"mcpServers": {"r": {"url": "https://example.com/mcp", "sandbox": True}}}, environ={})


def test_a_team_requires_a_sandbox_of_every_stdio_server() -> None:
    data: dict[str, Any] = {
        "access": {"requireSandbox": True},
        "mcpServers": {"plain": STDIO, "own": {**STDIO, "sandbox": {"network": "all"}}},
    }
    servers = load_config(data, environ={}).servers
    assert servers["plain"].sandbox == SandboxProfile()
    assert servers["own"].sandbox == SandboxProfile(network="all")
    data["mcpServers"]["off"] = {**STDIO, "sandbox": False}
    with pytest.raises(ConfigError, match="cannot turn its sandbox off"):
        load_config(data, environ={})


def test_the_boundary_in_words() -> None:
    assert describe(None, probe=False) == "none: runs with the host's authority"
    profile = SandboxProfile.model_validate({"network": ["example.com:443"], "limits": {"memory": "256M"}})
    line = describe(profile, probe=False)
    assert "only example.com:443 (through the egress proxy)" in line
    assert "memory 256 MiB" in line and "256 processes" in line
    assert summary(None) == "none"
