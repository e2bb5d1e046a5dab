"""The client command that the official MCP conformance suite runs against its scenario servers.

    conformance client --command "<venv python> tests/conformance/client.py [--protocol auto]" \
        --scenario initialize

The suite starts a scenario server, runs this script with the server's URL as the last argument
and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, then judges what the server saw. Every
scenario goes through the actor runtime: a `Runtime` with one streamable-HTTP server entry, calls
through the registry actor (`CallTool` messages), then a clean shutdown.

The OAuth scenarios (``auth/*``) log in through the runtime too: an ``oauth`` key in the server
entry (a client ID metadata document URL; the pre-registered client, the client-credentials or
the identity-assertion grant when the suite's ``MCP_CONFORMANCE_CONTEXT`` says so), and the
host's `LoginHandlers`, which do what the suite expects instead of a browser: open the
authorization URL without following its redirect and read ``code`` and ``state`` from it. The
tokens go to a token store in a temporary folder of the run's own.

Exit status: 0 when the runtime did what the scenario asks, 1 otherwise (the suite records it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors import Runtime
from actors.mcp.auth import STATE_DIR_ENV
from actors.runtime import LoginHandlers
from actors.runtime.messages import CallTool
from actors.runtime.skill_messages import skill_fault

NAMESPACE = "conformance"
CALL_TIMEOUT = 20.0
HTTP_TIMEOUT = 15.0
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"

# What each scenario's server expects the client to call once it has listed the tools (a
# scenario whose context lists ``toolCalls`` says so itself).
SCENARIO_CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tools_call": [("add_numbers", {"a": 5, "b": 3})],
    "sse-retry": [("test_reconnection", {})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    # SEP-2243: the one well-formed tool among tools with malformed x-mcp-header parameters.
    "http-invalid-tool-headers": [("valid_tool", {"region": "us-west1"})],
    # SEP-2322: tools answering with InputRequiredResult (the runtime answers their
    # elicitation and retries), one between them that must carry nothing of theirs.
    "sep-2322-client-request-state": [
        ("test_mrtr_echo_state", {}),
        ("test_mrtr_unrelated", {}),
        ("test_mrtr_no_state", {}),
        ("test_mrtr_no_result_type", {}),
    ],
}


def server_entry(url: str, protocol: str) -> dict[str, Any]:
    # The scenario servers speak the handshake era (2025-06-18 / 2025-11-25) only: ``auto``
    # (the default) must fall back to it, ``legacy`` goes straight to it.
    return {
        "type": "streamable-http",
        "url": url,
        "protocol": protocol,
        "connectTimeout": 15,
        "callTimeout": CALL_TIMEOUT,
        "healthCheckInterval": 0,
        "idleTimeout": 0,
        "restart": "temporary",
        # There is no user to ask: accept with the schema's defaults (SEP-1034).
        "elicitation": "accept-defaults",
    }


def oauth_entry(scenario: str, url: str, context: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The server entry's ``oauth`` key for an OAuth scenario; ``folder`` holds any key file."""
    client = {"clientId": context["client_id"]} if context.get("client_id") else {}
    if context.get("client_secret"):
        client["clientSecret"] = context["client_secret"]
    if scenario.startswith("auth/client-credentials-"):
        oauth: dict[str, Any] = {"grant": "client_credentials", **client}
        if context.get("private_key_pem"):
            key = folder / "client-key.pem"
            key.touch(mode=0o600)
            key.write_text(context["private_key_pem"])
            oauth["privateKeyFile"] = str(key)
        return oauth
    # SEP-1933: the workload's token, where a platform would leave it.
    if scenario.startswith("auth/wif-"):
        token = folder / "workload-token"
        token.touch(mode=0o600)
        token.write_text(context["valid_jwt"])
        return {
            "grant": "workload_identity",
            "issuer": authorization_server(url),
            **client,
            "workloadTokenFile": str(token),
        }
    # SEP-990, "cross-app-access" in the 0.1 suite, "enterprise-managed-authorization" in 0.2.
    if scenario.startswith(("auth/cross-app-access", "auth/enterprise-managed-authorization")):
        return {"grant": "identity_assertion", "issuer": authorization_server(url), **client}
    return {"clientMetadataUrl": CLIENT_METADATA_URL, **client}


def authorization_server(url: str) -> str:
    """The first authorization server that the MCP server's protected resource metadata names
    (found where its 401 points, else at the RFC 9728 well-known URI)."""
    metadata_url = ""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=HTTP_TIMEOUT).close()
    except urllib.error.HTTPError as refusal:
        found = re.search(r'resource_metadata="([^"]+)"', refusal.headers.get("WWW-Authenticate", ""))
        metadata_url = found.group(1) if found else ""
    if not metadata_url:
        parts = urllib.parse.urlsplit(url)
        metadata_url = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    with urllib.request.urlopen(metadata_url, timeout=HTTP_TIMEOUT) as answer:
        return str(json.loads(answer.read())["authorization_servers"][0])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Login:
    """The host's side of a login, without a browser: `redirect` opens the authorization URL and
    reads the code from where it redirects; `callback` hands it over; `assertion` exchanges the
    suite's ID token for an ID-JAG at its identity provider (RFC 8693). Each runs on a host thread."""

    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context
        self._answer: tuple[str, str | None, str | None] | None = None

    def redirect(self, authorization_url: str) -> None:
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            opener.open(authorization_url, timeout=HTTP_TIMEOUT).close()
        except urllib.error.HTTPError as answer:
            location = answer.headers.get("Location", "")
        else:
            raise RuntimeError("the authorization endpoint did not redirect")
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"the authorization redirect carries no code: {query.get('error')}")
        # The redirect's code, state and RFC 9207 issuer, as a browser would bring them back.
        self._answer = (query["code"][0], query.get("state", [None])[0], query.get("iss", [None])[0])

    def callback(self) -> tuple[str, str | None, str | None]:
        if self._answer is None:
            raise RuntimeError("no authorization redirect was read")
        answer, self._answer = self._answer, None
        return answer

    def assertion(self, audience: str, resource: str) -> str:
        fields = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": self.context["idp_id_token"],
            "subject_token_type": ID_TOKEN,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "resource": resource,
        }
        if self.context.get("idp_client_id"):
            fields["client_id"] = self.context["idp_client_id"]
        request = urllib.request.Request(
            self.context["idp_token_endpoint"], data=urllib.parse.urlencode(fields).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as answer:
            return str(json.loads(answer.read())["access_token"])

    def handlers(self) -> LoginHandlers:
        return LoginHandlers(
            redirect=self.redirect, callback=self.callback, assertion=self.assertion, timeout=CALL_TIMEOUT
        )


def calls_of(scenario: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls the scenario expects, in order; None: the scenario names none."""
    listed = context.get("toolCalls")
    if isinstance(listed, list):
        return [(str(call["name"]), dict(call.get("arguments") or {})) for call in listed]
    return SCENARIO_CALLS.get(scenario)


def run(scenario: str, url: str, protocol: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if not scenario.startswith("auth/"):
        servers = {"mcpServers": {NAMESPACE: server_entry(url, protocol)}}
        return run_runtime(scenario, servers, None, calls_of(scenario, context))
    with tempfile.TemporaryDirectory(prefix="mcp-actors-conformance-") as folder:
        # The run's own token store: nothing from another run, nothing left behind.
        os.environ[STATE_DIR_ENV] = folder
        entry = {**server_entry(url, protocol), "oauth": oauth_entry(scenario, url, context, Path(folder))}
        login = Login(context).handlers()
        return run_runtime(scenario, {"mcpServers": {NAMESPACE: entry}}, login, calls_of(scenario, context))


def run_runtime(
    scenario: str,
    servers: dict[str, Any],
    login: LoginHandlers | None,
    calls: list[tuple[str, dict[str, Any]]] | None,
) -> int:
    config = {**servers, "builtin": {"enabled": False}}
    with Runtime.start(config, login=login) as rt:
        # initialize + tools/list: the handshake every scenario starts with.
        try:
            status = rt.start_server(NAMESPACE)
        except Exception as exc:  # a ToolError: the server refused us (the auth scenarios)
            print(f"{scenario}: the server did not start: {exc}", file=sys.stderr)
            return 1
        tools = sorted(spec.name for spec in rt.list_tools(NAMESPACE))
        print(f"{scenario}: connected, protocol {status.protocol_version}, tools {tools}")
        if calls is None and scenario.startswith("auth/") and tools:
            # Some OAuth scenarios ask for more scopes for a call (a step-up): call one.
            calls = [(tools[0].removeprefix(f"{NAMESPACE}/"), {})]
        if scenario.startswith("sep-2640-client-"):
            return skills(scenario, rt)
        failed = 0
        for tool, arguments in calls or []:
            message = CallTool(namespace=NAMESPACE, tool=tool, arguments=arguments, timeout=CALL_TIMEOUT)
            rt.registry.tell(message)
            result = message.reply.result(timeout=CALL_TIMEOUT + 5)
            print(f"{scenario}: {tool} -> success={result.success} {result.text or result.error!r}")
            failed += not result.success
        return 1 if failed else 0


def skills(scenario: str, rt: Runtime) -> int:
    """As a host does: list the server's skills (nothing read); except where the scenario
    tests that nothing is read ahead of need, load the first skill (its SKILL.md read and
    verified) and, only if it loaded, read its other files under the entry."""
    listing = rt.skills.list(NAMESPACE)
    print(f"{scenario}: skills {[s.label for s in listing.skills]}, rejected {list(listing.rejected)}")
    if listing.failures or not listing.skills:
        return 1
    if scenario == "sep-2640-client-no-prefetch":
        return 0
    skill = listing.skills[0].skill
    loaded = rt.skills.load(NAMESPACE, skill, timeout=CALL_TIMEOUT)
    print(f"{scenario}: load {skill.uri} -> success={loaded.success} {loaded.error or ''}")
    if not loaded.success:
        # A skill that fails verification is not loaded: the scenario's expected outcome.
        return 0 if skill_fault(loaded) is not None else 1
    for file in skill.files or ():
        if file.uri != skill.uri:
            read = rt.skills.read(NAMESPACE, skill, file.uri, timeout=CALL_TIMEOUT)
            print(f"{scenario}: read {file.uri} -> success={read.success} {read.error or ''}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="The mcp-actors client for the MCP conformance suite.")
    parser.add_argument("--protocol", choices=("auto", "legacy", "2026-07-28"), default="auto")
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("url", help="the scenario server's URL (the suite appends it)")
    args = parser.parse_args(argv[1:])
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(relativeCreated)6.0fms %(levelname)s %(name)s: %(message)s",
    )
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not scenario:
        parser.error("MCP_CONFORMANCE_SCENARIO is not set")
    return run(scenario, args.url, args.protocol)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
