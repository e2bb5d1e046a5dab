"""`Pipeline`: a request the gateway forwards, run through named stages over one context.

A ``tools/call`` that reaches a backend passes the same decisions in the same order: the gate
(who may use what), tasks (held by the gateway, or started at the backend), input rounds, and
the send. Each is a `Stage`: it reads the `Forwarded` request, and either answers it or hands
it to the next stage. The handler builds the context once and runs the pipeline; a new
decision is a new stage, not another branch in the handler. Runs on the gateway's loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from actors.gateway.routing import Serving

__all__ = ["Forwarded", "Next", "Pipeline", "Stage"]

_A = TypeVar("_A")


@dataclass(frozen=True, slots=True)
class Forwarded:
    """One request a client sent, as the stages see it: its method, the name the client used
    (``external``), the backend's ``namespace`` and ``name`` for it, its arguments, the served
    configuration it was resolved against, and the client's request context (``ctx``)."""

    ctx: Any
    method: str
    external: str
    namespace: str
    name: str
    arguments: dict[str, Any]
    serving: Serving


Next = Callable[[Forwarded], Awaitable[_A]]
"""The rest of the pipeline, from a stage's point of view."""

Stage = Callable[[Forwarded, Next[_A]], Awaitable[_A]]
"""``stage(request, next)``: answer ``request``, or ``await next(request)``."""


class Pipeline(Generic[_A]):
    """``stages`` in order, then ``last`` (the stage that always answers: the send)."""

    def __init__(self, stages: Sequence[tuple[str, Stage[_A]]], last: Callable[[Forwarded], Awaitable[_A]]):
        self.names = tuple(name for name, _ in stages)
        """The stages' names, in order (what the docs and a test read)."""
        run = last
        for _, stage in reversed(stages):
            run = _bound(stage, run)
        self._run = run

    async def __call__(self, request: Forwarded) -> _A:
        return await self._run(request)


def _bound(
    stage: Stage[_A], rest: Callable[[Forwarded], Awaitable[_A]]
) -> Callable[[Forwarded], Awaitable[_A]]:
    async def run(request: Forwarded) -> _A:
        return await stage(request, rest)

    return run
