"""Chaos and soak: many servers, concurrent calls, kill -9, hangs, garbage; counted precisely."""
