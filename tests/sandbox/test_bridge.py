"""The bridge as a real process (without bubblewrap): a command behind it reaches the egress
proxy through a loopback port, keeps the pid and its pipes, and takes the relay with it."""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

from actors.sandbox.bridge import SocketRelay, bridge_argv
from actors.sandbox.egress import EgressProxy
from actors.testing import procfs
from tests.conftest import wait_until
from tests.sandbox.test_egress import (
    TIMEOUT,
    EchoServer,
    OriginServer,
    assert_ended,
    echo,
    folder,
    open_route,
    origin,
    proxy,
    read_head,
    read_to_end,
)

__all__ = ["echo", "folder", "origin", "proxy"]  # fixtures shared with test_egress

# The command behind the bridge: a plain request through urllib's proxy support, a tunnel by
# hand, then it waits for a line on stdin (its pipe is still its own) and exits 3.
COMMAND = r"""
import json, os, socket, sys, urllib.request
port, origin, echo = map(int, sys.argv[1:4])
proxy = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"})
body = urllib.request.build_opener(proxy).open(f"http://127.0.0.1:{origin}/bridged", timeout=30).read()
with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
    s.sendall(f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    s.sendall(b"tunnelled")
    s.shutdown(socket.SHUT_WR)
    echoed = b""
    while chunk := s.recv(100):
        echoed += chunk
result = {"pid": os.getpid(), "body": body.decode(), "head": head.decode(), "echoed": echoed.decode()}
print(json.dumps(result), flush=True)
sys.stdin.readline()
sys.exit(3)
"""


def free_port() -> int:
    """A loopback port free on 127.0.0.1 and on [::1] (where there is IPv6 loopback)."""
    for _ in range(50):
        with socket.socket() as v4:
            v4.bind(("127.0.0.1", 0))
            port = int(v4.getsockname()[1])
            try:
                with socket.socket(socket.AF_INET6) as v6:
                    v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    v6.bind(("::1", port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    continue
            return port
    raise AssertionError("no free loopback port")


def read_line(stream: IO[bytes]) -> bytes:
    """One line of a child's output, waiting at most `TIMEOUT` for it to begin."""
    ready, _, _ = select.select([stream], [], [], TIMEOUT)
    assert ready, f"no output within {TIMEOUT}s"
    return stream.readline()


@contextmanager
def running(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` as a child process with pipes; killed and reaped if the test leaves it running."""
    env = {"PATH": os.environ.get("PATH", os.defpath)}  # no proxy variables of this host
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=TIMEOUT)


def test_a_command_behind_the_bridge_reaches_allowed_hosts_and_takes_the_relay_with_it(
    proxy: EgressProxy, folder: Path, origin: OriginServer, echo: EchoServer
) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{origin.port}", f"127.0.0.1:{echo.port}")
    port = free_port()
    command = [sys.executable, "-c", COMMAND, str(port), str(origin.port), str(echo.port)]
    with running(bridge_argv(port, str(route.socket_path), command)) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        line = read_line(proc.stdout)
        assert line, proc.communicate(timeout=TIMEOUT)[1].decode()
        result = json.loads(line)
        assert result["pid"] == proc.pid  # the command was exec'd: the bridge's pid is its own
        assert json.loads(result["body"])["path"] == "/bridged"
        assert result["head"].startswith("HTTP/1.1 200")
        assert result["echoed"] == "tunnelled"
        (relay,) = procfs.child_pids(proc.pid)
        assert procfs.is_alive(relay)
        # The relay holds none of the server's pipes.
        assert os.readlink(f"/proc/{relay}/fd/0") == "/dev/null"
        assert os.readlink(f"/proc/{relay}/fd/1") == "/dev/null"
        proc.stdin.write(b"done\n")
        proc.stdin.flush()
        assert proc.wait(TIMEOUT) == 3
        assert wait_until(lambda: not procfs.is_alive(relay), TIMEOUT), (
            f"the relay {relay} outlived its server"
        )
    assert route.connections == 2
    assert route.denials == ()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)


def test_a_denied_host_is_refused_through_the_bridge(proxy: EgressProxy, folder: Path) -> None:
    route = open_route(proxy, folder, "example.com:443")
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "import socket, sys\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=30)\n"
        "s.sendall(b'CONNECT exfil.attacker.invalid:443 HTTP/1.1\\r\\n\\r\\n')\n"
        "data = b''\n"
        "while chunk := s.recv(4096):\n"
        "    data += chunk\n"
        "sys.stdout.write(data.decode())\n",
    ]
    with running(bridge_argv(port, str(route.socket_path), command)) as proc:
        out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err.decode()
    assert out.startswith(b"HTTP/1.1 403 Forbidden")
    assert b"exfil.attacker.invalid:443" in out
    assert [(d.namespace, d.host) for d in route.denials] == [("gh", "exfil.attacker.invalid")]


def test_the_command_gets_the_default_signal_dispositions(folder: Path) -> None:
    # Python ignores SIGPIPE and SIGXFSZ, and an exec keeps what is ignored.
    with running(bridge_argv(free_port(), str(folder / "none.sock"), ["cat", "/proc/self/status"])) as proc:
        out, _ = proc.communicate(timeout=TIMEOUT)
    (ignored,) = [
        int(line.split()[1], 16) for line in out.decode().splitlines() if line.startswith("SigIgn:")
    ]
    assert not ignored & (1 << (13 - 1)), "SIGPIPE is ignored"
    assert not ignored & (1 << (25 - 1)), "SIGXFSZ is ignored"


def test_a_command_that_is_not_found_exits_127_and_ends_the_relay(folder: Path) -> None:
    port = free_port()
    with running(bridge_argv(port, str(folder / "none.sock"), ["no-such-command-anywhere"])) as proc:
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 127
    assert b"command not found: no-such-command-anywhere" in err
    with pytest.raises(ConnectionRefusedError):  # the relay was killed and reaped before the exit
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)


def test_a_command_that_cannot_run_exits_126(folder: Path) -> None:
    with running(bridge_argv(free_port(), str(folder / "none.sock"), [str(folder)])) as proc:
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 126
    assert b"cannot run" in err


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--listen", "3128", "--unix", "/x"],
        ["--listen", "3128", "--unix", "/x", "--"],
        ["--listen", "0", "--unix", "/x", "--", "true"],
        ["--listen", "http", "--unix", "/x", "--", "true"],
        ["--unix", "/x", "--", "true"],
        ["--listen", "3128", "--unix", "/x", "--other", "--", "true"],
    ],
)
def test_bad_usage_exits_2(args: list[str]) -> None:
    argv = bridge_argv(1, "/x", ["true"])
    with running([*argv[: argv.index("--listen")], *args]) as proc:
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 2
    assert b"usage: bridge.py" in err


def test_a_port_in_use_exits_1(folder: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = int(busy.getsockname()[1])
        with running(bridge_argv(port, str(folder / "none.sock"), ["true"])) as proc:
            _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1
    assert f"cannot listen on port {port}".encode() in err


# -- the relay in this process -------------------------------------------------------------------


@contextmanager
def relay_to(path: Path) -> Iterator[tuple[SocketRelay, int]]:
    listener = socket.create_server(("127.0.0.1", 0))
    relay = SocketRelay([listener], str(path))
    thread = threading.Thread(target=relay.serve, name="test-relay")
    thread.start()
    try:
        yield relay, int(listener.getsockname()[1])
    finally:
        relay.close()
        thread.join(TIMEOUT)
        assert not thread.is_alive()


def test_the_relay_answers_502_when_the_route_is_gone(folder: Path) -> None:
    with (
        relay_to(folder / "gone.sock") as (_, port),
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock,
    ):
        sock.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
        status, _, body = read_head(sock)
        body += read_to_end(sock)
    assert status == 502
    assert body == b"the sandbox's egress proxy is not reachable\n"


def test_closing_the_relay_ends_its_connections(proxy: EgressProxy, folder: Path, echo: EchoServer) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{echo.port}")
    with (
        relay_to(route.socket_path) as (relay, port),
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock,
    ):
        sock.sendall(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\n\r\n".encode())
        status, _, _ = read_head(sock)
        assert status == 200
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
        relay.close()
        assert_ended(sock)
