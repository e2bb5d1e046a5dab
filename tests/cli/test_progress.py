"""`TerminalProgress`: the servers still starting and a call's progress, drawn by Rich on a
terminal and erased at the end; nothing drawn for a quick command, nothing after `close`."""

from __future__ import annotations

import io
import threading

from actors.cli import TerminalProgress
from actors.cli.progress import on_terminal
from actors.runtime import ServerStatus
from actors.runtime.state import ServerState
from tests.conftest import wait_until

WAIT = 30.0


def statuses(state: ServerState) -> list[ServerStatus]:
    return [ServerStatus("fs", state, "stdio"), ServerStatus("gh", ServerState.RUNNING, "stdio")]


def test_a_call_s_progress_is_drawn_and_erased_and_late_news_dropped() -> None:
    stream = io.StringIO()
    progress = TerminalProgress(stream, terminal=True)
    progress.update(1, 2, "copying [bold]files[/]")
    progress.close()
    drawn = stream.getvalue()
    assert "copying [bold]files[/]" in drawn  # a server's text, never Rich markup
    assert "50%" in drawn
    assert drawn.endswith("\x1b[1A\x1b[2K")  # its row erased (transient)
    assert "\x1b[?25h" in drawn  # and the cursor shown again
    progress.update(2, 2, "late")
    assert stream.getvalue() == drawn


def test_a_command_that_waited_for_nothing_draws_nothing() -> None:
    stream = io.StringIO()
    progress = TerminalProgress(stream, terminal=True)
    progress.watch(lambda: statuses(ServerState.RUNNING))
    progress.close()
    assert stream.getvalue() == ""


def test_each_starting_server_has_a_row_until_it_runs() -> None:
    stream = io.StringIO()
    state = [ServerState.STARTING]
    asked = threading.Event()

    def now() -> list[ServerStatus]:
        asked.set()
        return statuses(state[0])

    with TerminalProgress(stream, terminal=True) as progress:
        progress.watch(now)
        assert wait_until(lambda: "starting fs" in stream.getvalue(), WAIT)
        assert "starting gh" not in stream.getvalue()
        state[0] = ServerState.RUNNING
        asked.clear()
        assert asked.wait(WAIT)  # polled again since it runs
        assert wait_until(lambda: not progress._rows, WAIT)
    assert not any(t.name == "mcp-actors-progress" for t in threading.enumerate())


def test_a_runtime_that_stops_answering_ends_the_watch() -> None:
    def gone() -> list[ServerStatus]:
        raise RuntimeError("the runtime stopped")

    with TerminalProgress(io.StringIO(), terminal=True) as progress:
        progress.watch(gone)
        assert wait_until(
            lambda: not any(t.name == "mcp-actors-progress" for t in threading.enumerate()), WAIT
        )


def test_only_a_terminal_gets_progress() -> None:
    assert on_terminal(io.StringIO()) is None
