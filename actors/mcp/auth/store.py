"""The user's OAuth logins: one JSON file (mode 0600) under the user's state folder, keyed by server URL.

::

    store = TokenStore()                      # $MCP_ACTORS_STATE_DIR, $XDG_STATE_HOME/mcp-actors
    login = store.load("https://api.example.com/mcp")           # or ~/.local/state/mcp-actors
    storage = store.for_server("https://api.example.com/mcp")   # the SDK's TokenStorage

Each entry keeps the tokens with the moment the access token expires (the SDK keeps only a
relative ``expires_in``, which means nothing after a restart), the client registration, and
the authorization server's metadata, so that a refresh after a restart reaches the right
token endpoint before anyone is asked to log in again.

Writes are atomic (a temporary file renamed over the old one) and serialised between
processes by an ``flock`` on a lock file beside it. A file that cannot be read is reported (a
warning, and `TokenStore.problem`), never crashed on: it reads as empty, and the first write
sets it aside as ``tokens.json.corrupt``.

Every method here reads or writes a file: call them on the caller's thread or a worker thread,
never on the event loop or an actor thread. `ServerTokenStorage` does that itself.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pydantic
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)

from actors.mcp.own_thread import in_own_thread
from actors.mcp.state import STATE_DIR_ENV, default_token_file, state_dir

__all__ = [
    "STATE_DIR_ENV",
    "AuthStatus",
    "ServerTokenStorage",
    "StoredLogin",
    "TokenStore",
    "state_dir",
]

logger = logging.getLogger(__name__)

AuthStatus = Literal["ok", "expired", "needs login"]

_VERSION = 1
_LOCK_TIMEOUT = 10.0
_LOCK_POLL = 0.02

# What each part of an entry is, as the file spells it.
_TOKENS, _EXPIRES_AT, _CLIENT, _AUTH_SERVER, _RESOURCE, _WANTED, _DPOP_KEY = (
    "tokens",
    "expiresAt",
    "client",
    "authorizationServer",
    "protectedResource",
    "wantedScope",
    "dpopKey",
)


@dataclass(frozen=True)
class StoredLogin:
    """What the store holds for one server; every part may be missing."""

    tokens: OAuthToken | None = None
    expires_at: float | None = None
    """When the access token expires (seconds since the epoch); None: unknown or never."""
    client_info: OAuthClientInformationFull | None = None
    """The client registration (dynamic, or by client ID metadata document)."""
    oauth_metadata: OAuthMetadata | None = None
    """The authorization server's metadata, as last discovered."""
    resource_metadata: ProtectedResourceMetadata | None = None
    """The MCP server's protected resource metadata, as last discovered."""
    wanted_scope: str | None = None
    """Scopes the server asked for beyond the login's (a step-up nobody could answer yet)."""
    dpop_key: str | None = field(default=None, repr=False)
    """The private key (PEM) the tokens are bound to (DPoP, `actors.mcp.auth.dpop`)."""

    def expired(self, now: float | None = None) -> bool:
        """Whether the access token is known to have expired."""
        at = time.time() if now is None else now
        return self.expires_at is not None and at >= self.expires_at

    def status(self, now: float | None = None) -> AuthStatus:
        """``ok``: a token that works or can be refreshed; ``expired``: the access token
        expired and there is no refresh token; ``needs login``: no token at all."""
        if self.tokens is None:
            return "needs login"
        if self.expired(now) and not self.tokens.refresh_token:
            return "expired"
        return "ok"

    def remaining_tokens(self, now: float | None = None) -> OAuthToken | None:
        """The tokens with ``expires_in`` counted from ``now`` (never below 0)."""
        if self.tokens is None or self.expires_at is None:
            return self.tokens
        at = time.time() if now is None else now
        return self.tokens.model_copy(update={"expires_in": max(0, int(self.expires_at - at))})


class TokenStore:
    """One user's OAuth logins, in one file. Thread-safe, and safe between processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        """``path``: the file; default ``state_dir() / "tokens.json"``. Nothing is read yet."""
        self.path = Path(path) if path is not None else default_token_file()
        self.problem: str | None = None
        """Why the file could not be read, the last time it was read; None when it could."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TokenStore({str(self.path)!r})"

    # -- reading ------------------------------------------------------------------------------

    def load(self, url: str) -> StoredLogin:
        """What the store holds for the server at ``url`` (an empty `StoredLogin` if nothing)."""
        return _login_of(url, self._read().get(url))

    def urls(self) -> list[str]:
        """The servers the store holds something for."""
        return sorted(self._read())

    # -- writing ------------------------------------------------------------------------------

    def save(
        self,
        url: str,
        *,
        tokens: OAuthToken | None = None,
        client_info: OAuthClientInformationFull | None = None,
        oauth_metadata: OAuthMetadata | None = None,
        resource_metadata: ProtectedResourceMetadata | None = None,
        wanted_scope: str | None = None,
        dpop_key: str | None = None,
        now: float | None = None,
    ) -> StoredLogin:
        """Store what is given for ``url`` (what is None is kept as it was); returns the new entry.

        New tokens take their expiry from ``expires_in``, counted from ``now``, and clear a
        ``wanted_scope`` they were granted.
        """

        def change(entry: dict[str, Any]) -> None:
            if tokens is not None:
                entry[_TOKENS] = tokens.model_dump(mode="json", exclude_none=True)
                at = time.time() if now is None else now
                if tokens.expires_in is not None:
                    entry[_EXPIRES_AT] = at + int(tokens.expires_in)
                else:
                    entry.pop(_EXPIRES_AT, None)
                granted = set((tokens.scope or "").split())
                if set(str(entry.get(_WANTED, "")).split()) <= granted:
                    entry.pop(_WANTED, None)
            if client_info is not None:
                entry[_CLIENT] = client_info.model_dump(mode="json", exclude_none=True)
            if oauth_metadata is not None:
                entry[_AUTH_SERVER] = oauth_metadata.model_dump(mode="json", exclude_none=True)
            if resource_metadata is not None:
                entry[_RESOURCE] = resource_metadata.model_dump(mode="json", exclude_none=True)
            if wanted_scope is not None:
                entry[_WANTED] = wanted_scope
            if dpop_key is not None:
                entry[_DPOP_KEY] = dpop_key

        return _login_of(url, self._update(url, change))

    def forget_tokens(self, url: str, *, refresh_token: str | None = None) -> bool:
        """Drop the tokens of ``url`` (the registration stays); with ``refresh_token``, only if the
        store still holds that one (another process may have renewed them meanwhile)."""
        forgot = False

        def change(entry: dict[str, Any]) -> None:
            nonlocal forgot
            stored = entry.get(_TOKENS)
            if stored is None:
                return
            if refresh_token is not None and (
                not isinstance(stored, dict) or stored.get("refresh_token") != refresh_token
            ):
                return
            entry.pop(_TOKENS, None)
            entry.pop(_EXPIRES_AT, None)
            forgot = True

        self._update(url, change)
        return forgot

    def forget_client(self, url: str) -> None:
        """Drop the client registration of ``url`` (it no longer fits: another redirect URI)."""
        self._update(url, lambda entry: entry.pop(_CLIENT, None))

    def forget(self, url: str) -> bool:
        """Drop everything held for ``url``; whether there was anything."""
        with self._locked():
            servers = self._read()
            if url not in servers:
                return False
            del servers[url]
            self._write(servers)
            return True

    def for_server(self, url: str) -> ServerTokenStorage:
        """The SDK's ``TokenStorage`` for the server at ``url``."""
        return ServerTokenStorage(self, url)

    # -- the file -----------------------------------------------------------------------------

    def _update(self, url: str, change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
        with self._locked():
            servers = self._read()
            entry = servers.get(url)
            entry = dict(entry) if isinstance(entry, dict) else {}
            change(entry)
            if entry:
                servers[url] = entry
            else:
                servers.pop(url, None)
            self._write(servers)
            return entry

    def _read(self) -> dict[str, Any]:
        """The servers' entries; empty (and `problem` set) when the file cannot be read."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.problem = None
            return {}
        except OSError as exc:
            return self._unreadable(f"cannot be read: {exc.strerror or exc}")
        try:
            data = json.loads(text)
        except ValueError as exc:
            return self._unreadable(f"is not JSON ({exc})")
        if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
            return self._unreadable('is not a token store (no "servers" object)')
        self.problem = None
        return dict(data["servers"])

    def _unreadable(self, why: str) -> dict[str, Any]:
        problem = f"the token store {self.path} {why}"
        if problem != self.problem:
            logger.warning("%s; it reads as empty", problem)
        self.problem = problem
        return {}

    def _write(self, servers: dict[str, Any]) -> None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.chmod(0o700)  # mkdir's mode is filtered by the umask
        if self.problem is not None and self.path.exists():
            aside = self.path.with_name(self.path.name + ".corrupt")
            os.replace(self.path, aside)
            logger.warning("%s; set aside as %s, a new one is started", self.problem, aside)
            self.problem = None
        text = json.dumps({"version": _VERSION, "servers": servers}, indent=2, sort_keys=True)
        temporary = folder / f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                os.fchmod(file.fileno(), 0o600)
                file.write(text + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This process's lock, then the file lock shared with other processes (bounded wait)."""
        if not self._lock.acquire(timeout=_LOCK_TIMEOUT):
            raise TimeoutError(f"the token store {self.path} stayed locked for {_LOCK_TIMEOUT:.0f} s")
        try:
            folder = self.path.parent
            if not folder.exists():
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                folder.chmod(0o700)
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                deadline = time.monotonic() + _LOCK_TIMEOUT
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as exc:
                        if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                            raise TimeoutError(
                                f"the token store {self.path} stayed locked for {_LOCK_TIMEOUT:.0f} s"
                            ) from exc
                        time.sleep(_LOCK_POLL)
                yield
            finally:
                os.close(fd)  # closing releases the flock
        finally:
            self._lock.release()


def _login_of(url: str, entry: Any) -> StoredLogin:
    """An entry of the file as a `StoredLogin`; a part that does not parse is left out, with a warning."""
    if not isinstance(entry, dict):
        if entry is not None:
            logger.warning("token store: the entry for %s is not an object; ignored", url)
        return StoredLogin()

    def part(key: str, model: type[pydantic.BaseModel]) -> Any:
        value = entry.get(key)
        if value is None:
            return None
        try:
            return model.model_validate(value)
        except pydantic.ValidationError as exc:
            # The first error's location and type only: the values may be secrets.
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            logger.warning(
                "token store: %s of %s is unusable (%s: %s); ignored", key, url, where, first["type"]
            )
            return None

    expires_at = entry.get(_EXPIRES_AT)
    wanted = entry.get(_WANTED)
    dpop_key = entry.get(_DPOP_KEY)
    return StoredLogin(
        tokens=part(_TOKENS, OAuthToken),
        expires_at=float(expires_at) if isinstance(expires_at, int | float) else None,
        client_info=part(_CLIENT, OAuthClientInformationFull),
        oauth_metadata=part(_AUTH_SERVER, OAuthMetadata),
        resource_metadata=part(_RESOURCE, ProtectedResourceMetadata),
        wanted_scope=wanted if isinstance(wanted, str) else None,
        dpop_key=dpop_key if isinstance(dpop_key, str) else None,
    )


class ServerTokenStorage:
    """The SDK's ``TokenStorage`` for one server, on a `TokenStore`.

    The file is read once, on the first ``get_*`` (on a worker thread: these are called on the
    event loop), and written through on every ``set_*``. One per connection.
    """

    def __init__(self, store: TokenStore, url: str) -> None:
        self.store = store
        self.url = url
        self.login: StoredLogin | None = None
        """What was read (and written since), once `load` ran."""
        self.describe: Callable[[], tuple[OAuthMetadata | None, ProtectedResourceMetadata | None]] | None = (
            None
        )
        """Where `set_tokens` finds the metadata that was discovered, to store beside the tokens."""

    def __repr__(self) -> str:
        return f"ServerTokenStorage({self.url!r})"

    async def load(self) -> StoredLogin:
        if self.login is None:
            self.login = await in_own_thread(self.store.load, self.url)
        return self.login

    async def get_tokens(self) -> OAuthToken | None:
        return (await self.load()).remaining_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        metadata, resource = self.describe() if self.describe is not None else (None, None)

        def save() -> StoredLogin:
            return self.store.save(
                self.url, tokens=tokens, oauth_metadata=metadata, resource_metadata=resource
            )

        self.login = await in_own_thread(save)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return (await self.load()).client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        def save() -> StoredLogin:
            return self.store.save(self.url, client_info=client_info)

        self.login = await in_own_thread(save)

    async def want_scope(self, scope: str) -> None:
        """Remember scopes the server asked for, for the next login."""

        def save() -> StoredLogin:
            return self.store.save(self.url, wanted_scope=scope)

        self.login = await in_own_thread(save)

    async def set_dpop_key(self, pem: str) -> None:
        self.login = await in_own_thread(lambda: self.store.save(self.url, dpop_key=pem))

    async def forget_tokens(self, refresh_token: str | None) -> None:
        """Drop refused tokens (only if the store still holds ``refresh_token``)."""

        def forget() -> None:
            self.store.forget_tokens(self.url, refresh_token=refresh_token)

        await in_own_thread(forget)
        if self.login is not None:
            self.login = replace(self.login, tokens=None, expires_at=None)

    async def forget_client(self) -> None:
        await in_own_thread(self.store.forget_client, self.url)
        if self.login is not None:
            self.login = replace(self.login, client_info=None)
