"""Robot Framework keyword library for mcp-actors: ``Library    actors.testing.robotlib``.

Keywords to drive the tool runtime core, and (once a runtime is started) MCP servers through
the registry actor, from acceptance suites: tools, resources, prompts and progress.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from robot.utils import timestr_to_secs  # type: ignore[import-untyped]

from actors.config import load_config
from actors.mcp.catalog import PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.runtime import Runtime, ServerStatus
from actors.testing.procfs import is_alive
from actors.testing.robot_core import ToolCoreKeywords
from actors.testing.robot_gateway import GatewayKeywords
from actors.tools import ToolResult, duration_text

__all__ = ["robotlib"]


# How long `Call Tool With Progress` waits for the progress news still on its way after the answer.
_PROGRESS_SETTLE = 5.0


def _json_or_text(value: str) -> Any:
    """``1`` → 1, ``true`` → True, ``{"a": 1}`` → a dict; anything else stays text (a path, a URL)."""
    try:
        return json.loads(value)
    except ValueError:
        return value


class robotlib(ToolCoreKeywords, GatewayKeywords):
    """Keywords for the MCP actor runtime, the tool runtime core (`ToolCoreKeywords`) and the
    gateway (`GatewayKeywords`)."""

    ROBOT_LIBRARY_SCOPE = "SUITE"

    def __init__(self) -> None:
        super().__init__()
        self._runtime: Runtime | None = None
        self._pids: set[int] = set()
        """Every server process seen in this suite."""
        self._seen_since_start = False
        """Whether a server process was seen since the last `Start Runtime`."""

    # ---- the runtime -------------------------------------------------------------------

    def start_runtime(self, config: str = "", builtin: bool = False) -> None:
        """Start a runtime from a config file path, or from inline JSON (``{"mcpServers": ...}``).

        Built-in tools are off unless ``builtin`` is true (or the config enables them).
        """
        self.stop_runtime()
        source: Any
        if config.lstrip().startswith("{"):
            source = json.loads(config)
        elif config:
            source = json.loads(Path(config).read_text(encoding="utf-8"))
        else:
            source = {"mcpServers": {}}
        source.setdefault("builtin", {"enabled": bool(builtin)})
        self._runtime = Runtime.start(load_config(source))
        self._seen_since_start = False

    def start_runtime_with_server(self, name: str, command: str, *args: str, **keys: str) -> None:
        """Start a runtime with one stdio server; ``keys`` are lifecycle keys (``idleTimeout=1``)."""
        entry: dict[str, Any] = {"command": command, "args": list(args)}
        entry.update({k: _json_or_text(v) for k, v in keys.items()})
        self.start_runtime(json.dumps({"mcpServers": {name: entry}}))

    def stop_runtime(self) -> None:
        """Shut the runtime down (every server stops). Safe when none is running."""
        if self._runtime is not None:
            self._remember_pids()
            self._runtime.shutdown()
            self._runtime = None

    def call_tool(self, name: str, arguments: str = "{}", timeout: float = 30.0) -> ToolResult:
        """Call ``namespace/tool`` through the registry actor with JSON ``arguments``."""
        self._last = self._require_runtime().call_tool(name, json.loads(arguments), timeout=float(timeout))
        self._remember_pids()
        return self._last

    def last_text_should_be(self, expected: str) -> None:
        """Fail unless the last result's text (MCP text content) equals ``expected``."""
        result = self._require_last()
        if result.text != expected:
            raise AssertionError(f"text is {result.text!r}, expected {expected!r}")

    def last_text_should_contain(self, part: str) -> None:
        result = self._require_last()
        if part not in result.text:
            raise AssertionError(f"text {result.text!r} does not contain {part!r}")

    def tools_should_include(self, *names: str) -> None:
        """Fail unless every one of ``names`` is listed by the runtime."""
        have = {t.name for t in self._require_runtime().list_tools()}
        missing = sorted(set(names) - have)
        if missing:
            raise AssertionError(f"missing tools {missing}; the runtime lists {sorted(have)}")

    # ---- resources, prompts, progress -------------------------------------------------

    def list_resources(self, namespace: str = "") -> list[ResourceSpec]:
        """The resources of every server, or of ``namespace`` (each has ``namespace``, ``uri``,
        ``name``, ``mime_type``, ...). Starts only servers never seen before."""
        return self._require_runtime().list_resources(namespace or None)

    def list_resource_templates(self, namespace: str = "") -> list[ResourceTemplateSpec]:
        """The resource templates of every server, or of ``namespace`` (``uri_template``, ``name``, ...)."""
        return self._require_runtime().list_resource_templates(namespace or None)

    def resources_should_include(self, namespace: str, *uris: str) -> None:
        """Fail unless server ``namespace`` lists every one of ``uris``."""
        have = {r.uri for r in self.list_resources(namespace)}
        missing = sorted(set(uris) - have)
        if missing:
            raise AssertionError(f"{namespace} does not list {missing}; it lists {sorted(have)}")

    def read_resource(self, namespace: str, uri: str, timeout: float = 30.0) -> ToolResult:
        """Read ``uri`` from server ``namespace``; the `ToolResult` holds ``output["contents"]``.
        Starts the server if need be."""
        self._last = self._require_runtime().read_resource(namespace, uri, timeout=float(timeout))
        self._remember_pids()
        return self._last

    def resource_text_should_contain(self, part: str) -> None:
        """Fail unless the text of the last `Read Resource` contains ``part`` (binary contents
        count as their one-line summary, ``[resource URI MIME, SIZE]``)."""
        text = self._last_lines("contents", "Read Resource")
        if part not in text:
            raise AssertionError(f"resource text {text!r} does not contain {part!r}")

    def list_prompts(self, namespace: str = "") -> list[PromptSpec]:
        """The prompts (``namespace/prompt``) of every server, or of ``namespace``."""
        return self._require_runtime().list_prompts(namespace or None)

    def prompts_should_include(self, *names: str) -> None:
        """Fail unless every one of ``names`` (``namespace/prompt``) is listed."""
        have = {p.name for p in self.list_prompts()}
        missing = sorted(set(names) - have)
        if missing:
            raise AssertionError(f"missing prompts {missing}; the runtime lists {sorted(have)}")

    def get_prompt(self, name: str, arguments: str = "{}", timeout: float = 30.0) -> ToolResult:
        """Get ``namespace/prompt`` filled in with JSON ``arguments`` (text values); the
        `ToolResult` holds ``output["messages"]`` and ``output["description"]``."""
        self._last = self._require_runtime().get_prompt(name, json.loads(arguments), timeout=float(timeout))
        self._remember_pids()
        return self._last

    def prompt_text_should_contain(self, part: str) -> None:
        """Fail unless the messages of the last `Get Prompt`, as ``role: text`` lines, contain ``part``."""
        text = self._last_lines("messages", "Get Prompt")
        if part not in text:
            raise AssertionError(f"prompt text {text!r} does not contain {part!r}")

    def complete_argument(
        self, namespace: str, ref: str, argument: str, value: str = "", context: str = "{}"
    ) -> list[str]:
        """The server's completions of ``argument`` (typed so far: ``value``) of prompt ``ref``
        (its name on the server) or of resource template ``ref`` (a URI template); ``context``
        is JSON of the other arguments already chosen."""
        given = json.loads(context) or None
        result = self._require_runtime().complete(namespace, ref, (argument, value), given)
        self._last = result
        if not result.success:
            raise AssertionError(f"completion failed: {result.error_type}: {result.error}")
        values = (result.output or {}).get("values")
        return [str(v) for v in values] if isinstance(values, list) else []

    def call_tool_with_progress(
        self, name: str, arguments: str = "{}", timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """Call ``namespace/tool`` asking the server for progress; return the updates, in order,
        each ``{"progress": ..., "total": ..., "message": ...}``. The result is the last result.

        Progress news reaches the host on a thread of its own and may trail the answer: when the
        last update is short of the total the server announced, this waits up to 5 s for it.
        """
        updates: list[dict[str, Any]] = []
        arrived = threading.Condition()

        def seen(progress: float, total: float | None, message: str | None) -> None:
            with arrived:
                updates.append({"progress": progress, "total": total, "message": message})
                arrived.notify_all()

        def finished() -> bool:
            last = updates[-1] if updates else None
            return last is None or last["total"] is None or last["progress"] >= last["total"]

        runtime = self._require_runtime()
        self._last = runtime.call_tool(name, json.loads(arguments), timeout=float(timeout), progress=seen)
        self._remember_pids()
        with arrived:
            arrived.wait_for(finished, timeout=_PROGRESS_SETTLE)
            return list(updates)

    def server_status(self, namespace: str) -> ServerStatus:
        """The `ServerStatus` of one server."""
        statuses = self._require_runtime().status(namespace)
        self._remember(statuses)
        if not statuses:
            raise AssertionError(f"no server {namespace!r}")
        return statuses[0]

    def server_state_should_be(self, namespace: str, state: str) -> None:
        actual = self.server_status(namespace).state
        if actual != state:
            raise AssertionError(f"server {namespace!r} is {actual!r}, expected {state!r}")

    def wait_for_server_state(self, namespace: str, state: str, timeout: str | float = "10 s") -> None:
        """Wait until the server is in ``state`` (checked every 50 ms), or fail after ``timeout``.

        ``timeout`` is a Robot Framework time: ``10s``, ``1 min 30 s``, ``2.5`` (seconds).
        """
        seconds: float = timestr_to_secs(timeout)
        deadline = time.monotonic() + seconds
        while True:
            status = self.server_status(namespace)
            self._remember_pids()
            if status.state == state:
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"server {namespace!r} is {status.state!r} after {duration_text(seconds)}, not {state!r}"
                )
            time.sleep(0.05)

    def server_counter_should_be(self, namespace: str, counter: str, expected: int) -> None:
        """Check ``restarts``, ``calls``, ``errors``, ``in_flight`` or ``health_check_failures``."""
        actual = getattr(self.server_status(namespace), counter)
        if actual != int(expected):
            raise AssertionError(f"{namespace} {counter} is {actual}, expected {expected}")

    def kill_server_process(self, namespace: str) -> None:
        """Kill the server's process with SIGKILL, as a crash would."""
        pid = self.server_status(namespace).pid
        if pid is None:
            raise AssertionError(f"server {namespace!r} has no process")
        os.kill(pid, signal.SIGKILL)

    def no_server_process_should_be_left(self, timeout: str | float = "10 s") -> None:
        """Fail if any server process this library saw is still alive after ``timeout`` (a Robot
        Framework time), or if no server process was seen since `Start Runtime`: a check with
        nothing to check proves nothing.
        """
        if not self._seen_since_start:
            raise AssertionError(
                "no server process was seen since Start Runtime, so none can be checked: "
                "call a tool (or wait for a server to run) first"
            )
        seconds: float = timestr_to_secs(timeout)
        deadline = time.monotonic() + seconds
        while True:
            alive = sorted(pid for pid in self._pids if is_alive(pid))
            if not alive:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"server processes still alive after {duration_text(seconds)}: {alive}")
            time.sleep(0.05)

    def _remember_pids(self) -> None:
        if self._runtime is not None:
            self._remember(self._runtime.status())

    def _remember(self, statuses: list[ServerStatus]) -> None:
        pids = {s.pid for s in statuses if s.pid}
        self._pids |= pids
        self._seen_since_start = self._seen_since_start or bool(pids)

    def _require_runtime(self) -> Runtime:
        if self._runtime is None:
            raise AssertionError("no runtime is running: use Start Runtime first")
        return self._runtime
