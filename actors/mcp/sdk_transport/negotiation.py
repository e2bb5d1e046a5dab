"""Era negotiation: which protocol era a session speaks, the handshake era or 2026-07-28.

``ping`` only exists in handshake-era sessions, list changes on 2026-07-28 arrive on listen
streams, and ``auto`` mode may stall up to 10 s on servers that ignore unknown methods. So the
era that auto mode found is remembered per server (`actors.mcp.eras.EraMemo`) and a reconnect
pins it; a server that refuses its remembered era is tried in ``auto`` again (`PinRejected`).
A pinned 2026-07-28 session is confirmed with a real ``server/discover`` (the SDK adopts blind).

Owned by the event-loop thread; the memo it writes is shared by every transport of the process
(a plain dict, only ever touched on the loop).
"""

from __future__ import annotations

import logging

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from actors.mcp.eras import AUTO, MODERN_PROTOCOL, EraMemo, era_of
from actors.mcp.sdk_transport.failures import exc_text, is_connection_error
from actors.mcp.transport import StartRefused

__all__ = ["EraNegotiation", "PinRejected"]

logger = logging.getLogger(__name__)


class PinRejected(Exception):
    """The server refused the protocol era remembered for it; reconnect in ``auto`` mode."""


class EraNegotiation:
    """The era of one server: what to try, what a refusal means, what to remember."""

    def __init__(self, label: str, protocol: str, memo: EraMemo, memo_key: str) -> None:
        self._label = label
        self.protocol = protocol
        """What the configuration asks for: ``legacy``, ``auto`` or ``2026-07-28``."""
        self._memo = memo
        self._key = memo_key

    def modes(self) -> list[str]:
        """The SDK modes to try, in order (see `EraMemo.modes`)."""
        return self._memo.modes(self._key, self.protocol)

    async def confirm(self, client: Client, mode: str) -> None:
        """Confirm a pinned 2026-07-28 session with a real ``server/discover``.

        The SDK gives each ``server/discover`` a fixed 10 s; a server still starting on a slow
        machine answers later. Asked again until it answers: the connect timeout around the
        whole handshake is the bound that counts.
        """
        if mode != MODERN_PROTOCOL:
            return
        while True:
            try:
                raw = await client.session.send_discover(MODERN_PROTOCOL)
                break
            except MCPError as exc:
                if exc.code != types.REQUEST_TIMEOUT:
                    raise
                logger.info("%s: no answer to server/discover yet; asking again", self._label)
        client.session.adopt(types.DiscoverResult.model_validate(raw))

    def refusal(self, exc: MCPError, mode: str) -> Exception | None:
        """What a handshake error means for the era: try again in auto mode (`PinRejected`), or
        the server cannot speak the pinned era (`StartRefused`); None if neither."""
        if mode != AUTO and self.protocol == AUTO and not is_connection_error(exc):
            rejected = PinRejected()
            rejected.__cause__ = exc
            return rejected
        if self.protocol == MODERN_PROTOCOL and exc.code == types.METHOD_NOT_FOUND:
            return StartRefused(
                f"{self._label}: the server does not support protocol {MODERN_PROTOCOL} "
                f'(server/discover: {exc_text(exc)}); set "protocol": "auto" or "legacy"'
            )
        return None

    def learned(self, client: Client) -> str:
        """The era ``client`` negotiated, remembered if auto mode found it."""
        era = era_of(client.protocol_version)
        self._memo.learn(self._key, self.protocol, era)
        return era

    def retry_after(self, rejected: PinRejected, mode: str, *, last: bool, closing: bool) -> None:
        """``mode`` was refused: forget it, or raise ``ConnectionError`` if there is no retry."""
        if last:
            raise ConnectionError(
                f"{self._label}: handshake failed: {exc_text(rejected.__cause__)}"
            ) from rejected
        if closing:
            raise ConnectionError(f"{self._label}: closed during the handshake") from rejected
        logger.info(
            "%s: the server refused the remembered protocol %s (%s); discovering it again",
            self._label,
            mode,
            exc_text(rejected.__cause__),
        )
        self._memo.forget(self._key)

    async def set_log_level(self, client: Client, level: types.LoggingLevel, timeout: float | None) -> None:
        """Tell a handshake-era server the least severe log message to send; a refusal is logged."""
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
        try:
            with anyio.fail_after(timeout):
                # A request, not the SDK's set_logging_level: that warns on every call.
                await client.session.send_request(request, types.EmptyResult)
        except (MCPError, TimeoutError) as exc:
            logger.warning("%s: logging/setLevel %s failed: %s", self._label, level, exc_text(exc))
