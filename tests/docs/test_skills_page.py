"""docs/skills.md's example works as written: its one snippet, run in a folder whose
``servers.json`` names our skills server (tests/servers/skills_server.py) ``docs``, prints each
skill's label, then the verified SKILL.md of ``docs/pdf-processing``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests.docs.runnable import python_blocks
from tests.harness import forkserver
from tests.runtime.conftest import ROOT

PAGE = Path(__file__).resolve().parents[2] / "docs" / "skills.md"


def test_the_skills_page_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = python_blocks(PAGE.read_text(encoding="utf-8"))
    command, *args = forkserver.python_module("tests.servers.skills_server")
    entry = {"command": command, "args": args, "cwd": str(ROOT)}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"docs": entry}}))
    printed = io.StringIO()
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(PAGE), "exec"), {"__name__": "__main__"})
    out = printed.getvalue()
    assert "docs/pdf-processing Extract, fill, and assemble PDF documents" in out, out
    assert "docs/acme/billing/refunds" in out, out
    assert "name: pdf-processing" in out, out  # the SKILL.md, loaded and verified
