"""``python -m tidemark_cli``: the same as the ``tidemark`` console script."""

import sys

from tidemark_cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
