"""Secrets in env values and headers never reach logs, status, errors or reprs."""

from __future__ import annotations

import logging
import sys

import pytest

from actors import ConfigError, Runtime, load_config
from actors.mcp.redaction import Redactor
from tests.runtime.conftest import config

SECRET = "s3cr3t-token-value-42"


def test_redactor_masks_values_and_bearer_tokens() -> None:
    redact = Redactor.for_server({"API_KEY": SECRET, "TZ": "UTC"}, {"Authorization": "Bearer abcdef123456"})
    assert redact(f"failed with {SECRET} and abcdef123456") == "failed with *** and ***"
    assert redact("UTC stays") == "UTC stays"


def test_config_repr_masks_env_and_headers() -> None:
    loaded = load_config(
        {
            "mcpServers": {
                "a": {"command": "x", "env": {"API_KEY": SECRET}},
                "b": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": f"Bearer {SECRET}"}},
            }
        }
    )
    assert SECRET not in repr(loaded)
    assert SECRET not in str(loaded.servers)


def test_a_bad_header_value_is_not_echoed_in_the_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"mcpServers": {"b": {"url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": [SECRET]}}}})
    assert "headers" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_server_that_prints_its_secret_on_stderr_does_not_leak_it(caplog: pytest.LogCaptureFixture) -> None:
    leaky = {
        "command": sys.executable,
        "args": ["-c", "import os, sys; print('token', os.environ['API_KEY'], file=sys.stderr); sys.exit(3)"],
        "env": {"API_KEY": SECRET},
        "maxRestarts": 0,
    }
    caplog.set_level(logging.DEBUG)
    with Runtime.start(config({"leaky": leaky})) as rt:
        result = rt.call_tool("leaky/anything", {}, timeout=30)
        assert result.error_type == "connection", result
        assert "***" in (result.error or ""), result.error
        assert SECRET not in (result.error or "")
        status = rt.status("leaky")[0]
        assert SECRET not in repr(status)
    assert SECRET not in caplog.text
