"""The restitution stage of Maury's scheme (stage 3 of `granular.schemes.maury`): which
rows impact in a step, and the impact law on them, Moreau's frictionless law or, for
spheres with friction, Newton's law with Coulomb friction (`granular.contact.impact`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..contact.impact import is_frictional, solve_impact
from ..contact.problem import ContactProblem
from ..contact.projection import project
from ..errors import ConvergenceError, solver_errors_at
from ..tolerances import APPROACH_TOLERANCE, ENERGY_ROUNDOFF

#: Rounds of growing the impacting set when an impact drives a body into another.
MAX_IMPACT_ROUNDS = 3


@dataclass(frozen=True)
class ImpactReport:
    """What the restitution stage reports besides ``u*`` and its normal impulses.

    iterations : solver iterations; violation : (m/s) of the impact law's normal part;
    tangential : (m, s) the impact's friction impulses (N s), or None without friction;
    rolling : (m, 2) its rolling impulses (N s; torque ``R* P_R``), or None.
    """

    iterations: int = 0
    violation: float = 0.0
    tangential: np.ndarray | None = None
    rolling: np.ndarray | None = None

    @staticmethod
    def of(m: int, rows: np.ndarray, iterations: int, violation: float, answer=None) -> "ImpactReport":
        """The report of an impact on ``rows`` of ``m``, with the friction of a
        `granular.contact.impact.ImpactAnswer` scattered to all rows (or none)."""
        if answer is None:
            return ImpactReport(iterations, violation)
        tangential = np.zeros((m, answer.tangential.shape[1]))
        tangential[rows] = answer.tangential
        rolling = None
        if answer.rolling is not None:
            rolling = np.zeros((m, 2))
            rolling[rows] = answer.rolling
        return ImpactReport(iterations, violation, tangential, rolling)


def restitution_stage(
    metric,
    constraints,
    u,
    increment,
    h: float,
    solver: str,
    spheres: bool,
    t_next: float,
    previous_kick=None,
    sweep_aim: float | None = None,
):
    """The impact law on the impacting rows; returns ``(u*, impulses, report)``: the
    normal impact impulses (m,) (N s) and an `ImpactReport` (solver counts and the
    impact's friction impulses). Rows of spheres that carry friction or rolling
    resistance take Newton's law with Coulomb friction (`granular.contact.impact`), the
    others Moreau's frictionless law (module docstring). ``previous_kick`` is the
    carried `granular.schemes.maury_state.MauryState.previous_kick`; ``h`` the step (s),
    ``solver`` the projection's backend, ``spheres`` whether the system is spheres (whose
    rows may carry friction), ``sweep_aim`` the Coulomb sweeps' aim
    (`granular.contact.problem.ContactProblem.sweep_aim`); the caller adds the packing
    fraction to a `JammingError`."""
    G, e = constraints.jacobian, constraints.laws.restitution
    zero = np.zeros(constraints.size)
    if constraints.size == 0 or not np.any(e > 0.0):
        return u, zero, ImpactReport()
    threshold = np.abs(G @ increment)
    if previous_kick is not None and previous_kick.shape == u.shape:
        threshold += abs(G) @ np.abs(previous_kick)
    threshold += APPROACH_TOLERANCE * float(np.abs(G @ u).max(initial=0.0))
    # Approach is measured relative to the other body: a moving wall's contact point
    # has the normal velocity `normal_offset` (0 for pairs and fixed walls), and the
    # gap D already holds the wall where it is at the end of the step.
    offset = zero if constraints.normal_offset is None else constraints.normal_offset

    def impacts(velocity):
        return (
            (e > 0.0)
            & (constraints.gap + h * (G @ (velocity + increment)) < 0.0)
            & (G @ velocity - offset < -threshold)
        )

    impacting = impacts(u)
    if not impacting.any():
        return u, zero, ImpactReport()
    iterations, violation = 0, 0.0
    for _ in range(MAX_IMPACT_ROUNDS):
        rows = np.flatnonzero(impacting)
        u_star, normal, more, worst, friction = impact(
            metric, constraints, rows, u, offset, h, solver, spheres, t_next, sweep_aim
        )
        iterations += more
        violation = max(violation, worst)
        grown = impacting | impacts(u_star)
        if np.array_equal(grown, impacting):
            break
        impacting = grown
    impulses = zero.copy()
    impulses[rows] = normal
    return u_star, impulses, ImpactReport.of(constraints.size, rows, iterations, violation, friction)


def impact(metric, constraints, rows, u, offset, h: float, solver: str, spheres: bool, t_next: float, sweep_aim=None):
    """The impact law on ``rows``: ``(u*, their normal impulses (k,), iterations,
    violation, the `granular.contact.impact.ImpactAnswer` or None without friction)``.

    Spheres with friction or rolling resistance on these rows take Newton's law
    with Coulomb friction. Should its sweeps not converge (several coupled impacts;
    one contact is solved in closed form), the impact is frictionless as Moreau's
    law gives it, rather than the run stopping: friction then acts at the next
    steps' sustained contacts only. ``sweep_aim`` is the sweeps' aim (`restitution_stage`)."""
    with solver_errors_at(t_next):
        if spheres and is_frictional(constraints, rows):
            try:
                answer = solve_impact(metric, constraints, rows, u, h, sweep_aim)
                return answer.velocities, answer.normal, answer.iterations, answer.violation, answer
            except ConvergenceError:
                pass
        return (*frictionless_impact(metric, constraints, rows, u, offset, solver), None)


def frictionless_impact(metric, constraints, rows, u, offset, solver: str):
    """Moreau's law on ``rows`` (module docstring, step 3): ``(u*, the rows' impulses
    (1 + e) mu (k,), solver iterations, violation)``."""
    G_I = constraints.jacobian[rows]
    tangent = project(ContactProblem(metric, G_I, u, offset[rows]), solver=solver)
    coefficients = dissipative_coefficients(metric, G_I, constraints.laws.restitution[rows], tangent.impulses)
    u_star = tangent.velocities + metric.solve(G_I.T @ (coefficients * tangent.impulses))
    return u_star, (1.0 + coefficients) * tangent.impulses, tangent.iterations, tangent.violation


def dissipative_coefficients(metric, G_I, e, mu) -> np.ndarray:
    """Per-row coefficients, replaced by the cluster minimum where Moreau's law with
    mixed coefficients would raise the cluster's kinetic energy."""
    if np.all(e == e[0]):
        return e
    W = metric.delassus(G_I)
    n_clusters, labels = connected_components(sp.csr_matrix(W != 0), directed=False)
    coefficients = e.copy()
    for cluster in range(n_clusters):
        rows = np.flatnonzero(labels == cluster)
        block = W[rows][:, rows]
        m, ec = mu[rows], e[rows]
        before = float(m @ (block @ m))
        after = float((ec * m) @ (block @ (ec * m)))
        if after > before * (1.0 + ENERGY_ROUNDOFF):
            coefficients[rows] = ec.min()
    return coefficients
