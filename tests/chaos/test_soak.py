"""The long chaos run: ``pytest -m soak -s tests/chaos`` (excluded from ``make test``).

``SOAK_SECONDS`` (default 300) and ``CHAOS_SEED`` change it. The counts are printed and written to
tests/chaos/results/soak-<seed>-<time>.json (git-ignored). Beyond what the short run asserts,
memory must stay flat: after a warm-up quarter, RSS in the last quarter is compared with RSS in
the second one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.chaos.harness import ChaosPlan, run_chaos, summary
from tests.chaos.test_chaos import assert_chaos_counts

RESULTS = Path(__file__).with_name("results")

SOAK = ChaosPlan(
    seconds=float(os.environ.get("SOAK_SECONDS", "300")),
    seed=int(os.environ.get("CHAOS_SEED", "20262")),
    sample_every=2.0,
)
GROWTH_LIMIT_MB = 20.0
"""RSS may grow this much from the second quarter of the run to the last one (allocator noise)."""


@pytest.mark.soak
@pytest.mark.timeout(SOAK.seconds + 300)
def test_soak(request: pytest.FixtureRequest) -> None:
    if "soak" not in (request.config.option.markexpr or "") or "not soak" in request.config.option.markexpr:
        pytest.skip("the soak runs only when asked for: pytest -m soak")
    counts = run_chaos(SOAK, progress=print)
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = RESULTS / f"soak-{SOAK.seed}-{stamp}.json"
    out.write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n")
    print(summary(counts))
    print(f"written to {out}")
    assert_chaos_counts(counts)
    memory = counts["memory"]
    assert memory["growth_mb"] <= GROWTH_LIMIT_MB, memory
