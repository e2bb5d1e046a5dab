"""The benchmark's own MCP servers (official SDK ``MCPServer``, stdio)."""
