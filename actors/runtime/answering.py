"""`AnsweringActor`: a Pykka actor that leaves no reply slot it was handed unanswered."""

from __future__ import annotations

import logging
import queue
from typing import Any

import pykka

from actors.runtime.messages import refuse
from actors.tools import ErrorType

__all__ = ["AnsweringActor"]

logger = logging.getLogger(__name__)


class _Inbox(queue.SimpleQueue[Any]):
    """An actor's inbox: the C queue, so a tell and the wake-up it causes cost a fraction of
    Pykka's default `queue.Queue` (whose Python condition variables take and drop locks, and
    the GIL, several times per message). Pykka needs only put, get and empty."""

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        # A Python frame named ``get`` on top while the actor waits: stack samplers (the test
        # harness's stall reports) see it waiting, as with `queue.Queue`.
        return super().get(block, timeout)


class AnsweringActor(pykka.ThreadingActor):
    """Answers the requests still in its inbox when it stops, as ``cancelled``.

    Pykka fails only ``ask`` envelopes left behind by a stop; the reply slots that our messages
    carry (``tell`` plus ``msg.reply``) would otherwise wait out their callers' whole timeout.
    """

    use_daemon_thread = True

    @staticmethod
    def _create_actor_inbox() -> _Inbox:
        return _Inbox()

    stopped_reason = "the actor stopped"
    """What queued requests are told when the actor stops before handling them."""

    def _actor_loop_teardown(self) -> None:
        # Read what is queued before Pykka drains it: its own drain answers only `ask`s.
        left: list[Any] = []
        while not self.actor_inbox.empty():
            envelope = self.actor_inbox.get()
            left.append(envelope)
            refuse(envelope.message, ErrorType.CANCELLED, self.stopped_reason)
        for envelope in left:
            if envelope.reply_to is not None:
                self.actor_inbox.put(envelope)
        if left:
            logger.debug("%s: answered %d queued messages at stop", type(self).__name__, len(left))
        super()._actor_loop_teardown()
