"""What the sandbox tests share: where no sandbox can be built, they fail (never skip) and say
what to install; the answer is the runtime's own (`actors.sandbox.support`)."""

from __future__ import annotations

import pytest

from actors.sandbox.support import sandbox_support


def require_bubblewrap(what: str) -> None:
    """Fail the test unless this machine can build a sandbox: ``make test`` installs bubblewrap."""
    support = sandbox_support()
    if support.bwrap is None:
        pytest.fail(
            f"{support.problem}: {what} need it. Install Debian's bubblewrap "
            "(apt-get install bubblewrap; make test installs it when missing).",
            pytrace=False,
        )
