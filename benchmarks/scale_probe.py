"""Scale, in a process of its own (so memory and threads are this benchmark's alone).

``python -m benchmarks.scale_probe SERVERS RUNNING`` prints one JSON object:
`Runtime.start` with SERVERS configured lazy servers (time, resident memory growth, threads),
then RUNNING started servers shut down (time, and whether every child is gone), and the SDK
closing as many sessions at once for reference.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from typing import Any

from actors.testing import procfs
from benchmarks.common import SDKLoop, os_threads, rss_mib, runtime_config


def lazy_servers(count: int) -> dict[str, Any]:
    from actors import Runtime, load_config

    # Warm every lazy import and first-use cache with a tiny runtime (not counted).
    with Runtime.start(runtime_config(["warm"])) as warm:
        warm.status()
    names = [f"s{i:04d}" for i in range(count)]
    config = runtime_config(names)
    gc.collect()
    rss_before = rss_mib()
    threads_before = os_threads()
    start = time.perf_counter()
    rt = Runtime.start(config)
    start_s = time.perf_counter() - start
    statuses = rt.status()
    ready_s = time.perf_counter() - start
    gc.collect()
    rss_after = rss_mib()
    threads_after = os_threads()
    python_threads = threading.active_count()
    again = time.perf_counter()
    rt.status()
    status_s = time.perf_counter() - again
    idle = sum(1 for s in statuses if s.state == "idle")
    stop = time.perf_counter()
    rt.shutdown()
    shutdown_s = time.perf_counter() - stop
    load = time.perf_counter()
    load_config(config)
    load_config_s = time.perf_counter() - load
    return {
        "servers": count,
        "start_s": start_s,
        "ready_s": ready_s,
        "load_config_s": load_config_s,
        "status_s": status_s,
        "idle_servers": idle,
        "rss_before_mib": rss_before,
        "rss_after_mib": rss_after,
        "rss_growth_mib": rss_after - rss_before,
        "threads_before": threads_before,
        "threads_after": threads_after,
        "python_threads_after": python_threads,
        "shutdown_s": shutdown_s,
    }


def running_servers(count: int) -> dict[str, Any]:
    from actors import Runtime
    from actors.runtime.messages import StartServer

    names = [f"r{i:02d}" for i in range(count)]
    rt = Runtime.start(runtime_config(names))
    messages = [StartServer(ns) for ns in names]
    for message in messages:
        rt.registry.tell(message)
    statuses = [m.reply.result(timeout=180) for m in messages]
    pids = [s.pid for s in statuses if s.pid]
    threads_running = os_threads()
    start = time.perf_counter()
    rt.shutdown()
    shutdown_s = time.perf_counter() - start
    left = [pid for pid in pids if procfs.is_alive(pid)]
    with SDKLoop() as sdk:
        sdk.connect(count, timeout=180)
        sdk_close_s = sdk.close_sessions()
    return {
        "servers": count,
        "running": len(pids),
        "threads_running": threads_running,
        "shutdown_s": shutdown_s,
        "children_left": len(left),
        "sdk_close_s": sdk_close_s,
    }


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    running = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    out = {"lazy": lazy_servers(count), "running": running_servers(running), "pid": os.getpid()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
