"""What docs/gateway.md and docs/configuration.md say of ``${caller:key}`` and of the audit's
masking is what the code does: each example the pages give, run through the code they describe."""

from __future__ import annotations

import re
from pathlib import Path

from actors.gateway.access.audit_redaction import Scrubber
from actors.gateway.access.principal import AuthMode, Principal

DOCS = Path(__file__).resolve().parents[2] / "docs"
GATEWAY = (DOCS / "gateway.md").read_text(encoding="utf-8")
CONFIGURATION = (DOCS / "configuration.md").read_text(encoding="utf-8")


def test_caller_key_is_the_plain_subject_only_without_an_issuer() -> None:
    for page in (GATEWAY, CONFIGURATION):
        assert "16 hex" in page and "at most 40 characters" in page and "without an issuer" in page
    assert Principal("alice", AuthMode.STATIC).key == "alice"
    assert Principal("ci.bot-1_x", AuthMode.LOCAL).key == "ci.bot-1_x"
    for principal in (
        Principal("alice", AuthMode.OAUTH, issuer="https://id.example"),  # signed in: never the subject
        Principal("a/b", AuthMode.STATIC),  # not plain
        Principal("a" * 41, AuthMode.STATIC),  # too long
    ):
        assert re.fullmatch(r"u[0-9a-f]{16}", principal.key), principal


def test_the_audit_masks_what_the_page_says_and_keeps_the_rest() -> None:
    example = re.search(r'`"see (/srv/\S+)"` is recorded as\s+`"see (\S+)"`', GATEWAY)
    assert example, "the page's example of partial masking"
    scrubber = Scrubber(["s3cr3t-value", "UTC", "Bearer abc123def"], redact=["ticket"])
    assert scrubber.arguments({"path": f"see {example[1]}"}) == {"path": f"see {example[2]}"}
    assert "at least 6 characters" in GATEWAY
    assert scrubber.arguments({"zone": "UTC"}) == {"zone": "UTC"}  # too short to be masked
    assert "`abc123def` of `Bearer abc123def`" in GATEWAY
    assert scrubber.arguments({"note": "used abc123def"}) == {"note": "used ***"}
    # A key that names a secret, or one of `redact`: the value withheld whole, whatever it is.
    assert scrubber.arguments({"password": {"a": 1}, "ticket": 7, "max_tokens": 5}) == {
        "password": "***",
        "ticket": "***",
        "max_tokens": 5,
    }
    assert "up to 1024 characters, then `…(+N chars)`" in GATEWAY
    assert scrubber.arguments({"long": "x" * 1030}) == {"long": "x" * 1024 + "…(+6 chars)"}
