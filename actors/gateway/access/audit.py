"""The audit: one structured record per request the gateway answers (``access.audit``).

Who (the principal's subject and issuer, the OAuth client), what (the method, the server, the
tool, prompt or resource), a digest of the arguments (SHA-256 of their canonical JSON), the
arguments themselves only where ``access.audit.arguments`` says, with secrets withheld
(`actors.gateway.access.audit_redaction`), the outcome (``ok``, ``error``, ``denied``,
``limited``) and the error's type, the duration, the trace id of the request's span, and the
replica. Never a token: a record is built from a `Who`, which holds nothing of the principal
but its names, and the bearer credential is never read here.

The gate hands each answered request over as an `AuditEvent` (on the gateway's loop, at once);
the digest, the redaction, the JSON and the writing happen on the audit's writer thread
(`actors.gateway.access.audit_sink`), which keeps the last records in memory for the operator's
page (`Audit.recent`).
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TextIO

from opentelemetry import trace

from actors.config import AuditKeys, RuntimeConfig
from actors.gateway.access.audit_redaction import Scrubber, digest
from actors.gateway.access.audit_sink import AuditSink
from actors.gateway.access.principal import Principal
from actors.mcp.redaction import config_secrets
from actors.tools import ErrorType

__all__ = ["Audit", "AuditEvent", "AuditRecord", "Outcome", "Who", "current_trace_id"]

logger = logging.getLogger(__name__)


class Outcome(StrEnum):
    """How a request ended, as the audit says it."""

    OK = "ok"
    ERROR = "error"
    """Answered with an error: its `ErrorType` says which."""
    DENIED = "denied"
    """Refused by the policy."""
    LIMITED = "limited"
    """Refused by a rate limit."""


@dataclass(frozen=True, slots=True)
class Who:
    """The principal as the audit names it: never its credential."""

    subject: str
    issuer: str | None = None
    client_id: str | None = None
    mode: str = "local"

    @classmethod
    def of(cls, principal: Principal) -> Who:
        return cls(principal.subject, principal.issuer, principal.client_id, principal.mode.value)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One answered request, as the gate saw it. Made on the gateway's loop and handed to the
    writer thread as is: ``arguments`` are the request's own, which nothing changes once the
    request is parsed."""

    who: Who
    method: str
    outcome: Outcome
    server: str | None = None
    tool: str | None = None
    prompt: str | None = None
    uri: str | None = None
    arguments: Mapping[str, Any] | None = None
    error_type: ErrorType | None = None
    reason: str | None = None
    """A classified value beside the outcome: the rule that denied, the limit's scope."""
    started: float = 0.0
    """Wall-clock seconds when the request arrived."""
    duration: float = 0.0
    """Seconds from arrival to answer."""
    trace_id: str | None = None


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One record as written: immutable, its arguments already redacted (as JSON text)."""

    time: str
    subject: str
    issuer: str | None
    client: str | None
    method: str
    server: str | None
    tool: str | None
    prompt: str | None
    uri: str | None
    arguments_digest: str | None
    arguments_json: str | None
    outcome: Outcome
    error_type: str | None
    reason: str | None
    duration_ms: float
    trace_id: str | None
    replica: str | None

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (the keys of the audit file)."""
        record: dict[str, Any] = {
            "time": self.time,
            "subject": self.subject,
            "issuer": self.issuer,
            "client": self.client,
            "method": self.method,
            "server": self.server,
        }
        for name in ("tool", "prompt", "uri"):
            if (value := getattr(self, name)) is not None:
                record[name] = value
        if self.arguments_digest is not None:
            record["argumentsDigest"] = self.arguments_digest
        if self.arguments_json is not None:
            record["arguments"] = json.loads(self.arguments_json)
        record.update(
            outcome=self.outcome.value,
            errorType=self.error_type,
            reason=self.reason,
            durationMs=self.duration_ms,
            traceId=self.trace_id,
            replica=self.replica,
        )
        return record

    def line(self) -> str:
        """One JSON line (no newline)."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))


def current_trace_id() -> str | None:
    """The trace id of the current OpenTelemetry span (the SDK's server span of the request),
    as 32 hex digits; None when nothing is traced."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


class _Settings:
    """What a reload may change: which arguments are kept, and how they are scrubbed.
    Immutable; replaced whole."""

    def __init__(self, keys: AuditKeys, secrets: Iterable[str]) -> None:
        self.everything = keys.arguments is True
        self.patterns = frozenset(keys.arguments) if isinstance(keys.arguments, list) else frozenset()
        self.scrubber = Scrubber(secrets, keys.redact)

    def keeps_arguments(self, event: AuditEvent) -> bool:
        if self.everything:
            return True
        if not self.patterns or event.server is None:
            return False
        name = event.tool or event.prompt
        candidates = {"*", event.server, f"{event.server}/*"}
        if name is not None:
            candidates.add(f"{event.server}/{name}")
        return not self.patterns.isdisjoint(candidates)


class Audit:
    """The gateway's audit: `submit` from the loop (never blocks), `recent` from any thread.

    ``replica``: this replica's id in a cluster. ``secrets``: values to withhold beyond the
    configuration's (the static bearer token, for one). ``stdout``: where ``"file": "-"``
    writes (the process's stdout unless a test gives its own).
    """

    def __init__(
        self,
        keys: AuditKeys,
        *,
        secrets: Iterable[str] = (),
        replica: str | None = None,
        stdout: TextIO | None = None,
    ) -> None:
        self._extra = tuple(secrets)
        self._settings = _Settings(keys, self._extra)
        self._replica = replica
        self._file = keys.file
        self._sink: AuditSink[AuditEvent, AuditRecord] = AuditSink(
            keys.file, keep=keys.keep, finish=self._finish, stdout=stdout
        )

    @classmethod
    def of_config(
        cls,
        config: RuntimeConfig,
        *,
        secrets: Iterable[str] = (),
        replica: str | None = None,
        stdout: TextIO | None = None,
    ) -> Audit:
        """The audit ``config`` asks for (``access.audit``), withholding its servers' secrets."""
        audit = cls(config.access.audit, secrets=secrets, replica=replica, stdout=stdout)
        audit.adopt(config)
        return audit

    def start(self) -> Audit:
        """Open the file (on the caller's thread: before serving) and start the writer."""
        self._sink.start()
        return self

    def close(self) -> None:
        """Write what is queued and stop the writer."""
        self._sink.close()

    def __enter__(self) -> Audit:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def adopt(self, config: RuntimeConfig) -> None:
        """Audit as ``config`` says from now on (a reload; any thread). The file stays the one
        the gateway started with: another one needs a restart."""
        keys = config.access.audit
        if keys.file != self._file:
            logger.warning(
                "audit: the file changed to %r; the gateway keeps %r until restarted", keys.file, self._file
            )
        secrets = [secret for server in config.servers.values() for secret in config_secrets(server)]
        self._settings = _Settings(keys, [*secrets, *self._extra])

    def submit(self, event: AuditEvent) -> None:
        """Record ``event``: queued for the writer at once, or counted as dropped if the queue
        is full (`dropped`). On the gateway's loop."""
        self._sink.submit(event)

    def recent(self, limit: int | None = None) -> tuple[AuditRecord, ...]:
        """The last records, oldest first (at most ``limit``)."""
        return self._sink.recent(limit)

    @property
    def replica(self) -> str | None:
        """This replica's id in a cluster (None: a gateway of its own)."""
        return self._replica

    @property
    def dropped(self) -> int:
        """Records not written because the writer fell behind."""
        return self._sink.dropped

    def wait_written(self, timeout: float) -> bool:
        """Whether everything submitted so far was written within ``timeout`` (tests, shutdown)."""
        return self._sink.wait_written(timeout)

    # ---- the writer's thread ----------------------------------------------------------------

    def _finish(self, event: AuditEvent) -> AuditRecord:
        settings = self._settings
        arguments = event.arguments
        kept = None
        if arguments is not None and settings.keeps_arguments(event):
            kept = json.dumps(settings.scrubber.arguments(arguments), ensure_ascii=False, default=repr)
        when = datetime.datetime.fromtimestamp(event.started, tz=datetime.UTC)
        scrubber = settings.scrubber
        # What the client named is its own text too: a secret sent as a name is withheld.
        return AuditRecord(
            time=when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            subject=event.who.subject,
            issuer=event.who.issuer,
            client=event.who.client_id,
            method=scrubber.text(event.method),
            server=event.server,
            tool=scrubber.text(event.tool) if event.tool is not None else None,
            prompt=scrubber.text(event.prompt) if event.prompt is not None else None,
            uri=scrubber.uri(event.uri) if event.uri is not None else None,
            arguments_digest=digest(arguments) if arguments is not None else None,
            arguments_json=kept,
            outcome=event.outcome,
            error_type=event.error_type.value if event.error_type is not None else None,
            reason=event.reason,
            duration_ms=round(event.duration * 1000, 3),
            trace_id=event.trace_id,
            replica=self._replica,
        )
