"""The audit's records (`actors.gateway.access.audit`): their shape, the arguments' digest, the
arguments kept only where configured, and no secret in any of it, planted in a server's env,
in its headers, in the arguments and as the caller's own token."""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from actors.config import RuntimeConfig, load_config
from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who, current_trace_id
from actors.gateway.access.audit_redaction import Scrubber, digest, secret_key
from actors.gateway.access.principal import AuthMode, Principal
from actors.tools import ErrorType
from tests.runtime.conftest import ROOT

ENV_SECRET = "env-s3cret-9f8e7d6c"
HEADER_SECRET = "hdr-s3cret-1a2b3c4d"
STATIC_TOKEN = "static-gateway-token-5566"
CALLER_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLWFsaWNl"
ARGUMENT_SECRET = "pw-hunter2-77"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"

ALICE = Principal(
    "alice",
    mode=AuthMode.OAUTH,
    issuer="https://issuer.test",
    client_id="vscode",
    groups=("dev",),
    credential=CALLER_TOKEN,
)


def config(**audit: Any) -> RuntimeConfig:
    servers = {
        "git": {
            "command": "mcp-server-git",
            "env": {"GIT_TOKEN": ENV_SECRET, "TZ": "UTC"},
        },
        "remote": {
            "url": "https://mcp.example.test/mcp",
            "headers": {"Authorization": f"Bearer {HEADER_SECRET}"},
        },
    }
    return load_config({"mcpServers": servers, "access": {"audit": audit}}, environ={})


@pytest.fixture
def audit() -> Iterator[Audit]:
    with Audit.of_config(config(arguments=["git/*"]), replica="host:1:ab") as audit:
        yield audit


def record_of(audit: Audit, event: AuditEvent) -> dict[str, Any]:
    audit.submit(event)
    assert audit.wait_written(10)
    return audit.recent(1)[0].to_json()


def call(tool: str = "git_log", server: str = "git", **fields: Any) -> AuditEvent:
    base: dict[str, Any] = {
        "who": Who.of(ALICE),
        "method": "tools/call",
        "outcome": Outcome.OK,
        "server": server,
        "tool": tool,
        "arguments": {"repo_path": "/src/project", "max_count": 5},
        "started": 1_700_000_000.25,
        "duration": 0.0123,
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
    }
    return AuditEvent(**{**base, **fields})


def test_a_record_says_who_what_how_it_ended_and_when(audit: Audit) -> None:
    record = record_of(audit, call(outcome=Outcome.ERROR, error_type=ErrorType.TIMEOUT))
    canonical = json.dumps({"max_count": 5, "repo_path": "/src/project"}, separators=(",", ":"))
    assert record == {
        "time": "2023-11-14T22:13:20.250Z",
        "subject": "alice",
        "issuer": "https://issuer.test",
        "client": "vscode",
        "method": "tools/call",
        "server": "git",
        "tool": "git_log",
        "argumentsDigest": "sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
        "arguments": {"repo_path": "/src/project", "max_count": 5},
        "outcome": "error",
        "errorType": "timeout",
        "reason": None,
        "durationMs": 12.3,
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "replica": "host:1:ab",
    }
    assert json.loads(audit.recent(1)[0].line()) == record


def test_arguments_are_kept_only_where_configured(audit: Audit) -> None:
    kept = record_of(audit, call())
    other = record_of(audit, call(server="time", tool="now", arguments={"tz": "UTC"}))
    assert "arguments" in kept
    assert "arguments" not in other and other["argumentsDigest"].startswith("sha256:")
    listing = record_of(audit, call(method="tools/list", server=None, tool=None, arguments=None))
    assert "argumentsDigest" not in listing and "tool" not in listing
    with Audit.of_config(config()) as quiet:
        assert "arguments" not in record_of(quiet, call())
    with Audit.of_config(config(arguments=True)) as loud:
        assert "arguments" in record_of(loud, call(server="time", tool="now"))


def test_denials_and_limits_carry_their_reason(audit: Audit) -> None:
    denied = record_of(audit, call(outcome=Outcome.DENIED, reason="policy0"))
    limited = record_of(audit, call(outcome=Outcome.LIMITED, reason="tool-user"))
    assert (denied["outcome"], denied["reason"], denied["errorType"]) == ("denied", "policy0", None)
    assert (limited["outcome"], limited["reason"]) == ("limited", "tool-user")


def test_no_secret_reaches_a_record(tmp_path: Path) -> None:
    """Secrets planted everywhere a request can carry them: a server's env and headers (known
    to the config), the gateway's static token, the arguments under secret-looking keys and
    inside free text, a provider's token format, and the caller's own bearer token."""
    planted = [ENV_SECRET, HEADER_SECRET, STATIC_TOKEN, CALLER_TOKEN, ARGUMENT_SECRET, GITHUB_TOKEN]
    arguments = {
        "query": f"grep {ENV_SECRET} and {HEADER_SECRET}",
        "password": ARGUMENT_SECRET,
        "nested": {"apiKey": "k-" + ARGUMENT_SECRET, "list": [f"Bearer {CALLER_TOKEN}", GITHUB_TOKEN]},
        "headers": {"X-Auth-Token": STATIC_TOKEN, "Accept": "text/plain"},
        "note": f"my token is {CALLER_TOKEN}, the gateway's {STATIC_TOKEN}",
        "max_tokens": 100,
        "author": "Alice",
    }
    path = tmp_path / "audit.jsonl"
    with Audit.of_config(config(file=str(path), arguments=True), secrets=[STATIC_TOKEN]) as audit:
        record = record_of(
            audit,
            call(
                arguments=arguments,
                uri=f"file:///x?access_token={CALLER_TOKEN}&page=2",
                tool=None,
                method="resources/read",
            ),
        )
    written = path.read_text()
    for secret in planted:
        assert secret not in written, secret
        assert secret not in json.dumps(record), secret
    kept = record["arguments"]
    assert kept["password"] == "***" and kept["nested"]["apiKey"] == "***"
    assert kept["headers"] == {"X-Auth-Token": "***", "Accept": "text/plain"}
    assert kept["query"] == "grep *** and ***"
    assert kept["nested"]["list"] == ["***", "***"]
    # What is not a secret stays readable.
    assert (kept["max_tokens"], kept["author"]) == (100, "Alice")
    assert record["uri"] == "file:///x?access_token=***&page=2"


def test_the_audit_never_reads_the_credential() -> None:
    """Not by accident either: no module of the audit names the principal's credential."""
    folder = ROOT / "actors" / "gateway" / "access"
    for path in sorted(folder.glob("audit*.py")):
        names = {
            node.attr for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Attribute)
        }
        assert "credential" not in names, path
    assert "credential" not in Who.__slots__


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("PASSWORD", True),
        ("db_passwd", True),
        ("apiKey", True),
        ("APIKey", True),
        ("x-api-key", True),
        ("X-Auth-Token", True),
        ("access_token", True),
        ("refreshToken", True),
        ("client_secret", True),
        ("Authorization", True),
        ("private_key", True),
        ("Cookie", True),
        ("max_tokens", False),
        ("author", False),
        ("keyword", False),
        ("query", False),
        ("path", False),
    ],
)
def test_keys_that_name_secrets(key: str, secret: bool) -> None:
    assert secret_key(key) is secret


def test_configured_keys_are_withheld_too() -> None:
    scrubber = Scrubber(redact=["ssn", "Account"])
    assert scrubber.arguments({"SSN": "123-45-6789", "account": "x", "name": "y"}) == {
        "SSN": "***",
        "account": "***",
        "name": "y",
    }


def test_the_digest_is_of_the_canonical_json() -> None:
    a = {"b": [1, {"y": 2, "x": "é"}], "a": None}
    b = {"a": None, "b": [1, {"x": "é", "y": 2}]}
    assert digest(a) == digest(b) != digest({"a": None})
    text = '{"a":null,"b":[1,{"x":"é","y":2}]}'
    assert digest(a) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert digest(None) == digest({})


def test_long_values_are_cut_after_redaction() -> None:
    scrubber = Scrubber([ENV_SECRET])
    text = "x" * 5000 + ENV_SECRET
    cut = scrubber.arguments({"blob": text})["blob"]
    assert len(cut) < 1100 and cut.endswith("chars)") and ENV_SECRET not in cut
    huge = scrubber.arguments({"blob": "y" * 100_000 + GITHUB_TOKEN})["blob"]
    assert GITHUB_TOKEN not in huge and huge.startswith("y" * 1024)


def test_the_trace_id_is_the_current_spans() -> None:
    assert current_trace_id() is None
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("tools/call") as span:
        expected = format(span.get_span_context().trace_id, "032x")
        assert current_trace_id() == expected
    assert len(expected) == 32


def test_a_reload_changes_what_is_kept_and_withheld(audit: Audit) -> None:
    assert "arguments" in record_of(audit, call())
    data = config(arguments=["time/now"]).model_dump()
    reloaded = load_config(
        {
            "mcpServers": {
                "git": {"command": "mcp-server-git", "env": {"NEW_SECRET": "brand-new-secret-42"}}
            },
            "access": {"audit": {"arguments": ["time/now"]}},
        },
        environ={},
    )
    audit.adopt(reloaded)
    assert "arguments" not in record_of(audit, call())
    kept = record_of(audit, call(server="time", tool="now", arguments={"q": "brand-new-secret-42"}))
    assert kept["arguments"] == {"q": "***"}
    assert data  # the first config's dump is whole: adopt did not touch it


def test_no_secret_as_a_key_or_a_name_at_any_depth(tmp_path: Path) -> None:
    """A secret used as an argument's key (at the top, nested in objects, in objects inside
    lists) or as the name a client asked for is withheld as a value is; keys that become alike
    once withheld are kept apart, so no argument is lost from the record."""
    planted = [ENV_SECRET, HEADER_SECRET, STATIC_TOKEN, CALLER_TOKEN, GITHUB_TOKEN]
    arguments = {
        ENV_SECRET: "top",
        GITHUB_TOKEN: "also top",
        "outer": {HEADER_SECRET: {"inner": {GITHUB_TOKEN: 1}}},
        "rows": [{ENV_SECRET: [{f"k-{HEADER_SECRET}": True}]}, {STATIC_TOKEN: 2}],
        "headers": {f"Bearer {CALLER_TOKEN}": "v"},
        "plain": {"kept": "as is"},
    }
    path = tmp_path / "audit.jsonl"
    with Audit.of_config(config(file=str(path), arguments=True), secrets=[STATIC_TOKEN]) as audit:
        called = record_of(audit, call(tool=f"t {GITHUB_TOKEN}", arguments=arguments))
        prompted = record_of(
            audit, call(method="prompts/get", tool=None, prompt=ENV_SECRET, arguments={CALLER_TOKEN: "x"})
        )
    written = path.read_text()
    for secret in planted:
        assert secret not in written, secret
        assert secret not in json.dumps([called, prompted]), secret
    kept = called["arguments"]
    assert sorted(v for k, v in kept.items() if k.startswith("***")) == ["also top", "top"]
    assert kept["outer"] == {"***": {"inner": {"***": 1}}}
    # A key that names a secret withholds its value as well.
    assert kept["rows"] == [{"***": [{"k-***": True}]}, {"***": "***"}]
    assert kept["headers"] == {"***": "***"}
    assert kept["plain"] == {"kept": "as is"}
    assert (called["tool"], prompted["prompt"]) == ("t ***", "***")
    assert prompted["arguments"] == {"***": "x"}
