"""The allow-list: how entries parse, which are refused, and what they allow."""

from __future__ import annotations

import pytest

from actors.sandbox.hosts import AllowList, HostRule, format_authority, split_authority

PARSED = [
    ("example.com", HostRule("example.com", None, False)),
    ("Example.COM", HostRule("example.com", None, False)),
    ("example.com.", HostRule("example.com", None, False)),
    ("example.com:443", HostRule("example.com", 443, False)),
    ("*.example.com", HostRule("example.com", None, True)),
    ("*.example.com:8443", HostRule("example.com", 8443, True)),
    ("127.0.0.1:8080", HostRule("127.0.0.1", 8080, False)),
    ("[::1]:8080", HostRule("::1", 8080, False)),
    ("[0:0:0:0:0:0:0:1]", HostRule("::1", None, False)),
    ("localhost", HostRule("localhost", None, False)),
    ("my_host-1.internal:1", HostRule("my_host-1.internal", 1, False)),
    ("a.b:65535", HostRule("a.b", 65535, False)),
]


@pytest.mark.parametrize(("text", "rule"), PARSED)
def test_an_entry_parses_to_its_rule(text: str, rule: HostRule) -> None:
    assert HostRule.parse(text) == rule


REFUSED = [
    ("", "empty"),
    (" example.com", "space"),
    ("example.com ", "space"),
    ("exa mple.com", "space"),
    ("https://example.com", "scheme"),
    ("http://example.com:80", "scheme"),
    ("example.com/path", "path"),
    ("example.com:443/", "path"),
    ("example.com?q", "path"),
    ("user@example.com", "user"),
    ("*", '"all"'),
    ("*:443", '"all"'),
    ("*example.com", "'*' may only start"),
    ("foo.*.example.com", "'*' may only start"),
    ("*.*.example.com", "'*' may only start"),
    ("*.127.0.0.1", "not an address"),
    ("example.com:0", "1 to 65535"),
    ("example.com:65536", "1 to 65535"),
    ("example.com:", "1 to 65535"),
    ("example.com:http", "1 to 65535"),
    ("example.com:-1", "1 to 65535"),
    ("::1", "brackets"),
    ("::1:8080", "brackets"),
    ("[::1", "closing"),
    ("[]:80", "empty IPv6"),
    ("[::1]x", "after ']'"),
    ("[127.0.0.1]:80", "only an IPv6"),
    ("[::g]:80", "IPv6"),
    ("exa$mple.com", "host name"),
    ("example..com", "host name"),
    (".example.com", "host name"),
    ("-example.com", "host name"),
    ("a" * 64 + ".com", "host name"),
    ("ex\u00e4mple.com", "host name"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_a_bad_entry_is_refused_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="network entry") as raised:
        HostRule.parse(text)
    assert message in str(raised.value)
    assert repr(text) in str(raised.value)  # the message names the entry as written


def test_a_list_of_entries_is_refused_as_a_whole_for_one_bad_entry() -> None:
    with pytest.raises(ValueError, match=r"https://"):
        AllowList.parse(["example.com", "https://example.org"])
    with pytest.raises(ValueError, match="list of strings"):
        AllowList.parse("example.com")


RULES = AllowList.parse(
    [
        "example.com",
        "api.example.org:443",
        "*.cdn.example.net",
        "*.mirror.example.io:8443",
        "127.0.0.1:8080",
        "[::1]:9090",
    ]
)

DECISIONS = [
    ("example.com", 443, True),
    ("example.com", 80, True),
    ("EXAMPLE.com", 1, True),
    ("example.com.", 443, True),
    ("www.example.com", 443, False),  # a plain entry is that host only
    ("example.com.attacker.invalid", 443, False),
    ("attackerexample.com", 443, False),
    ("api.example.org", 443, True),
    ("api.example.org", 80, False),
    ("API.Example.Org", 443, True),
    ("example.org", 443, False),
    ("a.cdn.example.net", 443, True),
    ("a.b.cdn.example.net", 80, True),
    ("cdn.example.net", 443, False),  # a wildcard is not the apex
    ("xcdn.example.net", 443, False),
    ("a.mirror.example.io", 8443, True),
    ("a.mirror.example.io", 443, False),
    ("127.0.0.1", 8080, True),
    ("127.0.0.1", 8081, False),
    ("127.1", 8080, False),  # matched as the client wrote it, never as what it resolves to
    ("localhost", 8080, False),
    ("::1", 9090, True),
    ("[::1]", 9090, True),
    ("0:0:0:0:0:0:0:1", 9090, True),
    ("::1", 8080, False),
    ("", 443, False),
    ("exa mple.com", 443, False),
    ("exfil.attacker.invalid", 443, False),
]


@pytest.mark.parametrize(("host", "port", "allowed"), DECISIONS)
def test_allows_matches_the_name_the_client_asked_for(host: str, port: int, allowed: bool) -> None:
    assert RULES.allows(host, port) is allowed


def test_an_empty_list_allows_nothing_and_everything_allows_all() -> None:
    assert not AllowList().allows("example.com", 443)
    assert not AllowList.parse([]).allows("127.0.0.1", 80)
    assert AllowList.everything().allows("anything.invalid", 1)
    assert str(AllowList.everything()) == "all"
    assert str(AllowList()) == "none"


def test_rules_print_as_they_are_written() -> None:
    entries = ["example.com", "*.example.com:8443", "[::1]:8080", "127.0.0.1:80"]
    assert [str(HostRule.parse(e)) for e in entries] == entries


AUTHORITIES = [
    ("example.com:443", ("example.com", 443)),
    ("example.com", ("example.com", None)),
    ("[::1]:80", ("::1", 80)),
    ("[::1]", ("::1", None)),
    ("10.0.0.1:8080", ("10.0.0.1", 8080)),
]


@pytest.mark.parametrize(("text", "parts"), AUTHORITIES)
def test_split_authority(text: str, parts: tuple[str, int | None]) -> None:
    assert split_authority(text) == parts


def test_format_authority_brackets_an_ipv6_address() -> None:
    assert format_authority("::1", 80) == "[::1]:80"
    assert format_authority("example.com", 443) == "example.com:443"
