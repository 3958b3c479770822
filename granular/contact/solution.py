"""The one answer type every contact solver returns: `ContactSolution`.

It carries the velocities after the contacts, ``u = v + M^{-1} (G^T l_N + T^T l_T +
R^T l_R)`` (d,), the impulses that give them (N s for spheres; the Lagrange
multipliers of Maury's projection) and how the answer was found and checked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConvergenceError


@dataclass(frozen=True)
class ContactSolution:
    """The answer of a `granular.contact.problem.ContactProblem`.

    velocities : (d,) ``u``.
    impulses : (m,) normal impulses ``l_N`` (N s), >= 0.
    status : how it was found: "unconstrained" (the prediction needs no contact),
        "active-set", "pivoting", "refined", the backend's word ("solved",
        "inaccurate", ...), "gauss_seidel", "lemke", "fixed_point"; "inaccurate" for a
        kept best answer.
    iterations : the method's iterations (active-set rounds, backend iterations,
        sweeps, Lemke pivots or SOCP solves).
    violation : ``max_k (b_k - G_k u)`` clipped at 0 (velocity units).
    seconds : wall time of the solve (s).
    tangential_impulses : (m, s) friction impulses along each contact's tangents
        (N s), or None for the frictionless projection.
    rolling_impulses : (m, 2) rolling impulses ``l_R`` (N s; torque ``R* l_R``, N m s),
        or None without rolling resistance.
    residual : the largest natural residual of the Coulomb law at a contact (m/s,
        `granular.contact.kkt.coulomb_residual`) of a frictional answer; the
        constraint violation of a frictionless best answer kept when not strict; else 0.
    missed : None for an answer that passed its acceptance test; otherwise the
        `ConvergenceError` (``residual``, ``tolerance``, ``where``) of the best answer
        a solve that was not ``strict`` kept.
    """

    velocities: np.ndarray
    impulses: np.ndarray
    status: str
    iterations: int
    violation: float
    seconds: float
    tangential_impulses: np.ndarray | None = None
    rolling_impulses: np.ndarray | None = None
    residual: float = 0.0
    missed: ConvergenceError | None = None
