"""The commands' tables, drawn by Rich: on a terminal, bold headers and long cells folded to
its width; anywhere else (a pipe, a file, a test), plain text with no colour and no line
folded, each line without trailing blanks, so that ``grep`` and ``cut`` see one row per line.

Every cell is plain text, never Rich markup: a server's description that reads ``[bold]``
or ``:smile:`` is printed as written.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["is_terminal", "table", "write_table"]

_UNFOLDED = 100_000
"""The width a table is laid out in off a terminal: wide enough that no row is folded."""


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """``rows`` under ``headers`` as plain text: left-aligned columns, a rule under the headers."""
    buffer = io.StringIO()
    _console(buffer, terminal=False).print(_rich_table(headers, rows))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def write_table(out: TextIO, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """The table on ``out``: drawn for a person when ``out`` is a terminal, else as `table`."""
    if is_terminal(out):
        _console(out, terminal=True).print(_rich_table(headers, rows))
    else:
        out.write(table(headers, rows) + "\n")


def _rich_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Any:
    # Deferred: Rich loads only for a command that prints a table.
    from rich import box  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    drawn = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for header in headers:
        drawn.add_column(Text(str(header), style="bold"), overflow="fold")
    for row in rows:
        drawn.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    return drawn


def _console(out: TextIO, *, terminal: bool) -> Any:
    from rich.console import Console  # noqa: PLC0415

    return Console(
        file=out,
        width=None if terminal else _UNFOLDED,
        color_system="auto" if terminal else None,
        force_terminal=terminal,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=not terminal,
    )


def is_terminal(out: TextIO) -> bool:
    """Whether ``out`` is a terminal (a stream without a file behind it is not)."""
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False
