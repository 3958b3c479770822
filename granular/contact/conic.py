"""The 3D Coulomb law of systems with a non-diagonal metric: De Saxce's fixed point
over second-order cone programs, each solved by Clarabel.

De Saxce and Feng's bipotential makes the law a cone complementarity problem
whose normal velocities are shifted by ``mu |T u|``; the fixed point iterates that
shift (De Saxce and Feng, *New inequality and functional for contact with
friction: the implicit standard material approach*, Mech. Struct. Mach., 1991).
Spheres, whose metric is diagonal, use the Gauss-Seidel sweeps of
`granular.contact.friction_gauss_seidel` instead; `granular.contact.friction` chooses.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConvergenceError, InvalidInputError, JammingError, SolverError
from ..tolerances import FRICTION_TOLERANCE

#: Iterations of the De Saxce fixed point (3D).
_MAX_FIXED_POINT_ITERATIONS = 400


def conic_fixed_point(W: np.ndarray, free: np.ndarray, mu: np.ndarray, slot: np.ndarray, s: int, scale: float):
    """Solve the 3D law on ``n`` normal rows, ``f`` frictional with ``s`` tangents each.

    ``W`` ((n + f s) square), ``free`` as in `planar_lcp` with ``s`` tangent rows per
    frictional contact. Iterates ``sigma <- mu |T u(sigma)|`` (module docstring),
    each step one SOCP, until `_law_residual` is below ``FRICTION_TOLERANCE *
    scale`` (velocity units). Returns ``(l_N (n,), l_T (f s,), socp_solves)``.
    """
    n, f = free.size - mu.size * s, mu.size
    tangential_free = free[n:].reshape(f, s)
    sigma = mu * np.linalg.norm(tangential_free, axis=1)
    tolerance = FRICTION_TOLERANCE * scale
    problem = _ConicProblem(W, free, mu, slot, s)
    change, previous = np.inf, np.zeros(f)
    for iteration in range(1, _MAX_FIXED_POINT_ITERATIONS + 1):
        impulses = problem.solve(sigma)
        velocity = W @ impulses + free
        updated = mu * np.linalg.norm(velocity[n:].reshape(f, s), axis=1)
        change = _law_residual(W, impulses, velocity, sigma, updated, slot, n, tolerance)
        if change <= tolerance:
            return impulses[:n], impulses[n:], iteration
        # A contact whose update changes sign (it overshot) takes half the step: on a
        # pile, groups of coupled contacts otherwise trade their impulses in a
        # 2-cycle forever. Measured on such a 93-contact cluster: never converged
        # plain, 60 solves with cumulative halving, 27 with every step halved, 18 so.
        step = updated - sigma
        sigma, previous = sigma + np.where(step * previous < 0.0, 0.5, 1.0) * step, step
    raise ConvergenceError(
        f"the Coulomb fixed point did not converge in {_MAX_FIXED_POINT_ITERATIONS} "
        f"SOCP solves (last change {change:.3g} in velocity units)",
        status="fixed_point",
    )


def _law_residual(W, impulses, velocity, sigma, updated, slot, n, tolerance) -> float:
    """How far the SOCP answer is from the law (N)-(T), in velocity units.

    A contact whose impulse moves velocities by more than round-off
    (``W_kk l_N,k``) must have ``sigma_k = mu_k |T_k u|`` (then the SOCP's KKT
    conditions are (N) and (T) for it); the error of its normal velocity is
    ``|sigma_k - mu_k |T_k u||``. A contact without impulse only needs
    ``G_k u + D_k/h >= 0``: its shift does not matter, and waiting for it to settle
    (its tangential velocity is set by its neighbours, to solver noise) stalled
    the iteration at 1e-6 of the velocity scale on a pile. Anderson acceleration
    of the iteration was tried and diverged on the same pile.
    """
    active = np.diag(W)[slot] * impulses[slot] > 1e-3 * tolerance
    shift_error = np.abs(updated - sigma)[active]
    return max(float(shift_error.max(initial=0.0)), float(-velocity[:n].min(initial=0.0)))


class _ConicProblem:
    """``min 1/2 l^T W l + l^T (free + E sigma)`` over the product of friction cones,
    in Clarabel's form ``A x + z = b, z in K`` (frictionless rows: ``l_N >= 0``;
    frictional: ``(mu l_N, l_T) in SOC(1 + s)``), scaled per contact to a unit
    Delassus diagonal so the solver's tolerances are relative to each contact."""

    def __init__(self, W, free, mu, slot, s):
        try:
            import clarabel
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise InvalidInputError(
                "3D friction with a non-diagonal metric needs the clarabel "
                "package (a dependency of granular: pip install clarabel)"
            ) from error
        self.clarabel = clarabel
        n = free.size - mu.size * s
        self.n, self.s, self.free = n, s, free
        # One scale per contact (normal and tangents alike, so each cone is preserved).
        contact_scale = 1.0 / np.sqrt(np.maximum(np.diag(W)[:n], np.finfo(float).tiny))
        self.D = np.concatenate([contact_scale, np.repeat(contact_scale[slot], s)])
        self.v_ref = max(float(np.abs(free).max()), np.finfo(float).tiny)
        P = self.D[:, None] * W * self.D[None, :]
        self.P = sp.triu(sp.csc_matrix(0.5 * (P + P.T)), format="csc")
        frictionless = np.setdiff1d(np.arange(n), slot)
        rows, cols, values = [], [], []
        for r, k in enumerate(frictionless):  # nonnegative cone first
            rows.append(r), cols.append(k), values.append(-1.0)
        r = frictionless.size
        for j, k in enumerate(slot):
            rows.append(r), cols.append(k), values.append(-mu[j])
            for a in range(s):
                rows.append(r + 1 + a), cols.append(n + s * j + a), values.append(-1.0)
            r += 1 + s
        size = free.size
        self.A = sp.csc_matrix((values, (rows, cols)), shape=(size, size))
        self.cones = ([clarabel.NonnegativeConeT(frictionless.size)] if frictionless.size else []) + [
            clarabel.SecondOrderConeT(1 + s) for _ in slot
        ]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        # Velocities come out of the duals of small impulses: an absolute duality gap
        # of 1e-10 left them wrong by 1e-4 of the velocity scale in a pile, enough
        # to stall the fixed point; 1e-13 gives 1e-8.
        settings.tol_gap_abs = settings.tol_gap_rel = 1e-13
        settings.tol_feas = 1e-12
        settings.tol_ktratio = 1e-10
        settings.max_iter = 400
        settings.presolve_enable = False
        self.settings = settings
        self.slot = slot

    def solve(self, sigma):
        linear = self.free.copy()
        linear[self.slot] += sigma
        q = self.D * linear / self.v_ref
        solver = self.clarabel.DefaultSolver(self.P, q, self.A, np.zeros(q.size), self.cones, self.settings)
        solution = solver.solve()
        status = str(solution.status)
        if "Infeasible" in status:
            raise JammingError("the frictional contact problem is infeasible", status=status)
        if status not in ("Solved", "AlmostSolved"):
            raise SolverError(f"Clarabel returned {status}", status=status)
        return np.asarray(solution.x) * self.D * self.v_ref
