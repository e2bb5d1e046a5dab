"""A stdio server that prints to stdout before it speaks MCP (a banner, ``Downloading
package...``): a start that then times out quotes what it printed; one that then answers works,
and nothing is reported."""

from __future__ import annotations

from actors import ErrorType, Runtime
from tests.runtime.conftest import config, stdio_server
from tests.servers.banner_server import BANNER

WAIT = 60.0
# Long enough for a forked server to print its banner on a slow, busy machine.
CONNECT_TIMEOUT = 3


def test_a_start_that_times_out_quotes_the_first_lines_the_server_printed_to_stdout() -> None:
    entry = stdio_server("banner_server", connectTimeout=CONNECT_TIMEOUT, maxRestarts=0)
    with Runtime.start(config({"b": entry})) as rt:
        result = rt.call_tool("b/echo", {"text": "x"}, timeout=WAIT)
        assert result.error_type == ErrorType.CONNECTION, result
        error = result.error or ""
        assert f"connection timed out after {CONNECT_TIMEOUT}" in error, error
        assert f"; the server wrote to stdout what is not MCP: {BANNER[0]!r} | '" in error, error
        # The long second line is cut short; the third is not quoted (the first two are).
        assert BANNER[1][:150] in error and BANNER[1] not in error and "…'" in error, error
        assert BANNER[2] not in error, error
        last_error = rt.status("b")[0].last_error or ""
        assert f"what is not MCP: {BANNER[0]!r}" in last_error, last_error


def test_a_server_that_prints_before_it_answers_works_and_nothing_is_reported() -> None:
    with Runtime.start(config({"b": stdio_server("banner_server", "--serve")})) as rt:
        result = rt.call_tool("b/echo", {"text": "hello"}, timeout=WAIT)
        assert result.success, result
        assert result.text == "hello"
        status = rt.status("b")[0]
        assert (status.state, status.last_error) == ("running", None), status
