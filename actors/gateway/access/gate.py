"""`AccessGate`: the one gate every request to the gateway passes, at three fixed points.

- `admit`, before a request is served: the `Use` it would make, decided for its `Principal`
  (the policy's `Verdict`). The handler answers a hidden use as it answers what does not exist
  (an unknown tool, prompt or resource), and a refused one with the verdict's message
  (`refused_call` for a tool call, `refusal_error` for the rest).
- `served`, after it was served, whatever the outcome.
- `visible`, on every list and search: only what the principal may see.

Handlers use `guard` (an async context manager) for the first two: it admits, and tells
`served` when the request is done, with the exception it ended with, if any.

Without an ``access.policy`` every use is allowed and every item visible: one branch per
request. The policy is an immutable snapshot, replaced whole by `adopt` (a reload, on the
reloader's thread): each decision reads it once, so a request is decided by the old policy or
the new, never half of each.

Owned by the gateway's loop (its handlers call it); `adopt` from the reloader's thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from actors.gateway.access.audit_request import current_note
from actors.gateway.access.limits import RateLimits, limited_error
from actors.gateway.access.principal import AuthMode, Principal
from actors.gateway.access.use import CedarAction, Use
from actors.gateway.access.verdict import ALLOWED, Decision, Verdict

if TYPE_CHECKING:
    from actors.gateway.access.policy import Policy

__all__ = ["POLICY_REFUSED", "AccessGate", "Admission", "refusal_error", "refused_call"]

_T = TypeVar("_T")

POLICY_REFUSED = -32003
"""The JSON-RPC error code of a request the policy refused (what the principal may see, but not
use so): in the range JSON-RPC leaves to implementations. A tool call is refused with a tool
error instead (`refused_call`), which the model reads."""

_INLINE = 32
"""A list of up to this many items is filtered on the loop; a longer one on a worker thread
(Cedar's decisions cost tens of microseconds each until they are cached)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A request at the gate: who, what, and what the gate decided."""

    principal: Principal
    use: Use
    verdict: Verdict

    @property
    def allowed(self) -> bool:
        return self.verdict.allowed

    @property
    def hidden(self) -> bool:
        """Denied, of what the principal cannot see: answer as if it did not exist."""
        return self.verdict.decision is Decision.HIDE

    @property
    def refused(self) -> bool:
        """Denied, of what the principal can see: answer with the verdict's message."""
        return self.verdict.decision is Decision.REFUSE


class AccessGate:
    """The gate: `admit`, `served`, `visible`, and `guard` for handlers.

    Runs on the gateway's loop; `adopt` replaces the policy from any thread.
    """

    def __init__(self, policy: Policy | None = None, limits: RateLimits | None = None) -> None:
        self._policy = policy
        self._limits = limits
        """Tool calls over their rate are refused here (`actors.gateway.access.limits`)."""

    @property
    def policy(self) -> Policy | None:
        """The policy in force (None: everything is visible and usable)."""
        return self._policy

    @property
    def polices(self) -> bool:
        """Whether a policy is in force: what does not exist is then answered without hints,
        so that it reads as what the principal may not see."""
        return self._policy is not None

    def adopt(self, policy: Policy | None) -> bool:
        """Decide by ``policy`` from now on (a reload); whether that changes anything."""
        before, self._policy = self._policy, policy
        if before is None or policy is None:
            return before is not policy
        return before.digest != policy.digest

    async def admit(self, principal: Principal, use: Use) -> Admission:
        """Whether ``principal`` may make ``use`` now. A tool call over its rate limit raises
        the JSON-RPC error that says when to retry (`limited_error`)."""
        policy = self._policy
        if policy is None or _followed_for_clients(principal, use):
            admission = Admission(principal, use, ALLOWED)
        else:
            admission = Admission(principal, use, policy.decide(principal, use))
        # The request's audit record (`actors.gateway.access.audit_request`) says what it used.
        note = current_note()
        if note is not None:
            note.use = use
            note.denied = None if admission.allowed else admission.verdict
        forwarded = note is not None and note.forwarded  # counted at the replica it came to
        # A hidden call is counted as an allowed one: a call of a tool that does not exist is,
        # and only a limit that refuses both alike keeps a hidden tool from showing.
        limited = admission.allowed or admission.hidden
        if limited and self._limits is not None and use.action is CedarAction.CALL and not forwarded:
            decision = await self._limits.admit_tool(principal, use.server, use.name)
            if not decision.allowed:
                if note is not None and decision.key is not None:
                    note.limited = decision.key.scope.value
                raise limited_error(decision, use.entity_id)
        return admission

    def permits(self, principal: Principal, use: Use) -> bool:
        """Whether ``principal`` may make ``use``: a decision only, for a filter (nothing is
        admitted, limited or audited), such as the resources a listen stream may follow."""
        policy = self._policy
        return (
            policy is None or _followed_for_clients(principal, use) or policy.decide(principal, use).allowed
        )

    def served(self, admission: Admission, error: BaseException | None = None) -> None:
        """``admission``'s request was served (``error``: the exception it ended with)."""

    def guard(self, principal: Principal, use: Use) -> Guarded:
        """``async with gate.guard(principal, use) as admission:`` admits the request, and says
        it was `served` when the block ends."""
        return Guarded(self, principal, use)

    async def visible(
        self, principal: Principal, items: Sequence[_T], use_of: Callable[[_T], Use]
    ) -> list[_T]:
        """The ``items`` ``principal`` may see (``use_of``: the use an item would be asked for)."""
        policy = self._policy
        if policy is None:
            return list(items)
        uses = [use_of(item) for item in items]
        if len(uses) > _INLINE:
            seen = await asyncio.to_thread(policy.visible, principal, uses)
        else:
            seen = policy.visible(principal, uses)
        return [item for item, ok in zip(items, seen, strict=True) if ok]


class Guarded:
    """One request at the gate, as an async context manager (`AccessGate.guard`)."""

    __slots__ = ("_admission", "_gate", "_principal", "_use")

    def __init__(self, gate: AccessGate, principal: Principal, use: Use) -> None:
        self._gate = gate
        self._principal = principal
        self._use = use
        self._admission: Admission | None = None

    async def __aenter__(self) -> Admission:
        self._admission = await self._gate.admit(self._principal, self._use)
        return self._admission

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._admission is not None:
            self._gate.served(self._admission, error)


def _followed_for_clients(principal: Principal, use: Use) -> bool:
    """A replica following a resource at its owner for its own clients (`actors.cluster`): it
    names no caller, and each of its clients was decided where it subscribed."""
    return principal.mode is AuthMode.REPLICA and use.action is CedarAction.SUBSCRIBE


def refused_call(admission: Admission) -> types.CallToolResult:
    """A refused tool call's answer: a tool error that names the rules."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=admission.verdict.message)], is_error=True
    )


def refusal_error(admission: Admission) -> MCPError:
    """A refused read, subscription, prompt or completion: a JSON-RPC error naming the rules."""
    return MCPError(POLICY_REFUSED, admission.verdict.message)
