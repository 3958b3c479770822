"""Solvers of the metric projection ``min 1/2 |u - v|_M^2  s.t.  G u >= b``.

Each backend module exposes ``solve(problem, warm_start) -> BackendResult``:
``osqp_`` (the hot path, multiplier form) and ``cvxpy_`` (velocity form, an
independent reference for tests). `BACKENDS` maps the public names to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError


@dataclass(frozen=True)
class BackendResult:
    """Multipliers found by a backend.

    impulses : (m,) array, the multipliers lambda (impulses, >= 0 up to tolerance).
    status : str, "solved", "infeasible", "not_converged" or the backend's own word.
    iterations : int, backend iterations (0 when not applicable).
    """

    impulses: np.ndarray
    status: str
    iterations: int = 0


def get_backend(name: str):
    """The backend module of a solver name ("osqp" or "cvxpy"), imported at first use:
    cvxpy is an optional dependency, and OSQP's import is not needed by runs whose
    projections the active set answers."""
    if name == "osqp":
        from . import osqp_ as module
    elif name == "cvxpy":
        from . import cvxpy_ as module
    else:
        raise InvalidInputError(f"solver must be 'osqp' or 'cvxpy', got {name!r}")
    return module
