"""``python -m sparkcat.cli``: the same as the ``sparkcat`` command."""

import sys

from sparkcat.cli.main import main

sys.exit(main())
