"""What ``import actors`` costs: the names load on first use, not at import.

Each check runs a fresh interpreter (this one has imported everything already) and reads
its ``sys.modules``: a behaviour check, not a timing one (the timing is in
benchmarks/startup.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.servers.http_server import REPO_ROOT

# Imported only when a runtime starts (or a name that needs them is used).
_HEAVY = ("mcp", "mcp_types", "opentelemetry", "anyio", "httpx", "regex", "starlette", "uvicorn")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_import_actors_imports_no_runtime_sdk_or_telemetry() -> None:
    modules = _modules_after("import actors")
    assert not _tops(modules) & set(_HEAVY), sorted(_tops(modules) & set(_HEAVY))
    # The package and its name loader (standard library only), nothing else of ours.
    assert sorted(m for m in modules if m.startswith("actors")) == ["actors", "actors.exports"]
    assert "pykka" not in modules


def test_loading_a_config_and_the_schema_cache_starts_nothing_heavy() -> None:
    modules = _modules_after(
        "from actors import load_config, ToolResult, SchemaCache\n"
        "load_config({'mcpServers': {'a': {'command': 'x'}}})"
    )
    assert not _tops(modules) & {*_HEAVY, "pykka"} - {"regex"}, sorted(_tops(modules) & set(_HEAVY))
    assert "actors.runtime.facade" not in modules
    assert "actors.mcp.loop" not in modules


def test_the_runtime_name_imports_the_actors_but_not_the_sdk() -> None:
    # The SDK is imported in Runtime.start, on the caller's thread (tests/mcp/test_off_loop.py).
    modules = _modules_after("from actors import Runtime, CallTool")
    assert {"actors.runtime.facade", "actors.runtime.messages", "pykka"} <= modules
    assert not _tops(modules) & {"mcp", "mcp_types", "httpx", "starlette"}


def test_every_public_name_still_resolves() -> None:
    import actors

    for name in actors.__all__:
        assert getattr(actors, name) is not None, name
    assert set(actors.__all__) <= set(dir(actors))
    from actors.runtime import CallTool, Runtime
    from actors.runtime.messages import CallTool as Message

    assert CallTool is Message and actors.Runtime is Runtime


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    import actors

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = actors.nothing_here  # type: ignore[attr-defined]
    from actors import config

    assert config.load_config is actors.load_config


def test_the_runtime_leaves_the_testing_package_alone() -> None:
    # actors.testing (MockTransport, BlockingAdapter) is for tests: nothing in the product imports it.
    modules = _modules_after(
        "from actors import Runtime\n"
        "from actors.runtime import facade, registry, server\n"
        "from actors.gateway import serve\n"
        "import actors.cli"
    )
    assert not {m for m in modules if m.startswith("actors.testing")}, sorted(modules)
    assert "actors.testing.mock" in _modules_after("from actors import MockTransport")


_FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "anthropic", "openai")


def test_no_agent_framework_is_imported_until_its_adapter_is() -> None:
    # `import actors` and the framework-neutral seam load none of the frameworks; an adapter
    # loads its own framework and no other.
    modules = _tops(
        _modules_after("import actors\nfrom actors import AsyncRuntime, Runtime\nimport actors.agents")
    )
    assert not modules & set(_FRAMEWORKS), sorted(modules & set(_FRAMEWORKS))
    with_one = _tops(_modules_after("import actors.agents.pydantic_ai"))
    assert "pydantic_ai" in with_one
    assert not with_one & {"langchain", "langgraph", "agents", "anthropic"}, sorted(
        with_one & set(_FRAMEWORKS)
    )
