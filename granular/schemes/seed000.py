"""Deprecated name of `granular.schemes.dzonou_monteiro_marques` (the velocity-based
scheme (9) of Dzonou, Monteiro Marques and Paoli, *A convergence result for a
vibro-impact problem with a general inertia operator*, 2009).

Kept so that code importing this module and its former class name still works;
it warns once, on import. Import `DzonouMonteiroMarquesScheme` from
`granular.schemes.dzonou_monteiro_marques` instead.
"""

import warnings

from .dzonou_monteiro_marques import *  # noqa: F401,F403
from .dzonou_monteiro_marques import (  # noqa: F401  (re-exported under the former name)
    DzonouMonteiroMarquesScheme,
    check_constrained_system,
    constraint_contacts,
    gap_rates,
    metric_projection,
    restitution_coefficients,
)

Seed000Scheme = DzonouMonteiroMarquesScheme

warnings.warn(
    "granular.schemes.seed000 is deprecated: use DzonouMonteiroMarquesScheme from "
    "granular.schemes.dzonou_monteiro_marques (scheme='dzonou-monteiro-marques')",
    DeprecationWarning,
    stacklevel=2,
)
