"""`Verdict`: what the gate decided for one request, and the rules that decided it.

Immutable values: made on the gateway's loop, read on any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ALLOWED", "HIDDEN", "Decision", "Verdict"]


class Decision(StrEnum):
    """What becomes of a request."""

    ALLOW = "allow"
    HIDE = "hide"
    """Denied, and the principal may not see what it names: answer as if it did not exist."""
    REFUSE = "refuse"
    """Denied, but the principal may see what it names: say which rules refused it."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision, the ids of the rules that made it (``@id``, else Cedar's ``policyN``) and,
    for a refusal, why."""

    decision: Decision
    rules: tuple[str, ...] = ()
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW

    @property
    def message(self) -> str:
        """What a refused client is told: ``refused by policy <ids>[: why]``."""
        named = f"refused by policy {', '.join(self.rules)}" if self.rules else "refused by policy"
        return f"{named}: {self.reason}" if self.reason else named


ALLOWED = Verdict(Decision.ALLOW)
HIDDEN = Verdict(Decision.HIDE)
