"""`Snapshot`: what the operator's page shows, as immutable values with no secret in them.

Gathered on a worker thread (`gather`): the runtime's status snapshots (an ask of the registry,
which waits) and the audit's recent records. What may hold a secret is chosen, not filtered: a
server shows its counters, latency and the classified type of its last failed call with a fixed
sentence for that type (a tool's error text can quote its arguments), and the runtime's own
text of its last crash, already scrubbed by the adapter and scrubbed here again of every
configured secret, cut short. An audit record shows who, what, outcome and timing: never its
arguments, their digest, or a header.

Immutable values: built on a worker thread, read on the gateway's loop.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from actors.gateway.access.audit import AuditRecord
from actors.mcp.redaction import Redactor
from actors.pins import Drift
from actors.runtime import ServerStatus
from actors.tools import ErrorType

__all__ = ["CRASH", "RECENT", "AuditRow", "HeldRow", "LastError", "ServerRow", "Snapshot", "snapshot"]

logger = logging.getLogger(__name__)

RECENT = 50
"""Audit records the page shows, newest first."""
CRASH = "crash"
"""The type of a last error that is the server's own (a crash or a failed start), not a call's."""
_SHORT = 160
"""Characters of a crash's text the page shows."""
_TYPES = frozenset(kind.value for kind in ErrorType)


@dataclass(frozen=True, slots=True)
class LastError:
    """A server's last error: its classified type, a short message, and when (UTC, ISO 8601).
    Immutable, like every value here: made on a worker thread, read on any."""

    type: str
    message: str
    at: str | None


@dataclass(frozen=True, slots=True)
class ServerRow:
    """One server as the page shows it."""

    namespace: str
    state: str
    transport: str
    pid: int | None
    restarts: int
    calls: int
    errors: int
    in_flight: int
    p50_ms: float | None
    p99_ms: float | None
    last_error: LastError | None

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "state": self.state,
            "transport": self.transport,
            "pid": self.pid,
            "restarts": self.restarts,
            "calls": self.calls,
            "errors": self.errors,
            "inFlight": self.in_flight,
            "p50Ms": self.p50_ms,
            "p99Ms": self.p99_ms,
            "lastError": (
                None
                if self.last_error is None
                else {
                    "type": self.last_error.type,
                    "message": self.last_error.message,
                    "at": self.last_error.at,
                }
            ),
        }


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One audit record as the page shows it (no arguments, no digest)."""

    time: str
    subject: str
    client: str | None
    method: str
    server: str | None
    target: str | None
    """The tool, prompt or URI."""
    outcome: str
    error_type: str | None
    reason: str | None
    duration_ms: float
    replica: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "subject": self.subject,
            "client": self.client,
            "method": self.method,
            "server": self.server,
            "target": self.target,
            "outcome": self.outcome,
            "errorType": self.error_type,
            "reason": self.reason,
            "durationMs": self.duration_ms,
            "replica": self.replica,
        }


@dataclass(frozen=True, slots=True)
class HeldRow:
    """A definition held until approved (`actors.pins`): which, what changed, since when. Never
    the definition itself (a description is the server's text, shown by ``mcp-actors pins held``)."""

    namespace: str
    kind: str
    name: str
    changed: tuple[str, ...]
    since: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "kind": self.kind,
            "name": self.name,
            "changed": list(self.changed),
            "since": self.since,
        }


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The page's content at one moment (immutable: made on a worker thread, read on any)."""

    taken: str
    """When it was gathered (UTC, ISO 8601)."""
    servers: tuple[ServerRow, ...]
    audit: tuple[AuditRow, ...]
    """Newest first."""
    audit_dropped: int
    replica: str | None = None
    held: tuple[HeldRow, ...] = ()
    """The definitions held until approved, by server."""

    def to_json(self) -> dict[str, Any]:
        return {
            "taken": self.taken,
            "replica": self.replica,
            "servers": [row.to_json() for row in self.servers],
            "held": [row.to_json() for row in self.held],
            "audit": [row.to_json() for row in self.audit],
            "auditDropped": self.audit_dropped,
        }


def snapshot(
    statuses: Sequence[ServerStatus],
    records: Iterable[AuditRecord],
    *,
    secrets: Iterable[str] = (),
    dropped: int = 0,
    replica: str | None = None,
    now: float | None = None,
    held: Iterable[Drift] = (),
) -> Snapshot:
    """The page's content from the runtime's ``statuses`` and the audit's ``records`` (oldest
    first, as `Audit.recent` gives them), every configured secret in ``secrets`` withheld, and
    the definitions ``held`` until approved."""
    scrub = Redactor(secrets)
    servers = tuple(_server(status, scrub) for status in statuses)
    audit = tuple(_audit(record, scrub) for record in reversed(tuple(records)))
    taken = _iso(now if now is not None else datetime.datetime.now(tz=datetime.UTC).timestamp())
    rows = tuple(HeldRow(d.namespace, d.kind, d.name, d.changed, _iso(d.seen.at)) for d in held)
    return Snapshot(taken or "", servers, audit, dropped, replica, rows)


def _server(status: ServerStatus, scrub: Redactor) -> ServerRow:
    return ServerRow(
        namespace=status.namespace,
        state=str(status.state),
        transport=status.transport,
        pid=status.pid,
        restarts=status.restarts,
        calls=status.calls,
        errors=status.errors,
        in_flight=status.in_flight,
        p50_ms=status.latency_p50_ms,
        p99_ms=status.latency_p99_ms,
        last_error=_last_error(status, scrub),
    )


def _last_error(status: ServerStatus, scrub: Redactor) -> LastError | None:
    """The later of the last failed call and the last crash."""
    call = status.last_call_error
    crash = status.last_error
    call_at = status.last_call_error_at or 0.0
    crash_at = status.last_error_at or 0.0
    if call is not None and (crash is None or call_at >= crash_at):
        label = ErrorType(call).label if call in _TYPES else call
        return LastError(call, f"the last failed call: {label}", _iso(status.last_call_error_at))
    if crash is not None:
        return LastError(CRASH, _short(scrub(crash)), _iso(status.last_error_at))
    return None


def _audit(record: AuditRecord, scrub: Redactor) -> AuditRow:
    target = record.tool or record.prompt or record.uri
    return AuditRow(
        time=record.time,
        subject=record.subject,
        client=record.client,
        method=record.method,
        server=record.server,
        target=scrub(target) if target is not None else None,
        outcome=record.outcome.value,
        error_type=record.error_type,
        reason=scrub(record.reason) if record.reason is not None else None,
        duration_ms=record.duration_ms,
        replica=record.replica,
    )


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SHORT else line[: _SHORT - 1] + "…"


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    when = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")
