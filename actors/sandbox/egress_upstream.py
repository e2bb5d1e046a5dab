"""The host's own proxy, when its environment names one: the egress proxy chains through it.

``https_proxy`` serves tunnels (``CONNECT``) and ``http_proxy`` plain requests; where only
one of them is set it serves both (a host that names one proxy has no other way out).
Lower-case names win over upper-case ones, as in curl and urllib. ``no_proxy`` lists the
targets reached directly: ``*``, a domain with its subdomains (``example.com``,
``.example.com``, ``*.example.com``), an address, or a network (``10.0.0.0/8``), each
optionally with ``:port``.

Pure values, read once from an environment mapping; no I/O.
"""

from __future__ import annotations

import base64
import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from actors.sandbox.hosts import format_authority, normalize_host, split_authority

__all__ = ["Exemption", "Upstream", "Upstreams"]

logger = logging.getLogger(__name__)

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Upstream:
    """A proxy of the host's environment that allowed traffic goes through."""

    host: str
    port: int
    authorization: str | None = None
    """The ``Proxy-Authorization`` value, from the URL's user and password."""

    @classmethod
    def parse(cls, url: str) -> Upstream:
        """``http://[user:password@]host[:port]`` (``http://`` may be left out; port 80 by
        default); ``ValueError`` for another scheme or a malformed URL."""
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme.lower() != "http":
            raise ValueError(f"only an http:// upstream proxy is supported, not {parts.scheme}://")
        host, port = split_authority(parts.netloc.rpartition("@")[2])
        authorization = None
        if parts.username is not None:
            secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = "Basic " + base64.b64encode(secret).decode("ascii")
        return cls(host, port or 80, authorization)

    def __str__(self) -> str:
        # Never the credentials: this goes into logs and answers.
        return f"http://{format_authority(self.host, self.port)}"


@dataclass(frozen=True)
class Exemption:
    """One ``no_proxy`` entry (other than ``*``)."""

    domain: str = ""
    """A normalized name: it and its subdomains are exempt (unused when `network` is set)."""
    network: _Network | None = None
    port: int | None = None
    """None: any port."""

    @classmethod
    def parse(cls, entry: str) -> Exemption:
        """The exemption that ``entry`` writes; ``ValueError`` if it writes none."""
        entry = entry.strip().lower()
        if "/" in entry:
            return cls(network=ipaddress.ip_network(entry, strict=False))
        rest = entry.removeprefix("*").lstrip(".")
        if rest.count(":") > 1 and not rest.startswith("["):  # a bare IPv6 address
            host, port = normalize_host(rest), None
        else:
            host, port = split_authority(rest)
        try:
            return cls(network=ipaddress.ip_network(host), port=port)
        except ValueError:
            return cls(domain=host, port=port)

    def covers(self, host: str, port: int) -> bool:
        """True if ``host`` (normalized) on ``port`` is reached directly."""
        if self.port is not None and port != self.port:
            return False
        try:
            address = ipaddress.ip_address(host)
        except ValueError:  # a name: this domain or one under it
            return self.network is None and (host == self.domain or host.endswith("." + self.domain))
        return self.network is not None and address in self.network


@dataclass(frozen=True)
class Upstreams:
    """The upstream proxies of the host's environment, and the targets they exempt."""

    http: Upstream | None = None
    https: Upstream | None = None
    exempt: tuple[Exemption, ...] = ()
    exempt_all: bool = False
    """``no_proxy=*``: every target is reached directly."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Upstreams:
        """What ``environ`` names; an unusable entry is logged and left out."""

        def first(*names: str) -> str:
            return next((environ[n].strip() for n in names if environ.get(n, "").strip()), "")

        found: dict[str, Upstream | None] = {}
        for kind in ("http", "https"):
            url = first(f"{kind}_proxy", f"{kind.upper()}_PROXY")
            try:
                found[kind] = Upstream.parse(url) if url else None
            except ValueError as exc:  # cannot chain through it: say so, and go direct
                logger.warning("egress proxy: ignoring the host's %s_proxy: %s", kind, exc)
                found[kind] = None
        entries = [e.strip() for e in first("no_proxy", "NO_PROXY").split(",") if e.strip()]
        exempt = []
        for entry in entries:
            if entry == "*":
                continue
            try:
                exempt.append(Exemption.parse(entry))
            except ValueError as exc:
                logger.warning("egress proxy: ignoring the host's no_proxy entry %r: %s", entry, exc)
        return cls(found["http"], found["https"], tuple(exempt), "*" in entries)

    def for_target(self, host: str, port: int, *, tunnel: bool) -> Upstream | None:
        """The proxy to reach ``host:port`` through, or None to go direct."""
        upstream = (self.https or self.http) if tunnel else (self.http or self.https)
        if upstream is None or self.exempt_all or any(e.covers(host, port) for e in self.exempt):
            return None
        return upstream
