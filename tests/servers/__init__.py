"""Real MCP servers for tests: the SDK-built fixture server and a few broken ones."""
