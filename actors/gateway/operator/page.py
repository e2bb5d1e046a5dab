"""`render`: the operator's page as HTML, from a `Snapshot`.

Server-rendered and self-contained: no script, nothing fetched from elsewhere (the response's
Content-Security-Policy allows only the page's own inline style), a meta refresh to stay
current. Every value is escaped (`html.escape`, quotes included): names, subjects and URIs come
from configs and clients, and none of them may become markup.

A pure function of immutable values: it runs on the worker thread that gathered them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from actors.gateway.operator.snapshot import AuditRow, HeldRow, ServerRow, Snapshot

__all__ = ["REFRESH_SECONDS", "render"]

REFRESH_SECONDS = 5
"""How often the page reloads itself."""

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1f24; background: #fff; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.6em 0 .4em; }
.meta { color: #57606a; margin: 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #d0d7de; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.state-running, .outcome-ok { color: #1a7f37; }
.state-failed, .state-restarting, .outcome-error, .outcome-denied, .outcome-limited { color: #cf222e; }
.error-type { font-family: ui-monospace, monospace; }
.empty { color: #57606a; font-style: italic; }
"""

_SERVER_HEADS = (
    "Server", "State", "Transport", "PID", "Restarts", "Calls", "Errors", "In flight",
    "p50 ms", "p99 ms", "Last error",
)  # fmt: skip
_HELD_HEADS = ("Server", "Kind", "Name", "Changed", "Since")
_AUDIT_HEADS = (
    "Time", "Subject", "Client", "Method", "Server", "Tool / prompt / URI", "Outcome",
    "Error type", "Reason", "ms", "Replica",
)  # fmt: skip


def _e(value: object) -> str:
    """``value`` as HTML text: escaped, ``—`` for nothing."""
    return "—" if value is None else html.escape(str(value), quote=True)


def _number(value: float | int | None) -> str:
    if value is None:
        return '<td class="num">—</td>'
    text = f"{value:.1f}" if isinstance(value, float) else str(value)
    return f'<td class="num">{text}</td>'


def _heads(names: Iterable[str]) -> str:
    return "<tr>" + "".join(f'<th scope="col">{_e(name)}</th>' for name in names) + "</tr>"


def _server(row: ServerRow) -> str:
    error = row.last_error
    last = (
        "—"
        if error is None
        else f'<span class="error-type">{_e(error.type)}</span>: {_e(error.message)}'
        + (f' <time datetime="{_e(error.at)}">{_e(error.at)}</time>' if error.at else "")
    )
    return (
        f'<tr data-server="{_e(row.namespace)}"><th scope="row">{_e(row.namespace)}</th>'
        f'<td class="state-{_e(row.state)}">{_e(row.state)}</td><td>{_e(row.transport)}</td>'
        f"{_number(row.pid)}{_number(row.restarts)}{_number(row.calls)}{_number(row.errors)}"
        f"{_number(row.in_flight)}{_number(row.p50_ms)}{_number(row.p99_ms)}"
        f'<td class="last-error">{last}</td></tr>'
    )


def _record(row: AuditRow) -> str:
    return (
        f'<tr><td><time datetime="{_e(row.time)}">{_e(row.time)}</time></td>'
        f'<td class="subject">{_e(row.subject)}</td><td>{_e(row.client)}</td><td>{_e(row.method)}</td>'
        f"<td>{_e(row.server)}</td><td>{_e(row.target)}</td>"
        f'<td class="outcome-{_e(row.outcome)}">{_e(row.outcome)}</td>'
        f'<td class="error-type">{_e(row.error_type)}</td><td>{_e(row.reason)}</td>'
        f"{_number(row.duration_ms)}<td>{_e(row.replica)}</td></tr>"
    )


def _held(row: HeldRow) -> str:
    return (
        f'<tr data-held="{_e(row.namespace)}/{_e(row.name)}"><th scope="row">{_e(row.namespace)}</th>'
        f"<td>{_e(row.kind)}</td><td>{_e(row.name)}</td><td>{_e(', '.join(row.changed))}</td>"
        f'<td><time datetime="{_e(row.since)}">{_e(row.since)}</time></td></tr>'
    )


def _table(name: str, heads: Sequence[str], rows: list[str], empty: str) -> str:
    body = "".join(rows) or f'<tr><td class="empty" colspan="{len(heads)}">{_e(empty)}</td></tr>'
    return f'<table id="{name}"><thead>{_heads(heads)}</thead><tbody>{body}</tbody></table>'


def render(snapshot: Snapshot) -> str:
    """The whole page for ``snapshot``."""
    replica = f" · replica {_e(snapshot.replica)}" if snapshot.replica else ""
    dropped = f" · {snapshot.audit_dropped} records dropped" if snapshot.audit_dropped else ""
    servers = _table(
        "servers", _SERVER_HEADS, [_server(r) for r in snapshot.servers], "No servers configured."
    )
    audit = _table("audit", _AUDIT_HEADS, [_record(r) for r in snapshot.audit], "No requests recorded yet.")
    held = _table("held", _HELD_HEADS, [_held(r) for r in snapshot.held], "Nothing held.")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>mcp-actors gateway</title><style>{_STYLE}</style></head><body>"
        "<h1>mcp-actors gateway</h1>"
        f'<p class="meta">As of <time datetime="{_e(snapshot.taken)}">{_e(snapshot.taken)}</time>'
        f"{replica} · refreshes every {REFRESH_SECONDS} s</p>"
        f"<h2>Servers</h2>{servers}"
        "<h2>Held definitions</h2>"
        '<p class="meta">Changed since they were pinned: hidden and refused until approved '
        "(<code>mcp-actors approve NS NAME</code>).</p>"
        f"{held}"
        f"<h2>Recent requests</h2>"
        f'<p class="meta">The last {len(snapshot.audit)} audit records, newest first{dropped}.</p>'
        f"{audit}</body></html>\n"
    )
