"""Servers of our own attack their boundary (issue 38): each attack twice, through `Runtime`.

Unsandboxed (``"sandbox"`` unset), the attack gets through: that is the runtime's measured
behaviour without a sandbox, and proves that each test can fail. Sandboxed (``"sandbox": true``,
or a profile), the same attack is refused or contained, the host and the other servers are
unharmed, and no process is left behind.

The attackers are ``tests/servers/attack_server.py`` (Python, the SDK's `MCPServer`) and
``tests/servers/attack_server.mjs`` (Node, ``@modelcontextprotocol/sdk`` from
tests/interop/node_modules); each tool answers ``{"ok": bool, "detail": str, "errno": ...}``,
``ok`` meaning the attempt got through.

The secrets are planted outside /tmp (a private /tmp is not what may hide them): under
``~/.cache/mcp-actors-tests/<unique>``, a fake ``.ssh/id_ed25519``, and the state folder
(``$MCP_ACTORS_STATE_DIR``) with another server's data folder and a token file in it; all
removed afterwards.

The sandboxed cases need bubblewrap: without it they fail (never skip) and say what to install.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actors import Runtime, ToolResult, load_config
from actors.testing import procfs
from tests.conftest import wait_until
from tests.harness import forkserver
from tests.sandbox.conftest import require_bubblewrap

ROOT = Path(__file__).resolve().parents[2]
ATTACK_PY = ROOT / "tests" / "servers" / "attack_server.py"
ATTACK_MJS = ROOT / "tests" / "servers" / "attack_server.mjs"
NODE_SDK = ROOT / "tests" / "interop" / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"

CALL_TIMEOUT = 120.0
"""Seconds for one attack (a start included) on a slow, busy machine."""
WAIT = 60.0
"""Seconds to wait for something the host should see (a connection, a signal, a restart)."""
HOST_ONLY = "MCP_ACTORS_ATTACK_HOST_ONLY"
"""A variable of the host's environment that no server may see."""

MODES = [pytest.param(False, id="unsandboxed"), pytest.param(True, id="sandboxed")]

pytestmark = pytest.mark.timeout(600)


# --- bubblewrap ------------------------------------------------------------------------------


# --- what is planted -------------------------------------------------------------------------


@dataclass(frozen=True)
class Planted:
    base: Path
    """``~/.cache/mcp-actors-tests/<unique>``: everything below is removed afterwards."""
    key: Path
    """A fake ``~/.ssh/id_ed25519``."""
    key_text: str
    state: Path
    """``$MCP_ACTORS_STATE_DIR``."""
    other: Path
    """``<state>/servers/other/data/secret.txt``: another server's data."""
    other_text: str
    tokens: Path
    """``<state>/tokens.json``: the runtime's own secrets."""
    tokens_text: str
    outside: Path
    """A folder of the host's that no sandboxed server may write."""
    own: Path
    """The unsandboxed servers' working folder (a sandboxed one's is its data folder)."""

    def data(self, namespace: str) -> Path:
        """A sandboxed server's own folder (its HOME and cwd)."""
        return self.state / "servers" / namespace / "data"

    def secrets(self) -> tuple[str, ...]:
        return (self.key_text, self.other_text, self.tokens_text)


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Planted]:
    unique = uuid.uuid4().hex[:12]
    base = Path.home() / ".cache" / "mcp-actors-tests" / unique
    key = base / ".ssh" / "id_ed25519"
    state = base / "state"
    other = state / "servers" / "other" / "data" / "secret.txt"
    tokens = state / "tokens.json"
    found = Planted(
        base=base,
        key=key,
        key_text=f"-----BEGIN OPENSSH PRIVATE KEY----- ssh-key-{unique}",
        state=state,
        other=other,
        other_text=f"other-server-secret-{unique}",
        tokens=tokens,
        tokens_text=f"token-secret-{unique}",
        outside=base / "outside",
        own=base / "own",
    )
    for folder in (key.parent, other.parent, found.outside, found.own):
        folder.mkdir(parents=True)
    key.write_text(found.key_text + "\n")
    key.chmod(0o600)
    other.write_text(found.other_text)
    tokens.write_text(json.dumps({"remote": {"access_token": found.tokens_text}}))
    monkeypatch.setenv("MCP_ACTORS_STATE_DIR", str(state))
    monkeypatch.setenv(HOST_ONLY, "host-only")
    try:
        yield found
    finally:
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(OSError):
            base.parent.rmdir()  # the shared parent, once no test uses it


# --- servers and calls -----------------------------------------------------------------------


def _entry(entry: dict[str, Any], planted: Planted, sandbox: bool | dict[str, Any]) -> dict[str, Any]:
    if sandbox is False:
        return {**entry, "cwd": str(planted.own)}
    require_bubblewrap("the sandboxed attack tests")
    return {**entry, "sandbox": sandbox}


def python_attacker(planted: Planted, sandbox: bool | dict[str, Any], **keys: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry for the Python attacker, in a process of its own (not forked)."""
    entry = {"command": sys.executable, "args": [str(ATTACK_PY)], "restartBackoff": 0.05, **keys}
    return _entry(entry, planted, sandbox)


def node_attacker(planted: Planted, sandbox: bool | dict[str, Any]) -> dict[str, Any]:
    """The Node attacker's entry. Its SDK is in tests/interop/node_modules, which its command
    line does not name: a sandboxed one is given it to read, as a user would declare it."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (the Node attacker needs it: make test)", pytrace=False)
    if not NODE_SDK.is_file():
        pytest.fail(
            "@modelcontextprotocol/sdk is not in tests/interop/node_modules: run "
            "make tests/interop/node_modules (or make test)",
            pytrace=False,
        )
    if sandbox is not False:
        profile = {} if sandbox is True else dict(sandbox)
        sandbox = {**profile, "read": [*profile.get("read", ()), str(NODE_SDK.parents[2])]}
    return _entry({"command": node, "args": [str(ATTACK_MJS)]}, planted, sandbox)


@contextlib.contextmanager
def running(**servers: dict[str, Any]) -> Iterator[Runtime]:
    config = load_config({"mcpServers": servers, "builtin": {"enabled": False}})
    with Runtime.start(config) as rt:
        yield rt


def answer_of(result: ToolResult) -> dict[str, Any]:
    structured = (result.output or {}).get("structuredContent")
    if isinstance(structured, dict):
        return structured
    answer: dict[str, Any] = json.loads(result.text or "")
    return answer


def attack(rt: Runtime, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call ``namespace/tool``: the attacker's answer (the call itself must go through)."""
    result = rt.call_tool(tool, arguments or {}, timeout=CALL_TIMEOUT)
    assert result.success, f"{tool}: the call failed: {result.error_type}: {result.error}"
    return answer_of(result)


def leaks(answer: dict[str, Any], planted: Planted) -> list[str]:
    """The planted secrets that appear anywhere in ``answer``."""
    text = json.dumps(answer)
    return [secret for secret in planted.secrets() if secret in text]


def own_folder(rt: Runtime, namespace: str, planted: Planted, sandboxed: bool) -> Path:
    """Where the server may write: its data folder (sandboxed, which must be its HOME and cwd)
    or the working folder the test gave it."""
    if not sandboxed:
        return planted.own
    me = attack(rt, f"{namespace}/whoami")
    data = planted.data(namespace)
    assert (me["home"], me["cwd"]) == (str(data), str(data)), me
    return data


# --- processes of the host -------------------------------------------------------------------


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (the harness's fork servers and theirs excepted)."""
    children: dict[int, set[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), set()).add(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), set()) - forkserver.pids():
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the host's (a child of the test) that the attacker goes after."""
    process = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.kill()
        process.wait(WAIT)


def host_is_fine() -> None:
    """The host still starts processes."""
    done = subprocess.run(
        [sys.executable, "-c", "print('fine')"], check=False, capture_output=True, timeout=WAIT
    )
    assert done.stdout == b"fine\n", done


# --- listeners of the host on loopback -------------------------------------------------------


class Listener:
    """A TCP listener of the host on 127.0.0.1: answers each connection with an HTTP reply that
    carries ``token``, and records that someone came."""

    def __init__(self) -> None:
        self.token = f"hello from the host {uuid.uuid4().hex[:8]}"
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.connected = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"listener-{self.port}", daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connected.set()
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    request = b""
                    while b"\r\n\r\n" not in request:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        request += chunk
                    body = self.token.encode()
                    head = (
                        f"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
                    )
                    conn.sendall(head.encode() + body)

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT)
        self.sock.close()


class DNSListener:
    """A UDP "resolver" of the host on 127.0.0.1: records the names asked and answers each query
    (no address in the answer: what matters is that the name left)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.names: list[str] = []
        self.asked = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"dns-{self.port}", daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, peer = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            labels, at = [], 12
            while at < len(query) and query[at]:
                labels.append(query[at + 1 : at + 1 + query[at]].decode(errors="replace"))
                at += 1 + query[at]
            self.names.append(".".join(labels))
            self.asked.set()
            answer = query[:2] + struct.pack("!HHHHH", 0x8180, 1, 0, 0, 0) + query[12:]
            with contextlib.suppress(OSError):
                self.sock.sendto(answer, peer)

    def __enter__(self) -> DNSListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT)
        self.sock.close()


# --- files -----------------------------------------------------------------------------------

SECRETS: dict[str, Callable[[Planted], tuple[Path, str]]] = {
    "ssh-key": lambda p: (p.key, p.key_text),
    "other-server-data": lambda p: (p.other, p.other_text),
    "state-tokens": lambda p: (p.tokens, p.tokens_text),
}


@pytest.mark.parametrize("secret", list(SECRETS))
@pytest.mark.parametrize("sandboxed", MODES)
def test_read_a_planted_secret(planted: Planted, sandboxed: bool, secret: str) -> None:
    path, text = SECRETS[secret](planted)
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/read_file", {"path": str(path)})
    if not sandboxed:
        assert answer["ok"] and text in answer["text"], answer
        return
    assert not answer["ok"], f"the sandboxed server read {path}: {answer}"
    assert answer["errno"] in ("ENOENT", "EACCES", "EPERM"), answer
    assert not leaks(answer, planted), answer


WRITE_TARGETS: dict[str, Callable[[Planted, str], Path]] = {
    "home": lambda p, name: p.outside / name,
    "other-server-folder": lambda p, name: p.other.parent / name,
    "state-folder": lambda p, name: p.state / name,
    "system": lambda p, name: Path("/var/tmp") / name,
    "host-tmp": lambda p, name: Path("/tmp") / name,
}


CONTAINED_WRITES = ("host-tmp", "state-folder")
"""Where a sandboxed write may succeed and stay inside: its private /tmp, and the folders that
lead to its data folder (bubblewrap makes them in the sandbox's own root, in memory)."""


@pytest.mark.parametrize("target", list(WRITE_TARGETS))
@pytest.mark.parametrize("sandboxed", MODES)
def test_write_outside_its_folder(planted: Planted, sandboxed: bool, target: str) -> None:
    name = f"mcp-actors-attack-{uuid.uuid4().hex[:12]}.txt"
    path = WRITE_TARGETS[target](planted, name)
    try:
        with running(attack=python_attacker(planted, sandboxed)) as rt:
            answer = attack(rt, "attack/write_file", {"path": str(path), "text": "written by the attacker"})
            inside = attack(rt, "attack/read_file", {"path": str(path)})
        if not sandboxed:
            assert answer["ok"], answer
            assert path.read_text() == "written by the attacker"
            return
        assert not path.exists(), f"the sandboxed server wrote {path} on the host: {answer}"
        if target in CONTAINED_WRITES:  # written inside the sandbox's own memory, and only there
            assert not answer["ok"] or inside["ok"], (answer, inside)
        else:
            assert not answer["ok"], answer
            assert answer["errno"] in ("ENOENT", "EACCES", "EPERM", "EROFS"), answer
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


@pytest.mark.parametrize("sandboxed", MODES)
def test_its_own_folder_is_writable_and_readable(planted: Planted, sandboxed: bool) -> None:
    """The positive control: what a server may do still works, and nothing of the host's
    environment reaches it but what is passed."""
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        folder = own_folder(rt, "attack", planted, sandboxed)
        note = folder / "note.txt"
        written = attack(rt, "attack/write_file", {"path": str(note), "text": "mine"})
        assert written["ok"], written
        assert note.read_text() == "mine"  # on the host: its folder is the host's folder
        read = attack(rt, "attack/read_file", {"path": str(note)})
        assert read["ok"] and read["text"] == "mine", read
        scratch = f"/tmp/mcp-actors-attack-{uuid.uuid4().hex[:8]}"
        try:
            assert attack(rt, "attack/write_file", {"path": scratch, "text": "tmp"})["ok"]
            assert attack(rt, "attack/read_file", {"path": scratch})["text"] == "tmp"
        finally:
            with contextlib.suppress(OSError):
                Path(scratch).unlink()
        me = attack(rt, "attack/whoami")
    assert HOST_ONLY not in me["env"], me
    if sandboxed:
        assert me["hostname"] != socket.gethostname(), me


# --- network ---------------------------------------------------------------------------------

HTTP_REQUEST = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.mark.parametrize("sandboxed", MODES)
def test_connect_to_a_host_listener_on_loopback(planted: Planted, sandboxed: bool) -> None:
    with Listener() as host, running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/connect", {"host": "127.0.0.1", "port": host.port, "send": HTTP_REQUEST})
        if not sandboxed:
            assert answer["ok"] and host.token in answer["received"], answer
            assert host.connected.wait(WAIT)
            return
        assert not answer["ok"], f"the sandboxed server reached the host's listener: {answer}"
        assert host.token not in json.dumps(answer)
        assert not host.connected.is_set(), "the host's listener saw a connection"


@pytest.mark.parametrize("sandboxed", MODES)
def test_connect_to_a_host_not_on_the_list(planted: Planted, sandboxed: bool) -> None:
    with Listener() as allowed, Listener() as denied:
        profile = {"network": [f"127.0.0.1:{allowed.port}"]}
        with running(attack=python_attacker(planted, sandboxed and profile)) as rt:
            direct = attack(
                rt, "attack/connect", {"host": "127.0.0.1", "port": denied.port, "send": HTTP_REQUEST}
            )
            proxied = attack(rt, "attack/http_get", {"url": f"http://127.0.0.1:{denied.port}/"})
            # The control: the host on the list is reached (through the proxy, sandboxed).
            reached = attack(rt, "attack/http_get", {"url": f"http://127.0.0.1:{allowed.port}/"})
        assert reached["ok"] and reached["body"] == allowed.token, reached
        assert allowed.connected.wait(WAIT)
        if not sandboxed:
            assert direct["ok"] and denied.token in direct["received"], direct
            assert proxied["ok"] and proxied["body"] == denied.token, proxied
            return
        assert not direct["ok"], f"a direct connection to a host not on the list: {direct}"
        assert proxied["status"] == 403, f"the proxy did not refuse a host not on the list: {proxied}"
        assert denied.token not in json.dumps([direct, proxied])
        assert not denied.connected.is_set(), "the host not on the list saw a connection"


@pytest.mark.parametrize("sandboxed", MODES)
def test_exfiltrate_through_a_dns_query(planted: Planted, sandboxed: bool) -> None:
    """A name sent to a resolver the attacker chose (here one of the host's, on loopback)."""
    name = f"{uuid.uuid4().hex[:12]}.exfil.example"
    with DNSListener() as resolver, running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(
            rt, "attack/dns_query", {"server_host": "127.0.0.1", "server_port": resolver.port, "name": name}
        )
        if not sandboxed:
            assert answer["ok"], answer
            assert resolver.asked.wait(WAIT) and resolver.names == [name], resolver.names
            return
        assert not answer["ok"], f"the sandboxed server's query was answered: {answer}"
        assert not resolver.asked.is_set(), f"the host's resolver was asked {resolver.names}"


RESOLVED_NAME = "pypi.org"
"""A name that the host resolves through DNS (not /etc/hosts) where the project installs."""


@pytest.mark.parametrize("sandboxed", MODES)
def test_resolve_a_name(planted: Planted, sandboxed: bool) -> None:
    try:
        on_host = sorted({str(info[4][0]) for info in socket.getaddrinfo(RESOLVED_NAME, None)})
    except OSError as exc:
        pytest.fail(
            f"the host resolves no {RESOLVED_NAME} ({exc}): this test needs a resolver", pytrace=False
        )
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/resolve", {"name": RESOLVED_NAME})
    if not sandboxed:
        assert answer["ok"] and answer["addresses"] == on_host, answer
        return
    assert not answer["ok"] and answer["addresses"] == [], f"the sandboxed server resolved a name: {answer}"


# --- processes -------------------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
def test_fork_bomb(planted: Planted, sandboxed: bool) -> None:
    limits = {"limits": {"processes": 64}}
    servers = {
        "attack": python_attacker(planted, sandboxed and limits),
        "other": python_attacker(planted, sandboxed and limits),
    }
    with running(**servers) as rt:
        before = attack(rt, "other/whoami")
        attack(rt, "attack/whoami")
        tree = descendants(os.getpid())
        answer = attack(rt, "attack/fork_many", {"count": 400})
        # Every child killed and reaped: the host's process tree is what it was.
        assert wait_until(lambda: descendants(os.getpid()) == tree, WAIT), (descendants(os.getpid()), tree)
        host_is_fine()
        assert attack(rt, "other/whoami")["pid"] == before["pid"]  # the other server unharmed
        assert attack(rt, "attack/whoami")["ok"]  # and the attacker still answers
        assert rt.status("attack")[0].restarts == 0
    if not sandboxed:
        assert answer["ok"] and answer["started"] == 400, answer
        return
    assert not answer["ok"] and answer["started"] < 400, f"the fork bomb was not contained: {answer}"
    assert answer["errno"] == "EAGAIN", answer
    assert answer["reaped"] == answer["started"], answer


@pytest.mark.parametrize("sandboxed", MODES)
def test_allocate_past_the_memory_limit(planted: Planted, sandboxed: bool) -> None:
    limits = {"limits": {"memory": "128M"}}
    servers = {
        "attack": python_attacker(planted, sandboxed and limits),
        "other": python_attacker(planted, sandboxed and limits),
    }
    with running(**servers) as rt:
        before = attack(rt, "other/whoami")
        result = rt.call_tool("attack/allocate", {"mb": 256}, timeout=CALL_TIMEOUT)
        host_is_fine()
        assert attack(rt, "other/whoami")["pid"] == before["pid"]  # the other server unharmed
        if not sandboxed:
            assert result.success and answer_of(result)["ok"], result
            assert answer_of(result)["allocated_mb"] == 256
            return
        if result.success:  # refused inside: the allocation failed, the server lives on
            answer = answer_of(result)
            assert not answer["ok"] and answer["allocated_mb"] < 256, f"allocated past the limit: {answer}"
            assert attack(rt, "attack/whoami")["ok"]
            return
        # Killed for it: the call fails classified, the crash is recorded, and it comes back.
        assert result.error_type == "connection", result
        assert wait_until(lambda: rt.status("attack")[0].restarts >= 1, WAIT), rt.status("attack")
        assert rt.status("attack")[0].last_error, rt.status("attack")
        assert attack(rt, "attack/whoami")["ok"]


@pytest.fixture
def sigusr1() -> Iterator[threading.Event]:
    """Set when this (the test's) process receives SIGUSR1."""
    got = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: got.set())
    try:
        yield got
    finally:
        signal.signal(signal.SIGUSR1, previous)


@pytest.mark.parametrize("sandboxed", MODES)
def test_signal_the_test_process(planted: Planted, sandboxed: bool, sigusr1: threading.Event) -> None:
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/signal_pid", {"pid": os.getpid(), "sig": int(signal.SIGUSR1)})
        if not sandboxed:
            assert answer["ok"], answer
            assert sigusr1.wait(WAIT), "the signal did not arrive"
            return
        assert not answer["ok"], f"the sandboxed server signalled the host: {answer}"
        assert answer["errno"] in ("ESRCH", "EPERM"), answer
        assert not sigusr1.is_set()
        assert attack(rt, "attack/whoami")["ok"]


@pytest.mark.parametrize("sandboxed", MODES)
def test_kill_another_host_process(
    planted: Planted, sandboxed: bool, victim: subprocess.Popen[bytes]
) -> None:
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/signal_pid", {"pid": victim.pid, "sig": int(signal.SIGKILL)})
    if not sandboxed:
        assert answer["ok"], answer
        assert victim.wait(WAIT) == -signal.SIGKILL
        return
    assert not answer["ok"], f"the sandboxed server signalled a host process: {answer}"
    assert answer["errno"] in ("ESRCH", "EPERM"), answer
    assert victim.poll() is None, "the host's process died"


@pytest.mark.parametrize("target", ["test-process", "another-host-process"])
@pytest.mark.parametrize("sandboxed", MODES)
def test_ptrace_a_host_process(
    planted: Planted, sandboxed: bool, target: str, victim: subprocess.Popen[bytes]
) -> None:
    pid = os.getpid() if target == "test-process" else victim.pid
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/ptrace_attach", {"pid": pid})
        assert attack(rt, "attack/whoami")["ok"]
    assert procfs.process_state(pid) not in (None, "Z", "T", "t"), procfs.process_state(pid)
    assert victim.poll() is None
    if not sandboxed:
        assert answer["ok"] and answer["detached"], answer
        return
    assert not answer["ok"], f"the sandboxed server traced a host process: {answer}"
    assert answer["errno"] in ("ESRCH", "EPERM"), answer


# --- escapes: /proc, symlinks, mounts --------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
def test_proc_shows_only_its_own_processes(planted: Planted, sandboxed: bool) -> None:
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "attack/list_pids")
        me = attack(rt, "attack/whoami")
        server_pid = rt.status("attack")[0].pid
    assert answer["ok"], answer
    pids = set(answer["pids"])
    assert me["pid"] in pids, answer
    if not sandboxed:
        assert os.getpid() in pids and server_pid in pids, answer
        return
    host = {os.getpid(), server_pid, *forkserver.pids()}
    assert not pids & host, f"the sandboxed server sees host processes {pids & host}: {answer}"
    assert len(pids) <= 8, f"the sandboxed server sees more than its own processes: {answer}"


@pytest.mark.parametrize("sandboxed", MODES)
def test_read_the_key_through_proc_root(planted: Planted, sandboxed: bool) -> None:
    """``/proc/<pid>/root`` of process 1 and of the test process. Unsandboxed, the test
    process's root is the host's file system (process 1's may refuse even root, as here where
    init is not dumpable); sandboxed, neither leads out."""
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        init = attack(rt, "attack/proc_root_read", {"path": str(planted.key), "pid": 1})
        host = attack(rt, "attack/proc_root_read", {"path": str(planted.key), "pid": os.getpid()})
    if not sandboxed:
        assert host["ok"] and planted.key_text in host["text"], host
        return
    assert not init["ok"], f"the sandboxed server read through /proc/1/root: {init}"
    assert not host["ok"], f"the sandboxed server read through the test process's root: {host}"
    assert not leaks(init, planted) and not leaks(host, planted), (init, host)


@pytest.mark.parametrize("secret", list(SECRETS))
@pytest.mark.parametrize("sandboxed", MODES)
def test_read_a_secret_through_a_symlink_in_its_folder(
    planted: Planted, sandboxed: bool, secret: str
) -> None:
    path, text = SECRETS[secret](planted)
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        folder = own_folder(rt, "attack", planted, sandboxed)
        answer = attack(rt, "attack/symlink_read", {"link_dir": str(folder), "target": str(path)})
    assert not [p for p in folder.iterdir() if p.name.startswith(".attack-link")], "a link was left"
    if not sandboxed:
        assert answer["ok"] and text in answer["text"], answer
        return
    assert not answer["ok"], f"the sandboxed server read {path} through a symlink: {answer}"
    assert not leaks(answer, planted), answer


@pytest.mark.parametrize("sandboxed", MODES)
def test_bind_mount_a_hidden_folder(planted: Planted, sandboxed: bool) -> None:
    with running(attack=python_attacker(planted, sandboxed)) as rt:
        folder = own_folder(rt, "attack", planted, sandboxed)
        hidden = attack(rt, "attack/mount_bind", {"src": str(planted.key.parent), "dst": str(folder / "mnt")})
        # A folder it can see: a mount of its own would rearrange its view (a refused one cannot).
        visible = attack(rt, "attack/mount_bind", {"src": "/usr", "dst": str(folder / "mnt")})
    assert not (folder / "mnt").exists(), "the mount point was left"
    if not sandboxed:
        assert hidden["ok"] and planted.key.name in hidden["seen"], hidden
        assert visible["ok"], visible
        return
    assert not hidden["ok"] and not leaks(hidden, planted), hidden
    assert not hidden["mounted"], f"the sandboxed server mounted: {hidden}"
    assert not visible["mounted"], f"the sandboxed server mounted: {visible}"


# --- the Node attacker -----------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
def test_node_read_the_planted_key(planted: Planted, sandboxed: bool) -> None:
    with running(node=node_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "node/read_file", {"path": str(planted.key)})
        other = attack(rt, "node/read_file", {"path": str(planted.other)})
    if not sandboxed:
        assert answer["ok"] and planted.key_text in answer["text"], answer
        assert other["ok"] and planted.other_text in other["text"], other
        return
    assert not answer["ok"] and not other["ok"], (answer, other)
    assert not leaks(answer, planted) and not leaks(other, planted)


@pytest.mark.parametrize("sandboxed", MODES)
def test_node_write_outside_its_folder(planted: Planted, sandboxed: bool) -> None:
    path = planted.outside / "written-by-node.txt"
    with running(node=node_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "node/write_file", {"path": str(path), "text": "written by the attacker"})
        if sandboxed:  # the control: its own folder is writable
            mine = planted.data("node") / "note.txt"
            assert attack(rt, "node/write_file", {"path": str(mine), "text": "mine"})["ok"]
            assert mine.read_text() == "mine"
    if not sandboxed:
        assert answer["ok"] and path.read_text() == "written by the attacker", answer
        return
    assert not answer["ok"] and not path.exists(), answer


@pytest.mark.parametrize("sandboxed", MODES)
def test_node_connect_to_a_host_listener(planted: Planted, sandboxed: bool) -> None:
    with Listener() as host, running(node=node_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "node/connect", {"host": "127.0.0.1", "port": host.port, "send": HTTP_REQUEST})
        if not sandboxed:
            assert answer["ok"] and host.token in answer["received"], answer
            assert host.connected.wait(WAIT)
            return
        assert not answer["ok"], f"the sandboxed server reached the host's listener: {answer}"
        assert not host.connected.is_set(), "the host's listener saw a connection"


@pytest.mark.parametrize("sandboxed", MODES)
def test_node_proc_shows_only_its_own_processes(planted: Planted, sandboxed: bool) -> None:
    with running(node=node_attacker(planted, sandboxed)) as rt:
        answer = attack(rt, "node/list_pids")
        me = attack(rt, "node/whoami")
        server_pid = rt.status("node")[0].pid
    pids = set(answer["pids"])
    assert answer["ok"] and me["pid"] in pids, answer
    if not sandboxed:
        assert os.getpid() in pids and server_pid in pids, answer
        return
    assert not pids & {os.getpid(), server_pid}, answer
    assert len(pids) <= 8, answer


@pytest.mark.parametrize("sandboxed", MODES)
def test_node_spawn_many(planted: Planted, sandboxed: bool) -> None:
    with running(node=node_attacker(planted, sandboxed and {"limits": {"processes": 64}})) as rt:
        attack(rt, "node/whoami")
        tree = descendants(os.getpid())
        answer = attack(rt, "node/spawn_many", {"count": 400})
        assert wait_until(lambda: descendants(os.getpid()) == tree, WAIT), (descendants(os.getpid()), tree)
        host_is_fine()
        assert attack(rt, "node/whoami")["ok"]
    if not sandboxed:
        assert answer["ok"] and answer["started"] == 400, answer
        return
    assert not answer["ok"] and answer["started"] < 400, f"the spawns were not contained: {answer}"
