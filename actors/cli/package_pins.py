"""The packages a stdio server installs at each start without a pinned version (``npx -y pkg``,
``pkg@latest``, ``uvx pkg``): what ``check`` warns about.

A package runner installs what the registry calls newest whenever its cache lacks it, so an
unpinned server can change (or be replaced by a hijacked release) between two starts with no
edit to the configuration. What is flagged:

- a runner that installs without asking (``npx``/``npm exec`` with ``-y``/``--yes``, ``pnpm
  dlx``, ``yarn dlx``, ``uvx``/``uv tool run``, ``pipx run``) given a package without an exact
  version: no version, a range (``^1``, ``>=1``), or a dist-tag (``next``), which moves;
- ``@latest`` with any runner (``npx`` without ``-y`` and ``bunx`` included: they run a
  package installed in the project as it is, but ``@latest`` asks the registry every time).

Paths, URLs and git sources are not registry packages and are not judged. Pure: nothing is run
or read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from actors.mcp.config import ServerConfig

__all__ = ["Unpinned", "package_pin_warnings", "unpinned_packages"]

Reason = Literal["no version", "latest", "range", "dist-tag"]

_SUFFIXES = (".cmd", ".exe", ".bat", ".ps1")

# The runners' options that take a value as the next word (``--opt=value`` needs no list):
# without them, the value would be taken for the package.
_NPM_VALUES = frozenset(
    {"-p", "--package", "-c", "--call", "-w", "--workspace", "--registry", "--cache", "--userconfig",
     "--prefix", "--loglevel", "--node-options", "--script-shell", "--shell"}
)  # fmt: skip
_PNPM_VALUES = frozenset({"--package", "--allow-build", "--reporter", "--dir", "-C"})
_YARN_VALUES = frozenset({"-p", "--package"})
_BUN_VALUES = frozenset({"-p", "--package"})
_UV_VALUES = frozenset(
    {"--from", "--with", "-w", "--with-editable", "--with-requirements", "--python", "-p", "--index",
     "--default-index", "--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--directory",
     "--project", "--config-file", "--cache-dir", "--color", "--env-file", "--keyring-provider",
     "--resolution", "--prerelease", "--exclude-newer", "--refresh-package", "--reinstall-package",
     "--upgrade-package", "-P", "--no-binary-package", "--no-build-package", "--link-mode",
     "--index-strategy", "--config-setting", "-C", "--python-platform", "--allow-insecure-host",
     "--constraints", "-c", "--overrides", "--build-constraints", "-b", "--fork-strategy"}
)  # fmt: skip
_PIPX_VALUES = frozenset({"--spec", "--python", "--index-url", "-i", "--pip-args", "--backend"})

# An exact npm version (semver, as npm itself accepts it: a leading ``v`` or ``=``).
_NPM_EXACT = re.compile(r"^[=v]*\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
# A version that starts like a range (``^1``, ``>=1``, ``1``, ``1.x``, ``*``) or joins ranges;
# npm refuses dist-tags that read as a range, so anything else is a tag.
_NPM_RANGE = re.compile(r"^(?:[\^~]|[<>]=?|=)?\s*v?(?:\d|[xX*](?:\.|$))|\|\||\s-\s")
# An exact PEP 440 version (``uvx pkg@1.2``: uv reads it as ``==1.2``).
_PEP440_EXACT = re.compile(
    r"^v?\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[\w.]+)?$", re.I
)
_PEP508 = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


@dataclass(frozen=True)
class Unpinned:
    """One package a runner would install without a pinned version."""

    runner: str
    """How it is run, as the warning says it (``npx -y``, ``uvx``, ``pnpm dlx``)."""
    spec: str
    """The package as the configuration writes it."""
    reason: Reason
    """What is missing: no version at all, ``@latest``, a range, or a dist-tag."""
    example: str
    """The spec with a pinned version, to show how (``pkg@1.2.3``, ``pkg==1.2.3``)."""

    def text(self, server: str) -> str:
        """The warning line for ``server``, without the ``warning:`` label."""
        why = {
            "no version": "names no version",
            "latest": "asks for @latest",
            "range": "names a version range",
            "dist-tag": "names a dist-tag, which its publisher moves",
        }[self.reason]
        return (
            f"server {server!r}: {self.runner} {self.spec!r} {why}: a start may install another"
            f" release than the last one; pin a version, e.g. {self.example!r}"
        )


def package_pin_warnings(servers: Iterable[ServerConfig]) -> list[str]:
    """A warning line (no label) for each unpinned package of each stdio server, in order."""
    return [
        package.text(server.name)
        for server in servers
        if server.transport == "stdio" and server.command
        for package in unpinned_packages(server.command, server.args)
    ]


def unpinned_packages(command: str, args: Sequence[str]) -> list[Unpinned]:
    """The packages ``command args`` would install unpinned, if it is a package runner."""
    name = _program(command)
    words = list(args)
    if name == "cmd" and words[:1] and words[0].lower() in ("/c", "/k") and len(words) > 1:
        # A Windows entry (``cmd /c npx -y pkg``) as Claude Desktop's documentation writes it.
        return unpinned_packages(words[1], words[2:])
    sub = words[0] if words else ""
    if name == "npx" or (name == "npm" and sub in ("exec", "x")):
        return _npm_exec(words if name == "npx" else words[1:], "npx" if name == "npx" else f"npm {sub}")
    if name == "pnpx" or (name == "pnpm" and sub == "dlx"):
        return _npm_runner(words if name == "pnpx" else words[1:], "pnpm dlx", _PNPM_VALUES, installs=True)
    if name == "yarn" and sub == "dlx":
        return _npm_runner(words[1:], "yarn dlx", _YARN_VALUES, installs=True)
    if name == "bunx" or (name == "bun" and sub == "x"):
        return _npm_runner(words if name == "bunx" else words[1:], "bunx", _BUN_VALUES, installs=False)
    if name == "uvx" or (name == "uv" and words[:2] == ["tool", "run"]):
        runner = "uvx" if name == "uvx" else "uv tool run"
        return _python_runner(words if name == "uvx" else words[2:], runner, "--from", _UV_VALUES)
    if name == "pipx" and sub == "run":
        return _python_runner(words[1:], "pipx run", "--spec", _PIPX_VALUES)
    return []


def _program(command: str) -> str:
    """The program's name without its folder or a Windows suffix (``C:\\...\\npx.cmd``: npx)."""
    name = re.split(r"[\\/]", command)[-1].lower()
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _options(words: Sequence[str], values: frozenset[str]) -> tuple[list[tuple[str, str | None]], str | None]:
    """The runner's own options (``(option, value)``) and its first positional word (the
    package, or the command's name): a runner's options end at the first positional word,
    whatever follows belongs to the command it runs."""
    options: list[tuple[str, str | None]] = []
    rest = iter(words)
    for word in rest:
        if word == "--":
            return options, next(rest, None)
        if not word.startswith("-") or word == "-":
            return options, word
        option, equals, value = word.partition("=")
        if equals:
            options.append((option, value))
        elif option in values:
            options.append((option, next(rest, None)))
        else:
            options.append((option, None))
    return options, None


def _npm_exec(words: Sequence[str], runner: str) -> list[Unpinned]:
    """``npx`` and ``npm exec``: unpinned only matters with ``--yes`` (else ``@latest``)."""
    options, _ = _options(words, _NPM_VALUES)
    yes = any(option in ("-y", "--yes") and value in (None, "true") for option, value in options)
    return _npm_runner(words, f"{runner} -y" if yes else runner, _NPM_VALUES, installs=yes)


def _npm_runner(
    words: Sequence[str], runner: str, values: frozenset[str], *, installs: bool
) -> list[Unpinned]:
    """An npm-registry runner: its ``--package`` values, else its first positional word."""
    options, first = _options(words, values)
    packages = [value for option, value in options if option in ("-p", "--package") and value]
    if not packages and not any(option in ("-c", "--call") for option, _ in options) and first:
        packages = [first]
    found = []
    for spec in packages:
        reason, name = _npm_reason(spec)
        if reason is not None and (installs or reason == "latest"):
            found.append(Unpinned(runner, spec, reason, f"{name}@1.2.3"))
    return found


def _npm_reason(spec: str) -> tuple[Reason | None, str]:
    """Why an npm package spec is not pinned (None: pinned, or not a registry package), and
    its name."""
    if _not_a_registry_package(spec) or ("/" in spec and not spec.startswith("@")):
        return None, spec  # a path, a URL, or ``owner/repo`` (GitHub)
    at = spec.find("@", 1)  # after a scope's own ``@``
    if at < 0:
        return "no version", spec
    name, version = spec[:at], spec[at + 1 :]
    if version.startswith("npm:"):  # an alias: judge what it stands for
        reason, real = _npm_reason(version.removeprefix("npm:"))
        return reason, f"{name}@npm:{real}"
    if not version:
        return "no version", name
    if version == "latest":
        return "latest", name
    if _NPM_EXACT.match(version):
        return None, name
    return ("range" if _NPM_RANGE.search(version) else "dist-tag"), name


def _python_runner(words: Sequence[str], runner: str, source: str, values: frozenset[str]) -> list[Unpinned]:
    """``uvx`` and ``pipx run``: the ``--from``/``--spec`` requirement, else the package."""
    options, first = _options(words, values)
    specs = [value for option, value in options if option == source and value]
    found = []
    for spec in specs or ([first] if first else []):
        reason, name = _python_reason(spec)
        if reason is not None:
            found.append(Unpinned(runner, spec, reason, f"{name}==1.2.3"))
    return found


def _python_reason(spec: str) -> tuple[Reason | None, str]:
    """Why a Python requirement (PEP 508, or uv's ``pkg@version``) is not pinned, and its name."""
    if _not_a_registry_package(spec) or " @ " in spec:
        return None, spec  # a path, a URL, or a direct reference (``pkg @ git+https://...``)
    requirement = spec.split(";", 1)[0].strip()
    name, at, version = requirement.partition("@")
    if at:
        if version == "latest":
            return "latest", name.strip()
        return (None if _PEP440_EXACT.match(version.strip()) else "range"), name.strip()
    parsed = _PEP508.match(requirement)
    if parsed is None:
        return None, spec
    name, extras, specifiers = parsed.group(1), parsed.group(2) or "", parsed.group(3).strip()
    if not specifiers:
        return "no version", name + extras
    clauses = [clause.strip() for clause in specifiers.strip("()").split(",")]
    exact = len(clauses) == 1 and (
        clauses[0].startswith("===") or (clauses[0].startswith("==") and "*" not in clauses[0])
    )
    return (None if exact else "range"), name + extras


def _not_a_registry_package(spec: str) -> bool:
    return spec.startswith(
        (".", "/", "~", "file:", "git+", "git:", "github:", "gitlab:", "bitbucket:", "gist:")
    ) or ("://" in spec)
