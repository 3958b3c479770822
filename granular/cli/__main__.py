"""``python -m granular.cli``: the `granular` command, as ``python -m granular``."""

import sys

from .dispatch import main

if __name__ == "__main__":
    sys.exit(main())
