"""``python -m actors`` is the ``mcp-actors`` command."""

import sys

from actors.cli import main

sys.exit(main())
