"""One server's configuration: an ``mcpServers`` entry of Claude Desktop, Cursor or VS Code, plus
the lifecycle keys of this runtime. The whole file is read by `actors.config.load_config`.

camelCase in files, snake_case in Python. Every bad value is rejected at load time with a
message that names the server and the key.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from actors.mcp.variables import expand_variables, vscode_inputs
from actors.sandbox.profile import SandboxProfile

__all__ = [
    "LIFECYCLE_KEYS",
    "ConfigError",
    "ConfigProblem",
    "OAuthConfig",
    "ServerConfig",
    "ServerEntry",
    "ToolFilter",
    "config_problems",
    "server_entry",
]

TransportKind = Literal["stdio", "streamable-http", "sse"]
OAuthGrant = Literal["authorization_code", "client_credentials", "identity_assertion", "workload_identity"]
ProtocolMode = Literal["legacy", "auto", "2026-07-28"]
RestartPolicy = Literal["permanent", "transient", "temporary"]

_TRANSPORT_ALIASES: dict[str, TransportKind] = {
    "stdio": "stdio",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamableHttp": "streamable-http",
    "http": "streamable-http",
    "sse": "sse",
}

# Keys other hosts put in mcpServers entries: accepted and ignored, so their files load unchanged.
_FOREIGN_KEYS = frozenset(
    {"autoApprove", "alwaysAllow", "description", "envFile", "timeout", "transportType", "note"}
)

_NAMESPACE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


_KEY_CONTEXT = "config_key"


def _key_problem(key: str, message: str) -> PydanticCustomError:
    """A model-level rule's error, classified with the (camelCase) key it is about, so that
    `config_problems` names the key without reading the message."""
    return PydanticCustomError("config_key", message, {_KEY_CONTEXT: key})


class ToolFilter(BaseModel):
    """Which of a server's tools the runtime exposes: glob patterns on the tool name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    include: tuple[str, ...] = ()
    """Only these (all when empty)."""
    exclude: tuple[str, ...] = ()
    """Never these; exclude wins over include."""

    def allows(self, name: str) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(name, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(name, p) for p in self.exclude)


class OAuthConfig(BaseModel):
    """How to log in to a remote server with OAuth 2.1 (`actors.mcp.auth`); every key is optional.

    Unset, the client is registered dynamically (or by ``clientMetadataUrl``) with the
    authorization server that the MCP server names, and the scopes are the ones it asks for.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, alias_generator=to_camel, allow_inf_nan=False
    )

    client_id: str | None = None
    """A client registered beforehand (an OAuth app); unset: dynamic registration."""
    client_secret: str | None = None
    """The registered client's secret; a secret: masked wherever the config is shown."""
    scopes: tuple[str, ...] | None = None
    """The scopes to ask for (a list, or one space-separated string); unset: what the server asks for."""
    client_metadata_url: str | None = None
    """An https URL of a client ID metadata document, used as the client ID where the server supports it."""
    grant: OAuthGrant = "authorization_code"
    """``authorization_code``: a user logs in (``mcp-actors login``); ``client_credentials``: the
    client authenticates itself with ``clientSecret`` or ``privateKeyFile``, no user;
    ``identity_assertion``: enterprise-managed (SEP-990), the host's identity provider vouches for
    the user (an ID-JAG from the host's handler), exchanged at ``issuer`` with ``clientId`` and
    ``clientSecret``; ``workload_identity``: workload identity federation (SEP-1933), the
    platform's token for this workload (``workloadTokenFile``) exchanged for an access token
    (RFC 7523 JWT bearer grant), no user and no secret."""
    private_key_file: str | None = None
    """A PEM private key that signs the client's assertion (``private_key_jwt``, client_credentials)."""
    workload_token_file: str | None = None
    """The file the platform keeps this workload's identity token in (a Kubernetes projected
    service account token, a CI job's OIDC token), read afresh for every token request: the
    ``workload_identity`` grant's assertion."""
    issuer: str | None = None
    """The authorization server that ``clientId`` belongs to; client credentials are only sent there."""
    redirect_port: int | None = Field(default=None, ge=1, le=65535)
    """The loopback port the login's redirect comes back to (``http://127.0.0.1:PORT/callback``);
    needed when the client was registered with a fixed redirect URI; unset: any free port."""

    @property
    def unattended(self) -> bool:
        """Whether the client logs itself in (client credentials, workload identity): nobody is
        asked, and a refused token is replaced by a new exchange."""
        return self.grant in ("client_credentials", "workload_identity")

    @field_validator("scopes", mode="before")
    @classmethod
    def _scope_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(value.split())
        return value

    @field_validator("redirect_port", mode="before")
    @classmethod
    def _port_not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"must be a number, not {str(value).lower()}")
        return value

    @field_validator("client_metadata_url")
    @classmethod
    def _metadata_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https://[^/]+/.+", value):
            raise ValueError("must be an https URL with a path")
        return value

    @field_validator("issuer")
    @classmethod
    def _issuer_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://", value):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _grant_has_its_keys(self) -> OAuthConfig:
        if self.grant == "client_credentials":
            if not self.client_id:
                raise ValueError("the client_credentials grant needs a 'clientId'")
            if not self.client_secret and not self.private_key_file:
                raise ValueError("the client_credentials grant needs a 'clientSecret' or a 'privateKeyFile'")
        elif self.private_key_file:
            raise ValueError("'privateKeyFile' is only used by the client_credentials grant")
        if self.grant == "identity_assertion":
            needed = {"clientId": self.client_id, "clientSecret": self.client_secret, "issuer": self.issuer}
            missing = [f"'{key}'" for key, value in needed.items() if not value]
            if missing:
                raise ValueError(f"the identity_assertion grant needs {', '.join(missing)}")
        if self.grant == "workload_identity":
            if not self.client_id or not self.workload_token_file:
                raise ValueError("the workload_identity grant needs a 'clientId' and a 'workloadTokenFile'")
            if self.client_secret:
                raise ValueError("the workload_identity grant sends no secret: its token is the credential")
        elif self.workload_token_file:
            raise ValueError("'workloadTokenFile' is only used by the workload_identity grant")
        if self.client_secret and not self.client_id:
            raise ValueError("'clientSecret' needs the 'clientId' it belongs to")
        return self

    def __repr_args__(self) -> Any:
        for key, value in super().__repr_args__():
            yield key, ("***" if key == "client_secret" and value else value)


class ServerConfig(BaseModel):
    """One MCP server: how to reach it and how to run it (the transport's and the runtime's
    keys). The gateway's and the cluster's per-server keys are their own sections of the file
    (`actors.config.GatewayKeys`, `actors.config.ClusterKeys`)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        allow_inf_nan=False,
    )

    name: str
    """The server's namespace: its tools are ``name/tool``."""
    transport: TransportKind = Field(
        default="stdio", validation_alias=AliasChoices("type", "transport"), serialization_alias="type"
    )
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: OAuthConfig | None = None
    """How to log in to this remote server (`actors.mcp.auth`); unset: discovery and dynamic
    registration when the server asks for a login."""

    lazy_start: StrictBool = True
    """Start on the first tool call; false means the server must be started explicitly."""
    idle_timeout: float = Field(default=300.0, ge=0)
    """Seconds without a call before the server is stopped; 0 never stops it."""
    health_check_interval: float = Field(default=30.0, ge=0)
    """Seconds between liveness probes of a running server; 0 disables them."""
    connect_timeout: float = Field(default=30.0, gt=0)
    call_timeout: float = Field(default=60.0, gt=0)
    """The default timeout of a tool call, when the caller gives none."""
    max_argument_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    """The largest tool-argument object accepted, as encoded JSON; a bigger one is refused as
    ``validation`` before the server is woken."""
    max_message_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    """The longest message a stdio server may send, in bytes; a longer one ends the session
    (``connection``) and the server is restarted as after a crash."""
    restart: RestartPolicy = "transient"
    """permanent: restart whenever it ends unasked; transient: only after a crash; temporary: never."""
    max_restarts: int = Field(default=5, ge=0)
    restart_window: float = Field(default=60.0, gt=0)
    """At most ``max_restarts`` restarts within this many seconds, then the server is ``failed``."""
    restart_backoff: float = Field(default=0.2, ge=0)
    """The first restart delay; it doubles (with jitter) up to ``restart_backoff_max``."""
    restart_backoff_max: float = Field(default=10.0, ge=0)
    tools: ToolFilter = Field(default_factory=ToolFilter)
    protocol: ProtocolMode = "auto"
    """MCP protocol era: ``legacy`` (initialize handshake), ``2026-07-28``, or ``auto`` (discover)."""
    trust_annotations: StrictBool = False
    """Let the server's tool annotations (readOnlyHint, destructiveHint) refine capabilities."""
    pin: Literal["off", "warn", "block"] = "block"
    """A changed definition (`actors.pins`): ``block`` held until approved, ``warn`` re-pinned, ``off``."""
    elicitation: Literal["decline", "accept-defaults", "ask"] | None = None
    """How to answer the server's elicitation requests: a fixed policy, or ``ask`` the host's
    handler; unset: ask the host's handler if it gave one, else the capability is not declared."""
    sampling: Literal["allow", "deny"] = "deny"
    """``allow`` lets the server ask the host's model (``sampling/createMessage``) through the
    handler given to `Runtime.start`; off by default: a server must not spend the host's budget unasked."""
    log_level: (
        Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] | None
    ) = None
    """The least severe log message the server should send (``logging/setLevel``); unset: its default."""
    disabled: StrictBool = False
    sandbox: SandboxProfile | None = None
    """The server's boundary (stdio only): ``true`` the default profile, an object to change it,
    ``false`` or unset to run it with the host's authority (`actors.sandbox`)."""

    @field_validator("transport", mode="before")
    @classmethod
    def _known_transport(cls, value: Any) -> Any:
        if isinstance(value, str) and value in _TRANSPORT_ALIASES:
            return _TRANSPORT_ALIASES[value]
        if isinstance(value, str):
            raise ValueError(f"must be one of stdio, streamable-http (or http), sse; got {value!r}")
        return value

    def __repr_args__(self) -> Any:
        # env and header values are secrets: never print them.
        for key, value in super().__repr_args__():
            if key in ("env", "headers") and isinstance(value, dict):
                yield key, dict.fromkeys(value, "***")
            else:
                yield key, value

    @field_validator(
        "idle_timeout",
        "health_check_interval",
        "connect_timeout",
        "call_timeout",
        "max_argument_bytes",
        "max_message_bytes",
        "max_restarts",
        "restart_window",
        "restart_backoff",
        "restart_backoff_max",
        mode="before",
    )
    @classmethod
    def _number_not_bool(cls, value: Any) -> Any:
        # JSON true is not 1 second: a bool here is a mistake, not a number.
        if isinstance(value, bool):
            raise ValueError(f"must be a number, not {str(value).lower()}")
        return value

    @field_validator("sandbox", mode="before")
    @classmethod
    def _sandbox_profile(cls, value: Any) -> Any:
        return SandboxProfile.from_config(value)

    @field_validator("name")
    @classmethod
    def _legal_namespace(cls, value: str) -> str:
        if not _NAMESPACE.match(value):
            raise ValueError(
                f"server name {value!r} must be 1-64 letters, digits, '_', '-' or '.' (it is the namespace)"
            )
        return value

    @model_validator(mode="after")
    def _transport_has_its_keys(self) -> ServerConfig:
        if self.transport == "stdio" and not self.command:
            raise _key_problem("command", "the stdio transport needs a 'command'")
        if self.transport != "stdio" and self.sandbox is not None:
            raise _key_problem("sandbox", "'sandbox' is for stdio servers (a process the runtime starts)")
        if self.transport == "stdio" and self.oauth is not None:
            raise _key_problem(
                "oauth", "'oauth' is only for remote servers (streamable-http, sse), not stdio"
            )
        if self.transport in ("streamable-http", "sse"):
            if not self.url:
                raise _key_problem("url", f"the {self.transport} transport needs a 'url'")
            if not re.match(r"^https?://", self.url):
                raise _key_problem("url", f"'url' must start with http:// or https://, got {self.url!r}")
        if self.restart_backoff_max < self.restart_backoff:
            raise _key_problem("restartBackoffMax", "'restartBackoffMax' must be >= 'restartBackoff'")
        return self


class ConfigProblem(BaseModel):
    """One thing wrong with a configuration."""

    model_config = ConfigDict(frozen=True)

    server: str | None
    key: str | None
    message: str

    def __str__(self) -> str:
        where = []
        if self.server is not None:
            where.append(f"server {self.server!r}")
        if self.key:
            where.append(f"key {self.key!r}")
        return (": ".join(where) + ": " if where else "") + self.message


class ConfigError(ValueError):
    """A configuration that cannot be used; ``problems`` says every reason."""

    def __init__(self, problems: list[ConfigProblem], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        head = f"invalid configuration{f' in {source}' if source else ''}"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in problems))


_CONNECTION_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "oauth"})
LIFECYCLE_KEYS = frozenset(
    to_camel(name)
    for name in ServerConfig.model_fields
    if name not in {"name", "transport"} and name not in _CONNECTION_KEYS
)
_KNOWN_KEYS = frozenset({"type", "transport"} | _CONNECTION_KEYS | LIFECYCLE_KEYS)


def _infer_transport(entry: Mapping[str, Any]) -> Any:
    if "type" in entry or "transport" in entry:
        return entry.get("type", entry.get("transport"))
    if "url" in entry and "command" not in entry:
        return "streamable-http"
    return "stdio"


def config_problems(server: str | None, error: ValidationError) -> list[ConfigProblem]:
    problems = []
    for item in error.errors():
        loc = [str(p) for p in item["loc"]]
        key = ".".join(loc) or None
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif (
            "input" in item
            and item["type"] != "missing"
            and not isinstance(item["input"], dict)
            and loc[:1] not in (["env"], ["headers"])  # their values are secrets
            and loc[:2] != ["oauth", "clientSecret"]
        ):
            message += f" (got {item['input']!r})"
        if key is None:
            # A rule on several keys says which key it is about (`_key_problem`).
            key = (item.get("ctx") or {}).get(_KEY_CONTEXT)
        problems.append(ConfigProblem(server=server, key=key, message=message))
    return problems


@dataclass(frozen=True)
class ServerEntry:
    """One ``mcpServers`` entry, parsed: the runtime's `ServerConfig` and each other layer's
    section of it (by the model that owns those keys)."""

    server: ServerConfig
    sections: Mapping[type[BaseModel], BaseModel]


def server_entry(
    name: str,
    entry: Any,
    defaults: Mapping[str, Any],
    environ: Mapping[str, str],
    problems: list[ConfigProblem],
    warnings: list[str],
    sections: tuple[type[BaseModel], ...] = (),
) -> ServerEntry | None:
    """Parse the entry of server ``name``; None when it has problems (added to ``problems``).

    ``sections`` are the models of the other layers' per-server keys (camelCase aliases of
    their fields): their keys are checked by them, and kept only there (`ServerEntry.sections`).
    """
    if not isinstance(entry, Mapping):
        problems.append(ConfigProblem(server=name, key=None, message="must be an object"))
        return None
    fields: dict[str, Any] = dict(defaults)
    section_keys = {to_camel(name) for model in sections for name in model.model_fields}
    for key, value in entry.items():
        if key in _KNOWN_KEYS or key in section_keys:
            fields[key] = value
            if key in _CONNECTION_KEYS:
                # Only VS Code can prompt for inputs: the server gets the text as written.
                warnings.extend(
                    f"server {name!r}: key {where!r} holds {placeholder}, passed through as-is "
                    "(only VS Code can prompt for inputs)"
                    for where, placeholder in vscode_inputs(value, key)
                )
        elif key in _FOREIGN_KEYS:
            warnings.append(f"server {name!r}: key {key!r} is not used by mcp-actors and was ignored")
        else:
            near = difflib.get_close_matches(key, sorted(_KNOWN_KEYS | section_keys), n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            problems.append(ConfigProblem(server=name, key=key, message=f"unknown key{hint}"))
    unknown = any(p.server == name for p in problems)
    fields.pop("transport", None)
    fields["type"] = _infer_transport(entry)
    missing: list[str] = []
    fields = expand_variables(fields, environ, missing)
    for variable in dict.fromkeys(missing):
        problems.append(
            ConfigProblem(
                server=name,
                key=None,
                message=f"environment variable ${{{variable}}} is not set and has no default",
            )
        )
    if missing:
        return None
    parsed: dict[type[BaseModel], BaseModel] = {}
    for model in sections:
        owned = {key: fields.pop(key) for key in [to_camel(f) for f in model.model_fields] if key in fields}
        try:
            parsed[model] = model.model_validate(owned)
        except ValidationError as exc:
            problems.extend(config_problems(name, exc))
    try:
        server = ServerConfig.model_validate({"name": name, **fields})
    except ValidationError as exc:
        problems.extend(config_problems(name, exc))
        return None
    # Unknown keys were left out above so the rest could still be checked and reported.
    if unknown or len(parsed) < len(sections):
        return None
    return ServerEntry(server, parsed)
