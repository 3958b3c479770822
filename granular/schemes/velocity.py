"""Former name of `granular.schemes.maury` (Maury's velocity projection with Moreau's
impact law, the ``scheme="velocity"``). Importing this module gives that module
itself, so code that imports or patches ``granular.schemes.velocity`` still acts on
the scheme (``benchmarks/ipm_vs_clarabel.py`` patches its ``project``)."""

import sys

from . import maury

sys.modules[__name__] = maury
