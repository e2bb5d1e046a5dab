"""Config reload of the gateway: --watch, SIGHUP, added, removed and changed servers, a broken file."""
