"""`ToolIndex`: BM25 ranking over names, descriptions and argument names."""

from __future__ import annotations

from typing import Any

import pytest

from actors.gateway.search import MAX_LIMIT, META_TOOLS, ToolIndex, tokenize
from actors.mcp.names import external_name
from actors.tools import ToolSpec


def _spec(name: str, description: str = "", **properties: Any) -> ToolSpec:
    schema = {"type": "object", "properties": {key: {"type": "string"} for key in properties}}
    return ToolSpec(name=name, description=description, input_schema=schema)


CATALOG = [
    _spec("time/get_current_time", "Get the current time in a specific timezone.", timezone=1),
    _spec("time/convert_time", "Convert time between timezones.", source_timezone=1, time=1),
    _spec("git/git_status", "Shows the working tree status.", repo_path=1),
    _spec("git/git_commit", "Records changes to the repository.", repo_path=1, message=1),
    _spec("git/git_log", "Shows the commit logs.", repo_path=1, max_count=1),
    _spec("fx/echo", "Return the text unchanged."),
    _spec("fx/add", "Add two integers.", a=1, b=1),
    _spec("files/read_file", "Read the complete contents of a file from the file system.", path=1),
    _spec("files/write_file", "Create a new file or overwrite an existing one.", path=1, content=1),
    _spec("weather/forecast", "What the weather will be like.", latitude=1, longitude=1),
    _spec("echoes/list", "List the echoes of a canyon that echo, echo and echo.", canyon=1),
]


def _index(specs: list[ToolSpec] = CATALOG) -> ToolIndex:
    return ToolIndex((external_name(spec.name), spec) for spec in specs)


def _names(query: str, limit: int = 10) -> list[str]:
    return [match.name for match in _index().search(query, limit)]


def test_words_are_split_lowered_and_singular() -> None:
    assert tokenize("git_status getCurrentTime list-files HTTPServer v2") == [
        *("git", "status", "get", "current", "time", "list", "file", "http", "server", "v", "2")
    ]
    assert tokenize("the files of a directory") == ["file", "directory"]
    assert tokenize("queries class status") == ["query", "class", "status"]


def test_the_best_match_comes_first() -> None:
    assert _names("current time in a timezone")[0] == "time__get_current_time"
    assert _names("commit changes")[0] == "git__git_commit"
    assert _names("read a file")[0] == "files__read_file"


@pytest.mark.parametrize("query", ["echo", "fx__echo", "fx/echo", "  ECHO  "])
def test_a_tool_named_exactly_comes_first(query: str) -> None:
    # echoes/list says "echo" four times over; the tool named echo still comes first.
    names = _names(query)
    assert names[0] == "fx__echo"
    assert "echoes__list" in names


def test_argument_names_are_searched() -> None:
    # Only their argument names say latitude, max_count and repo_path.
    assert _names("latitude") == ["weather__forecast"]
    assert _names("max count") == ["git__git_log"]
    # Both words beat one: the three with repo_path, then the two with path.
    names = _names("repo path")
    assert set(names[:3]) == {"git__git_status", "git__git_commit", "git__git_log"}
    assert set(names[3:]) == {"files__read_file", "files__write_file"}


def test_nested_argument_names_are_searched() -> None:
    nested = ToolSpec(
        name="db/query",
        description="Run a query.",
        input_schema={
            "type": "object",
            "properties": {
                "options": {"type": "object", "properties": {"isolation_level": {"type": "string"}}}
            },
        },
    )
    assert [m.name for m in _index([*CATALOG, nested]).search("isolation level")] == ["db__query"]


def test_a_name_match_outranks_a_description_match() -> None:
    # "status" is in git_status's name, and only in the description of nothing else; "shows"
    # is in two descriptions: the name decides.
    assert _names("shows status")[0] == "git__git_status"


def test_the_limit_is_kept_and_matches_stay_in_order() -> None:
    everything = _index().search("time file git repository", 100)
    assert len(everything) > 3
    assert [m.name for m in _index().search("time file git repository", 3)] == [
        m.name for m in everything[:3]
    ]
    scores = [m.score for m in everything]
    assert scores == sorted(scores, reverse=True)
    assert _index().search("time", 0) == []


def test_nothing_matches_an_unrelated_query() -> None:
    assert _names("zebra xylophone") == []
    assert _names("the of and") == []
    assert ToolIndex([]).search("anything") == []


def test_a_match_carries_what_a_client_needs_to_call_it() -> None:
    [match] = _index().search("latitude")
    assert match.to_json() == {
        "name": "weather__forecast",
        "description": "What the weather will be like.",
        "inputSchema": CATALOG[9].input_schema,
        "score": round(match.score, 3),
    }
    assert match.score > 0


def test_the_meta_tools_say_what_they_take() -> None:
    search, call = META_TOOLS
    assert (search.name, call.name) == ("search_tools", "call_tool")
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["limit"]["maximum"] == MAX_LIMIT
    assert call.input_schema["required"] == ["name"]
    assert call.input_schema["properties"]["arguments"]["type"] == "object"
