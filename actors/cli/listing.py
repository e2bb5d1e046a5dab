"""``tools``, ``resources`` and ``prompts``: the lists, from the schema cache when every server
has listed before (no server starts), else from a runtime that starts the servers never seen.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from actors.cli.output import error_line, first_line, readable
from actors.cli.progress import watching
from actors.cli.startup import command_config, start_runtime
from actors.cli.tables import write_table
from actors.config import RuntimeConfig
from actors.mcp.catalog import Catalog, PromptSpec, ResourceSpec, ResourceTemplateSpec
from actors.pins import FilePinStore, PinBook, Shown
from actors.runtime.schema_cache import SchemaCache
from actors.tools import ToolSpec

if TYPE_CHECKING:
    from actors.runtime import Runtime

__all__ = ["prompts_command", "resources_command", "tool_arguments", "tools_command"]

_BUILTIN = "builtin"
"""The built-in tools' namespace (`actors.runtime.registry.BUILTIN_NAMESPACE`, not imported here:
that module loads the actors, which a cached listing never needs)."""


def tools_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = command_config(args)
    cache = _cache(args)
    namespace = args.namespace
    cached = _cached(config, cache, namespace)
    if cached is not None:
        # Every server has run before: answered from the cache, no server process starts.
        _write_tools(cached[0], args, out)
        return 0
    seen = _seen(config, cache)
    with start_runtime(config, cache) as rt:
        if (status := _known(rt, namespace)) is not None:
            return status
        with watching(rt):
            tools = rt.list_tools(namespace, timeout=args.timeout)
        _write_tools(tools, args, out)
        return _listing_failures(rt, namespace, "tools", seen)


def resources_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = command_config(args)
    cache = _cache(args)
    cached = _cached(config, cache, args.namespace)
    if cached is not None:
        catalogs = cached[1]
        resources = [r for c in catalogs for r in c.resources]
        _write_resources(resources, [t for c in catalogs for t in c.templates], args, out)
        return 0
    seen = _seen(config, cache)
    with start_runtime(config, cache) as rt:
        if (status := _known(rt, args.namespace)) is not None:
            return status
        with watching(rt):
            resources = rt.list_resources(args.namespace, timeout=args.timeout)
            templates = rt.list_resource_templates(args.namespace, timeout=args.timeout)
        _write_resources(resources, templates, args, out)
        return _listing_failures(rt, args.namespace, "resources", seen)


def prompts_command(args: argparse.Namespace, out: TextIO) -> int:
    config, _ = command_config(args)
    cache = _cache(args)
    cached = _cached(config, cache, args.namespace)
    if cached is not None:
        _write_prompts(sorted((p for c in cached[1] for p in c.prompts), key=lambda p: p.name), args, out)
        return 0
    seen = _seen(config, cache)
    with start_runtime(config, cache) as rt:
        if (status := _known(rt, args.namespace)) is not None:
            return status
        with watching(rt):
            prompts = rt.list_prompts(args.namespace, timeout=args.timeout)
        _write_prompts(prompts, args, out)
        return _listing_failures(rt, args.namespace, "prompts", seen)


# ---- the schema cache ---------------------------------------------------------------------------


def _cache(args: argparse.Namespace) -> SchemaCache:
    """The schema cache a listing reads; with ``--no-cache`` one it only writes (a live listing
    that refreshes it)."""
    return SchemaCache(read=not args.no_cache)


def _seen(config: RuntimeConfig, cache: SchemaCache) -> set[str]:
    """The servers whose lists the schema cache knows."""
    return {name for name, server in config.servers.items() if cache.load(server) is not None}


def _cached(
    config: RuntimeConfig, cache: SchemaCache, namespace: str | None = None
) -> tuple[list[ToolSpec], list[Catalog]] | None:
    """Every tool and each server's catalog (sorted by namespace) as the schema cache knows them,
    with the built-in tools, for every server or the one ``namespace``; None if one was never
    seen (the runtime must start it) or ``namespace`` is no server (the runtime says so)."""
    if not cache.read or (namespace is not None and namespace not in config.servers):
        return None  # the built-in tools too, when asked for alone: the runtime lists them
    tools: list[ToolSpec] = []
    catalogs: list[Catalog] = []
    pins = PinBook(FilePinStore())  # what a server holds since it changed is not listed
    for name, server in sorted(config.servers.items()):
        if namespace is not None and name != namespace:
            continue
        known = cache.load(server)
        if known is None:
            return None
        pins.load(server)
        shown = Shown(pins, {name: server})
        tools += shown.tools(known.tools)
        templates, prompts = shown.templates(known.catalog.templates), shown.prompts(known.catalog.prompts)
        catalogs.append(
            known.catalog.model_copy(update={"templates": tuple(templates), "prompts": tuple(prompts)})
        )
    if config.builtin.enabled and namespace is None:
        # Deferred: only a configuration with the built-in tools pays for their module.
        from actors.builtin import BuiltinAdapter  # noqa: PLC0415

        tools += BuiltinAdapter(config.builtin.workspace).discover()
    return sorted(tools, key=lambda t: t.name), catalogs


# ---- a live listing -----------------------------------------------------------------------------


def _known(rt: Runtime, namespace: str | None) -> int | None:
    """None if ``namespace`` is None or a configured server; else exit status 1, said on stderr."""
    if namespace is None or rt.status(namespace) or namespace == _BUILTIN:
        return None
    # Worded as the runtime words an unknown namespace for a read or a prompt.
    known = ", ".join(s.namespace for s in rt.status()) or "none"
    message = f"no server for namespace {namespace!r} (known: {known})"
    print(error_line("not_found", message), file=sys.stderr)
    return 1


def _listing_failures(rt: Runtime, namespace: str | None, what: str, seen: set[str]) -> int:
    """Say on stderr which servers could not be listed (they did not start); the exit status.
    A server in ``seen`` was listed from the schema cache: it was not started, and need not be."""
    failed = [
        s
        for s in rt.status(namespace)
        if s.state == "failed" or (s.tools is None and s.namespace not in seen)
    ]
    for s in failed:
        reason = readable(s.last_error or f"it is {s.state}")
        print(f"error: server {s.namespace!r} did not list its {what}: {reason}", file=sys.stderr)
    return 1 if failed else 0


# ---- the lists, written -------------------------------------------------------------------------


def _write_tools(tools: Sequence[ToolSpec], args: argparse.Namespace, out: TextIO) -> None:
    if args.json:
        json.dump(
            [
                {
                    "name": t.name,
                    "description": t.description,
                    "source": t.source,
                    "capabilities": t.capabilities.model_dump(),
                    "inputSchema": t.input_schema,
                }
                for t in tools
            ],
            out,
            indent=2,
        )
        out.write("\n")
    else:
        rows = [
            [t.name, tool_arguments(t.input_schema), t.source, _capabilities(t), first_line(t.description)]
            for t in tools
        ]
        write_table(out, ["tool", "arguments", "source", "capabilities", "description"], rows)


def tool_arguments(schema: Mapping[str, Any]) -> str:
    """``owner, [limit: integer]``: a tool's arguments from its input schema, the optional ones
    in brackets, each with its type unless it is text."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "-"
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    words = []
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        kinds = [kind] if isinstance(kind, str) else [k for k in kind or () if isinstance(k, str)]
        shown = " | ".join(k for k in kinds if k not in ("string", "null")) if kinds else ""
        word = f"{name}: {shown}" if shown else str(name)
        words.append(word if name in required else f"[{word}]")
    return ", ".join(words)


def _capabilities(spec: ToolSpec) -> str:
    caps = spec.capabilities
    flags = [name for name, on in (("read-only", caps.read_only), ("writes", caps.writes)) if on]
    return ",".join(flags) or "-"


def _write_resources(
    resources: Sequence[ResourceSpec],
    templates: Sequence[ResourceTemplateSpec],
    args: argparse.Namespace,
    out: TextIO,
) -> None:
    if args.json:
        listing = {
            "resources": [_camel(r.model_dump(mode="json")) for r in resources],
            "resourceTemplates": [_camel(t.model_dump(mode="json")) for t in templates],
        }
        out.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
        return
    write_table(
        out,
        ["server", "uri", "name", "mime type", "description"],
        [[r.namespace, r.uri, r.name, r.mime_type, first_line(r.description)] for r in resources],
    )
    if templates:
        rows = [
            [t.namespace, t.uri_template, t.name, t.mime_type, first_line(t.description)] for t in templates
        ]
        out.write("\n")
        write_table(out, ["server", "template", "name", "mime type", "description"], rows)


def _write_prompts(prompts: Sequence[PromptSpec], args: argparse.Namespace, out: TextIO) -> None:
    if args.json:
        listing = [_camel(p.model_dump(mode="json")) for p in prompts]
        out.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
    else:
        rows = [[p.name, _prompt_arguments(p), first_line(p.description)] for p in prompts]
        write_table(out, ["prompt", "arguments", "description"], rows)


def _prompt_arguments(prompt: PromptSpec) -> str:
    """``city, [state]``: the optional ones in brackets."""
    return ", ".join(a.name if a.required else f"[{a.name}]" for a in prompt.arguments) or "-"


def _camel(fields: dict[str, Any]) -> dict[str, Any]:
    """A spec's fields named as MCP names them (``mime_type`` → ``mimeType``)."""
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v for k, v in fields.items()}
