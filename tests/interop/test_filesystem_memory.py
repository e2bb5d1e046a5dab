"""@modelcontextprotocol/server-filesystem and @modelcontextprotocol/server-memory over stdio,
through the Runtime and the registry actor. Both speak the handshake era only (TypeScript SDK)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actors import Runtime, ToolResult
from actors.runtime.messages import CallTool
from tests.interop.conftest import config, npm_stdio


def call(
    rt: Runtime, namespace: str, tool: str, arguments: dict[str, Any], timeout: float = 20
) -> ToolResult:
    message = CallTool(namespace=namespace, tool=tool, arguments=arguments, timeout=timeout)
    rt.registry.tell(message)
    result: ToolResult = message.reply.result(timeout=timeout + 5)
    return result


def test_filesystem_server_is_confined_to_its_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    with Runtime.start(config({"fs": npm_stdio("server-filesystem", str(root))})) as rt:
        tools = {spec.tool_name for spec in rt.list_tools("fs")}
        assert {"read_text_file", "write_file", "edit_file", "list_directory", "search_files"} <= tools

        note = root / "notes" / "todo.txt"
        assert call(rt, "fs", "create_directory", {"path": str(note.parent)}).success
        wrote = call(rt, "fs", "write_file", {"path": str(note), "content": "buy milk\nwrite tests\n"})
        assert wrote.success, wrote
        assert note.read_text() == "buy milk\nwrite tests\n"

        read = call(rt, "fs", "read_text_file", {"path": str(note)})
        assert read.text == "buy milk\nwrite tests\n"
        assert read.output is not None and read.output["structuredContent"] == {"content": read.text}

        listing = call(rt, "fs", "list_directory", {"path": str(root)})
        assert listing.text == "[DIR] notes"

        preview = call(
            rt,
            "fs",
            "edit_file",
            {"path": str(note), "edits": [{"oldText": "buy milk", "newText": "buy tea"}], "dryRun": True},
        )
        assert "-buy milk" in (preview.text or "") and "+buy tea" in (preview.text or ""), preview
        assert note.read_text().startswith("buy milk")  # a dry run changes nothing

        found = call(rt, "fs", "search_files", {"path": str(root), "pattern": "**/*.txt"})
        assert str(note) in (found.text or ""), found

        # The server refuses paths outside its folder: a tool error, classified, nothing read.
        refused = call(rt, "fs", "read_text_file", {"path": str(tmp_path / "secret.txt")})
        assert refused.error_type == "server_error", refused
        assert "Access denied" in (refused.error or "")
        assert call(rt, "fs", "read_text_file", {"path": 42}).error_type == "validation"

        status = rt.status("fs")[0]
        assert (status.state, status.protocol_version, status.restarts) == ("running", "2025-11-25", 0)


def test_memory_server_keeps_its_graph_across_a_restart(tmp_path: Path) -> None:
    memory_file = tmp_path / "memory.jsonl"
    entry = npm_stdio("server-memory", env={"MEMORY_FILE_PATH": str(memory_file)})
    with Runtime.start(config({"mem": entry})) as rt:
        created = call(
            rt,
            "mem",
            "create_entities",
            {
                "entities": [
                    {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
                    {"name": "Engine", "entityType": "machine", "observations": []},
                ]
            },
        )
        assert created.success, created
        assert created.output is not None
        assert [e["name"] for e in created.output["structuredContent"]["entities"]] == ["Ada", "Engine"]
        related = call(
            rt,
            "mem",
            "create_relations",
            {"relations": [{"from": "Ada", "to": "Engine", "relationType": "programs"}]},
        )
        assert related.success, related
        observed = call(
            rt,
            "mem",
            "add_observations",
            {"observations": [{"entityName": "Engine", "contents": ["analytical"]}]},
        )
        assert observed.success, observed

        first_pid = rt.status("mem")[0].pid
        rt.stop_server("mem")
        assert rt.status("mem")[0].state == "stopped"

        # The next call starts a new server process lazily; the graph was kept in the file.
        found = call(rt, "mem", "search_nodes", {"query": "analytical"})
        assert found.success, found
        assert found.output is not None
        graph = found.output["structuredContent"]
        assert [e["name"] for e in graph["entities"]] == ["Engine"]
        assert rt.status("mem")[0].pid not in (None, first_pid)

        whole = call(rt, "mem", "read_graph", {})
        assert whole.output is not None
        assert whole.output["structuredContent"]["relations"] == [
            {"from": "Ada", "to": "Engine", "relationType": "programs"}
        ]
    lines = [json.loads(line) for line in memory_file.read_text().splitlines()]
    assert {line["type"] for line in lines} == {"entity", "relation"}
