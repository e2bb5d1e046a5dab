"""The chaos run: ten stdio servers, a steady stream of concurrent calls, and trouble.

What runs (all seeded, so a run can be repeated):

- ``k0`` .. ``k4``: fixture servers that a killer thread ``kill -9``s at random, whatever state
  they are in (running, or starting again after the last kill).
- ``hang``: a fixture server whose ``sleep`` is called for an hour with a short timeout.
- ``stop``: a fixture server that is SIGSTOPped now and then (it stops answering entirely; its
  health check must notice), SIGCONTed at the end.
- ``noisy``: a working server that writes garbage lines between its messages; it stops after
  0.3 s without calls and starts again lazily on the next one (idle stops race with calls).
- ``garbage``: writes garbage and never answers the handshake. ``exit``: exits at once on start.

Beside the callers, an operator thread asks for status and tool lists (facade and messages), and
a sampler records RSS, threads and the distinct processes of ``noisy`` (its idle cycles).

Callers use ``rt.call_tool`` (threads) and ``registry.tell``/``ask`` with reply futures (other
threads). Every call is timed: it must end in a `ToolResult` (success or a classified failure)
within its timeout plus `ChaosPlan.slack`. A success must carry that call's own answer: each
echo sends a text no other call sends, each add its own numbers, each sleep its own duration,
so an answer delivered to the wrong caller is counted (``wrong_answers``).

Kills and restarts are counted precisely. The killable servers have no health checks and no idle
timeout, so the only way their process ends is our kill; a process is killed at most once (its
pid is remembered; pids are not reused within a run), and a kill of a live server process always
ends its connection (running: a crash; starting: a failed start), which the supervisor answers
with exactly one restart. So, once the run has settled, ``restarts == kills`` for each of them. A
kill that finds no process (the server is between connections, already restarting) is not a kill
and is counted as ``kills_missed``. For the SIGSTOPped server: every stop of a running process is
found by the health check and restarted, and a probe restart takes two timed-out probes in a row,
so ``restarts >= stops`` and ``health_check_failures >= 2 * restarts`` (on a loaded machine a probe
may also time out on its own).

A start that fails with no kill behind it is a bug (tests/chaos/test_findings.py holds the ones
found so far): such failures are read from the log and counted per server
(``start_failures_not_from_kills``, with their reasons), and the test accepts none.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import random
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors import Runtime, ToolResult
from actors.runtime.messages import CallTool, GetStatus, ListTools
from actors.testing import procfs
from actors.tools import ErrorType
from tests.conftest import child_pids, wait_until
from tests.runtime.conftest import config, stdio_server

CLASSIFIED = frozenset(member.value for member in ErrorType)
KILLABLE = tuple(f"k{i}" for i in range(5))
MAX_RESTARTS_BROKEN = 2
"""maxRestarts of the servers that can never start: then they are ``failed``."""

_KILLABLE_LIFECYCLE: dict[str, Any] = {
    "healthCheckInterval": 0,
    "idleTimeout": 0,
    "restartBackoff": 0.05,
    "restartBackoffMax": 0.2,
    "maxRestarts": 1_000_000,
    "restartWindow": 1,
    "connectTimeout": 20,
}
_QUIET: dict[str, Any] = {"healthCheckInterval": 0, "idleTimeout": 0}
_BROKEN: dict[str, Any] = {
    "restartBackoff": 0.05,
    "restartBackoffMax": 0.1,
    "maxRestarts": MAX_RESTARTS_BROKEN,
    "restartWindow": 600,
    "healthCheckInterval": 0,
}


def chaos_config() -> dict[str, Any]:
    # Every server a process of its own, never a fork (tests/harness/forkserver.py): the chaos is
    # done to the processes the runtime started (SIGKILL, SIGSTOP), and they are counted.
    real = {"real_process": True}
    servers: dict[str, Any] = {
        ns: stdio_server("fixture_server", "--name", ns, **real, **_KILLABLE_LIFECYCLE) for ns in KILLABLE
    }
    servers["hang"] = stdio_server("fixture_server", "--name", "hang", **real, **_QUIET)
    servers["stop"] = stdio_server(
        "fixture_server",
        "--name",
        "stop",
        **real,
        healthCheckInterval=1,
        idleTimeout=0,
        restartBackoff=0.05,
        restartBackoffMax=0.2,
        maxRestarts=1_000_000,
        restartWindow=1,
        connectTimeout=20,
    )
    servers["noisy"] = stdio_server(
        "noisy_server", protocol="legacy", healthCheckInterval=0, idleTimeout=0.3, **real
    )
    servers["garbage"] = stdio_server("garbage_server", connectTimeout=1, **real, **_BROKEN)
    servers["exit"] = stdio_server("exit_server", **real, **_BROKEN)
    return config(servers)


@dataclass(frozen=True)
class ChaosPlan:
    seconds: float
    seed: int
    callers: int = 3
    """Threads calling through ``rt.call_tool``."""
    tellers: int = 2
    """Threads sending batches with ``registry.tell`` / ``ask`` and waiting on the reply futures."""
    kill_every: tuple[float, float] = (0.3, 1.2)
    stop_every: tuple[float, float] = (3.0, 7.0)
    sample_every: float = 1.0
    slack: float = 1.5
    """A call must end within its timeout plus this: a second, and half a second more for the
    scheduling of a loaded 2-core machine."""


@dataclass(frozen=True)
class Planned:
    namespace: str
    tool: str
    arguments: dict[str, Any]
    timeout: float
    expect: frozenset[str] | None
    """The outcomes allowed (``"ok"`` or error types); None: any classified outcome."""
    answer: str | None = None
    """The text a success must carry (this call's own answer); None: not a success."""


def _echo(ns: str, rng: random.Random, timeout: float, expect: frozenset[str] | None) -> Planned:
    # 64 random bits: no two calls of a run send the same text.
    text = f"{ns}-{rng.getrandbits(64):016x}"
    return Planned(ns, "echo", {"text": text}, timeout, expect, answer=text)


def plan_call(rng: random.Random) -> Planned:
    """One call: mostly the killable servers, the rest spread over the others."""
    timeout = round(rng.uniform(1.0, 4.0), 2)
    pick = rng.random()
    if pick < 0.5:
        ns = rng.choice(KILLABLE)
        kind = rng.random()
        if kind < 0.45:
            return _echo(ns, rng, timeout, None)
        if kind < 0.7:
            a, b = rng.randrange(-(10**9), 10**9), rng.randrange(-(10**9), 10**9)
            return Planned(ns, "add", {"a": a, "b": b}, timeout, None, answer=str(a + b))
        if kind < 0.92:
            seconds = round(rng.uniform(0, 0.4), 3)
            return Planned(ns, "sleep", {"seconds": seconds}, timeout, None, answer=f"slept {seconds}")
        if kind < 0.96:
            return Planned(ns, "add", {"a": "one"}, timeout, frozenset({"validation"}))
        return Planned(ns, "no_such_tool", {}, timeout, frozenset({"not_found"}))
    if pick < 0.62:
        if rng.random() < 0.7:
            # A tool that never returns: it must time out (and the server is told to cancel).
            short = round(rng.uniform(0.3, 1.5), 2)
            return Planned("hang", "sleep", {"seconds": 3600}, short, frozenset({"timeout"}))
        return _echo("hang", rng, timeout, frozenset({"ok"}))
    if pick < 0.74:
        return _echo("stop", rng, timeout, None)
    if pick < 0.86:
        # noisy stops when idle: a call may wait for its lazy start, which a loaded machine can
        # make longer than the call's timeout.
        return _echo("noisy", rng, timeout, frozenset({"ok", "timeout"}))
    ns = "garbage" if rng.random() < 0.5 else "exit"
    return Planned(ns, "echo", {"text": "x"}, timeout, frozenset({"connection", "timeout", "failed"}))


@dataclass
class Tally:
    """Counters shared by every thread of a run (under one lock); no per-call history is kept,
    so a long run does not grow the test's own memory."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    by_path: Counter[str] = field(default_factory=Counter)
    unclassified: int = 0
    unexpected: int = 0
    wrong_answers: int = 0
    """Successes whose content is not this call's own answer."""
    late: int = 0
    """Answered after timeout + slack."""
    hung: int = 0
    """Never answered (waited timeout + 10 s)."""
    max_latency: float = 0.0
    max_overshoot: float = -1e9
    """The largest (latency - timeout) seen."""
    examples: list[str] = field(default_factory=list)

    def record(
        self, planned: Planned, result: ToolResult | None, latency: float, plan: ChaosPlan, path: str
    ) -> None:
        with self.lock:
            self.calls += 1
            self.by_path[path] += 1
            self.max_latency = max(self.max_latency, latency)
            self.max_overshoot = max(self.max_overshoot, latency - planned.timeout)
            if result is None:
                self.hung += 1
                self._example(f"hung: {planned}")
                return
            outcome = "ok" if result.success else str(result.error_type)
            if result.success:
                self.ok += 1
            else:
                self.errors[outcome] += 1
                if outcome not in CLASSIFIED:
                    self.unclassified += 1
                    self._example(f"unclassified {outcome}: {planned} -> {result.error}")
            if planned.expect is not None and outcome not in planned.expect:
                self.unexpected += 1
                self._example(f"unexpected {outcome}: {planned} -> {result.error}")
            if result.success and result.text != planned.answer:
                self.wrong_answers += 1
                self._example(f"wrong answer {result.text[:80]!r}: {planned}")
            if latency > planned.timeout + plan.slack:
                self.late += 1
                self._example(f"late {latency:.2f}s (timeout {planned.timeout}s + {plan.slack}s): {planned}")

    def _example(self, text: str) -> None:
        if len(self.examples) < 20:
            self.examples.append(text[:400])


class LogCounter(logging.Handler):
    """Counts the records of the library and the SDK while a run lasts, and keeps a few.

    The loggers stop propagating meanwhile: pytest's log capture would keep every record of a
    long run in memory (and the memory check would measure that).
    """

    NAMES = ("actors", "mcp")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.levels: Counter[str] = Counter()
        self.exceptions: Counter[str] = Counter()
        self.samples: list[str] = []
        self.start_failures: list[str] = []
        self.unexplained: Counter[str] = Counter()
        """Start failures of a server that no kill explains, by namespace."""
        self.unexplained_reasons: list[str] = []
        self._saved: list[tuple[logging.Logger, bool, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.levels[f"{record.name.split('.')[0]}:{record.levelname}"] += 1
        if record.name == "actors.runtime.server" and "failed to start" in record.msg:
            message = record.getMessage()
            namespace = str(record.args[0]) if isinstance(record.args, tuple) and record.args else "?"
            if len(self.start_failures) < 40:
                self.start_failures.append(f"{time.strftime('%H:%M:%S')} {message[:300]}")
            if namespace not in ("garbage", "exit") and "SIGKILL" not in message:
                self.unexplained[namespace] += 1
                self.unexplained_reasons.append(message[:300])
        if record.exc_info and record.name.startswith("actors") and record.levelno >= logging.ERROR:
            self.exceptions[record.getMessage()[:120]] += 1
            if len(self.samples) < 10:
                self.samples.append(self.format(record)[-1500:])

    @contextlib.contextmanager
    def attached(self) -> Iterator[LogCounter]:
        for name in self.NAMES:
            logger = logging.getLogger(name)
            self._saved.append((logger, logger.propagate, logger.level))
            logger.addHandler(self)
            logger.propagate = False
            logger.setLevel(logging.WARNING)
        try:
            yield self
        finally:
            for logger, propagate, level in self._saved:
                logger.removeHandler(self)
                logger.propagate = propagate
                logger.setLevel(level)
            self._saved.clear()


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def server_processes(namespace: str) -> list[int]:
    """Our live child processes that run the server ``--name namespace``."""
    return [
        pid
        for pid in child_pids()
        if any(a == b"--name" and b == namespace.encode() for a, b in itertools.pairwise(_cmdline(pid)))
        and procfs.is_alive(pid)
    ]


@dataclass
class Disruptions:
    lock: threading.Lock = field(default_factory=threading.Lock)
    kills: Counter[str] = field(default_factory=Counter)
    kills_while: Counter[str] = field(default_factory=Counter)
    """Kills by the server's state just before (running, starting, restarting ...)."""
    kills_missed: int = 0
    killed: set[int] = field(default_factory=set)
    stops: int = 0
    stopped: set[int] = field(default_factory=set)


def _killer(rt: Runtime, plan: ChaosPlan, done: threading.Event, hits: Disruptions) -> None:
    rng = random.Random(plan.seed * 7919 + 1)
    while not done.wait(rng.uniform(*plan.kill_every)):
        ns = rng.choice(KILLABLE)
        state = rt.status(ns)[0].state
        targets = [p for p in server_processes(ns) if p not in hits.killed]
        if not targets:
            with hits.lock:
                hits.kills_missed += 1
            continue
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            with hits.lock:
                hits.killed.add(pid)
                hits.kills[ns] += 1
                hits.kills_while[state] += 1


def _stopper(rt: Runtime, plan: ChaosPlan, done: threading.Event, hits: Disruptions) -> None:
    rng = random.Random(plan.seed * 7919 + 2)
    while not done.wait(rng.uniform(*plan.stop_every)):
        status = rt.status("stop")[0]
        if status.state != "running" or status.pid is None:
            continue
        state = procfs.process_state(status.pid)
        if state is None or state in ("T", "Z", "X") or status.pid in hits.stopped:
            continue
        os.kill(status.pid, signal.SIGSTOP)
        with hits.lock:
            hits.stopped.add(status.pid)
            hits.stops += 1


def _caller(rt: Runtime, plan: ChaosPlan, index: int, done: threading.Event, tally: Tally) -> None:
    rng = random.Random(plan.seed * 7919 + 100 + index)
    while not done.is_set():
        planned = plan_call(rng)
        started = time.monotonic()
        result = rt.call_tool(
            f"{planned.namespace}/{planned.tool}", planned.arguments, timeout=planned.timeout
        )
        tally.record(planned, result, time.monotonic() - started, plan, "call_tool")
        done.wait(rng.uniform(0, 0.02))


def _teller(rt: Runtime, plan: ChaosPlan, index: int, done: threading.Event, tally: Tally) -> None:
    rng = random.Random(plan.seed * 7919 + 200 + index)
    while not done.is_set():
        batch = [plan_call(rng) for _ in range(rng.randint(1, 6))]
        sent: list[tuple[Planned, CallTool, float, list[float]]] = []
        for planned in batch:
            message = CallTool(planned.namespace, planned.tool, planned.arguments, planned.timeout)
            finished: list[float] = []
            message.reply.add_done_callback(lambda _, f=finished: f.append(time.monotonic()))
            started = time.monotonic()
            if rng.random() < 0.3:
                assert rt.registry.ask(message, timeout=10) is message.reply
                path = "ask"
            else:
                rt.registry.tell(message)
                path = "tell"
            sent.append((planned, message, started, finished))
        longest = max(p.timeout for p in batch)
        concurrent.futures.wait([m.reply for _, m, _, _ in sent], timeout=longest + 10)
        for planned, message, started, finished in sent:
            if message.reply.done() and finished:
                tally.record(planned, message.reply.result(), finished[0] - started, plan, path)
            else:
                tally.record(planned, None, time.monotonic() - started, plan, path)
        done.wait(rng.uniform(0, 0.02))


def _sampler(
    plan: ChaosPlan, done: threading.Event, samples: list[tuple[float, int, int]], noisy: set[int]
) -> None:
    start = time.monotonic()
    next_sample = start
    while not done.wait(0.1):
        noisy.update(_noisy_processes())
        if time.monotonic() >= next_sample:
            samples.append((time.monotonic() - start, rss_kb(), threading.active_count()))
            next_sample += plan.sample_every


def _noisy_processes() -> list[int]:
    return [pid for pid in child_pids() if any(b"noisy_server" in arg for arg in _cmdline(pid))]


@dataclass
class Requests:
    """The operator's status and tool-list requests: each must be answered in time."""

    answered: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)


def _operator(rt: Runtime, plan: ChaosPlan, done: threading.Event, requests: Requests) -> None:
    rng = random.Random(plan.seed * 7919 + 3)
    while not done.wait(rng.uniform(0.2, 1.0)):
        kind = rng.choice(["status", "list_tools", "ListTools", "GetStatus"])
        try:
            if kind == "status":
                assert len(rt.status(timeout=10)) == 10
            elif kind == "list_tools":
                assert rt.list_tools(timeout=10)
            else:
                message = ListTools() if kind == "ListTools" else GetStatus(rng.choice(KILLABLE))
                assert rt.registry.ask(message, timeout=10) is message.reply
                assert message.reply.result(timeout=10)
            requests.answered[kind] += 1
        except Exception as exc:
            if len(requests.failed) < 10:
                requests.failed.append(f"{kind}: {type(exc).__name__}: {exc}")
            else:
                requests.failed.append(kind)


def _worker(name: str, target: Callable[..., None], *args: Any, errors: list[str]) -> threading.Thread:
    """A daemon thread whose exception is recorded (and fails the run) instead of vanishing."""

    def run() -> None:
        try:
            target(*args)
        except BaseException as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}")

    return threading.Thread(target=run, name=name, daemon=True)


def run_chaos(plan: ChaosPlan, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the chaos plan and return the counts (see the module doc); asserts nothing itself."""
    threads_before = {t.ident for t in threading.enumerate()}
    children_before = child_pids()
    tally, hits = Tally(), Disruptions()
    samples: list[tuple[float, int, int]] = []
    noisy: set[int] = set()
    requests = Requests()
    logs = LogCounter()
    errors: list[str] = []
    done, sampling = threading.Event(), threading.Event()
    say = progress or (lambda _: None)
    counts: dict[str, Any] = {"seed": plan.seed, "seconds": plan.seconds}
    sampler = _worker("chaos-sampler", _sampler, plan, sampling, samples, noisy, errors=errors)
    with logs.attached():
        rt = Runtime.start(chaos_config())
        workers = [
            _worker("chaos-killer", _killer, rt, plan, done, hits, errors=errors),
            _worker("chaos-stopper", _stopper, rt, plan, done, hits, errors=errors),
            _worker("chaos-operator", _operator, rt, plan, done, requests, errors=errors),
            *(
                _worker(f"chaos-caller-{i}", _caller, rt, plan, i, done, tally, errors=errors)
                for i in range(plan.callers)
            ),
            *(
                _worker(f"chaos-teller-{i}", _teller, rt, plan, i, done, tally, errors=errors)
                for i in range(plan.tellers)
            ),
        ]
        try:
            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                list(pool.map(rt.start_server, [*KILLABLE, "hang", "stop", "noisy"]))
            counts["startup_seconds"] = round(time.monotonic() - started, 2)
            say(f"chaos: servers up in {counts['startup_seconds']}s; running {plan.seconds}s")
            sampler.start()
            for worker in workers:
                worker.start()
            time.sleep(plan.seconds)
            done.set()
            for worker in workers:
                worker.join(60)
            counts["workers_stuck"] = sum(w.is_alive() for w in workers)
            # Let the health check find the last stop (SIGCONT first would hide it) ...
            wait_until(lambda: rt.status("stop")[0].health_check_failures >= 2 * hits.stops, 15, interval=0.2)
            # ... then nothing may stay stopped: a stopped process ignores everything but SIGKILL.
            ours = child_pids()
            for pid in hits.stopped & ours:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            settle_started = time.monotonic()

            def settled() -> bool:
                statuses = {s.namespace: s for s in rt.status()}
                return (
                    all(statuses[ns].state == "running" for ns in [*KILLABLE, "stop", "hang"])
                    and all(statuses[ns].restarts >= hits.kills[ns] for ns in KILLABLE)
                    and statuses["stop"].restarts >= hits.stops
                    and all(s.in_flight == 0 for s in statuses.values())
                )

            counts["settled"] = wait_until(settled, 30, interval=0.2)
            counts["settle_seconds"] = round(time.monotonic() - settle_started, 2)
            statuses = {s.namespace: s for s in rt.status()}
        finally:
            done.set()
            shutdown_started = time.monotonic()
            rt.shutdown()
            counts["shutdown_seconds"] = round(time.monotonic() - shutdown_started, 2)
            sampling.set()
            if sampler.is_alive():
                sampler.join(10)
        wait_until(lambda: not (child_pids() - children_before), 10)
        wait_until(lambda: not _extra_threads(threads_before), 10)
    leftover_children = sorted(child_pids() - children_before)
    leftover_threads = sorted(t.name for t in _extra_threads(threads_before))
    for pid in leftover_children:  # never leave one behind, even when the run fails
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    counts.update(
        calls=tally.calls,
        ok=tally.ok,
        errors=dict(sorted(tally.errors.items())),
        by_path=dict(sorted(tally.by_path.items())),
        unclassified=tally.unclassified,
        unexpected=tally.unexpected,
        wrong_answers=tally.wrong_answers,
        never_answered=tally.hung,
        late=tally.late,
        slack=plan.slack,
        max_latency=round(tally.max_latency, 3),
        max_overshoot=round(tally.max_overshoot, 3),
        kills=dict(sorted(hits.kills.items())),
        kills_total=sum(hits.kills.values()),
        kills_while=dict(sorted(hits.kills_while.items())),
        kills_missed=hits.kills_missed,
        stops=hits.stops,
        noisy_processes=len(noisy),
        requests=dict(sorted(requests.answered.items())),
        requests_failed=requests.failed,
        worker_errors=errors,
        restarts={ns: s.restarts for ns, s in sorted(statuses.items())},
        health_check_failures={ns: s.health_check_failures for ns, s in sorted(statuses.items())},
        states={ns: s.state for ns, s in sorted(statuses.items())},
        in_flight_after={ns: s.in_flight for ns, s in sorted(statuses.items()) if s.in_flight},
        leaked_children=leftover_children,
        leaked_threads=leftover_threads,
        leaks=len(leftover_children) + len(leftover_threads),
        logs=dict(sorted(logs.levels.items())),
        logged_exceptions=dict(logs.exceptions),
        memory=_memory(samples),
        examples=tally.examples,
        exception_samples=logs.samples,
        start_failures=logs.start_failures,
        start_failures_not_from_kills=dict(sorted(logs.unexplained.items())),
        unexplained_start_failures=logs.unexplained_reasons[:20],
    )
    return counts


def _extra_threads(before: set[int | None]) -> list[threading.Thread]:
    return [
        t
        for t in threading.enumerate()
        if t.ident not in before and t.is_alive() and not t.name.startswith(("pytest_timeout", "asyncio_"))
    ]


def _memory(samples: list[tuple[float, int, int]]) -> dict[str, Any]:
    """RSS over the run: after a warm-up quarter, the second quarter against the last one."""
    if len(samples) < 8:
        return {"samples": len(samples)}
    rss = [kb / 1024 for _, kb, _ in samples]
    quarter = len(rss) // 4
    early = statistics.median(rss[quarter : 2 * quarter])
    late = statistics.median(rss[-quarter:])
    times = [t / 60 for t, _, _ in samples[quarter:]]
    slope = statistics.linear_regression(times, rss[quarter:]).slope if len(set(times)) > 1 else 0.0
    return {
        "samples": len(samples),
        "start_mb": round(rss[0], 1),
        "early_mb": round(early, 1),
        "late_mb": round(late, 1),
        "peak_mb": round(max(rss), 1),
        "growth_mb": round(late - early, 1),
        "slope_mb_per_min": round(slope, 2),
        "max_threads": max(n for _, _, n in samples),
    }


SUMMARY_KEYS = (
    *("seed", "seconds", "calls", "ok", "errors", "by_path", "unclassified", "unexpected", "wrong_answers"),
    *("never_answered", "late", "slack", "max_latency", "max_overshoot"),
    *("kills_total", "kills", "kills_while", "kills_missed", "stops", "restarts", "health_check_failures"),
    *("noisy_processes", "requests", "requests_failed", "start_failures_not_from_kills"),
    *("states", "leaks", "startup_seconds", "settle_seconds", "shutdown_seconds", "memory", "logs"),
    "logged_exceptions",
)


def summary(counts: dict[str, Any]) -> str:
    """The counts in a few lines, for ``pytest -s``."""
    lines = [f"  {key}: {json.dumps(counts.get(key))}" for key in SUMMARY_KEYS]
    for example in counts.get("examples", []):
        lines.append(f"  example: {example}")
    for failure in counts.get("unexplained_start_failures", []):
        lines.append(f"  start failure not from a kill: {failure}")
    return "chaos counts:\n" + "\n".join(lines)
