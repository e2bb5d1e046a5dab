"""An MCP server that attacks its own boundary (issue 38, tests/sandbox/test_attacks.py).

Each tool attempts one crossing and answers what happened as one JSON object: ``ok`` (true:
the attempt got through, the boundary did not hold it), ``detail`` (what happened, in words),
``errno`` (the error's symbolic name, ``EACCES``, ``ENOENT`` ..., when it failed on one) and what
the attempt saw. A tool never raises: a failed attempt is an answer, not a server error; only
an attack that kills the process (``allocate`` past a memory limit) ends the server.

Run it as a script (``python tests/servers/attack_server.py``): the standard library and the
SDK only, so that a sandbox needs nothing of this repository but the file itself.

Tools: ``read_file``, ``write_file``, ``connect`` (TCP), ``resolve`` (getaddrinfo), ``dns_query``
(one UDP query to a named resolver), ``http_get`` (urllib, which honours ``HTTP(S)_PROXY``),
``fork_many``, ``allocate``, ``signal_pid``, ``ptrace_attach``, ``list_pids``,
``proc_root_read`` (``/proc/<pid>/root/<path>``), ``symlink_read``, ``mount_bind``, ``whoami``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("attack")

TEXT_LIMIT = 64 * 1024
"""Bytes of a file or an answer put into a result, at most."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_long]
_libc.ptrace.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.prctl.restype = ctypes.c_int

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PR_SET_PDEATHSIG = 1
WALL = 0x40000000
"""``__WALL`` for waitpid: wait for a traced process that is not a child."""

_names = itertools.count()


def _errno_name(number: int | None) -> str | None:
    return errno.errorcode.get(number, str(number)) if number else None


def failed(exc: BaseException, **seen: Any) -> dict[str, Any]:
    """The answer of an attempt that raised ``exc``."""
    number = getattr(exc, "errno", None)
    return {
        "ok": False,
        "detail": f"{type(exc).__name__}: {exc}",
        "errno": _errno_name(number if isinstance(number, int) else None),
        **seen,
    }


def _text(data: bytes) -> str:
    return data[:TEXT_LIMIT].decode("utf-8", errors="replace")


@server.tool()
def read_file(path: str) -> dict[str, Any]:
    """Read ``path`` (its first 64 KiB)."""
    try:
        with open(path, "rb") as file:
            data = file.read(TEXT_LIMIT)
    except OSError as exc:
        return failed(exc, path=path)
    return {"ok": True, "detail": f"read {len(data)} bytes of {path}", "path": path, "text": _text(data)}


@server.tool()
def write_file(path: str, text: str) -> dict[str, Any]:
    """Write ``text`` into ``path`` (created or replaced)."""
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as exc:
        return failed(exc, path=path)
    return {"ok": True, "detail": f"wrote {len(text)} characters into {path}", "path": path}


@server.tool()
def connect(host: str, port: int, send: str = "", timeout: float = 10.0) -> dict[str, Any]:
    """Open a TCP connection to ``host:port``, send ``send``, and read until the peer closes
    (or ``timeout`` passes)."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        return failed(exc, host=host, port=port)
    received = b""
    with sock:
        peer = sock.getpeername()
        try:
            if send:
                sock.sendall(send.encode())
            while len(received) < TEXT_LIMIT:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                received += chunk
        except OSError as exc:  # connected: a reset or a timeout while reading is still a crossing
            detail = f"connected to {peer}, then {type(exc).__name__}: {exc}"
        else:
            detail = f"connected to {peer}, read {len(received)} bytes"
    return {"ok": True, "detail": detail, "host": host, "port": port, "received": _text(received)}


@server.tool()
def resolve(name: str) -> dict[str, Any]:
    """Resolve ``name`` with getaddrinfo (what a DNS exfiltration needs)."""
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError as exc:
        return failed(exc, name=name, addresses=[])
    addresses = sorted({str(info[4][0]) for info in infos})
    return {"ok": bool(addresses), "detail": f"{name} is {addresses}", "name": name, "addresses": addresses}


def _dns_query(name: str) -> bytes:
    header = struct.pack("!HHHHHH", 0x4D43, 0x0100, 1, 0, 0, 0)  # id, recursion desired, 1 question
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.strip(".").split("."))
    return header + labels + b"\x00" + struct.pack("!HH", 1, 1)  # type A, class IN


@server.tool()
def dns_query(server_host: str, server_port: int, name: str, timeout: float = 10.0) -> dict[str, Any]:
    """Send one DNS query for ``name`` over UDP to ``server_host:server_port`` (a resolver of
    the attacker's) and wait for its answer: the name is what leaves."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.connect((server_host, server_port))
            sock.send(_dns_query(name))
            answer = sock.recv(4096)
    except OSError as exc:
        return failed(exc, name=name)
    return {"ok": True, "detail": f"the resolver answered {len(answer)} bytes", "name": name}


@server.tool()
def http_get(url: str, timeout: float = 20.0) -> dict[str, Any]:
    """GET ``url`` with urllib, through ``HTTP_PROXY``/``HTTPS_PROXY`` when they are set."""
    proxies = urllib.request.getproxies()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read(TEXT_LIMIT)
            status = response.status
    except urllib.error.HTTPError as exc:
        body = exc.read(TEXT_LIMIT) if exc.fp is not None else b""
        return failed(exc, url=url, status=exc.code, body=_text(body), proxies=proxies)
    except (OSError, ValueError) as exc:  # URLError is an OSError; its reason says why
        answer = failed(exc, url=url, status=None, proxies=proxies)
        reason = getattr(exc, "reason", None)
        if isinstance(reason, OSError):
            answer["errno"] = failed(reason)["errno"]
        return answer
    return {
        "ok": True,
        "detail": f"GET {url}: {status}",
        "url": url,
        "status": status,
        "body": _text(body),
        "proxies": proxies,
    }


def _hold(parent: int, seconds: float) -> None:
    """A forked child: die with the parent, else sleep until killed (or ``seconds`` pass)."""
    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == parent:
            time.sleep(seconds)
    finally:
        os._exit(0)


@server.tool()
def fork_many(count: int, hold_seconds: float = 300.0) -> dict[str, Any]:
    """Fork ``count`` children that sleep; report how many started and the first error, then
    kill and reap every one of them."""
    parent = os.getpid()
    children: list[int] = []
    error: dict[str, Any] | None = None
    for _ in range(count):
        try:
            pid = os.fork()
        except OSError as exc:
            error = failed(exc)
            break
        if pid == 0:
            _hold(parent, hold_seconds)
        children.append(pid)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    reaped = 0
    for pid in children:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
            reaped += 1
    detail = f"started {len(children)} of {count} children, reaped {reaped}"
    if error is not None:
        detail += f"; the first failure: {error['detail']}"
    return {
        "ok": error is None,
        "detail": detail,
        "started": len(children),
        "requested": count,
        "reaped": reaped,
        "errno": error["errno"] if error else None,
        "error": error["detail"] if error else None,
    }


@server.tool()
def allocate(mb: int, chunk_mb: int = 16) -> dict[str, Any]:
    """Allocate ``mb`` MiB and touch every page of it, ``chunk_mb`` at a time; then free it."""
    chunks: list[bytearray] = []
    allocated = 0
    try:
        while allocated < mb:
            size = min(chunk_mb, mb - allocated) * 1024 * 1024
            chunk = bytearray(size)
            chunk[::4096] = b"\x01" * len(range(0, size, 4096))  # touch every page: really resident
            chunks.append(chunk)
            allocated += size // (1024 * 1024)
    except MemoryError as exc:
        chunks.clear()
        return {**failed(exc), "detail": f"MemoryError after {allocated} MiB", "allocated_mb": allocated}
    chunks.clear()
    return {"ok": True, "detail": f"allocated and touched {allocated} MiB", "allocated_mb": allocated}


@server.tool()
def signal_pid(pid: int, sig: int) -> dict[str, Any]:
    """Send signal ``sig`` to ``pid``."""
    try:
        os.kill(pid, sig)
    except OSError as exc:
        return failed(exc, pid=pid, sig=sig)
    return {"ok": True, "detail": f"sent signal {sig} to {pid}", "pid": pid, "sig": sig}


@server.tool()
def ptrace_attach(pid: int) -> dict[str, Any]:
    """Attach to ``pid`` as a debugger would; on success stop it, and detach at once.

    PTRACE_SEIZE and PTRACE_INTERRUPT rather than PTRACE_ATTACH: the interrupt stops the one
    thread traced, where ATTACH's SIGSTOP would stop every thread of a threaded target (a test
    process) and leave the others stopped after the detach."""
    if _libc.ptrace(PTRACE_SEIZE, pid, None, 0) == -1:
        number = ctypes.get_errno()
        return {
            "ok": False,
            "detail": f"PTRACE_SEIZE {pid}: {os.strerror(number)}",
            "errno": _errno_name(number),
            "pid": pid,
        }
    stopped, resend = "not seen", 0
    try:
        _libc.ptrace(PTRACE_INTERRUPT, pid, None, 0)
        _, status = os.waitpid(pid, WALL)
        if os.WIFSTOPPED(status):
            stopped = f"stopped (signal {os.WSTOPSIG(status)}, event {status >> 16})"
            if status >> 16 == 0:  # a signal it was getting meanwhile: hand it back on detach
                resend = os.WSTOPSIG(status)
        else:
            stopped = f"status {status}"
    except OSError as exc:
        stopped = f"waitpid: {exc}"
    finally:
        detached = _libc.ptrace(PTRACE_DETACH, pid, None, resend)
    return {
        "ok": True,
        "detail": f"attached to {pid}, {stopped}, detached: {detached == 0}",
        "pid": pid,
        "detached": detached == 0,
    }


@server.tool()
def list_pids() -> dict[str, Any]:
    """The numeric entries of ``/proc`` (the processes this one can see) and their names."""
    try:
        pids = sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())
    except OSError as exc:
        return failed(exc, pids=[])
    names: dict[str, str] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            names[str(pid)] = Path(f"/proc/{pid}/comm").read_text().strip()
    return {"ok": True, "detail": f"{len(pids)} processes", "pids": pids, "names": names}


@server.tool()
def proc_root_read(path: str, pid: int = 1) -> dict[str, Any]:
    """Read ``/proc/<pid>/root/<path>``: the file as process ``pid`` sees it (process 1 is the
    host's init, unsandboxed; a host process's root is the host's whole file system)."""
    return read_file(f"/proc/{pid}/root/{path.lstrip('/')}")


@server.tool()
def symlink_read(link_dir: str, target: str) -> dict[str, Any]:
    """Make a symlink in ``link_dir`` (a folder this server may write) to ``target``, read
    through it, and remove it."""
    link = Path(link_dir, f".attack-link-{os.getpid()}-{next(_names)}")
    try:
        link.symlink_to(target)
    except OSError as exc:
        return {**failed(exc, link=str(link)), "detail": f"could not make the link: {exc}"}
    try:
        result = read_file(str(link))
    finally:
        with contextlib.suppress(OSError):
            link.unlink()
    return {**result, "link": str(link), "target": target}


# Run in a process of its own (one thread: unshare(CLONE_NEWUSER) needs that), so that a mount
# the attempt makes is in a mount namespace that ends with that process, never the host's.
_MOUNT_ATTEMPT = r"""
import ctypes, errno, json, os, sys
src, dst = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
steps = []
def call(what, result):
    number = ctypes.get_errno() if result != 0 else 0
    name = errno.errorcode.get(number, str(number)) if number else None
    steps.append({"step": what, "ok": result == 0, "errno": name})
    return result == 0
private = call("unshare(CLONE_NEWNS)", libc.unshare(CLONE_NEWNS))
if not private:
    private = call("unshare(CLONE_NEWUSER|CLONE_NEWNS)", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
# Never in a namespace that shares mounts with the host's: only in a private one, or where no
# unshare worked (a sandbox's own namespace, where it must be refused anyway).
mounted = False
if not private or call("make / private", libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)):
    mounted = call("mount --bind", libc.mount(src.encode(), dst.encode(), None, MS_BIND | MS_REC, None))
seen = None
if mounted:
    try:
        if os.path.isdir(dst):
            seen = sorted(os.listdir(dst))
        else:
            with open(dst, "rb") as file:
                seen = file.read(65536).decode("utf-8", "replace")
    except OSError as exc:
        seen = "unreadable: %s" % exc
print(json.dumps({"mounted": mounted, "steps": steps, "seen": seen}))
"""


@server.tool()
def mount_bind(src: str, dst: str) -> dict[str, Any]:
    """Bind-mount ``src`` onto ``dst`` (made if missing: a folder for a folder, else a file) in
    a child process: first in a new mount namespace (and a new user namespace if need be), and
    read what appears at ``dst``; every step's error is reported."""
    made = False
    try:
        if not os.path.lexists(dst):
            if os.path.isdir(src):
                os.mkdir(dst)
            else:
                Path(dst).touch()
            made = True
        run = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _MOUNT_ATTEMPT, src, dst],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return failed(exc, src=src, dst=dst)
    finally:
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(dst) if os.path.isdir(dst) else os.unlink(dst)
    try:
        outcome = json.loads(run.stdout)
    except ValueError:
        return {"ok": False, "detail": f"the attempt exited {run.returncode}: {run.stderr[-2000:]}"}
    steps = "; ".join(f"{s['step']}: {'done' if s['ok'] else s['errno']}" for s in outcome["steps"])
    return {
        "ok": bool(outcome["mounted"]) and outcome["seen"] is not None,
        "detail": steps,
        "src": src,
        "dst": dst,
        **outcome,
    }


def _status_fields(*names: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in names:
                fields[key] = value.strip()
    return fields


@server.tool()
def whoami() -> dict[str, Any]:
    """Who and where this process is: pid, uid, cwd, HOME, the names of its environment
    variables, hostname, namespaces, capabilities."""
    namespaces: dict[str, str] = {}
    for kind in ("pid", "net", "mnt", "ipc", "uts", "user", "cgroup"):
        with contextlib.suppress(OSError):
            namespaces[kind] = os.readlink(f"/proc/self/ns/{kind}")
    try:
        cwd = os.getcwd()
    except OSError as exc:
        cwd = f"unknown: {exc}"
    return {
        "ok": True,
        "detail": f"pid {os.getpid()}, uid {os.getuid()}, cwd {cwd}",
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "cwd": cwd,
        "home": os.environ.get("HOME"),
        "env": sorted(os.environ),
        "hostname": socket.gethostname(),
        "namespaces": namespaces,
        "status": _status_fields("CapEff", "NoNewPrivs", "Seccomp"),
        "executable": sys.executable,
    }


if __name__ == "__main__":
    server.run("stdio")
