"""Where the time of one `rt.call_tool` goes: a hop timeline and a cProfile of every thread.

The timeline wraps the runtime's methods at run time (nothing under ``actors/`` is edited) and
stamps each hop of a call: the caller, the registry actor, the server actor, the event loop,
the SDK, and back. Calls run one at a time, so one record at a time is open.
"""

from __future__ import annotations

import contextlib
import cProfile
import functools
import io
import pstats
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.common import runtime_config, summary

ECHO_ARGS = {"text": "hello, benchmark"}

# The hops, in order: (key, what happens between the previous stamp and this one).
HOPS = [
    ("registry", "caller: CallTool built and told; registry thread wakes and routes"),
    ("server", "registry -> server actor: tell, wake, match"),
    ("validated", "server actor: tool lookup + JSON Schema validation"),
    ("loop", "server actor: invoke_future; the loop starts the task (adapter._invoke)"),
    ("sdk_start", "adapter._invoke: transport checks, the request's cancel scope"),
    ("sdk_end", "SDK: mcp.Client.call_tool round trip (server included)"),
    ("result", "transport: content model_dump, CallOutcome; adapter: ToolResult"),
    ("settled", "loop: the task settles its future -> done callback -> settle the reply"),
    ("caller", "caller thread wakes from reply.result()"),
]


class _Stamps:
    def __init__(self) -> None:
        self.current: dict[str, float] | None = None
        self.records: list[dict[str, float]] = []

    def stamp(self, key: str) -> None:
        record = self.current
        if record is not None and key not in record:
            record[key] = time.perf_counter()


@contextlib.contextmanager
def _patched(stamps: _Stamps) -> Iterator[None]:  # noqa: PLR0915 - one wrapper per hop
    """Wrap the hot-path methods so each stamps its hop (restored on exit)."""
    from actors.mcp import adapter as adapter_mod
    from actors.runtime import calls as calls_mod
    from actors.runtime import messages as messages_mod
    from actors.runtime import registry as registry_mod
    from actors.runtime import server as server_mod

    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, wrapper: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        saved.append((owner, name, original))
        setattr(owner, name, wrapper(original))

    def sync_before(key: str) -> Callable[[Any], Any]:
        def wrap(original: Any) -> Any:
            @functools.wraps(original)
            def inner(*args: Any, **kwargs: Any) -> Any:
                stamps.stamp(key)
                return original(*args, **kwargs)

            return inner

        return wrap

    def sync_after(key: str) -> Callable[[Any], Any]:
        def wrap(original: Any) -> Any:
            @functools.wraps(original)
            def inner(*args: Any, **kwargs: Any) -> Any:
                try:
                    return original(*args, **kwargs)
                finally:
                    stamps.stamp(key)

            return inner

        return wrap

    def async_around(before: str, after: str) -> Callable[[Any], Any]:
        def wrap(original: Any) -> Any:
            @functools.wraps(original)
            async def inner(*args: Any, **kwargs: Any) -> Any:
                stamps.stamp(before)
                try:
                    return await original(*args, **kwargs)
                finally:
                    stamps.stamp(after)

            return inner

        return wrap

    def client_call(original: Any) -> Any:
        @functools.wraps(original)
        async def inner(*args: Any, **kwargs: Any) -> Any:
            stamps.stamp("sdk_start")
            try:
                return await original(*args, **kwargs)
            finally:
                stamps.stamp("sdk_end")

        return inner

    def validate(original: Any) -> Any:
        @functools.wraps(original)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return original(*args, **kwargs)
            finally:
                stamps.stamp("validated")

        return inner

    from mcp import Client

    patch(registry_mod.RegistryActor, "_route", sync_before("registry"))
    # The first message the server actor handles in a call's record is the call itself.
    patch(server_mod.ServerActor, "_handle", sync_before("server"))
    # `check_call` as the server actor's messages call it (imported by name into their module).
    patch(messages_mod, "check_call", validate)
    patch(adapter_mod.MCPToolAdapter, "invoke_future", sync_after("submitted"))
    patch(adapter_mod.MCPToolAdapter, "_invoke", async_around("loop", "result"))
    patch(Client, "call_tool", client_call)
    patch(calls_mod, "settle", sync_before("settled"))
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def hop_timeline(calls: int) -> dict[str, Any]:
    """Median microseconds of each hop over ``calls`` sequential `rt.call_tool`s."""
    from actors import Runtime
    from actors.runtime.messages import CallTool

    stamps = _Stamps()
    with _patched(stamps), Runtime.start(runtime_config(["echo"])) as rt:
        # Through the registry actor (the message API), so every hop is on the path:
        # rt.call_tool skips the registry once it knows the serving actor.
        def one_call() -> Any:
            message = CallTool.named("echo/echo", ECHO_ARGS, timeout=30)
            rt.registry.tell(message)
            return message.reply.result(timeout=35)

        for _ in range(100):
            one_call()
        for _ in range(calls):
            record = {"start": time.perf_counter()}
            stamps.current = record
            result = one_call()
            record["caller"] = time.perf_counter()
            stamps.current = None
            if not result.success:
                raise RuntimeError(f"profiled call failed: {result.error}")
            stamps.records.append(record)
    keys = ["start", *(key for key, _ in HOPS)]
    segments: dict[str, list[float]] = {key: [] for key, _ in HOPS}
    totals: list[float] = []
    complete = 0
    for record in stamps.records:
        if not all(k in record for k in keys):
            continue
        complete += 1
        for previous, (key, _) in zip(keys, HOPS, strict=False):
            segments[key].append((record[key] - record[previous]) * 1e6)
        totals.append((record["caller"] - record["start"]) * 1e6)
    if not complete:
        # A hop's method was renamed or moved: say so rather than print a table of nan.
        missing = sorted(set(keys) - set(stamps.records[-1])) if stamps.records else keys
        raise RuntimeError(f"no call stamped every hop; never stamped: {', '.join(missing)} (see _patched)")
    blocked = [
        (r["submitted"] - r["validated"]) * 1e6
        for r in stamps.records
        if "submitted" in r and "validated" in r
    ]
    rows = []
    for key, what in HOPS:
        s = summary(segments[key])
        rows.append({"hop": key, "what": what, "median_us": s["median"], "p95_us": s["p95"]})
    sdk = summary(segments["sdk_end"])["median"]
    total = summary(totals)["median"]
    return {
        "calls": complete,
        "rows": rows,
        "total_median_us": total,
        "sdk_median_us": sdk,
        "outside_sdk_us": sum(r["median_us"] for r in rows if r["hop"] != "sdk_end"),
        "blocked_submit_us": summary(blocked)["median"],
        "blocked_submit_p95_us": summary(blocked)["p95"],
    }


# ---- cProfile of every thread -------------------------------------------------------------


# Where a thread waits rather than works: left out of the "work" ranking.
_WAITS = (
    "acquire",
    "wait",
    "get",
    "select",
    "poll",
    "_run_once",
    "run_forever",
    "sleep",
    "result",
)


def _thread_group(name: str) -> str:
    if name == "MainThread":
        return "caller"
    if name.startswith("mcp-actors-loop"):
        return "event loop"
    if "RegistryActor" in name:
        return "registry actor"
    if "ServerActor" in name:
        return "server actor"
    return "other"


def thread_profiles(calls: int, top: int = 12) -> dict[str, Any]:
    """cProfile in every thread while ``calls`` sequential `rt.call_tool`s run."""
    from actors import Runtime

    profiles: dict[str, cProfile.Profile] = {}
    lock = threading.Lock()

    def start_profile(*_: Any) -> None:
        profile = cProfile.Profile()
        with lock:
            profiles[threading.current_thread().name] = profile
        profile.enable()  # replaces this hook for the thread

    threading.setprofile(start_profile)
    main = cProfile.Profile()
    try:
        with Runtime.start(runtime_config(["echo"])) as rt:
            for _ in range(50):
                rt.call_tool("echo/echo", ECHO_ARGS, timeout=30)
            for profile in list(profiles.values()):
                profile.disable()
                profile.clear()
                profile.enable()
            wall = time.perf_counter()
            main.enable()
            for _ in range(calls):
                rt.call_tool("echo/echo", ECHO_ARGS, timeout=30)
            main.disable()
            wall = time.perf_counter() - wall
            for profile in profiles.values():
                with contextlib.suppress(Exception):
                    profile.disable()
    finally:
        threading.setprofile(None)
    profiles["MainThread"] = main
    groups: dict[str, list[cProfile.Profile]] = {}
    for name, profile in profiles.items():
        groups.setdefault(_thread_group(name), []).append(profile)
    out: dict[str, Any] = {"calls": calls, "wall_s": wall, "per_call_us": wall / calls * 1e6, "threads": {}}
    text = io.StringIO()
    for group, members in sorted(groups.items()):
        if group == "other":
            continue
        stats = pstats.Stats(members[0], stream=text)
        for extra in members[1:]:
            stats.add(extra)
        rows = []
        for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
            rows.append((tt, ct, nc, f"{_short(filename)}:{line}({func})", func))
        busy = sum(tt for tt, _, _, _, func in rows if not is_wait(func))
        ranked = sorted((r for r in rows if not is_wait(r[4])), reverse=True)[:top]
        out["threads"][group] = {
            "busy_us_per_call": busy / calls * 1e6,
            "top": [
                {
                    "function": label,
                    "tottime_us_per_call": tt / calls * 1e6,
                    "cumtime_us_per_call": ct / calls * 1e6,
                    "calls_per_call": nc / calls,
                }
                for tt, ct, nc, label, _ in ranked
            ],
        }
        print(f"\n== {group} ==", file=text)
        stats.sort_stats("tottime").print_stats(25)
    out["text"] = text.getvalue()
    return out


def is_wait(func: str) -> bool:
    """Whether a profiled function is a thread waiting (a lock, a queue, epoll), not working."""
    if "of 'dict'" in func:
        return False
    quoted = re.search(r"'([^']+)'", func)
    name = quoted.group(1) if quoted else func.rstrip(")").rsplit("(", 1)[-1]
    name = name.rsplit(".", 1)[-1]
    return any(name == w or name.endswith(w) for w in _WAITS)


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/actors/", "/lib/python"):
        if marker in filename:
            tail = filename.split(marker, 1)[1]
            return ("actors/" + tail) if marker == "/actors/" else tail
    return filename


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    timeline = hop_timeline(calls)
    for row in timeline["rows"]:
        print(f"{row['hop']:>10} {row['median_us']:8.1f} us  p95 {row['p95_us']:8.1f}  {row['what']}")
    print(f"total {timeline['total_median_us']:.1f} us, outside the SDK {timeline['outside_sdk_us']:.1f} us")
    print(f"server actor blocked in invoke_future: {timeline['blocked_submit_us']:.1f} us median")
    profiles = thread_profiles(calls)
    for group, data in profiles["threads"].items():
        print(f"\n{group}: busy {data['busy_us_per_call']:.1f} us/call")
        for row in data["top"]:
            print(
                f"   {row['tottime_us_per_call']:7.1f} {row['cumtime_us_per_call']:8.1f}  {row['function']}"
            )


if __name__ == "__main__":
    main()
