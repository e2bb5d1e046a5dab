"""The client SSL context that HTTP and SSE transports share.

Building one costs 29-97 ms (it reads the system's CA certificates). httpx2 builds a fresh one
for every client it creates; a transport that let it would pay that on every connect, on the
event-loop thread that every server shares. `default_ssl_context` builds it once, on the thread
that first asks (call it from the caller's thread, or through a worker thread from the loop),
and hands out the same context afterwards: an ``SSLContext`` may be shared by many connections.
"""

from __future__ import annotations

import logging
import ssl
import threading

import httpx2

__all__ = ["default_ssl_context"]

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def default_ssl_context() -> ssl.SSLContext:
    """The process's client SSL context: httpx2's default (system CAs, ``SSL_CERT_FILE``/
    ``SSL_CERT_DIR`` honoured), built on first use and shared. Thread-safe; blocks the first
    caller while it builds."""
    global _context
    context = _context
    if context is not None:
        return context
    with _lock:
        if _context is None:
            _context = httpx2.create_ssl_context()
            logger.debug("built the default client SSL context on %s", threading.current_thread().name)
        return _context
