"""``skills``: the skills the servers serve (the Skills extension, SEP-2640), one skill's
verified ``SKILL.md``, one of its files.

``mcp-actors skills [NS]`` lists every skill with its label (``origin/<skill-path>``: a name
alone says nothing of where a skill comes from), its name, its files and its description;
entries a host may not load and servers that could not list are said on stderr. ``skills load
NS SKILL`` prints the skill's ``SKILL.md`` verified against its entry, under a first line that
names its origin; ``skills read NS SKILL FILE`` gets the skill's entry (``skills/get``) and
prints one file of it, verified. SKILL is the skill's URI, its path or its name (a name that
several skills share is refused: each is named by its path). Nothing that fails verification is
printed. The servers start for this command: there is no cached listing of skills.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from actors.cli.output import error_line, failure, first_line
from actors.cli.progress import watching
from actors.cli.startup import command_config, start_runtime
from actors.cli.tables import write_table
from actors.config import RuntimeConfig
from actors.mcp.content import ContentText

if TYPE_CHECKING:
    from actors.runtime import Runtime
    from actors.runtime.skills import SkillListing
    from actors.tools import ToolResult

__all__ = ["ACTIONS", "skills_command"]

ACTIONS = ("load", "read")
"""The words that, first after ``skills``, load a skill or read a file instead of listing."""
_LIST_TIMEOUT = 60.0
_USAGE = 2
_SHAPES = {
    "list": "mcp-actors skills [NS]",
    "load": "mcp-actors skills load NS SKILL",
    "read": "mcp-actors skills read NS SKILL FILE",
}
_WORDS = {"list": (0, 1), "load": (2, 2), "read": (3, 3)}
"""How many words each takes after its action word (one fewer with ``--command``/``--url``)."""


def skills_command(args: argparse.Namespace, out: TextIO) -> int:
    words = list(args.words)
    action = words.pop(0) if words and words[0] in ACTIONS else "list"
    config, _ = command_config(args)
    adhoc = _adhoc_namespace(config, args)
    least, most = _WORDS[action]
    if adhoc is not None and action != "list" and len(words) == least - 1:
        words.insert(0, adhoc)  # NS left out: the one server of --command or --url
    if not least <= len(words) <= most:
        given = " ".join(["skills", *args.words])
        hint = "" if action == "list" else " (SKILL: the skill's URI, its path or its name)"
        print(f"error: usage: {_SHAPES[action]}{hint}, not {given!r}", file=sys.stderr)
        return _USAGE
    namespace = words[0] if words else None
    if namespace is not None and namespace not in config.servers:
        known = ", ".join(sorted(config.servers)) or "none"
        print(
            error_line("not_found", f"no server for namespace {namespace!r} (known: {known})"),
            file=sys.stderr,
        )
        return 1
    with start_runtime(config) as rt, watching(rt):
        if action == "list":
            listing = rt.skills.list(namespace, timeout=args.timeout or _LIST_TIMEOUT)
            _write_listing(listing, args, out)
            return _listing_problems(listing)
        assert namespace is not None
        uri = _skill_uri(rt, namespace, words[1], args.timeout)
        if uri is None:
            return 1
        if action == "load":
            return _print_load(rt.skills.load(namespace, uri, timeout=args.timeout), namespace, args, out)
        return _print_read(rt, namespace, uri, words[2], args, out)


def _adhoc_namespace(config: RuntimeConfig, args: argparse.Namespace) -> str | None:
    """The namespace of the server ``--command`` or ``--url`` names; None without one."""
    if getattr(args, "server_command", None) is None and getattr(args, "url", None) is None:
        return None
    return next(iter(config.servers))


# ---- the listing --------------------------------------------------------------------------------


def _write_listing(listing: SkillListing, args: argparse.Namespace, out: TextIO) -> None:
    if args.json:
        shown = {
            "skills": [
                {
                    "origin": s.origin,
                    "label": s.label,
                    "name": s.skill.name,
                    "description": s.skill.description,
                    "files": "dynamic" if s.skill.files is None else len(s.skill.files),
                    **s.skill.to_json(),
                }
                for s in listing.skills
            ],
            "rejected": [{"server": origin, **item} for origin, item in listing.rejected],
            "held": [{"server": origin, **item} for origin, item in listing.held],
            "failures": [
                {"server": origin, "errorType": result.error_type, "error": result.error}
                for origin, result in listing.failures.items()
            ],
        }
        out.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
        return
    rows = [
        [
            s.label,
            s.skill.name,
            "dynamic" if s.skill.files is None else len(s.skill.files),
            first_line(s.skill.description),
        ]
        for s in listing.skills
    ]
    write_table(out, ["skill", "name", "files", "description"], rows)


def _listing_problems(listing: SkillListing) -> int:
    """Say on stderr each entry a host may not load and each server that could not list; the
    exit status: 1 if there was one."""
    for origin, item in listing.rejected:
        _say_rejected(origin, item)
    for origin, result in listing.failures.items():
        said = failure(result.error_type or "execution", result.error or "")
        print(f"error: server {origin!r} did not list its skills: {said}", file=sys.stderr)
    for origin, item in listing.held:  # a decision of the host's, not a failure
        print(
            f"warning: the skill {item.get('uri')} of {origin!r} changed since it was approved and is"
            f" held until approved: mcp-actors approve {origin} {item.get('uri')}",
            file=sys.stderr,
        )
    return 1 if listing.rejected or listing.failures else 0


def _say_rejected(origin: str, item: Mapping[str, object]) -> None:
    fault, reason = item.get("fault"), item.get("reason") or "it breaks the extension's rules"
    print(
        f"error: server {origin!r} lists the skill {item.get('uri')} that may not be loaded"
        f" ({fault}): {reason}",
        file=sys.stderr,
    )


# ---- one skill ----------------------------------------------------------------------------------


def _skill_uri(rt: Runtime, namespace: str, given: str, timeout: float | None) -> str | None:
    """The ``SKILL.md`` URI of the skill ``given`` names (a URI as it is; a path or a name among
    the skills ``namespace`` lists), or None after saying on stderr why there is none."""
    if "://" in given:
        return given
    listing = rt.skills.list(namespace, timeout=timeout or _LIST_TIMEOUT)
    if listing.failures:
        _listing_problems(listing)
        return None
    path = given.strip("/")
    found = [s for s in listing.skills if s.label in (path, f"{namespace}/{path}")]
    found = found or [s for s in listing.skills if s.skill.name == given]
    if len(found) == 1:
        return found[0].skill.uri
    if found:
        labels = ", ".join(s.label for s in found)
        message = f"{given!r} names {len(found)} skills of {namespace!r}: {labels}; name one by its path"
        print(error_line("validation", message), file=sys.stderr)
        return None
    refused = [item for _, item in listing.rejected if str(item.get("uri")).endswith(f"/{path}/SKILL.md")]
    if refused:
        for item in refused:
            _say_rejected(namespace, item)
        return None
    names = ", ".join(s.label for s in listing.skills) or "none"
    message = (
        f"server {namespace!r} lists no skill {given!r} (it lists: {names});"
        " a skill it does not list is named by its URI"
    )
    print(error_line("not_found", message), file=sys.stderr)
    return None


def _failed(result: ToolResult, args: argparse.Namespace, out: TextIO) -> int | None:
    """The exit status of a failed result, said (as JSON with ``--json``); None if it succeeded."""
    from actors.mcp.skills import SKILL_FAULT  # noqa: PLC0415  (deferred: see actors.cli)

    if args.json:
        out.write(result.model_dump_json(indent=2) + "\n")
        return None if result.success else 1
    if result.success:
        return None
    fault = result.metadata.get(SKILL_FAULT)
    named = f" (skill fault: {fault}: nothing of it is printed)" if fault else ""
    print(error_line(result.error_type or "execution", result.error or "") + named, file=sys.stderr)
    return 1


def _print_load(result: ToolResult, namespace: str, args: argparse.Namespace, out: TextIO) -> int:
    status = _failed(result, args, out)
    if status is not None or args.json:
        return status or 0
    output: dict[str, Any] = result.output or {}
    skill, text = output["skill"], str(output["text"])
    name = skill["frontmatter"]["name"]
    out.write(f"# skill {name} from {namespace} (MCP server, untrusted): {skill['uri']}\n")
    out.write(text if text.endswith("\n") else text + "\n")
    return 0


def _print_read(
    rt: Runtime, namespace: str, uri: str, path: str, args: argparse.Namespace, out: TextIO
) -> int:
    from actors.mcp.skills import Skill  # noqa: PLC0415  (deferred: see actors.cli)

    got = rt.skills.get(namespace, uri, timeout=args.timeout)
    if not got.success:
        return _failed(got, args, out) or 1
    skill = Skill.from_json((got.output or {})["skill"])
    result = rt.skills.read(namespace, skill, path, timeout=args.timeout)
    status = _failed(result, args, out)
    if status is not None or args.json:
        return status or 0
    output: dict[str, Any] = result.output or {}
    if "text" in output:
        text = str(output["text"])
        out.write(text if text.endswith("\n") else text + "\n")
        return 0
    # A binary file as `read` shows one: a line (and the file, with --save).
    text_of = ContentText(Path(args.save) if args.save else None)
    try:
        [line] = text_of.contents([{"uri": output["uri"], "blob": output["blob"]}])
    except OSError as exc:
        print(f"error: cannot save to {args.save}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    out.write(line + "\n")
    return 0
