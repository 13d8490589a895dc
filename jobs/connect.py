"""The driver entry point that ./spark-submit.sh runs; all wiring lives in sparkcat.bootstrap."""

import sys

from sparkcat.bootstrap import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
