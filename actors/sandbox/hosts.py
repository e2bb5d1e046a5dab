"""The allow-list of a sandboxed server's network: which ``host:port`` names it may reach.

An entry names a host the way a client asks for it, never an address it resolves to:

- ``example.com`` — that host, any port; ``example.com:443`` — that host, that port only;
- ``*.example.com`` (``*.example.com:8443``) — any subdomain at any depth, not the apex;
- ``127.0.0.1:8080``, ``[::1]:8080`` — an IP address literal (IPv6 in brackets).

A bare ``*`` is refused: a server that may reach everything says so in its configuration
(``"all"``), which builds `AllowList.everything`. Names match case-insensitively and without a
trailing dot. The proxy checks a request against the list before any DNS look-up, so a name
that is not listed is never resolved.

Pure values and functions; no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["AllowList", "HostRule", "format_authority", "normalize_host", "split_authority"]

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")
_MAX_NAME = 253


def normalize_host(text: str) -> str:
    """``text`` as a canonical host: a lower-case DNS name without a trailing dot, a dotted IPv4
    address, or a compressed IPv6 address (without brackets). ``ValueError`` if it is none."""
    if ":" in text:  # only an IPv6 literal holds a colon here
        try:
            return ipaddress.IPv6Address(text).compressed
        except ValueError:
            raise ValueError(f"{text!r} is not a valid IPv6 address") from None
    name = text.lower()
    name = name.removesuffix(".")
    if not name or len(name) > _MAX_NAME:
        raise ValueError(f"{text!r} is not a valid host name")
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(f"{text!r} is not a valid host name (letters, digits, '-', '_' and dots only)")
    return name


def split_authority(text: str) -> tuple[str, int | None]:
    """Split ``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` into a normalized host and a
    port (None when absent). ``ValueError`` on anything else."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueError(f"{text!r}: an IPv6 address needs a closing ']'")
        host, rest = text[1:close], text[close + 1 :]
        if not host:
            raise ValueError(f"{text!r}: empty IPv6 address")
        if rest and not rest.startswith(":"):
            raise ValueError(f"{text!r}: unexpected text after ']'")
        if ":" not in host:
            raise ValueError(f"{text!r}: only an IPv6 address goes in brackets")
        return normalize_host(host), _port(text, rest[1:] if rest else None)
    if text.count(":") > 1:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, as in [::1]:8080")
    host, colon, port_text = text.partition(":")
    return normalize_host(host), _port(text, port_text if colon else None)


def format_authority(host: str, port: int) -> str:
    """``host:port``, with an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _port(text: str, port_text: str | None) -> int | None:
    if port_text is None:
        return None
    if not _PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    return int(port_text)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostRule:
    """One entry of an allow-list: a host (or every subdomain of a domain) and maybe a port."""

    host: str
    """A normalized host (`normalize_host`); for a wildcard, the domain under the ``*.``."""
    port: int | None = None
    """None: any port."""
    subdomains: bool = False
    """True for ``*.domain``: any name ending in ``.domain``, the domain itself excepted."""

    @classmethod
    def parse(cls, text: str) -> HostRule:
        """The rule that ``text`` writes; ``ValueError`` naming the entry if it is not one."""
        if not isinstance(text, str):
            raise ValueError(f"a network entry must be a string, got {text!r}")
        if not text:
            raise ValueError("network entry '' is empty")
        if any(c.isspace() for c in text):
            raise ValueError(f"network entry {text!r} holds a space")
        if "://" in text:
            raise ValueError(f"network entry {text!r}: write host[:port], without a scheme like https://")
        if "/" in text or "?" in text or "#" in text:
            raise ValueError(f"network entry {text!r}: write host[:port], without a path")
        if "@" in text:
            raise ValueError(f"network entry {text!r}: write host[:port], without a user name")
        if text == "*" or text.startswith("*:"):
            raise ValueError(f'network entry {text!r}: "*" is not allowed; write "all" to allow every host')
        subdomains = text.startswith("*.")
        rest = text[2:] if subdomains else text
        if "*" in rest:
            raise ValueError(f"network entry {text!r}: '*' may only start an entry, as in *.example.com")
        try:
            host, port = split_authority(rest)
        except ValueError as exc:
            raise ValueError(f"network entry {text!r}: {exc}") from None
        if subdomains and _is_ip(host):
            raise ValueError(f"network entry {text!r}: '*.' goes before a domain name, not an address")
        return cls(host, port, subdomains)

    def matches(self, host: str, port: int) -> bool:
        """True if ``host`` (normalized) and ``port`` fall under this rule."""
        if self.port is not None and port != self.port:
            return False
        if self.subdomains:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        host = ("*." if self.subdomains else "") + (f"[{self.host}]" if ":" in self.host else self.host)
        return host if self.port is None else f"{host}:{self.port}"


@dataclass(frozen=True)
class AllowList:
    """The hosts one server may reach; empty: none."""

    rules: tuple[HostRule, ...] = ()
    any_host: bool = False
    """True: every host and port (the configuration's ``"all"``)."""

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """An allow-list of ``entries`` (`HostRule.parse` each); ``ValueError`` on a bad one."""
        if isinstance(entries, str):
            raise ValueError("the network entries must be a list of strings, not one string")
        return cls(tuple(HostRule.parse(entry) for entry in entries))

    @classmethod
    def everything(cls) -> AllowList:
        """The list that allows every host and port."""
        return cls(any_host=True)

    def allows(self, host: str, port: int) -> bool:
        """True if a client may reach ``host`` (the name it asked for) on ``port``.

        ``host`` may be in any case, with a trailing dot, or an IPv6 address with or without
        brackets; a host that is not a valid name is not allowed.
        """
        if self.any_host:
            return True
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            name = normalize_host(host)
        except ValueError:
            return False
        return any(rule.matches(name, port) for rule in self.rules)

    def __str__(self) -> str:
        return "all" if self.any_host else ", ".join(str(rule) for rule in self.rules) or "none"
