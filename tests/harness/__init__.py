"""The pytest harness's own guards (loop lag, skips) and their tests."""
