"""Tool search through the gateway: ranking, the two meta tools, real servers over stdio and HTTP."""
