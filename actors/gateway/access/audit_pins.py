"""`PinAudit`: every change of a pinned definition recorded in the gateway's audit (`actors.pins`).

A tool (prompt, resource template) whose definition changed since it was pinned is a security
event a team wants on record beside the requests: held until approved (``pins/held``, outcome
``denied``), re-pinned in ``warn`` mode (``pins/repinned``), approved (``pins/approved``, here
or, as this gateway saw it, by ``mcp-actors approve`` or another replica). The record names the
server and the tool, prompt or template, and the changed properties as its reason; its subject
is the gateway itself (no client asked), and it holds no definition (a description is the
server's text). Handed to the audit on the runtime's news thread (`Audit.submit` never blocks).
"""

from __future__ import annotations

import time

from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who
from actors.pins import PinAction, PinEvent

__all__ = ["GATEWAY", "PinAudit"]

GATEWAY = Who("mcp-actors", mode="local")
"""Who an audit record of the gateway's own doing names."""


class PinAudit:
    """A listener of a runtime's pins (`actors.pins.PinBook.listen`) that audits each event."""

    def __init__(self, audit: Audit) -> None:
        self._audit = audit

    def __call__(self, event: PinEvent) -> None:
        drift = event.drift
        self._audit.submit(
            AuditEvent(
                who=GATEWAY,
                method=f"pins/{event.action.value}",
                outcome=Outcome.DENIED if event.action is PinAction.HELD else Outcome.OK,
                server=drift.namespace,
                tool=drift.name if drift.kind == "tools" else None,
                prompt=drift.name if drift.kind == "prompts" else None,
                uri=str(drift.seen.definition.get("uriTemplate")) if drift.kind == "templates" else None,
                reason="changed: " + (", ".join(drift.changed) or "definition"),
                started=time.time(),
            )
        )
