"""``mcp-actors serve``: the gateway from the command line.

A host's config entry ``{"command": "mcp-actors", "args": ["serve", "--config", "..."]}``
starts it over stdio (the default); ``--http HOST:PORT`` serves Streamable HTTP instead.
Nothing but MCP ever goes to stdout: logs go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio
from pydantic import ValidationError

from actors.config import AuthKeys, RuntimeConfig
from actors.gateway.access.audit_sink import STDOUT
from actors.gateway.access.guard import Guard
from actors.gateway.access.per_user import without_per_user
from actors.gateway.gateway import Gateway
from actors.gateway.reload import ConfigReloader
from actors.gateway.rounds import KEY_ENV
from actors.gateway.serve import (
    HTTPRefused,
    Metrics,
    NotServed,
    is_loopback,
    listen,
    serve_http,
    serve_stdio,
    url_of,
)
from actors.gateway.task_records import FileTaskRecords, default_task_folder
from actors.pins import FilePinStore
from actors.runtime.schema_cache import SchemaCache

if TYPE_CHECKING:
    from actors.cluster import ClusterReplica
    from actors.cluster.affinity import Affinity
    from actors.gateway.access.limits_redis import RedisBuckets

__all__ = ["ENV_TOKEN", "add_arguments", "serve"]

logger = logging.getLogger(__name__)

ENV_TOKEN = "MCP_ACTORS_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve`` (beside ``--config``)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout (the default)")
    where.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP on HOST:PORT (path /mcp)")
    parser.add_argument(
        "--token-file", metavar="FILE", help=f"the bearer token clients must send (default: ${ENV_TOKEN})"
    )
    parser.add_argument(
        "--issuer",
        metavar="URL",
        help='accept OAuth access tokens (JWTs) from this issuer (or "access": {"auth": {"issuer": ...}})',
    )
    parser.add_argument(
        "--resource-url",
        metavar="URL",
        help="the gateway's public URL of /mcp, that tokens must be for (access.auth.resource)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not keep what servers list on disk (the schema cache)"
    )
    parser.add_argument("--log-level", default="WARNING", help="log level on stderr (default WARNING)")
    parser.add_argument(
        "--tool-search",
        action="store_true",
        help='list only search_tools and call_tool, for large catalogs (or "toolSearch": true)',
    )
    parser.add_argument(
        "--watch", action="store_true", help="reload the config file when it changes (SIGHUP reloads it too)"
    )
    parser.add_argument(
        "--no-metrics", action="store_true", help="no Prometheus /metrics endpoint on the HTTP gateway"
    )
    parser.add_argument(
        "--cluster",
        metavar="redis://HOST:PORT/DB",
        help="run as one replica of a cluster sharing schemas, events and membership through Redis "
        "(needs --http)",
    )
    parser.add_argument(
        "--advertise",
        metavar="URL",
        help="the URL other replicas reach this one on (default: http://HOST:PORT/mcp of --http)",
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        metavar="SECONDS",
        help='how long a replica that died keeps its "affinity": "single" servers (default 10)',
    )


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--http wants HOST:PORT, got {value!r}")
    if not 0 <= int(port) <= 65535:
        raise ValueError(f"--http wants a port from 0 to 65535, got {port}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _token(path: str | None) -> str | None:
    if path:
        return Path(path).read_text(encoding="utf-8").strip() or None
    return os.environ.get(ENV_TOKEN) or None


def prometheus_metrics() -> Metrics | None:
    """Export the runtime's OpenTelemetry metrics as Prometheus text, for ``/metrics``.

    The command owns its process, so it may set the global meter provider (a library never
    does). None, with a warning, when the ``gateway`` extra is not installed.
    """
    try:
        # Deferred: optional packages, imported on the command's own thread before serving.
        import prometheus_client  # noqa: PLC0415
        from opentelemetry import metrics  # noqa: PLC0415
        from opentelemetry.exporter.prometheus import PrometheusMetricReader  # noqa: PLC0415
        from opentelemetry.sdk.metrics import MeterProvider  # noqa: PLC0415
    except ImportError as exc:
        logger.warning("no /metrics: %s (pip install 'mcp-actors[gateway]')", exc)
        return None
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    return prometheus_client.generate_latest


def serve(args: argparse.Namespace, config: RuntimeConfig, err: TextIO | None = None) -> int:
    """Run the gateway until the client goes away (stdio) or a signal (HTTP); an exit status."""
    err = err or sys.stderr
    level = args.log_level.upper()
    logging.basicConfig(stream=err, level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        # The gateway lowers the servers' loggers to forward their messages to clients: the
        # console keeps the level asked for.
        handler.setLevel(level)
    cache = None if args.no_cache else SchemaCache(unstartable=True)  # lists do not wait on them
    try:
        address = _address(args.http) if args.http else None
        config, token = _authentication(args, _audit_checked(config, address), address)
        if args.watch and config.source is None:
            raise ValueError("--watch needs a config file (--config FILE)")
        if (args.cluster or args.advertise) and address is None:
            raise ValueError("--cluster and --advertise need --http HOST:PORT (replicas serve HTTP)")
        if args.advertise and not args.cluster:
            raise ValueError("--advertise is for a replica: give --cluster redis://HOST:PORT/DB too")
        if args.lease_ttl is not None and (not args.cluster or not args.lease_ttl > 0):
            raise ValueError("--lease-ttl wants a positive number of seconds, and --cluster")
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=err)
        return 2
    metrics = None if address is None or args.no_metrics else prometheus_metrics()
    searching = True if args.tool_search else None
    try:
        replica = _replica(args.cluster, args.advertise, address)
    except ImportError as exc:
        print(
            f"error: --cluster needs the redis package: {exc} (pip install 'mcp-actors[cluster]')", file=err
        )
        return 2
    except ValueError as exc:
        print(f"error: --cluster: {exc}", file=err)
        return 2
    with contextlib.ExitStack() as stack:
        if replica is not None:
            stack.enter_context(replica)
        sockets = _listening(stack, address, args.http, err) if address is not None else []
        if sockets is None:
            return 1
        bus = affinity = replica_secret = None
        if replica is not None:
            # A per-user server is learnt by its copies.
            replica.prepare(without_per_user(config), lease_ttl=args.lease_ttl)
            cache, bus = replica.store, replica.bus
            replica_secret = _replica_secret(replica, token, config.access.auth)
            # Entered before the gateway, so left after it: leases go once their servers stopped.
            affinity = stack.enter_context(_affinity(replica, replica_secret or token, args.lease_ttl))
        # Replicas share the key that seals 2026-07-28 clients' requestState: a retry may
        # reach any of them. The environment's key, when set, is everyone's already.
        sealing = replica.shared_secret("request-state") if replica and not os.environ.get(KEY_ENV) else None
        gateway = stack.enter_context(
            Gateway(
                config,
                schema_cache=cache,
                tool_search=searching,
                bus=bus,
                affinity=affinity,
                request_state_key=sealing,
                authenticated=bool(token) or config.access.auth is not None,
                shared_limits=stack.enter_context(_shared_limits(replica)),
                audit_secrets=[secret for secret in (token, replica_secret) if secret],
                task_records=stack.enter_context(_task_records(replica)),
                replica_alive=_alive(replica) if replica is not None else None,
                # The state folder's pins (`actors.pins`), with or without the schema cache;
                # a replica's are the cluster's, in Redis.
                pins=replica.pins if replica is not None else FilePinStore(),
            )
        )
        if replica is not None:
            replica.attach(gateway)
        stack.enter_context(_reloading(gateway, args))
        # Built here, off the loop: it makes the HTTP client (and SSL context) for the issuer.
        guard = Guard.build(config.access.auth, token, replica_secret) if address is not None else None
        if address is None:
            return _run(functools.partial(serve_stdio, gateway), err)
        http = functools.partial(serve_http, gateway, *address, token, metrics, guard, sockets=sockets)
        return _run(http, err, shown=args.http)


def _run(serving: Callable[[], Awaitable[None]], err: TextIO, shown: str = "") -> int:
    """Serve until the client goes away or a signal; an exit status (1: never served)."""
    try:
        with _terminable():
            anyio.run(serving)
    except (KeyboardInterrupt, SystemExit):
        pass  # Ctrl-C or SIGTERM: a requested stop; leaving the caller's block stops every server
    except NotServed as exc:
        print(f"error: cannot serve on {shown}: {exc}", file=err)
        return 1
    return 0


def _listening(
    stack: contextlib.ExitStack, address: tuple[str, int], shown: str, err: TextIO
) -> list[socket.socket] | None:
    """The gateway's sockets, bound before any server starts, closed by ``stack``; their URL on
    ``err``. None once ``err`` says why they cannot be (a gateway that cannot serve fails)."""
    try:
        sockets = listen(*address)
    except OSError as exc:
        print(f"error: cannot serve on {shown}: {exc.strerror or exc}", file=err)
        return None
    for sock in sockets:
        stack.callback(sock.close)
    print(f"mcp-actors serve: listening on {url_of(address[0], sockets)}", file=err)
    return sockets


def _authentication(
    args: argparse.Namespace, config: RuntimeConfig, address: tuple[str, int] | None
) -> tuple[RuntimeConfig, str | None]:
    """The config with the command line's issuer, and the static token; refused off loopback
    with neither."""
    token = _token(args.token_file)
    config = _with_auth(config, args.issuer, args.resource_url)
    if address is not None and not is_loopback(address[0]) and not token and config.access.auth is None:
        raise HTTPRefused(
            f"serving on {address[0]} (not loopback) needs a bearer token: "
            f"set ${ENV_TOKEN} or --token-file (or an issuer: --issuer, access.auth)"
        )
    return config, token


def _with_auth(config: RuntimeConfig, issuer: str | None, resource: str | None) -> RuntimeConfig:
    """``config`` with ``--issuer`` and ``--resource-url`` over its ``access.auth`` keys."""
    if issuer is None and resource is None:
        return config
    keys = config.access.auth.model_dump() if config.access.auth is not None else {}
    keys |= {k: v for k, v in (("issuer", issuer), ("resource", resource)) if v is not None}
    if "issuer" not in keys or "resource" not in keys:
        raise ValueError("an issuer needs the gateway's resource URL: give --issuer and --resource-url")
    try:
        auth = AuthKeys.model_validate(keys)
    except ValidationError as exc:
        raise ValueError(
            "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        ) from None
    return config.model_copy(update={"access": config.access.model_copy(update={"auth": auth})})


def _replica(
    url: str | None, advertise: str | None, address: tuple[str, int] | None
) -> ClusterReplica | None:
    """This process as a replica of the cluster on Redis at ``url`` (None: no cluster)."""
    if url is None or address is None:
        return None
    # Deferred: the redis package is the optional ``cluster`` extra; on the command's thread.
    from actors.cluster import ClusterReplica  # noqa: PLC0415

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"wants redis://HOST:PORT/DB, got {url!r}")
    host, port = address
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()  # an address others can reach, not the wildcard
    elif ":" in host:
        host = f"[{host}]"
    return ClusterReplica.start(url, advertise or f"http://{host}:{port}/mcp")


def _replica_secret(replica: ClusterReplica, token: str | None, auth: AuthKeys | None) -> str | None:
    """The credential replicas forward requests to each other with, shared through Redis (the
    caller goes along in each request: `actors.gateway.access.principal`). None without
    authentication (nothing to prove), or when Redis cannot say (then: the static token)."""
    if not token and auth is None:
        return None
    shared = replica.shared_secret("replicas")
    if shared is None and not token:
        logger.error("cluster: no replica credential from Redis: requests forwarded here will be refused")
    return shared.decode() if shared is not None else None


def _affinity(replica: ClusterReplica, token: str | None, ttl: float | None) -> Affinity:
    """Where a replica's single-affinity servers run: one replica at a time, others forward."""
    # Deferred like ClusterReplica: the redis package is the optional ``cluster`` extra.
    from actors.cluster.affinity import DEFAULT_TTL, Affinity  # noqa: PLC0415

    return Affinity.start(replica.url, replica.id, token=token, ttl=ttl or DEFAULT_TTL)


def _audit_checked(config: RuntimeConfig, address: tuple[str, int] | None) -> RuntimeConfig:
    """``config``, refused if its audit would write to stdout over stdio (which carries MCP)."""
    if address is None and config.access.audit.file == STDOUT:
        raise ValueError('access.audit.file "-" (stdout) needs --http: over stdio, stdout carries MCP')
    return config


def _shared_limits(replica: ClusterReplica | None) -> contextlib.AbstractContextManager[RedisBuckets | None]:
    """The rate limits' buckets (`actors.gateway.access.limits`): a replica's are shared in
    Redis, entered before the gateway so that they close after it."""
    if replica is None:
        return contextlib.nullcontext()
    # Deferred like ClusterReplica: the redis package is the optional ``cluster`` extra.
    from actors.gateway.access.limits_redis import RedisBuckets  # noqa: PLC0415

    return RedisBuckets.start(replica.url)


def _task_records(replica: ClusterReplica | None) -> contextlib.AbstractContextManager[Any]:
    """Where the tasks the gateway holds are recorded: a replica's in Redis, for all of them;
    a lone gateway's in files, which a restart keeps."""
    if replica is None:
        return contextlib.nullcontext(FileTaskRecords(default_task_folder()))
    from actors.gateway.task_records_redis import RedisTaskRecords  # noqa: PLC0415 (the cluster extra)

    return RedisTaskRecords.start(replica.url)


def _alive(replica: ClusterReplica) -> Callable[[str], bool]:
    """Whether a replica is alive, by the membership heartbeats (blocks: off the loop)."""

    def alive(replica_id: str) -> bool:
        members = replica.members
        return members is None or any(m.replica_id == replica_id for m in members.members())

    return alive


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _terminable() -> Iterator[None]:
    """Meanwhile, SIGTERM unwinds like Ctrl-C, so the gateway stops its servers before it exits.

    Without it the default action kills the process at once; uvicorn too re-raises the SIGTERM it
    caught once its own shutdown is done, which would kill the gateway with its servers still up.
    """
    previous = signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _reloading(gateway: Gateway, args: argparse.Namespace) -> Iterator[None]:
    """Meanwhile, reload the config file on SIGHUP, and when it changes with ``--watch``."""
    path = gateway.config.source
    hangup = getattr(signal, "SIGHUP", None)
    if path is None or (hangup is None and not args.watch):
        yield
        return
    with ConfigReloader(gateway, path, watch=args.watch) as reloader:
        if hangup is None:
            yield
            return
        # The handler only wakes the reloader's thread: a reload waits on the runtime.
        previous = signal.signal(hangup, lambda signum, frame: reloader.request())
        try:
            yield
        finally:
            signal.signal(hangup, previous)
