"""deploy/: every file checked offline against its own schema, and against the gateway it runs.

- Kubernetes manifests: the OpenAPI schemas `kubernetes-validate` carries, strict (an unknown
  key is an error), for `K8S_VERSION`.
- The compose file: the compose-spec JSON schema `check-jsonschema` carries (vendored, offline).
- nginx.conf: ``nginx -t`` on the file with the replicas' host names made local (nginx resolves
  upstream names when it loads a config), and a real nginx serving it: in front of three stand-in
  replicas (2026-07-28 requests spread, a 2025-era client kept on one, the token passed on), and
  in front of three real replicas on Redis with SDK clients of both eras. ``.ci/run`` installs
  Debian's nginx.
- Wiring: the gateway arguments parse with the real ``mcp-actors`` parser; the ports, paths,
  secret, config and Redis address agree across the files; the servers config loads.
- The team config (docs/gateway.md, "A complete team config"): the ConfigMap carries the page's
  config and Cedar policy, which load with the gateway's own loaders where the pod mounts them;
  every variable the config reads comes from the Secret; and, for real, three replicas run them
  with the Deployment's arguments behind nginx, users signed in by an issuer of ours.

Each validator is also shown a broken copy, so a validator that accepts anything fails here.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import http.client
import http.server
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import anyio
import jsonschema
import kubernetes_validate
import pytest
import yaml
from mcp import Client
from mcp.shared.exceptions import MCPError

from actors.config import load_config
from actors.gateway import command as gateway_command
from actors.gateway.access.policy_file import load_policy, policy_file
from tests.cluster.conftest import Replica, ReplicaFactory, RoundRobin, text_of
from tests.conftest import wait_until
from tests.docs.test_team_config import blocks as team_blocks
from tests.gateway.conftest import fixture, write_config
from tests.runtime.conftest import ROOT
from tests.servers.http_server import HTTPServer, free_port
from tests.servers.oidc_issuer import serve_issuer

DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
K8S_VERSION = "1.33"
"""The Kubernetes version the manifests are validated for (kubernetes-validate carries it)."""
GATEWAY_SERVICES = ("gateway-1", "gateway-2", "gateway-3")


# --- loading ---------------------------------------------------------------------------------


def manifests() -> list[tuple[str, dict[str, Any]]]:
    """(file name, resource) for every document of every deploy/k8s/*.yaml."""
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                found.append((path.name, document))
    return found


def resource(kind: str, name: str) -> dict[str, Any]:
    matches = [r for _, r in manifests() if r["kind"] == kind and r["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} in deploy/k8s"
    return matches[0]


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def compose_schema() -> dict[str, Any]:
    schema = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    loaded: dict[str, Any] = json.loads(schema.read_text(encoding="utf-8"))
    return loaded


def serve_options(argv: list[str]) -> Any:
    """``argv`` (what follows ``mcp-actors serve``) parsed with the command's own options."""
    parser = argparse.ArgumentParser(prog="mcp-actors serve", exit_on_error=False)
    parser.add_argument("--config")
    gateway_command.add_arguments(parser)
    try:
        options, unknown = parser.parse_known_args(argv)
    except argparse.ArgumentError as exc:
        raise AssertionError(f"mcp-actors serve refuses {shlex.join(argv)}: {exc}") from None
    assert not unknown, f"mcp-actors serve has no option for {shlex.join(unknown)}"
    return options


def option(argv: list[str], name: str) -> str:
    assert argv.count(name) == 1, f"{name} once in {argv}"
    return argv[argv.index(name) + 1]


def http_port(argv: list[str]) -> int:
    return int(option(argv, "--http").rpartition(":")[2])


# --- Kubernetes --------------------------------------------------------------------------------


def test_every_manifest_validates_strictly() -> None:
    found = manifests()
    kinds = sorted({r["kind"] for _, r in found})
    assert kinds == ["ConfigMap", "Deployment", "Namespace", "PodDisruptionBudget", "Secret", "Service"]
    for name, document in found:
        try:
            kubernetes_validate.validate(document, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{name}: {document['kind']}/{document['metadata']['name']}: {where}: {exc.message}")


@pytest.mark.parametrize(
    "breakage",
    ["a misspelt key", "a string for a number", "a probe without a handler"],
)
def test_the_kubernetes_validator_refuses_a_broken_manifest(breakage: str) -> None:
    broken = copy.deepcopy(resource("Deployment", "mcp-actors-gateway"))
    container = broken["spec"]["template"]["spec"]["containers"][0]
    if breakage == "a misspelt key":
        container["readinesProbe"] = container.pop("readinessProbe")
    elif breakage == "a string for a number":
        broken["spec"]["replicas"] = "three"
    else:
        container["readinessProbe"]["httpGet"]["port"] = {"name": "http"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def gateway_container() -> dict[str, Any]:
    deployment = resource("Deployment", "mcp-actors-gateway")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def test_the_gateway_deployment_runs_three_replicas_probed_on_healthz() -> None:
    deployment = resource("Deployment", "mcp-actors-gateway")
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    container = gateway_container()
    argv = [re.sub(r"\$\(POD_IP\)", "10.0.0.7", a) for a in container["args"]]
    options = serve_options(argv)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": http_port(argv)}
    assert option(argv, "--http").startswith("0.0.0.0:")
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe
    # Each pod advertises its own address, which Kubernetes puts in POD_IP.
    assert option(container["args"], "--advertise") == f"http://$(POD_IP):{http_port(argv)}/mcp"
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    # The team config: callers sign in at its issuer (no static token), and a changed ConfigMap
    # is reloaded.
    assert options.config and options.watch and options.token_file is None
    assert options.issuer is None and options.resource_url is None, "the config's access.auth decides"

    service = resource("Service", "mcp-actors-gateway")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]
    budget = resource("PodDisruptionBudget", "mcp-actors-gateway")
    assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]


def mounted(pod_spec: dict[str, Any], container: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The volume holding the file ``path`` in ``container``, and the file's name in it."""
    folder, name = str(PurePosixPath(path).parent), PurePosixPath(path).name
    mounts = [m for m in container["volumeMounts"] if m["mountPath"] == folder]
    assert len(mounts) == 1, f"nothing mounted at {folder}"
    volumes = [v for v in pod_spec["volumes"] if v["name"] == mounts[0]["name"]]
    assert len(volumes) == 1
    return volumes[0], name


def test_the_gateway_pods_get_the_team_config_and_its_policy(tmp_path: Path) -> None:
    pod_spec = resource("Deployment", "mcp-actors-gateway")["spec"]["template"]["spec"]
    container = gateway_container()
    volume, key = mounted(pod_spec, container, option(container["args"], "--config"))
    data = resource("ConfigMap", volume["configMap"]["name"])["data"]
    # The very files of docs/gateway.md's complete team config, which its own test checks.
    page = team_blocks()
    assert json.loads(data[key]) == json.loads(page["json file=mcp.json"])
    assert data["policy.cedar"] == page["cedar file=policy.cedar"]
    # Loaded as the pod has them: each key a file of the mounted folder.
    for name, text in data.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    config = load_config(tmp_path / key, environ=pod_environment(container))
    policy = policy_file(config)
    assert policy is not None and policy.parent == tmp_path and policy.name in data
    assert load_policy(config) is not None
    assert config.access.auth is not None and config.access.audit.file == "-", "audit to the pod's log"


def pod_environment(container: dict[str, Any]) -> dict[str, str]:
    """The container's environment as Kubernetes would set it from the manifests (a secret's
    value as shipped), each reference checked to exist."""
    environ: dict[str, str] = {}
    for entry in container["env"]:
        source = entry.get("valueFrom", {})
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            secret = resource("Secret", ref["name"])
            assert ref["key"] in secret["stringData"], f"{ref['name']} has no key {ref['key']}"
            environ[entry["name"]] = secret["stringData"][ref["key"]]
        elif "fieldRef" in source:
            environ[entry["name"]] = "10.0.0.7"
        else:
            environ[entry["name"]] = entry["value"]
    return environ


def test_every_variable_the_config_reads_is_set_from_the_secret() -> None:
    container = gateway_container()
    volume, key = mounted(
        resource("Deployment", "mcp-actors-gateway")["spec"]["template"]["spec"],
        container,
        option(container["args"], "--config"),
    )
    text = resource("ConfigMap", volume["configMap"]["name"])["data"][key]
    # ${VAR} and ${VAR:-default} are the gateway's environment; ${claim:...}, ${caller:...} the caller's.
    wanted = {
        name
        for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}", text)
        if name not in ("claim", "caller")
    }
    assert wanted == {"MCP_GATEWAY_CLIENT_SECRET"}
    environ = pod_environment(container)
    assert wanted <= set(environ)
    secrets = {e["name"] for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {})}
    assert wanted <= secrets, "a secret of the config comes from the Secret, not the manifest"
    # Shipped empty: the operator sets it from the issuer; nothing secret is in git.
    assert all(value == "" for value in resource("Secret", "mcp-actors-secrets")["stringData"].values())


def test_every_mount_has_its_volume_and_every_volume_its_source() -> None:
    pod_spec = resource("Deployment", "mcp-actors-gateway")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    mounts = [m["name"] for c in pod_spec["containers"] for m in c["volumeMounts"]]
    assert sorted(mounts) == sorted(volumes), (mounts, sorted(volumes))
    for volume in volumes.values():
        if "configMap" in volume:
            resource("ConfigMap", volume["configMap"]["name"])
        elif "secret" in volume:
            resource("Secret", volume["secret"]["secretName"])
        else:
            assert volume.get("emptyDir") == {}, volume


def test_the_gateway_pods_reach_redis_in_their_namespace() -> None:
    args = gateway_container()["args"]
    cluster = urlsplit(option(args, "--cluster"))
    assert cluster.scheme == "redis"
    redis_service = resource("Service", cluster.hostname or "")
    assert [p["port"] for p in redis_service["spec"]["ports"]] == [cluster.port]
    redis_pod = resource("Deployment", "redis")["spec"]["template"]
    assert redis_service["spec"]["selector"].items() <= redis_pod["metadata"]["labels"].items()
    namespaces = {r["metadata"].get("namespace") for _, r in manifests() if r["kind"] != "Namespace"}
    assert namespaces == {resource("Namespace", "mcp-actors")["metadata"]["name"]}


def test_the_image_installs_the_team_configs_servers(tmp_path: Path) -> None:
    page = team_blocks()
    (tmp_path / "mcp.json").write_text(page["json file=mcp.json"], encoding="utf-8")
    config = load_config(tmp_path / "mcp.json", environ={"MCP_GATEWAY_CLIENT_SECRET": ""})
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    stdio = [s for s in config.servers.values() if s.command is not None]
    assert stdio and all(s.command in dockerfile for s in stdio), "deploy/Dockerfile lacks a server"


# --- compose -----------------------------------------------------------------------------------


def test_the_compose_file_validates_against_the_compose_spec() -> None:
    jsonschema.validate(compose(), compose_schema())


@pytest.mark.parametrize("breakage", ["a misspelt key", "a list for the ports", "a bad restart policy"])
def test_the_compose_schema_refuses_a_broken_file(breakage: str) -> None:
    broken = compose()
    gateway = broken["services"]["gateway-1"]
    if breakage == "a misspelt key":
        gateway["comand"] = gateway.pop("command")
    elif breakage == "a list for the ports":
        broken["services"]["nginx"]["ports"] = {"8080": 8080}
    else:
        gateway["restart"] = 5
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, compose_schema())


def test_the_compose_replicas_advertise_themselves_and_share_redis_config_and_token() -> None:
    spec = compose()
    services = spec["services"]
    gateways = sorted(name for name in services if name.startswith("gateway-"))
    assert tuple(gateways) == GATEWAY_SERVICES
    redis_urls = set()
    for name in gateways:
        service = services[name]
        argv = service["command"]
        options = serve_options(argv)
        port = http_port(argv)
        assert service["expose"] == [str(port)]
        assert option(argv, "--advertise") == f"http://{name}:{port}/mcp"
        redis_urls.add(option(argv, "--cluster"))
        assert [c["target"] for c in service["configs"]] == [options.config]
        assert spec["configs"][service["configs"][0]["source"]] == {"file": "./mcp.json"}
        assert [f"/run/secrets/{s['target']}" for s in service["secrets"]] == [options.token_file]
        assert service["depends_on"]["redis"] == {"condition": "service_healthy"}
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    (redis_url,) = redis_urls
    assert urlsplit(redis_url).hostname == "redis" and "redis" in services
    token = spec["secrets"]["token"]["file"]
    # The token file is the operator's: ignored by git, never committed.
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(DEPLOY / token)], cwd=ROOT, check=False, timeout=30
    )
    assert ignored.returncode == 0, f"deploy/{token} is not ignored by git"
    assert services["nginx"]["volumes"] == ["./nginx.conf:/etc/nginx/nginx.conf:ro"]
    assert set(services["nginx"]["depends_on"]) == set(GATEWAY_SERVICES)


def test_the_servers_config_loads() -> None:
    config = load_config(DEPLOY / "mcp.json")
    assert sorted(config.servers) == ["time"]
    # The image installs each configured server's command.
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    for server in config.servers.values():
        assert server.command in dockerfile, f"deploy/Dockerfile does not install {server.command}"


# --- Dockerfile --------------------------------------------------------------------------------


def dockerfile_instructions() -> Iterator[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            yield word.upper(), rest.strip()


def test_the_dockerfile_installs_the_extras_and_serves_what_compose_and_kubernetes_expect() -> None:
    instructions = list(dockerfile_instructions())
    words = [word for word, _ in instructions]
    assert words[0] == "FROM" and "USER" in words
    for word, rest in instructions:
        if word == "COPY":
            *sources, _ = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (install,) = [rest for word, rest in instructions if word == "RUN" and "pip install" in rest]
    wanted = re.search(r"\.\[([a-z,]+)\]", install)
    assert wanted and set(wanted.group(1).split(",")) == {"cluster", "gateway"}
    assert set(wanted.group(1).split(",")) <= set(extras)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    entry = json.loads(dict(instructions)["ENTRYPOINT"])
    assert entry == ["mcp-actors", "serve"] and "mcp-actors" in scripts
    default_args = json.loads(dict(instructions)["CMD"])
    serve_options(default_args)
    port = http_port(default_args)
    assert dict(instructions)["EXPOSE"] == str(port)
    assert http_port(gateway_container()["args"]) == port
    assert all(http_port(compose()["services"][name]["command"]) == port for name in GATEWAY_SERVICES)
    # The health check asks /healthz on that port.
    assert f"127.0.0.1:{port}/healthz" in dict(instructions)["HEALTHCHECK"]


# --- nginx -------------------------------------------------------------------------------------


def local_nginx_conf(folder: Path, ports: dict[str, int], extra: str = "", listen: int | None = None) -> Path:
    """deploy/nginx.conf with each replica's host name made a loopback port, its pid file in
    ``folder``, ``extra`` added to the http block, and ``listen`` (on loopback) if given."""
    text = (DEPLOY / "nginx.conf").read_text()
    if listen is not None:
        text, count = re.subn(r"(?m)^(\s*)listen \d+;", rf"\g<1>listen 127.0.0.1:{listen};", text)
        assert count == 1
    for name, port in ports.items():
        text, count = re.subn(rf"\bserver {re.escape(name)}:\d+", f"server 127.0.0.1:{port}", text)
        assert count == 1, f"nginx.conf: upstream server {name} appears {count} times"
    text, count = re.subn(r"(?m)^pid .*;$", f"pid {folder / 'nginx.pid'};", text)
    assert count == 1
    text = text.replace("http {", "http {\n" + extra, 1)
    path = folder / "nginx.conf"
    path.write_text(text)
    return path


def nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None:
        pytest.fail(
            "nginx is not installed: deploy/nginx.conf is checked with nginx "
            "(.ci/run installs Debian's: apt-get install -y nginx)",
            pytrace=False,
        )
    return found


def nginx_test(conf: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [nginx(), "-t", "-q", "-c", str(conf), "-p", str(conf.parent), "-e", "stderr"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_nginx_accepts_the_config_and_balances_the_three_replicas(tmp_path: Path) -> None:
    text = (DEPLOY / "nginx.conf").read_text()
    upstream = re.findall(r"(?m)^\s*server ([\w.-]+):(\d+)", text)
    port = http_port(compose()["services"]["gateway-1"]["command"])
    assert upstream == [(name, str(port)) for name in GATEWAY_SERVICES]
    listen = re.findall(r"(?m)^\s*listen (\d+);", text)
    assert [f"{p}:{p}" for p in listen] == compose()["services"]["nginx"]["ports"]
    conf = local_nginx_conf(tmp_path, {name: 18000 + i for i, name in enumerate(GATEWAY_SERVICES)})
    done = nginx_test(conf)
    assert done.returncode == 0, done.stderr


def test_nginx_refuses_a_broken_config(tmp_path: Path) -> None:
    conf = local_nginx_conf(
        tmp_path, {name: 18000 + i for i, name in enumerate(GATEWAY_SERVICES)}, extra="proxy_bufering off;"
    )
    done = nginx_test(conf)
    assert done.returncode != 0 and "proxy_bufering" in done.stderr


class _Backend:
    """A stand-in replica on a free loopback port: answers every request with its name and
    the Authorization header it got (nginx's balancing is what is under test, not MCP)."""

    def __init__(self, name: str) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps({"replica": name, "authorization": self.headers.get("Authorization")})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, name=f"backend-{name}")
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(30)


def _post(port: int, headers: dict[str, str]) -> dict[str, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST", "/mcp", body=b"{}", headers={"Content-Type": "application/json", **headers}
        )
        response = connection.getresponse()
        assert response.status == 200, response.read()
        answer: dict[str, Any] = json.loads(response.read())
        return answer
    finally:
        connection.close()


@contextlib.contextmanager
def _running_nginx(folder: Path, ports: dict[str, int], extra: str = "") -> Iterator[int]:
    """deploy/nginx.conf served by a real nginx on a free loopback port, in front of ``ports``."""
    folder.mkdir(parents=True, exist_ok=True)
    listen = free_port()
    temp = "\n".join(
        f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = local_nginx_conf(folder, ports, extra=temp + "\n" + extra, listen=listen)
    process = subprocess.Popen(
        [nginx(), "-c", str(conf), "-p", str(folder), "-e", str(folder / "error.log"), "-g", "daemon off;"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        if process.poll() is not None:
            log = (folder / "error.log").read_text() if (folder / "error.log").exists() else ""
            raise AssertionError(f"nginx exited with status {process.returncode}: {log}")
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", listen)) == 0

    try:
        assert wait_until(answers, 30, interval=0.05), "nginx did not listen within 30 s"
        yield listen
    finally:
        process.terminate()  # nginx's fast shutdown: the master stops its workers, then exits
        process.wait(30)


def test_nginx_spreads_stateless_requests_and_keeps_a_session_client_on_one_replica(tmp_path: Path) -> None:
    backends = {name: _Backend(name) for name in GATEWAY_SERVICES}
    try:
        with _running_nginx(tmp_path, {name: b.port for name, b in backends.items()}) as port:
            token = {"Authorization": "Bearer t0ken"}
            modern = [_post(port, {"MCP-Protocol-Version": "2026-07-28", **token}) for _ in range(30)]
            # A 2025-era client: initialize without the version header, then with the one agreed.
            legacy = [_post(port, token)] + [
                _post(port, {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "s1", **token})
                for _ in range(20)
            ]
    finally:
        for backend in backends.values():
            backend.close()
    assert {a["authorization"] for a in modern + legacy} == {"Bearer t0ken"}
    # 30 requests spread at random over three replicas all land on one with odds of 3 in 3^30.
    assert len({a["replica"] for a in modern}) >= 2, modern
    assert len({a["replica"] for a in legacy}) == 1, legacy


def _calls_counted(replica: Replica) -> float:
    """The calls a replica has served (``mcp_actors_calls_total`` on its ``/metrics``)."""
    connection = http.client.HTTPConnection("127.0.0.1", replica.port, timeout=30)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    return sum(
        float(line.split()[-1]) for line in text.splitlines() if line.startswith("mcp_actors_calls_total")
    )


def _hops(started: list[Replica]) -> tuple[dict[str, int], str]:
    """nginx's upstream ports for ``started``, and the servers (for nginx's http block) that
    pass each on to its replica.

    A replica on loopback accepts only its own Host (DNS-rebinding protection), which one nginx
    cannot send to three ports: a hop per replica sets it. Off loopback (compose, Kubernetes)
    the replicas take any Host and nginx talks to them directly."""
    hops = {name: free_port() for name in GATEWAY_SERVICES}
    extra = "".join(
        f"server {{ listen 127.0.0.1:{hops[name]}; location / {{ proxy_pass http://127.0.0.1:{r.port};"
        f" proxy_set_header Host 127.0.0.1:{r.port}; proxy_http_version 1.1;"
        f' proxy_set_header Connection ""; proxy_buffering off; proxy_read_timeout 1h; }} }}\n'
        for name, r in zip(GATEWAY_SERVICES, started, strict=True)
    )
    return hops, extra


async def _echoes(url: str, era: str, count: int) -> list[str | None]:
    async with Client(url, mode=era) as client:  # type: ignore[arg-type]
        return [text_of(await client.call_tool("f__echo", {"text": f"{era}-{i}"})) for i in range(count)]


def test_mcp_clients_of_both_eras_through_nginx_in_front_of_three_replicas(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    started = replicas(3, write_config(tmp_path, {"f": fixture()}))
    hops, extra = _hops(started)
    with _running_nginx(tmp_path / "nginx", hops, extra) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        before = [_calls_counted(r) for r in started]
        # A 2025-era client's session lives on the replica that opened it: every call must get there.
        assert anyio.run(_echoes, url, "legacy", 6) == [f"legacy-{i}" for i in range(6)]
        legacy = [_calls_counted(r) - b for r, b in zip(started, before, strict=True)]
        assert sorted(legacy) == [0, 0, 6], legacy
        # Spread at random: 12 calls all land on one of three replicas with odds of 3 in 3^12.
        assert anyio.run(_echoes, url, "2026-07-28", 12) == [f"2026-07-28-{i}" for i in range(12)]
        modern = [_calls_counted(r) - b - n for r, b, n in zip(started, before, legacy, strict=True)]
    assert sum(modern) == 12 and sum(1 for n in modern if n) >= 2, modern


# --- the team config, for real -----------------------------------------------------------------

TEAM_CLIENT_SECRET = "the-gateways-client-secret-5c2e"
"""What the operator puts in secret.yaml's ``client-secret``: the gateway's client at the issuer."""


def _get(
    port: int, path: str, token: str | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=b"{}" if method == "POST" else None, headers=headers)
        response = connection.getresponse()
        found = {name.lower(): value for name, value in response.getheaders()}
        return response.status, found, response.read()
    finally:
        connection.close()


def _deployment_args() -> list[str]:
    """The Deployment's gateway arguments but those the test gives for loopback (where it
    serves, the config's path, the cluster's Redis, the advertised address)."""
    args, kept = gateway_container()["args"], []
    skip = {"--http", "--config", "--cluster", "--advertise"}
    it = iter(args)
    for word in it:
        if word in skip:
            next(it)
        else:
            kept.append(word)
    return kept


async def _team_calls(url: str, alice: str, bob: str) -> dict[str, Any]:
    """Alice (dev) and bob (support) through nginx, spread over the replicas."""
    seen: dict[str, Any] = {}
    async with RoundRobin([url], era="2026-07-28", token=alice) as clients:
        whoami = await clients.call_tool("tickets__whoami")
        assert not whoami.is_error, whoami
        seen["alice-tickets"] = whoami.structured_content
        times = [await clients.call_tool("time__get_current_time", {"timezone": "UTC"}) for _ in range(3)]
        assert not any(r.is_error for r in times), times
    async with RoundRobin([url], era="2026-07-28", token=bob) as clients:
        assert not (await clients.call_tool("time__get_current_time", {"timezone": "UTC"})).is_error
        # Support may not use tickets__whoami: for bob it does not exist.
        with pytest.raises(MCPError, match="Unknown tool"):
            await clients.call_tool("tickets__whoami")
        seen["bob-tools"] = sorted(t.name for t in await clients.list_tools())
    return seen


def test_the_team_config_runs_behind_nginx_and_signs_each_user_in(
    tmp_path: Path, replicas: ReplicaFactory
) -> None:
    """The ConfigMap's config and policy, the Deployment's arguments and the Secret's variable,
    on three real replicas on Redis behind the real nginx.conf; the issuer is one of ours on
    loopback (``--issuer`` overrides the file's), and the tickets server a real backend that
    trusts it (its URL the one thing of the file changed)."""
    container = gateway_container()
    volume, key = mounted(
        resource("Deployment", "mcp-actors-gateway")["spec"]["template"]["spec"],
        container,
        option(container["args"], "--config"),
    )
    data = resource("ConfigMap", volume["configMap"]["name"])["data"]
    config = json.loads(data[key])
    resource_url = config["access"]["auth"]["resource"]
    scope = " ".join(config["access"]["auth"]["scopes"])
    tickets = config["mcpServers"]["tickets"]
    exchange = tickets["tokenExchange"]
    secret_env = {e["name"] for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {})}
    with (
        serve_issuer() as issuer,
        HTTPServer(
            module="tests.servers.bearer_backend",
            extra_args=("--issuer", issuer.url, "--audience", exchange["audience"]),
        ) as backend,
    ):
        issuer.client(exchange["clientId"], TEAM_CLIENT_SECRET)
        tickets["url"] = backend.url
        folder = tmp_path / "etc-mcp-actors"
        folder.mkdir()
        for name, text in data.items():
            (folder / name).write_text(json.dumps(config) if name == key else text, encoding="utf-8")
        env = {name: TEAM_CLIENT_SECRET for name in secret_env}
        # The image has the servers' commands on its PATH; here they are the venv's.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        started = replicas(3, folder / key, env=env, extra_args=(*_deployment_args(), "--issuer", issuer.url))
        alice = issuer.mint(
            sub="alice", aud=resource_url, scope=scope, groups=["dev"], zoneinfo="Europe/Paris"
        )
        bob = issuer.mint(sub="bob", aud=resource_url, scope=scope, groups=["support"])
        # The probes: /healthz answers without a token, and says no more than that.
        for replica in started:
            status, _, body = _get(replica.port, "/healthz")
            assert (status, json.loads(body)) == (200, {"status": "ok"})
        hops, extra = _hops(started)
        with _running_nginx(tmp_path / "nginx", hops, extra) as port:
            status, headers, _ = _get(port, "/mcp", method="POST")
            assert status == 401 and "resource_metadata=" in headers["www-authenticate"], headers
            seen = anyio.run(_team_calls, f"http://127.0.0.1:{port}/mcp", alice, bob)
        per_user = [
            name
            for replica in started
            for name in json.loads(_get(replica.port, "/healthz", alice)[2])["servers"]
            if name.startswith("time@")
        ]
    # The tickets server was called as alice, with the token the issuer exchanged for the gateway.
    assert seen["alice-tickets"]["sub"] == "alice"
    assert seen["alice-tickets"]["act"] == {"sub": exchange["clientId"]}
    assert seen["alice-tickets"]["aud"] == exchange["audience"]
    assert seen["bob-tools"] == ["time__convert_time", "time__get_current_time"]
    # One time server per user: alice's and bob's are distinct copies.
    assert len(set(per_user)) >= 2, per_user
