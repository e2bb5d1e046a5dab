"""The audit's writer (`actors.gateway.access.audit_sink`): records appended to a file or to
stdout as JSON lines and flushed, written off the gateway's loop, a full queue counted and
said in the log rather than waited on, and the recent records kept in memory."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from actors.config import load_config
from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who
from actors.gateway.access.audit_sink import AuditSink
from tests.conftest import wait_until
from tests.runtime.conftest import ROOT

WAIT = 30.0


@dataclass(frozen=True)
class Line:
    """A record as small as can be: the sink needs only its line."""

    n: int

    def line(self) -> str:
        return json.dumps({"n": self.n})


def event(n: int, method: str = "tools/call") -> AuditEvent:
    return AuditEvent(Who("alice"), method, Outcome.OK, server="s", tool=f"t{n}", started=time.time())


def test_records_are_appended_and_flushed_as_they_are_written(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.jsonl"
    path.parent.mkdir()
    path.write_text('{"earlier": true}\n')
    config = load_config({"mcpServers": {}, "access": {"audit": {"file": str(path)}}})
    with Audit.of_config(config) as audit:
        for n in range(3):
            audit.submit(event(n))
        assert audit.wait_written(WAIT)
        # Flushed while the gateway still runs: a crash now would lose none of it.
        lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"earlier": True}
    assert [json.loads(line)["tool"] for line in lines[1:]] == ["t0", "t1", "t2"]


def test_a_file_that_cannot_be_opened_fails_at_start(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    config = load_config({"mcpServers": {}, "access": {"audit": {"file": str(tmp_path / "a-file" / "x")}}})
    audit = Audit.of_config(config)
    with pytest.raises(OSError):
        audit.start()
    audit.close()


def test_stdout_gets_json_lines() -> None:
    """``"file": "-"``: a gateway process's stdout, read here through a real pipe."""
    script = (
        "from actors.config import load_config\n"
        "from actors.gateway.access.audit import Audit, AuditEvent, Outcome, Who\n"
        "config = load_config({'mcpServers': {}, 'access': {'audit': {'file': '-'}}})\n"
        "with Audit.of_config(config, replica='r1') as audit:\n"
        "    for n in range(5):\n"
        "        event = AuditEvent(Who('bob'), 'prompts/get', Outcome.OK, prompt=f'p{n}', started=0.0)\n"
        "        audit.submit(event)\n"
        "    assert audit.wait_written(30)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=WAIT, check=False
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["subject"], r["prompt"], r["replica"]) for r in records] == [
        ("bob", f"p{n}", "r1") for n in range(5)
    ]


def test_a_stalled_writer_costs_records_never_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    """The file is a pipe nobody reads: the writer blocks once the pipe is full, the queue
    fills, and further records are dropped and counted, each submission still instant."""
    read_end, write_end = os.pipe()
    stalled = os.fdopen(write_end, "w", encoding="utf-8")
    sink: AuditSink[int, Line] = AuditSink("-", keep=10, finish=Line, capacity=100, stdout=stalled)
    sink.start()
    slowest = 0.0

    async def submit_many() -> int:
        nonlocal slowest
        accepted = 0
        for n in range(5000):
            began = time.perf_counter()
            accepted += sink.submit(n)
            slowest = max(slowest, time.perf_counter() - began)
            if n % 100 == 0:
                await asyncio.sleep(0)
        return accepted

    drained: list[bytes] = []
    try:
        with caplog.at_level(logging.WARNING, logger="actors.gateway.access.audit_sink"):
            accepted = asyncio.run(submit_many())
            assert sink.dropped == 5000 - accepted > 0
            assert slowest < 0.05, f"a submission waited {slowest:.3f}s"
            assert wait_until(lambda: "records dropped" in caplog.text, WAIT), caplog.text
            # Someone reads the pipe again: everything accepted is written, nothing else.
            reader = threading.Thread(target=lambda: drained.append(_read_all(read_end)), name="pipe-reader")
            reader.start()
            assert sink.wait_written(WAIT)
    finally:
        sink.close()
        stalled.close()
    reader.join(WAIT)
    lines = drained[0].decode().splitlines()
    assert len(lines) == accepted
    assert [json.loads(line)["n"] for line in lines] == sorted(json.loads(line)["n"] for line in lines)
    assert [record.n for record in sink.recent()] == [json.loads(line)["n"] for line in lines[-10:]]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def test_a_write_error_keeps_the_records_in_memory(caplog: pytest.LogCaptureFixture) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # a reader gone: every write fails (EPIPE)
    broken = os.fdopen(write_end, "w", encoding="utf-8")
    sink: AuditSink[int, Line] = AuditSink("-", keep=5, finish=Line, stdout=broken)
    sink.start()
    try:
        with caplog.at_level(logging.ERROR, logger="actors.gateway.access.audit_sink"):
            for n in range(8):
                sink.submit(n)
            assert sink.wait_written(WAIT)
        assert [record.n for record in sink.recent()] == [3, 4, 5, 6, 7]
        assert [record.n for record in sink.recent(2)] == [6, 7]
        assert caplog.text.count("cannot write") == 1
    finally:
        sink.close()
        with contextlib.suppress(OSError):
            broken.close()


def test_closing_writes_what_is_queued(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    sink: AuditSink[int, Line] = AuditSink(str(path), keep=0, finish=Line)
    sink.start()
    for n in range(1000):
        sink.submit(n)
    sink.close()
    assert len(path.read_text().splitlines()) == 1000
    assert sink.recent() == ()


def test_without_a_file_the_last_records_are_made_when_read(caplog: pytest.LogCaptureFixture) -> None:
    made: list[int] = []

    def finish(n: int) -> Line:
        made.append(n)
        if n == 7:
            raise ValueError("a record that cannot be made")
        return Line(n)

    before = {thread.name for thread in threading.enumerate()}
    sink: AuditSink[int, Line] = AuditSink(None, keep=3, finish=finish).start()
    try:
        assert {thread.name for thread in threading.enumerate()} == before  # no writer thread
        for n in range(5):
            assert sink.submit(n)
        assert made == []  # a request costs no record made
        assert sink.wait_written(0)
        assert [record.n for record in sink.recent()] == [2, 3, 4]  # the last ``keep``
        assert made == [2, 3, 4]
        for n in (5, 6, 7):
            sink.submit(n)
        with caplog.at_level(logging.ERROR, logger="actors.gateway.access.audit_sink"):
            assert [record.n for record in sink.recent(2)] == [5, 6]  # 7 left out, and said
        assert any("could not be made" in record.getMessage() for record in caplog.records)
        assert sink.dropped == 0
    finally:
        sink.close()
