"""`bwrap_argv`: the order of the mounts and the lockdown, from a `Layout` (pure)."""

from __future__ import annotations

from actors.sandbox.bwrap import EGRESS_SOCKET, Layout, SystemEntry, bwrap_argv

SYSTEM = (SystemEntry("/usr"), SystemEntry("/bin", "usr/bin"), SystemEntry("/etc"))


def pairs(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == option]


def test_every_namespace_and_no_capability() -> None:
    argv = bwrap_argv("/usr/bin/bwrap", Layout(command=("srv",), system=SYSTEM))
    assert argv[0] == "/usr/bin/bwrap"
    for option in (
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--clearenv",
    ):
        assert option in argv
    assert pairs(argv, "--cap-drop") == ["ALL"]
    assert argv[argv.index("--") + 1 :] == ["srv"]


def test_the_network_is_shared_only_when_asked() -> None:
    assert "--unshare-net" not in bwrap_argv("bwrap", Layout(command=("s",), system=(), share_network=True))


def test_mounts_in_order_system_reads_masks_writes() -> None:
    layout = Layout(
        command=("srv", "arg"),
        system=SYSTEM,
        read=("/home/u/project",),
        masked_dirs=("/home/u/project/.ssh",),
        masked_files=("/etc/shadow",),
        write=("/state/servers/s/data",),
        cwd="/state/servers/s/data",
        env={"HOME": "/state/servers/s/data", "PATH": "/usr/bin"},
        egress_socket="/tmp/route/egress.sock",
    )
    argv = bwrap_argv("bwrap", layout)
    order = [
        argv.index(word)
        for word in (
            "/usr",
            "/home/u/project",
            "/home/u/project/.ssh",
            "/etc/shadow",
            "/state/servers/s/data",
            EGRESS_SOCKET,
            "--remount-ro",
            "--chdir",
            "--",
        )
    ]
    assert order == sorted(order)
    assert pairs(argv, "--symlink") == ["usr/bin"]
    assert "--tmpfs" in argv and pairs(argv, "--tmpfs")[:1] == ["/tmp"]
    assert argv[argv.index("/etc/shadow") - 1] == "/dev/null"
    assert pairs(argv, "--bind") == ["/state/servers/s/data", "/tmp/route/egress.sock"]
    assert pairs(argv, "--chdir") == ["/state/servers/s/data"]
    assert pairs(argv, "--remount-ro") == ["/"]  # after every mount: writes land only in mounts
    setenv = [argv[i + 1 : i + 3] for i, word in enumerate(argv) if word == "--setenv"]
    assert setenv == [["HOME", "/state/servers/s/data"], ["PATH", "/usr/bin"]]
