"""Capabilities inferred from tool names, and external names for ``namespace/tool``."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from actors.mcp.inference import READ_VERBS, WRITE_VERBS, infer_capabilities, name_words
from actors.mcp.names import EXTERNAL_NAME, NameMap, external_name

# ---- name_words ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("list_repos", ["list", "repos"]),
        ("get-user-details", ["get", "user", "details"]),
        ("listRepos", ["list", "repos"]),
        ("ListRepos", ["list", "repos"]),
        ("createIssue", ["create", "issue"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("search_and-updateItems", ["search", "and", "update", "items"]),
        ("SCREAMING_CASE", ["screaming", "case"]),
        ("a.b:c", ["a", "b", "c"]),
        ("", []),
        ("__", []),
    ],
)
def test_name_words(name: str, words: list[str]) -> None:
    assert name_words(name) == words


# ---- infer_capabilities ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "read_only", "writes"),
    [
        ("listRepos", True, False),
        ("list_repos", True, False),
        ("list-repos", True, False),
        ("createIssue", False, True),
        ("create_issue", False, True),
        ("create-issue", False, True),
        ("get-user-details", True, False),
        ("getUserDetails", True, False),
        ("get_user_details", True, False),
        ("searchCode", True, False),
        ("search_and_update", False, True),
        ("searchAndUpdate", False, True),
        ("search-and-update", False, True),
        ("deleteRepo", False, True),
        ("run_pipeline", False, False),
        ("runPipeline", False, False),
        ("run-pipeline", False, False),
        ("echo", False, False),
        ("catalogue_items", False, False),
        ("update_status", False, True),
    ],
)
def test_infer_capabilities_from_names(name: str, read_only: bool, writes: bool) -> None:
    caps = infer_capabilities(name)
    assert (caps.read_only, caps.writes) == (read_only, writes)
    assert caps.checkpointable is False


@given(
    read=st.sampled_from(sorted(READ_VERBS)),
    write=st.sampled_from(sorted(WRITE_VERBS)),
    style=st.sampled_from(["snake", "kebab", "camel"]),
    write_first=st.booleans(),
)
def test_a_write_verb_wins_over_a_read_verb(read: str, write: str, style: str, write_first: bool) -> None:
    words = [write, read, "thing"] if write_first else [read, write, "thing"]
    if style == "snake":
        name = "_".join(words)
    elif style == "kebab":
        name = "-".join(words)
    else:
        name = words[0] + "".join(w.capitalize() for w in words[1:])
    caps = infer_capabilities(name)
    assert caps.writes and not caps.read_only


@given(verb=st.sampled_from(sorted(READ_VERBS)), style=st.sampled_from(["_", "-", ""]))
def test_read_verbs_are_read_only(verb: str, style: str) -> None:
    name = f"{verb}{style}items" if style else f"{verb}Items"
    caps = infer_capabilities(name)
    assert caps.read_only and not caps.writes


@pytest.mark.parametrize(
    ("name", "annotations", "read_only", "writes"),
    [
        ("delete_repo", {"readOnlyHint": True}, True, False),
        ("run_pipeline", {"readOnlyHint": True}, True, False),
        ("list_repos", {"readOnlyHint": False}, False, True),
        ("get_user", {"destructiveHint": True}, False, True),
        ("run_pipeline", {"destructiveHint": True}, False, True),
        ("run_pipeline", {"destructiveHint": False}, False, False),
        ("list_repos", {}, True, False),
        ("list_repos", {"title": "List"}, True, False),
    ],
)
def test_trusted_annotations_refine_capabilities(
    name: str, annotations: dict[str, Any], read_only: bool, writes: bool
) -> None:
    caps = infer_capabilities(name, annotations, trusted=True)
    assert (caps.read_only, caps.writes) == (read_only, writes)
    assert caps.checkpointable is False


@pytest.mark.parametrize(
    "annotations",
    [{"readOnlyHint": True}, {"readOnlyHint": False}, {"destructiveHint": True}, None],
)
@pytest.mark.parametrize("name", ["delete_repo", "list_repos", "run_pipeline"])
def test_untrusted_annotations_are_ignored(name: str, annotations: dict[str, Any] | None) -> None:
    assert infer_capabilities(name, annotations) == infer_capabilities(name)
    assert infer_capabilities(name, annotations, trusted=False) == infer_capabilities(name)


# ---- external names ----------------------------------------------------------------------------

namespaces = st.text(min_size=0, max_size=40)
tool_names = st.text(min_size=0, max_size=80)
names = st.one_of(
    st.builds(lambda ns, tool: f"{ns}/{tool}", namespaces, tool_names),
    st.text(max_size=120),
    # Mostly-legal names with the separator in awkward places, to provoke look-alikes.
    st.builds(
        lambda ns, tool: f"{ns}/{tool}",
        st.text(alphabet="ab_-", min_size=0, max_size=6),
        st.text(alphabet="ab_-/", min_size=0, max_size=6),
    ),
)


@pytest.mark.parametrize(
    ("name", "external"),
    [
        ("gh/list_repos", "gh__list_repos"),
        ("time/get_current_time", "time__get_current_time"),
        ("jira/create-issue", "jira__create-issue"),
        ("a/b", "a__b"),
    ],
)
def test_plain_names_are_readable(name: str, external: str) -> None:
    assert external_name(name) == external


@pytest.mark.parametrize(
    "name",
    [
        "ns/工具",
        "ns/tool with spaces",
        "a__b/c",
        "a/b/c",
        "no_namespace",
        "",
        "/",
        "x" * 70 + "/y",
        "ns/" + "t" * 100,
        "ns/émoji_🎉",
    ],
)
def test_awkward_names_become_legal(name: str) -> None:
    external = external_name(name)
    assert EXTERNAL_NAME.match(external), external
    assert external_name(name) == external


@given(names)
def test_external_name_is_legal_and_deterministic(name: str) -> None:
    external = external_name(name)
    assert EXTERNAL_NAME.match(external), (name, external)
    assert len(external) <= 64
    assert external_name(name) == external


def test_names_with_double_underscores_do_not_collide() -> None:
    assert external_name("a__b/c") != external_name("a/b__c")
    mapping = NameMap()
    first, second = mapping.add("a__b/c"), mapping.add("a/b__c")
    assert first != second
    assert mapping.internal(first) == "a__b/c"
    assert mapping.internal(second) == "a/b__c"


def test_long_names_with_a_common_prefix_do_not_collide() -> None:
    stem = "namespace/" + "very_long_tool_name_" * 4
    externals = {external_name(stem + suffix) for suffix in ("a", "b", "c", "d")}
    assert len(externals) == 4
    assert all(len(e) <= 64 for e in externals)


@given(st.lists(names, max_size=30))
def test_name_map_is_legal_reversible_and_collision_free(batch: list[str]) -> None:
    mapping = NameMap()
    externals = {name: mapping.add(name) for name in batch}
    for name, external in externals.items():
        assert EXTERNAL_NAME.match(external), (name, external)
        assert mapping.internal(external) == name
        assert mapping.external(name) == external
        assert mapping.add(name) == external  # idempotent
    assert len(set(externals.values())) == len(externals)


def test_name_map_separates_a_plain_name_from_its_look_alike() -> None:
    # "a_/b" and "a/_b" both read as "a___b"; the map must keep them apart.
    mapping = NameMap()
    first, second = mapping.add("a_/b"), mapping.add("a/_b")
    assert first != second
    assert {mapping.internal(first), mapping.internal(second)} == {"a_/b", "a/_b"}


def test_name_map_unknown_names() -> None:
    mapping = NameMap()
    assert mapping.internal("gh__list_repos") is None
    assert mapping.external("gh/list_repos") is None


def test_name_map_is_thread_safe() -> None:
    mapping = NameMap()
    batch = [f"ns{i % 7}/tool_{i}" for i in range(400)]
    threads = [threading.Thread(target=lambda: [mapping.add(n) for n in batch]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    externals = [mapping.external(n) for n in batch]
    assert len(set(externals)) == len(batch)
    assert all(mapping.internal(e) == n for e, n in zip(externals, batch, strict=True) if e)


@given(st.lists(names, min_size=2, max_size=2, unique=True))
@example(["a_/b", "a/_b"])
@example(["gh_/list", "gh/_list"])
def test_external_name_alone_is_collision_free(pair: list[str]) -> None:
    first, second = pair
    assert external_name(first) != external_name(second), pair
