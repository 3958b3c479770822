"""Lemke's complementary pivoting: the exact, dense solver of small linear
complementarity problems ``w = M z + q >= 0, z >= 0, z . w = 0``.

`granular.contact.friction` solves the planar Coulomb law with it (Painleve's rod, the
block on an incline), and `granular.contact.projection` the impact clusters of at most a
few tens of rows (Lemke, *Bimatrix equilibrium points and mathematical
programming*, Management Science, 1965).
"""

from __future__ import annotations

import numpy as np

from ..errors import JammingError, SolverError


def lemke(M: np.ndarray, q: np.ndarray, max_pivots: int | None = None):
    """Lemke's complementary pivoting for ``w = M z + q >= 0, z >= 0, z . w = 0``.

    Covering vector of ones, lexicographic minimum-ratio rule (no cycling on
    degenerate problems). Returns ``(z, pivots)``. Raises `JammingError` on ray
    termination (for the planar law: no admissible velocity) and `SolverError`
    when ``max_pivots`` (default ``50 n``) is exceeded.
    """
    n = q.size
    if np.all(q >= 0.0):
        return np.zeros(n), 0
    max_pivots = 50 * n if max_pivots is None else max_pivots
    # Tableau [B^-1 | B^-1 (-M) | B^-1 (-e) | B^-1 q] of  w - M z - e z0 = q; basis starts at w.
    tableau = np.hstack([np.eye(n), -M, -np.ones((n, 1)), q[:, None]]).astype(float)
    basis = np.arange(n)
    artificial = 2 * n
    row = int(np.argmin(q))
    entering = artificial
    scale = max(float(np.abs(tableau).max()), 1.0)
    for pivots in range(1, max_pivots + 1):
        _pivot(tableau, row, entering)
        leaving, basis[row] = basis[row], entering
        if leaving == artificial:
            z = np.zeros(2 * n + 1)
            z[basis] = tableau[:, -1]
            return np.maximum(z[n : 2 * n], 0.0), pivots
        entering = leaving + n if leaving < n else leaving - n  # the complement
        column = tableau[:, entering]
        candidates = np.flatnonzero(column > 1e-12 * scale)
        if candidates.size == 0:
            raise JammingError(
                "the frictional contact problem has no solution (Lemke ray "
                "termination): the constraints admit no velocity",
                status="ray",
            )
        row = _lexicographic_row(tableau, column, candidates, n)
    raise SolverError(f"Lemke's method did not terminate in {max_pivots} pivots", status="max_pivots")


def _pivot(tableau: np.ndarray, row: int, column: int) -> None:
    tableau[row] /= tableau[row, column]
    factors = tableau[:, column].copy()
    factors[row] = 0.0
    tableau -= np.outer(factors, tableau[row])


def _lexicographic_row(tableau, column, candidates, n) -> int:
    """Minimum ratio ``rhs / column``, ties broken on the rows of ``B^-1 / column``."""
    ratios = tableau[candidates, -1] / column[candidates]
    best = ratios.min()
    tied = candidates[ratios <= best + 1e-12 * max(abs(best), 1.0)]
    for k in range(n):
        if tied.size == 1:
            break
        values = tableau[tied, k] / column[tied]
        tied = tied[values <= values.min() + 1e-12 * max(abs(values.min()), 1.0)]
    return int(tied[0])
