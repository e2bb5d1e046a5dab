"""The sandbox's end of the egress proxy: a loopback TCP port relayed to the route's Unix socket.

Usage: ``python -I -S bridge.py --listen PORT --unix PATH -- COMMAND [ARGS...]``

A sandboxed server lives in a network namespace that has only loopback. The bridge listens on
``127.0.0.1:PORT`` (and ``[::1]:PORT`` where IPv6 loopback is up), then forks: the child
relays each connection accepted there to a new connection on the Unix socket at ``PATH``
(its `EgressRoute`, bound into the sandbox); the parent ``execvp``s ``COMMAND``, so the server
keeps the bridge's pid, stdin and stdout. Point the server's ``HTTP_PROXY``/``HTTPS_PROXY`` at
``http://127.0.0.1:PORT``.

The child never holds the server's stdin or stdout (both become ``/dev/null``; stderr stays,
for its few diagnostics), and it dies with the server: the kernel sends it SIGKILL when its
parent exits (``PR_SET_PDEATHSIG``), and it also ends when its parent changes. Exit codes as
``actors.mcp.pdeathsig``: 127 the command is not found, 126 it cannot run; 2 bad usage, 1 the
port cannot be bound.

Standard library only: it runs under ``python -I -S``, possibly with no site-packages.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import NoReturn

__all__ = ["SCRIPT", "SocketRelay", "bridge_argv", "main", "open_listeners", "set_parent_death_signal"]

SCRIPT = os.path.abspath(__file__)
"""This file: what ``python -I -S`` runs."""

_USAGE = "usage: bridge.py --listen PORT --unix PATH -- COMMAND [ARGS...]\n"
_EXIT_USAGE = 2
_EXIT_CANNOT_LISTEN = 1
_EXIT_NOT_FOUND = 127
_EXIT_CANNOT_RUN = 126
_PR_SET_PDEATHSIG = 1
_CHUNK = 64 * 1024
_CONNECT_TIMEOUT = 10.0
_JOIN_TIMEOUT = 5.0
_LINGER = 2.0
_POLL = 1.0
"""Seconds between the accept loop's checks that its parent still lives."""
# What an HTTP client gets when the route is gone: a reason, not a bare reset.
_UNREACHABLE_TEXT = b"the sandbox's egress proxy is not reachable\n"
_UNREACHABLE = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_UNREACHABLE_TEXT), _UNREACHABLE_TEXT)
)
_NO_IPV6_LOOPBACK = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT)


def bridge_argv(port: int, unix_path: str, command: Sequence[str], python: str = sys.executable) -> list[str]:
    """The command line that runs ``command`` behind a bridge on ``port`` to ``unix_path``."""
    return [python, "-I", "-S", SCRIPT, "--listen", str(port), "--unix", unix_path, "--", *command]


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask for ``sig`` when the parent thread exits; False where the platform cannot."""
    if not sys.platform.startswith("linux"):
        return False
    # The running process's own symbols include libc's prctl; find_library would spawn ldconfig.
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0)


def open_listeners(port: int) -> list[socket.socket]:
    """Listening sockets on ``127.0.0.1:port`` and, where IPv6 loopback is up, ``[::1]:port``."""
    listeners = [_listen(socket.AF_INET, ("127.0.0.1", port))]
    try:
        listeners.append(_listen(socket.AF_INET6, ("::1", port)))
    except OSError as exc:
        if exc.errno not in _NO_IPV6_LOOPBACK:  # in use, say: a client could reach another
            listeners[0].close()
            raise
    return listeners


def _listen(family: int, address: tuple[str, int]) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


class _Pair:
    """One relayed connection: its two sockets, closed by the second pump to end."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.sockets = (client, upstream)
        self.running = 2
        self.lock = threading.Lock()

    def shut(self) -> None:
        """End both directions at once (the pumps then end); from any thread."""
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class SocketRelay:
    """Relays each connection accepted on ``listeners`` to a new connection to the Unix socket
    at ``unix_path``, a thread per direction, passing each end on as a half-close.

    The thread that runs `serve` owns the listeners; each relayed connection is owned by its
    two pump threads, the last of which closes it; the set of open connections is guarded by a
    lock. `close` may be called from any thread.
    """

    def __init__(self, listeners: Sequence[socket.socket], unix_path: str) -> None:
        self._listeners = list(listeners)
        self._unix_path = unix_path
        self._lock = threading.Lock()
        self._pairs: set[_Pair] = set()
        self._threads: set[threading.Thread] = set()
        self._closed = False
        self._wake_read, self._wake_write = socket.socketpair()

    def serve(self, keep_going: Callable[[], bool] = lambda: True, poll: float = _POLL) -> None:
        """Accept and relay until `close` or until ``keep_going()`` (asked every ``poll``
        seconds) is false; then close the listeners and end every relayed connection."""
        try:
            while not self._closed and keep_going():
                ready, _, _ = select.select([*self._listeners, self._wake_read], [], [], poll)
                for listener in ready:
                    if listener is not self._wake_read:
                        self._accept(listener)
        finally:
            self._shut_down()

    def close(self) -> None:
        """Make `serve` return, ending every relayed connection. Idempotent."""
        with self._lock:
            self._closed = True
            pairs = list(self._pairs)
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")
        for pair in pairs:
            pair.shut()

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                time.sleep(0.1)  # out of resources: let connections end rather than spin
            return
        self._start(self._connect, client)

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=self._run, args=(target, *args), name="bridge-relay", daemon=True)
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def _run(self, target: Callable[..., None], *args: object) -> None:
        try:
            target(*args)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _connect(self, client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.settimeout(_CONNECT_TIMEOUT)
            upstream.connect(self._unix_path)
            upstream.settimeout(None)
        except OSError as exc:
            upstream.close()
            sys.stderr.write(f"bridge: cannot reach the egress proxy at {self._unix_path}: {exc}\n")
            _answer_and_close(client, _UNREACHABLE)
            return
        pair = _Pair(client, upstream)
        with self._lock:
            closed = self._closed
            if not closed:
                self._pairs.add(pair)
        if closed:
            client.close()
            upstream.close()
            return
        self._start(self._pump, upstream, client, pair)
        self._pump(client, upstream, pair)

    def _pump(self, source: socket.socket, sink: socket.socket, pair: _Pair) -> None:
        try:
            while data := source.recv(_CHUNK):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pair.shut()  # one side broke: the other direction ends too
        finally:
            with pair.lock:
                pair.running -= 1
                last = pair.running == 0
            if last:
                for sock in pair.sockets:
                    sock.close()
                with self._lock:
                    self._pairs.discard(pair)

    def _shut_down(self) -> None:
        self.close()
        for listener in self._listeners:
            listener.close()
        deadline = time.monotonic() + _JOIN_TIMEOUT
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._wake_read.close()
        self._wake_write.close()


def _answer_and_close(sock: socket.socket, answer: bytes) -> None:
    """Send ``answer``, then read what the client still sends before closing: closing with
    unread data resets the connection, and the client might lose the answer."""
    with contextlib.suppress(OSError):
        sock.sendall(answer)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(_LINGER)
        deadline = time.monotonic() + _LINGER
        while time.monotonic() < deadline and sock.recv(_CHUNK):
            pass
    sock.close()


def _parse(args: list[str]) -> tuple[int, str, list[str]]:
    """PORT, PATH and COMMAND from the arguments; ``ValueError`` if they are not that."""
    if "--" not in args:
        raise ValueError("missing '--' before the command")
    split = args.index("--")
    options, command = args[:split], args[split + 1 :]
    values: dict[str, str] = {}
    while options:
        name = options.pop(0)
        name, equals, value = name.partition("=")
        if name not in ("--listen", "--unix") or name in values:
            raise ValueError(f"unexpected argument {name!r}")
        if not equals:
            if not options:
                raise ValueError(f"{name} needs a value")
            value = options.pop(0)
        values[name] = value
    if set(values) != {"--listen", "--unix"} or not command:
        raise ValueError("--listen, --unix and a command are all needed")
    port_text = values["--listen"]
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"--listen takes a port from 1 to 65535, not {port_text!r}")
    return int(port_text), values["--unix"], command


def _relay_until_orphaned(listeners: list[socket.socket], unix_path: str, parent: int) -> NoReturn:
    """The forked child: relay while the parent (the server) lives; never returns."""
    code = 0
    try:
        # Never hold the server's pipes: its host reads stdout to its end.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the server's to handle
        set_parent_death_signal()
        # The parent may have gone between the fork and the prctl: then no signal would come.
        if os.getppid() == parent:
            SocketRelay(listeners, unix_path).serve(lambda: os.getppid() == parent)
    except BaseException as exc:
        code = 1
        with contextlib.suppress(Exception):
            sys.stderr.write(f"bridge: the relay failed: {exc!r}\n")
            sys.stderr.flush()
    finally:
        os._exit(code)  # never the parent's atexit handlers or buffers


def main(argv: list[str] | None = None) -> int:
    """Listen, fork the relay, exec the command; return only on failure."""
    try:
        port, unix_path, command = _parse(list(sys.argv[1:] if argv is None else argv))
    except ValueError as exc:
        sys.stderr.write(f"bridge: {exc}\n{_USAGE}")
        return _EXIT_USAGE
    try:
        listeners = open_listeners(port)
    except OSError as exc:
        sys.stderr.write(f"bridge: cannot listen on port {port}: {exc.strerror or exc}\n")
        return _EXIT_CANNOT_LISTEN
    parent = os.getpid()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        _relay_until_orphaned(listeners, unix_path, parent)
    for listener in listeners:
        listener.close()
    # Python ignores these; an exec keeps ignored signals, and the server expects the defaults.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except FileNotFoundError:
        sys.stderr.write(f"command not found: {command[0]}\n")
        code = _EXIT_NOT_FOUND
    except OSError as exc:
        sys.stderr.write(f"cannot run {command[0]}: {exc.strerror or exc}\n")
        code = _EXIT_CANNOT_RUN
    # No server: end the relay now, rather than leave it to the death signal.
    with contextlib.suppress(OSError):
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    return code


if __name__ == "__main__":
    sys.exit(main())
