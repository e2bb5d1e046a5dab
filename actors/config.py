"""The runtime's configuration file: ``mcpServers`` (or VS Code's ``servers``), ``defaults`` and
``builtin``, read by `load_config` into a `RuntimeConfig`.

camelCase in files, snake_case in Python. Every bad value is rejected at load time with a
message that names the server and the key; other hosts' keys (Claude Desktop, VS Code, Claude
Code) are ignored with a warning, so their files load unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from actors.mcp.config import (
    LIFECYCLE_KEYS,
    ConfigError,
    ConfigProblem,
    ServerConfig,
    config_problems,
    server_entry,
)
from actors.mcp.other_hosts import top_level_keys
from actors.mcp.per_user import PerUserKeys, TokenExchangeKeys, per_user_problems
from actors.sandbox.profile import SandboxProfile

__all__ = [
    "DEFAULT_KEYS",
    "AccessKeys",
    "AuditKeys",
    "AuthKeys",
    "BuiltinConfig",
    "ClusterKeys",
    "ClusterServerKeys",
    "ConfigError",
    "GatewayKeys",
    "GatewayServerKeys",
    "LimitKeys",
    "RateKeys",
    "RuntimeConfig",
    "TaskKeys",
    "ToolLimitKeys",
    "load_config",
]

DEFAULT_KEYS = LIFECYCLE_KEYS | {"prefix", "affinity"}
"""The keys ``"defaults"`` may set for every server: the runtime's lifecycle keys, and the
gateway's ``prefix`` and the cluster's ``affinity`` (each still owned and checked by its section)."""


class BuiltinConfig(BaseModel):
    """The built-in tools: their namespace is ``builtin``, confined to ``workspace``.

    Off unless a configuration turns them on: they can write files and commit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: StrictBool = False
    workspace: str = "."


# The one file holds the keys of several layers; each layer owns a section of it, parsed by
# the model below that checks its keys, and reads only that section. The runtime's (and the
# transport's) per-server keys are `ServerConfig`'s.

_SECTION = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel)


class TaskKeys(BaseModel):
    """How the gateway holds a server's calls as tasks for clients that follow them
    (``"tasks"``, `actors.gateway.held_tasks`); the bounds apply to every task it holds."""

    model_config = _SECTION

    hold: StrictBool = False
    """Run every call of a client that follows tasks as a task the gateway holds."""
    ttl_ms: int = Field(default=3_600_000, gt=0)
    """How long a task's record is kept after its creation (then swept: not found)."""
    max_result_bytes: int = Field(default=1_048_576, gt=0)
    """A result larger than this (as JSON) ends its task failed instead."""
    per_caller: int = Field(default=100, gt=0)
    """Tasks a caller may have unfinished at once; one more is refused."""


class GatewayServerKeys(BaseModel):
    """The gateway's keys of one server entry (`actors.gateway`)."""

    model_config = _SECTION

    prefix: StrictBool = True
    """Through the gateway, name its tools and prompts ``namespace__name``; false keeps the
    server's own names (they must not collide with another unprefixed server's)."""
    token_exchange: TokenExchangeKeys | None = None
    """A remote per-user server's token, exchanged for each caller's (`actors.mcp.per_user`)."""
    tasks: TaskKeys = Field(default_factory=TaskKeys)


class ClusterServerKeys(BaseModel):
    """The cluster's keys of one server entry (`actors.cluster`)."""

    model_config = _SECTION

    affinity: Literal["any", "single", "user"] = "any"
    """Across gateway replicas (``serve --cluster``): ``any`` runs the server wherever a request
    lands; ``single`` runs it on one replica at a time (it keeps state), the others forward to it;
    ``user`` runs one instance per caller on each replica (`actors.gateway.access.per_user`)."""


class GatewayKeys(BaseModel):
    """The gateway's section of the file: its per-server keys. Read by `actors.gateway` only."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, GatewayServerKeys] = Field(default_factory=dict)

    def prefixed(self, namespace: str) -> bool:
        """Whether ``namespace``'s names go out as ``namespace__name``."""
        keys = self.servers.get(namespace)
        return keys is None or keys.prefix

    def unprefixed(self) -> frozenset[str]:
        """The servers configured with ``"prefix": false``."""
        return frozenset(ns for ns, keys in self.servers.items() if not keys.prefix)

    def tasks(self, namespace: str) -> TaskKeys:
        """How the gateway holds ``namespace``'s calls as tasks (``"tasks"``)."""
        keys = self.servers.get(namespace)
        return keys.tasks if keys is not None else TaskKeys()


class ClusterKeys(BaseModel):
    """The cluster's section of the file: its per-server keys. Read by `actors.cluster` only."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, ClusterServerKeys] = Field(default_factory=dict)

    def single(self, namespace: str) -> bool:
        """Whether ``namespace`` runs on one replica at a time (``"affinity": "single"``)."""
        keys = self.servers.get(namespace)
        return keys is not None and keys.affinity == "single"

    def per_user(self, namespace: str) -> bool:
        """Whether ``namespace`` runs one copy per caller (``"affinity": "user"``)."""
        keys = self.servers.get(namespace)
        return keys is not None and keys.affinity == "user"


# ---- "access": who may use the gateway, and how much (`actors.gateway.access`) ---------------


class AuditKeys(BaseModel):
    """``access.audit``: a record of every request (`actors.gateway.access.audit`)."""

    model_config = _SECTION

    file: str | None = Field(default=None, min_length=1)
    """Where the JSON lines go: ``"-"`` for stdout (HTTP gateway only), else a file appended to.
    None: kept in memory only (the recent records, for the operator's page)."""
    arguments: StrictBool | list[str] = False
    """Record the arguments themselves (secrets redacted) of these: ``"ns"``, ``"ns/*"``,
    ``"ns/name"`` or ``"*"``; true for every request. Otherwise only their digest."""
    redact: list[str] = Field(default_factory=list)
    """Argument keys whose values are never recorded, beside those that look like secrets."""
    keep: int = Field(default=200, ge=0, le=10_000)
    """How many recent records are kept in memory."""


class RateKeys(BaseModel):
    """A token bucket: ``rate`` requests per ``per``, up to ``burst`` at once."""

    model_config = _SECTION

    rate: float = Field(gt=0, allow_inf_nan=False)
    per: Literal["second", "minute", "hour"] = "second"
    burst: int | None = Field(default=None, ge=1)
    """The most requests at once (the bucket's size). None: ``rate``, at least 1."""


class ToolLimitKeys(BaseModel):
    """The limits of one tool (or of ``ns/*``, ``*``): per user, and all users together."""

    model_config = _SECTION

    per_user: RateKeys | None = None
    all: RateKeys | None = None


class LimitKeys(BaseModel):
    """``access.limits`` (`actors.gateway.access.limits`)."""

    model_config = _SECTION

    per_user: RateKeys | None = None
    """Each principal's whole request rate over HTTP (refused with HTTP 429)."""
    tools: dict[str, ToolLimitKeys] = Field(default_factory=dict)
    """Tool calls, by ``"ns/tool"``, ``"ns/*"`` or ``"*"`` (the most specific applies)."""


def _url(value: str | None, key: str, *, tls: bool = True) -> str | None:
    """``value`` if it is an http(s) URL without a fragment; with ``tls``, plain http only to a
    loopback host (OAuth 2.1 wants TLS everywhere else)."""
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise ValueError(f"{key} must be an http(s) URL without a #fragment")
    loopback = parts.hostname in ("localhost", "::1") or parts.hostname.startswith("127.")
    if tls and parts.scheme == "http" and not loopback:
        raise ValueError(f"{key} must be https (plain http only on loopback)")
    return value


JWTAlgorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]
"""Public-key signatures only: never ``none``, never an HMAC keyed with the issuer's public key."""


class AuthKeys(BaseModel):
    """``access.auth``: the HTTP gateway as an OAuth 2.1 resource server (`actors.gateway.access`):
    JWT access tokens from ``issuer``, for ``audience`` (default ``resource``), with ``scopes``."""

    model_config = _SECTION

    issuer: str
    resource: str
    """The gateway's public URL of ``/mcp`` (RFC 8707/9728): what tokens are for."""
    audience: str | None = Field(default=None, min_length=1)
    """The ``aud`` tokens carry, when the issuer names the gateway otherwise than ``resource``."""
    scopes: list[str] = Field(default_factory=list)
    """Every token must hold all of them (refused 403 ``insufficient_scope`` otherwise)."""
    jwks_uri: str | None = None
    """The issuer's keys, when its metadata does not say where."""
    algorithms: list[JWTAlgorithm] = Field(default=["RS256", "PS256", "ES256", "EdDSA"], min_length=1)
    leeway: float = Field(default=30.0, ge=0, le=300)
    """Seconds of clock skew allowed on ``exp`` and ``nbf``."""

    @field_validator("issuer", "jwks_uri", "resource")
    @classmethod
    def _urls(cls, value: str | None, info: Any) -> str | None:
        return _url(value, to_camel(info.field_name), tls=info.field_name != "resource")

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        if any(not s or any(c.isspace() or c in '"\\' for c in s) for s in value):
            raise ValueError("each scope must be a word without spaces or quotes")
        return value

    @property
    def expected_audience(self) -> str:
        return self.audience or self.resource


class AccessKeys(BaseModel):
    """The gateway's ``access`` section. Read by `actors.gateway.access` only."""

    model_config = _SECTION

    auth: AuthKeys | None = None
    """OAuth 2.1 access tokens (else the static token, or none on loopback)."""
    audit: AuditKeys = Field(default_factory=AuditKeys)
    limits: LimitKeys = Field(default_factory=LimitKeys)
    policy: str | None = Field(default=None, min_length=1)
    """A Cedar policy file (`actors.gateway.access.policy`), relative to the config file: who may
    see and use which servers, tools, resources and prompts. None: everyone everything."""
    per_user_servers: PerUserKeys = Field(default_factory=PerUserKeys)
    """How many per-user instances (``"affinity": "user"``) a replica keeps, and how long."""
    require_sandbox: StrictBool = False
    """Every stdio server runs in a sandboxed boundary (`actors.sandbox`): one without a
    ``sandbox`` key gets the default profile, and ``"sandbox": false`` is a config error."""


def _cluster_rules(name: str, server: ServerConfig, keys: ClusterServerKeys) -> list[ConfigProblem]:
    """What the cluster's keys need of the runtime's keys."""
    if keys.affinity != "any" and not server.lazy_start:
        # Started eagerly, it would run on every replica (for no caller): only a call may start it.
        message = f"'affinity' {keys.affinity} needs lazyStart true (a call starts it where it runs)"
        return [ConfigProblem(server=name, key="affinity", message=message)]
    return []


class RuntimeConfig(BaseModel):
    """Everything `Runtime.start` needs, and the gateway's and the cluster's sections."""

    model_config = ConfigDict(frozen=True)

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    """The runtime's (and transports') keys of each server."""
    builtin: BuiltinConfig = Field(default_factory=BuiltinConfig)
    tool_search: bool = False
    """Through the gateway, list only ``search_tools`` and ``call_tool`` (``"toolSearch"``)."""
    gateway: GatewayKeys = Field(default_factory=GatewayKeys)
    """The gateway's per-server keys (``prefix``)."""
    cluster: ClusterKeys = Field(default_factory=ClusterKeys)
    """The cluster's per-server keys (``affinity``)."""
    access: AccessKeys = Field(default_factory=AccessKeys)
    """Who may use the gateway and how much: audit, limits (``"access"``)."""
    source: str | None = None
    """Where the configuration came from, for messages."""
    warnings: tuple[str, ...] = ()
    """What was ignored or passed on as written (other hosts' keys, VS Code inputs), for
    ``mcp-actors check``."""


_Section = TypeVar("_Section", bound=BaseModel)


def _section(
    model: type[_Section], data: Mapping[str, Any], key: str, problems: list[ConfigProblem]
) -> _Section:
    """The file's ``key`` section as ``model`` (its defaults where it has problems, noted)."""
    try:
        return model.model_validate(data.get(key, {}))
    except ValidationError as exc:
        problems.extend(
            ConfigProblem(server=None, key=f"{key}.{p.key}", message=p.message)
            for p in config_problems(None, exc)
        )
        return model()


def _unreadable(message: str, origin: str) -> ConfigError:
    return ConfigError([ConfigProblem(server=None, key=None, message=message)], origin)


def _read_json(path: Path, origin: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _unreadable(f"cannot read: {exc.strerror or exc}", origin) from None
    except UnicodeDecodeError as exc:
        raise _unreadable(f"not UTF-8 text: {exc.reason} at byte {exc.start}", origin) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _unreadable(f"not JSON: {exc.msg} at line {exc.lineno}", origin) from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting past the stack
        raise _unreadable(f"not usable JSON: {exc}", origin) from None


def _first_non_string_key(value: Any, depth: int = 0) -> Any:
    """A key that is not a string anywhere in ``value`` (dicts from Python, not JSON), or None."""
    if depth > 50:
        return None
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if not isinstance(key, str):
                return key
            if (found := _first_non_string_key(inner, depth + 1)) is not None:
                return found
    elif isinstance(value, list | tuple):
        for inner in value:
            if (found := _first_non_string_key(inner, depth + 1)) is not None:
                return found
    return None


def _servers(
    entries: Mapping[str, Any],
    defaults: Mapping[str, Any],
    environ: Mapping[str, str],
    problems: list[ConfigProblem],
    warnings: list[str],
) -> tuple[dict[str, ServerConfig], GatewayKeys, ClusterKeys]:
    """Each server entry, parsed into the runtime's `ServerConfig` and the other layers' keys."""
    servers: dict[str, ServerConfig] = {}
    gateway: dict[str, GatewayServerKeys] = {}
    cluster: dict[str, ClusterServerKeys] = {}
    sections = (GatewayServerKeys, ClusterServerKeys)
    for name, entry in entries.items():
        parsed = server_entry(str(name), entry, defaults, environ, problems, warnings, sections)
        if parsed is None:
            continue
        server = parsed.server
        gateway_keys = parsed.sections[GatewayServerKeys]
        cluster_keys = parsed.sections[ClusterServerKeys]
        assert isinstance(gateway_keys, GatewayServerKeys) and isinstance(cluster_keys, ClusterServerKeys)
        found = per_user_problems(server, cluster_keys.affinity, gateway_keys.token_exchange)
        if found := [*found, *_cluster_rules(server.name, server, cluster_keys)]:
            problems.extend(found)
            continue
        if not server.disabled:
            servers[server.name] = server
            gateway[server.name] = gateway_keys
            cluster[server.name] = cluster_keys
    return servers, GatewayKeys(servers=gateway), ClusterKeys(servers=cluster)


def _sandboxed(
    servers: dict[str, ServerConfig],
    entries: Mapping[str, Any],
    defaults: Mapping[str, Any],
    problems: list[ConfigProblem],
) -> dict[str, ServerConfig]:
    """``access.requireSandbox``: every stdio server sandboxed, the default profile where it
    states none; one that turns its sandbox off is refused."""
    required: dict[str, ServerConfig] = {}
    for name, server in servers.items():
        if server.transport != "stdio" or server.sandbox is not None:
            required[name] = server
            continue
        entry = entries.get(name)
        stated = entry.get("sandbox", defaults.get("sandbox")) if isinstance(entry, Mapping) else None
        if stated is False:
            message = "access.requireSandbox is on: a stdio server cannot turn its sandbox off"
            problems.append(ConfigProblem(server=name, key="sandbox", message=message))
            continue
        required[name] = server.model_copy(update={"sandbox": SandboxProfile()})
    return required


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | RuntimeConfig,
    environ: Mapping[str, str] | None = None,
) -> RuntimeConfig:
    """Read a configuration from a JSON file path or a dict in ``mcpServers`` form.

    VS Code's ``servers`` key is read too. Raises `ConfigError` naming every bad server and key.
    """
    if isinstance(source, RuntimeConfig):
        return source
    environ = os.environ if environ is None else environ
    origin: str | None = None
    data: Any = source
    if isinstance(source, str | os.PathLike):
        origin = str(source)
        data = _read_json(Path(source), origin)
    if not isinstance(data, Mapping):
        raise ConfigError([ConfigProblem(server=None, key=None, message="must be a JSON object")], origin)
    if (key := _first_non_string_key(data)) is not None:
        raise ConfigError(
            [ConfigProblem(server=None, key=None, message=f"keys must be strings, found {key!r}")], origin
        )

    problems: list[ConfigProblem] = []
    warnings: list[str] = []
    top_level_keys(data, problems, warnings)
    entries = data.get("mcpServers", data.get("servers", {}))
    defaults = data.get("defaults", {})
    if not isinstance(entries, Mapping):
        problems.append(ConfigProblem(server=None, key="mcpServers", message="must be an object"))
        entries = {}
    if not isinstance(defaults, Mapping):
        problems.append(ConfigProblem(server=None, key="defaults", message="must be an object"))
        defaults = {}
    for key in defaults:
        if key not in DEFAULT_KEYS:
            problems.append(ConfigProblem(server=None, key=f"defaults.{key}", message="not a lifecycle key"))

    builtin = _section(BuiltinConfig, data, "builtin", problems)
    access = _section(AccessKeys, data, "access", problems)

    tool_search = data.get("toolSearch", False)
    if not isinstance(tool_search, bool):
        problems.append(ConfigProblem(server=None, key="toolSearch", message="must be true or false"))
        tool_search = False

    servers, gateway, cluster = _servers(entries, defaults, environ, problems, warnings)
    if access.require_sandbox:
        servers = _sandboxed(servers, entries, defaults, problems)
    if builtin.enabled and "builtin" in servers:
        taken = "the namespace 'builtin' is taken by the built-in tools"
        problems.append(ConfigProblem(server="builtin", key=None, message=taken))
    if problems:
        raise ConfigError(problems, origin)
    return RuntimeConfig(
        servers=servers,
        builtin=builtin,
        tool_search=tool_search,
        gateway=gateway,
        cluster=cluster,
        access=access,
        source=origin,
        warnings=tuple(warnings),
    )
