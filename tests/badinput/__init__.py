"""Bad input: fuzzed tool arguments, malformed configurations, oversized payloads."""
