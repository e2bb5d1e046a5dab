"""``approve`` and ``pins``: the pinned definitions of the servers (`actors.pins`).

- ``approve NS [NAME ...]``: the held definitions of server NS (those named, or all) become its
  pins: a running gateway offers them again within seconds (it reads the change). No server starts.
- ``pins held [NS]``: what is held, and how it differs from its pin. No server starts.
- ``pins write``: start every server, and pin what it lists now (its earlier pins replaced).
- ``pins check``: start every server, and compare what it lists with its pins; exit status 1
  when a definition changed or is not pinned, with what changed (old and new), for CI.

The pins are the state folder's (``--pins DIR`` for another folder, a project's own in CI;
``--cluster URL`` for a cluster's, in Redis). A server is found by what makes it the same
server (`actors.pins.pin_key`), else by its namespace.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from actors.cli.output import error_line, readable
from actors.cli.startup import resolve_config
from actors.config import RuntimeConfig
from actors.mcp.config import ServerConfig
from actors.pins import Drift, FilePinStore, Pin, PinChange, PinStore, Ref, ServerPins, pin_key
from actors.pins.definitions import KIND_WORDS
from actors.pins.model import bound_name

if TYPE_CHECKING:
    from actors.runtime import Runtime

__all__ = ["add_pin_commands", "approve_command", "pins_command"]

_REDIS_TIMEOUT = 5.0


def add_pin_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """``approve`` and ``pins``, added with ``command(name, help)``."""
    approve = command("approve", "approve the changed definitions a server holds (all, or those named)")
    approve.add_argument("namespace", metavar="NS", help="the server whose held definitions to approve")
    approve.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="tools, prompts or templates (default: all); NAME@DIGEST approves it only while its "
        "held definition still has the digest `pins held` showed",
    )
    _where(approve)
    pins = command("pins", "the pinned definitions of the servers: held, write, check")
    actions = pins.add_subparsers(dest="action", required=True, metavar="ACTION")
    held = actions.add_parser("held", help="what is held until approved (no server starts)")
    held.add_argument("namespace", nargs="?", metavar="NS", help="only what this server holds")
    write = actions.add_parser("write", help="start every server and pin what it lists now")
    check = actions.add_parser("check", help="start every server; exit 1 if a definition is not its pin")
    for sub in (held, write, check):
        sub.add_argument("--config", metavar="FILE", help="config file (as for every command)")
        _where(sub)
    for sub in (write, check):
        sub.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            metavar="S",
            help="seconds to wait for each server's lists (default: %(default)s)",
        )


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pins", metavar="DIR", help="the pins folder (default: pins/ in the state folder)")
    parser.add_argument("--cluster", metavar="redis://HOST:PORT/DB", help="a cluster's pins, in Redis")


@contextmanager
def _store(args: argparse.Namespace) -> Iterator[PinStore]:
    """The pins ``args`` name: a cluster's (Redis) or a folder's."""
    if not args.cluster:
        yield FilePinStore(args.pins)
        return
    # Deferred: redis (the cluster extra) only for a cluster's pins.
    from actors.cluster.link import RedisLink  # noqa: PLC0415
    from actors.cluster.pin_store import RedisPinStore  # noqa: PLC0415

    link = RedisLink(args.cluster, timeout=_REDIS_TIMEOUT, name="pins").start()
    try:
        store = RedisPinStore(link, args.pins, follow=False)
        store.pull(_REDIS_TIMEOUT)  # the entries as Redis has them, into the local copy read here
        yield store
    finally:
        link.close()


def _entry(store: PinStore, server: ServerConfig) -> tuple[str, ServerPins | None]:
    """The key of ``server``'s pins and what they are: by its identity, else by its namespace
    (a config that changed since: one entry of that namespace, not several)."""
    key = pin_key(server)
    pins = store.load(key)
    if pins is None and len(found := store.find(server.name)) == 1:
        key = found[0]
        pins = store.load(key)
    return key, pins


def _server(config: RuntimeConfig, namespace: str) -> ServerConfig | None:
    server = config.servers.get(namespace)
    if server is None:
        known = ", ".join(sorted(config.servers)) or "none"
        print(
            error_line("not_found", f"no server {namespace!r} in the configuration (known: {known})"),
            file=sys.stderr,
        )
    return server


def _write_drift(out: TextIO, drift: Drift, heading: str) -> None:
    out.write(f"{drift.namespace}: {KIND_WORDS[drift.kind]} {drift.name!r} {heading}, {drift.seen.short}\n")
    for change in drift.changes():
        out.write(f"  {change.line()}\n")


# ---- approve and pins held: no server starts ---------------------------------------------------


def approve_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    server = _server(config, args.namespace)
    if server is None:
        return 1
    with _store(args) as store:
        key, before = _entry(store, server)
        held = before.held if before is not None else {}
        wanted = dict(bound_name(name) for name in args.names)
        missing = sorted(set(wanted) - {name for _, name in held})
        if missing:
            print(
                error_line("not_found", f"{args.namespace} holds nothing named {', '.join(missing)}"),
                file=sys.stderr,
            )
            return 1
        if not held:
            out.write(f"{args.namespace}: nothing is held\n")
            return 0
        change = PinChange(approve=frozenset(args.names), approve_all=not args.names, at=time.time())
        after = store.apply(key, server.name, change)
    assert before is not None
    approved = held.keys() - after.held.keys()
    for ref in sorted(approved):
        _write_drift(out, _drift(server.name, ref, before.pinned.get(ref), held[ref]), "approved")
    # A name bound to a digest that is no longer what is held: its definition changed again since
    # the operator looked, so what they approved is not what would be offered.
    stale = sorted(
        f"{name} (held now as {pin.short})"
        for (_, name), pin in after.held.items()
        if wanted.get(name) is not None
    )
    if stale:
        print(
            error_line(
                "validation", f"{args.namespace}: changed again since shown, not approved: {', '.join(stale)}"
            ),
            file=sys.stderr,
        )
        return 1
    return 0


def _drift(namespace: str, ref: Ref, pinned: Pin | None, seen: Pin) -> Drift:
    return Drift(namespace, ref[0], ref[1], pinned, seen)


def _held(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = resolve_config(args.config)
    if args.namespace is not None and _server(config, args.namespace) is None:
        return 1
    count = 0
    with _store(args) as store:
        for name, server in sorted(config.servers.items()):
            if args.namespace not in (None, name):
                continue
            _, pins = _entry(store, server)
            for ref, seen in sorted((pins.held if pins is not None else {}).items()):
                pinned = pins.pinned.get(ref) if pins is not None else None
                _write_drift(out, _drift(name, ref, pinned, seen), "is held (changed since it was pinned)")
                count += 1
    if not count:
        out.write("nothing is held\n")
    return 0


# ---- pins write and pins check: every server started ------------------------------------------


def pins_command(args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "held":
        return _held(args, out)
    config, _ = resolve_config(args.config)
    with _listed(config, args.timeout) as (rt, failed):
        current = {
            name: rt.pins.pins(server)
            for name, server in sorted(config.servers.items())
            if name not in failed and server.pin != "off"
        }
    with _store(args) as store:
        if args.action == "write":
            return _write(store, config, current, out) or (2 if failed else 0)
        return _check(store, config, current, out) or (2 if failed else 0)


@contextmanager
def _listed(config: RuntimeConfig, timeout: float) -> Iterator[tuple[Runtime, set[str]]]:
    """A runtime with pins of its own (memory: every definition pinned as listed now) that
    started every server and listed everything; and the servers that did not list."""
    # Deferred: the actors load only for a command that runs servers.
    from actors.runtime import Runtime  # noqa: PLC0415

    with Runtime.start(config, handle_signals=True) as rt:
        rt.list_tools(timeout=timeout)
        rt.list_resource_templates(timeout=timeout)
        rt.list_prompts(timeout=timeout)
        failed = set()
        for status in rt.status():
            if status.state == "failed" or status.tools is None:
                reason = readable(status.last_error or f"it is {status.state}")
                print(f"error: server {status.namespace!r} did not list: {reason}", file=sys.stderr)
                failed.add(status.namespace)
        yield rt, failed


def _now(pins: ServerPins) -> dict[Ref, Pin]:
    """What a server lists now, as a fresh runtime pinned it (a later change it held, over it)."""
    return {**pins.pinned, **pins.held}


def _write(store: PinStore, config: RuntimeConfig, current: dict[str, ServerPins], out: TextIO) -> int:
    for name, pins in current.items():
        server = config.servers[name]
        listed = _now(pins)
        store.apply(pin_key(server), name, PinChange(pin=listed, replace=True, at=time.time()))
        counts = ", ".join(
            f"{sum(1 for kind, _ in listed if kind == k)} {KIND_WORDS[k]}s"
            for k in ("tools", "prompts", "templates")
        )
        out.write(f"{name}: pinned {counts}\n")
    return 0


def _check(store: PinStore, config: RuntimeConfig, current: dict[str, ServerPins], out: TextIO) -> int:
    changed = new = 0
    for name, pins in current.items():
        _, kept = _entry(store, config.servers[name])
        pinned = kept.pinned if kept is not None else {}
        listed = _now(pins)
        for ref, seen in sorted(listed.items()):
            before = pinned.get(ref)
            if before is None:
                new += 1
                out.write(f"{name}: {KIND_WORDS[ref[0]]} {ref[1]!r} is new (not pinned)\n")
            elif before.digest != seen.digest:
                changed += 1
                _write_drift(out, _drift(name, ref, before, seen), "changed")
        for ref in sorted(pinned.keys() - listed.keys()):
            out.write(f"{name}: {KIND_WORDS[ref[0]]} {ref[1]!r} is no longer listed (its pin stays)\n")
    if changed or new:
        print(f"pins check: {changed} changed, {new} not pinned", file=sys.stderr)
        return 1
    out.write(f"pins check: every definition of {len(current)} servers is its pin\n")
    return 0
