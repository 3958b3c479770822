"""The interior-point refinement of contact multipliers: a primal-dual method
(Mehrotra predictor-corrector) on ``min_{l >= 0} 1/2 l^T W l + c^T l`` that iterates
until every contact's natural residual meets the tolerance. `granular.contact.projection`
calls it when OSQP's answer misses the tolerances (degenerate contact networks).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import SolverError
from .kkt import natural_residual


#: How far inside the orthant a warm start of the interior-point method is put
#: (scaled units, where the Delassus diagonal and the largest |c| are 1).
_WARM_OFFSET = 1e-3


def interior_point(
    W: sp.csc_matrix,
    c: np.ndarray,
    feasibility: float,
    complementarity: float,
    max_iterations: int = 80,
    start: np.ndarray | None = None,
    regularisation: float = 0.0,
) -> np.ndarray:
    """Solve ``min_{l >= 0} 1/2 l^T W l + c^T l`` to the given accuracy.

    A primal-dual interior-point method (Mehrotra predictor-corrector) on the
    multipliers ``l`` and the slacks ``s = W l + c``: each iteration factorises
    ``W + diag(s / l)``, which is definite even when redundant contacts make ``W``
    singular and the multipliers non-unique, the case where OSQP's polishing and
    active-set iterations fail. The problem is scaled to a unit diagonal and a
    unit-size linear term first. Stops when ``max(-s) <= feasibility`` and the
    natural residual ``max_k min(W_kk l_k, s_k) <= complementarity`` (velocity
    units); the iterates stay strictly inside ``l > 0``. A ``start`` (an approximate
    solution, e.g. OSQP's) is pushed ``1e-3`` inside the positive orthant, which
    roughly halves the iterations (benchmarks/README.md, "Measurements behind the
    constants").

    ``regularisation`` ``rho`` solves instead the proximal problem with
    ``W + rho diag(W)`` (tolerances checked on it): its multipliers are unique and
    bounded (see `_bounded_impulses`).

    Why not Clarabel (already a dependency): compared by
    ``benchmarks/ipm_vs_clarabel.py``, Clarabel is faster up to thousands of rows
    (figures in benchmarks/README.md), but its stopping rule (relative duality gap) does not bound the
    natural residual of each contact: on degenerate networks it stops 3 to 11 times
    above the target (8.2e-7 against 7.5e-8 m/s on a 112-row problem of a 60-sphere
    pour, even at tolerance 1e-12), and the simulation then fails; this method
    iterates until the residual of every contact meets it.

    Raises `SolverError` (no time attached) if it does not get there.
    """
    m = c.size
    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    D = 1.0 / np.sqrt(diagonal)
    v_ref = max(float(np.abs(c).max()), np.finfo(float).tiny)
    if regularisation > 0.0:
        W = (W + regularisation * sp.diags(diagonal)).tocsc()
    Ws = (sp.diags(D) @ W @ sp.diags(D)).tocsc()
    cs = D * c / v_ref
    if start is None or not np.all(np.isfinite(start)):
        x, s = np.ones(m), np.maximum(Ws @ np.ones(m) + cs, 1.0)
    else:
        x = np.maximum(start / (D * v_ref), 0.0) + _WARM_OFFSET
        s = np.maximum(Ws @ x + cs, 0.0) + _WARM_OFFSET
    for _ in range(max_iterations):
        impulses = x * D * v_ref
        slack = W @ impulses + c
        if -slack.min() <= feasibility and natural_residual(W, c, impulses, diagonal) <= complementarity:
            return impulses
        residual = Ws @ x + cs - s
        mu = float(x @ s) / m
        # Symmetric mode (no pivoting) is safe for this SPD matrix, and cheaper.
        try:
            factor = spla.splu(
                (Ws + sp.diags(s / x)).tocsc(),
                permc_spec="MMD_AT_PLUS_A",
                diag_pivot_thresh=0.0,
                options=dict(SymmetricMode=True),
            )
        except RuntimeError:  # SuperLU: "Factor is exactly singular" (iterates at round-off)
            raise SolverError("interior-point refinement met a singular Newton system") from None

        def newton(complementarity_rhs):
            dx = factor.solve(complementarity_rhs / x - residual)
            return dx, Ws @ dx + residual

        dx, ds = newton(-x * s)
        step = min(_step_to_boundary(x, dx), _step_to_boundary(s, ds))
        mu_affine = float((x + step * dx) @ (s + step * ds)) / m
        sigma = (mu_affine / mu) ** 3
        dx, ds = newton(-x * s - dx * ds + sigma * mu)
        step = min(1.0, 0.995 * min(_step_to_boundary(x, dx), _step_to_boundary(s, ds)))
        x, s = x + step * dx, s + step * ds
    raise SolverError(f"interior-point refinement did not converge in {max_iterations} iterations")


def _step_to_boundary(value: np.ndarray, change: np.ndarray) -> float:
    """Largest ``a <= 1 / 0.995`` keeping ``value + a change >= 0``."""
    shrinking = change < 0.0
    if not shrinking.any():
        return 1.0 / 0.995
    return float(min(1.0 / 0.995, (-value[shrinking] / change[shrinking]).min()))
