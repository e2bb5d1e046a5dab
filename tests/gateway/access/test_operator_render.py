"""The operator's page without a browser: what a snapshot keeps of a server's status and of an
audit record (no argument, no secret), the HTML it renders, escaped, and who may see it."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from actors.gateway.access.audit import AuditRecord, Outcome
from actors.gateway.access.policy import Policy
from actors.gateway.access.principal import LOCAL, STATIC, AuthMode, Principal
from actors.gateway.access.use import Use
from actors.gateway.gateway import Gateway
from actors.gateway.operator.page import REFRESH_SECONDS, render
from actors.gateway.operator.route import OperatorPage
from actors.gateway.operator.snapshot import CRASH, snapshot
from actors.runtime import ServerStatus
from actors.runtime.state import ServerState
from tests.runtime.conftest import config, stdio_server

SECRET = "s3cret-value-9a8b7c"
HOSTILE = '<script>alert("x")</script>&"\''


def status(namespace: str = "fx", **keys: object) -> ServerStatus:
    fields: dict[str, object] = {"state": ServerState.RUNNING, "transport": "stdio", "pid": 4242, **keys}
    return ServerStatus(namespace=namespace, **fields)  # type: ignore[arg-type]


def record(**keys: object) -> AuditRecord:
    fields: dict[str, object] = {
        "time": "2026-12-04T20:00:00.000Z",
        "subject": "alice",
        "issuer": "https://issuer",
        "client": "alice-cli",
        "method": "tools/call",
        "server": "fx",
        "tool": "echo",
        "prompt": None,
        "uri": None,
        "arguments_digest": "sha256:" + "0" * 64,
        "arguments_json": json.dumps({"text": SECRET}),
        "outcome": Outcome.OK,
        "error_type": None,
        "reason": None,
        "duration_ms": 1.5,
        "trace_id": "ab" * 16,
        "replica": None,
        **keys,
    }
    return AuditRecord(**fields)  # type: ignore[arg-type]


class _Elements(HTMLParser):
    """The tags of a document, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> _Elements:
    elements = _Elements()
    elements.feed(page)
    return elements


def test_a_server_shows_its_counters_latency_and_last_failed_call() -> None:
    view = snapshot(
        [
            status(
                calls=7,
                errors=2,
                restarts=1,
                latency_p50_ms=3.25,
                latency_p99_ms=40.0,
                last_call_error="timeout",
                last_call_error_at=1_800_000_100.0,
                last_error="crashed: exit 3",
                last_error_at=1_800_000_000.0,
            )
        ],
        [],
        now=1_800_000_200.0,
    )
    [row] = view.to_json()["servers"]
    assert row == {
        "namespace": "fx",
        "state": "running",
        "transport": "stdio",
        "pid": 4242,
        "restarts": 1,
        "calls": 7,
        "errors": 2,
        "inFlight": 0,
        "p50Ms": 3.25,
        "p99Ms": 40.0,
        # The later of the two; a call's error is told by its type only (its text may quote arguments).
        "lastError": {
            "type": "timeout",
            "message": "the last failed call: timeout",
            "at": "2027-01-15T08:01:40Z",
        },
    }
    assert view.taken == "2027-01-15T08:03:20Z"


def test_a_crash_is_told_short_and_without_a_configured_secret() -> None:
    text = f"the process exited (code 3): token={SECRET} " + "x" * 400
    view = snapshot([status(last_error=text, last_error_at=10.0)], [], secrets=[SECRET])
    error = view.servers[0].last_error
    assert error is not None and error.type == CRASH
    assert SECRET not in error.message and "***" in error.message
    assert len(error.message) <= 160 and error.message.endswith("…")


def test_an_audit_record_shows_no_argument_nor_digest_and_the_newest_first() -> None:
    records = [
        record(tool="echo"),
        record(subject="bob", tool="add", outcome=Outcome.DENIED, reason="no-rule"),
    ]
    view = snapshot([], records)
    rows = view.to_json()["audit"]
    assert [(r["subject"], r["target"], r["outcome"], r["reason"]) for r in rows] == [
        ("bob", "add", "denied", "no-rule"),
        ("alice", "echo", "ok", None),
    ]
    text = json.dumps(view.to_json()) + render(view)
    assert SECRET not in text and "sha256:" not in text and "ab" * 16 not in text


def test_every_value_is_escaped() -> None:
    view = snapshot(
        [status(namespace=HOSTILE, last_error=HOSTILE, last_error_at=1.0)],
        [record(subject=HOSTILE, client=HOSTILE, uri=HOSTILE, tool=None, replica=HOSTILE)],
        replica=HOSTILE,
    )
    page = render(view)
    elements = parsed(page)
    assert "script" not in elements.tags
    assert "<script>" not in page and html.escape(HOSTILE, quote=True) in page
    # The hostile text reads back as itself, in the servers' table and the audit's.
    assert "".join(elements.text).count('<script>alert("x")</script>') >= 4
    assert re.search(r'data-server="&lt;script&gt;alert\(&quot;x&quot;\)', page)


def test_the_page_refreshes_itself_and_says_when_there_is_nothing() -> None:
    page = render(snapshot([], []))
    assert f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' in page
    assert "No servers configured." in page and "No requests recorded yet." in page
    assert "Nothing held." in page
    elements = parsed(page)
    assert {"script", "link", "img", "iframe"}.isdisjoint(elements.tags)
    assert elements.tags.count("table") == 3  # servers, held definitions, requests


def test_the_admins_rule_the_docs_show_means_what_they_say() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "gateway.md").read_text()
    [text] = [block.split("```", 1)[0] for block in page.split("```cedar id=admins\n")[1:]]
    policy = Policy.parse(text, "docs/gateway.md")
    admin = Principal("ann", AuthMode.OAUTH, scopes=("mcp", "gateway:admin"))
    user = Principal("bob", AuthMode.OAUTH, scopes=("mcp",), groups=("dev",))
    assert policy.decide(admin, Use.admin()).allowed and policy.decide(STATIC, Use.admin()).allowed
    assert not policy.decide(user, Use.admin()).allowed and not policy.decide(LOCAL, Use.admin()).allowed
    # It opens the page only: nothing a server offers.
    assert not policy.decide(admin, Use.call("fx", "echo")).allowed


def test_who_may_see_the_page_follows_the_policy_in_force() -> None:
    alice = Principal("alice", AuthMode.OAUTH, scopes=("mcp", "gateway:admin"))
    replica = Principal("replica", AuthMode.REPLICA, client_id="replica")
    with Gateway.start(config({"fx": stdio_server()})) as gateway:
        page = OperatorPage(gateway)
        # No policy: the gateway's own operator only, the static token's holder or the local user.
        assert page.permits(STATIC) and page.permits(LOCAL)
        assert not page.permits(alice) and not page.permits(replica)
        # A policy (as a reload adopts it): its admin rule decides, for the next request already.
        gateway.adopt_policy(
            Policy.parse(
                '@id("admins") permit (principal, action == Action::"admin", resource == Gateway::"gateway")'
                ' when { principal.scopes.contains("gateway:admin") };'
            )
        )
        assert page.permits(alice) and not page.permits(STATIC) and not page.permits(LOCAL)
        gateway.adopt_policy(Policy.parse('@id("all") permit (principal, action, resource);'))
        assert page.permits(STATIC) and not page.permits(replica)  # a replica's credential: never
