"""A call's arguments from the command line (`actors.cli.arguments`) and the namespace of a
server named by ``--command``/``--url`` (`actors.cli.adhoc`): pure functions, pinned by tables."""

from __future__ import annotations

from typing import Any

import pytest

from actors.cli.adhoc import adhoc_entry, namespace_of
from actors.cli.arguments import ArgumentsError, needs_schema, parse_arguments

SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "on": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {"type": "object"},
        "maybe": {"type": ["integer", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "numbers": {"anyOf": [{"type": "integer"}, {"type": "array"}]},
        "anything": {},
    },
}


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ([], {}),
        (['{"text": "hi", "count": 2}'], {"text": "hi", "count": 2}),
        (["text=hi"], {"text": "hi"}),
        (["text=3"], {"text": "3"}),  # text stays text
        (["text=a=b"], {"text": "a=b"}),  # only the first = splits
        (["text="], {"text": ""}),
        (["count=3"], {"count": 3}),
        (["ratio=0.5", "ratio=2"], {"ratio": 2}),  # the last word wins
        (["on=true", "text=x"], {"on": True, "text": "x"}),
        (["on=no"], {"on": False}),
        (['tags=["a", "b"]'], {"tags": ["a", "b"]}),
        (['options={"deep": {"x": 1}}'], {"options": {"deep": {"x": 1}}}),
        (["maybe=null"], {"maybe": None}),
        (["maybe=4"], {"maybe": 4}),
        (["either=4"], {"either": "4"}),  # a branch allows text: it stays text
        (["numbers=[1, 2]"], {"numbers": [1, 2]}),
        (["numbers=7"], {"numbers": 7}),
        (["anything=7"], {"anything": "7"}),  # a schema that says nothing: text
        (["unknown=7"], {"unknown": "7"}),  # not in the schema: text, for the server to judge
        (['{"text": "a", "count": 1}', "count=2"], {"text": "a", "count": 2}),  # words override
    ],
)
def test_words_become_arguments_typed_by_the_schema(words: list[str], expected: dict[str, Any]) -> None:
    assert parse_arguments(words, SCHEMA) == expected


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (["count=three"], "count: 'three' is not an integer"),
        (["ratio=fast"], "ratio: 'fast' is not a number"),
        (["on=maybe"], "on: 'maybe' is not a boolean"),
        (["tags=a,b"], "tags: 'a,b' is not JSON"),
        (["text"], "'text' is neither key=value nor a JSON object"),
        (["=x"], "'=x' is neither key=value nor a JSON object"),
        (["{text: 1}"], "arguments are not JSON: "),
        (['["a"]'], "arguments must be a JSON object"),
    ],
)
def test_words_that_are_not_arguments_say_which_and_why(words: list[str], says: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(words, SCHEMA)
    assert str(caught.value).startswith(says)


def test_without_a_schema_every_value_is_text() -> None:
    assert parse_arguments(["count=3", "on=true"]) == {"count": "3", "on": "true"}


def test_only_key_value_words_need_the_schema() -> None:
    assert not needs_schema([])
    assert not needs_schema(['{"a": 1}'])
    assert needs_schema(['{"a": 1}', "b=2"])


@pytest.mark.parametrize(
    ("command", "url", "namespace"),
    [
        ("npx -y @modelcontextprotocol/server-everything", None, "everything"),
        ("npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /tmp", None, "filesystem"),
        ("uvx mcp-server-fetch", None, "fetch"),
        ("uvx mcp-server-git==2026.1.14 --repository .", None, "git"),
        ("python server.py", None, "server"),
        ("/usr/bin/python3 -m tests.servers.fixture_server", None, "fixture_server"),
        ("node ./build/weather-mcp.js", None, "weather"),
        ("docker run -i --rm mcp/github", None, "github"),
        ("github-mcp-server stdio", None, "github"),
        ("npx", None, "server"),
        (None, "https://api.githubcopilot.com/mcp/", "api"),
        (None, "http://127.0.0.1:8000/mcp", "server"),
        (None, "http://localhost:8000/mcp", "server"),
    ],
)
def test_an_adhoc_server_is_named_after_its_package_or_host(
    command: str | None, url: str | None, namespace: str
) -> None:
    assert namespace_of(command, url) == namespace


def test_an_adhoc_entry_is_the_command_split_as_a_shell_would_or_the_url() -> None:
    assert adhoc_entry("uvx 'mcp server' --flag", None, None) == (
        "mcp-server",  # a namespace has no blanks
        {"command": "uvx", "args": ["mcp server", "--flag"]},
    )
    assert adhoc_entry(None, "http://127.0.0.1:1/mcp", "api") == ("api", {"url": "http://127.0.0.1:1/mcp"})
    with pytest.raises(ValueError, match="cannot be split as a shell would"):
        adhoc_entry("uvx 'open", None, None)
    with pytest.raises(ValueError, match="--command is empty"):
        adhoc_entry("  ", None, None)
