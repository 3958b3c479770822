"""Frictional impacts: Newton's restitution law with Coulomb friction in one impact problem.

The law (Moreau, *Unilateral contact and dry friction in finite freedom dynamics*,
1988; Jean, *The non-smooth contact dynamics method*, 1999; Acary and Brogliato,
*Numerical Methods for Nonsmooth Dynamical Systems*, 2008, section 3.2; the
``NewtonImpactFrictionNSL`` of Siconos). At an impact the velocity jumps from
``u^-`` to ``u^+``, ``M (u^+ - u^-) = H^T P`` with ``H = [G; T]`` the normal and
tangential rows of the impacting contacts (`granular.contact.friction`) and ``P = (P_N,
P_T)`` their impulses (N s). With the relative velocities of contact ``k``,
``U_N = G_k u - n_k`` and ``U_T = T_k u - o_k`` (m/s; ``n_k``, ``o_k`` the velocity
of a moving wall's contact point along the normal and the tangents, 0 for pairs),
define the *modified velocity*

    U~_N = U_N^+ + e_k U_N^-,      U~_T = U_T^+ + et_k U_T^-,

``e_k`` the normal and ``et_k`` the tangential coefficient of restitution, both in
[0, 1]. The impact law is Coulomb's law (T) of `granular.contact.friction` between ``P``
and ``U~``:

(I-N) ``0 <= P_N``, ``U~_N >= 0``, ``P_N U~_N = 0`` (Newton's law: a contact that
      takes an impulse leaves at ``U_N^+ = -e U_N^-``);
(I-T) ``|P_T| <= mu_k P_N``; inside the disc ``U~_T = 0`` (sticking: the contact
      point's tangential velocity is reversed and scaled by ``et``); on its boundary
      ``U~_T = -a P_T``, ``a >= 0`` (sliding against the friction impulse).

The friction impulse is bounded by ``mu`` times the *whole* normal impulse of the
impact, ``(1 + e)`` times the inelastic one. Rolling resistance (``|P_R| <= mu_r
P_N`` against the relative rolling velocity ``R_k u``, `granular.contact.friction`) enters
with no restitution: ``U~_R = R_k u^+``.

One contact, derived (sphere of mass m, radius r, inertia J = 2/5 m r^2 on a fixed
plane; approach speed ``v_n = -U_N^- > 0``, contact-point slip ``s^- = v_t - r
omega`` along the tangent of the sliding). The local Delassus block is ``diag(w,
v, v)`` with ``w = 1/m`` and ``v = 1/m + r^2/J = 7/(2m)`` (`granular.contact.friction_gauss_seidel`),
so (I-N) gives ``P_N = (1 + e) m v_n`` and the tangential jump is ``s^+ = s^- + v
P_T``. Sticking, ``s^+ = -et s^-``, needs ``|P_T| = (1 + et) |s^-| / v <= mu P_N``,
i.e. ``|s^-| <= 7/2 mu (1 + e) v_n / (1 + et)``; then ``v_t^+ = v_t^- + P_T/m = v_t^-
- 2/7 (1 + et) s^-`` (``5/7 v_t`` for ``et = 0``, ``omega^- = 0``). Otherwise it slides,
``P_T = -mu P_N sign(s^-)``: ``v_t^+ = v_t^- - mu (1 + e) v_n``, ``r omega^+ = r omega^- +
5/2 mu (1 + e) v_n`` (for ``s^- > 0``). The regime changes at ``tan theta = |v_t| /
v_n = 7/2 mu (1 + e)`` for a sphere without spin (``et = 0``): the rigid-body limit of
Chung and Ooi, *Benchmark tests for verifying discrete element modelling codes at
particle impact level*, Granular Matter 13 (2011) 643-656, tests 4-8
(`tests/test_frictional_impacts.py`, `scenes/chung_ooi.py`).

Energy. With ``W = H M^{-1} H^T`` and ``U^+ = U^- + W P``, the kinetic energy
changes by ``dE = P.U^- + 1/2 P^T W P``. For one contact the law dissipates:
normally ``dE_N = -1/2 (1 - e^2) m v_n^2``; tangentially ``P_T`` opposes ``s^-`` and
``|s^+| <= |s^-|``. Several simultaneous impacts can break this (the tangential
term ``P_T . U_T^-`` has no sign once other contacts move ``U_T``), as Moreau's law
with mixed coefficients can (`granular.schemes.maury`). `solve_impact` therefore
checks each cluster of impacting contacts (contacts that share a sphere) and solves
a cluster whose energy rose again with its smallest ``e`` and ``et = 0``, then, if
it still rises, with ``e = 0`` (then ``U~ = U^+`` and Proposition 1 of
`granular.contact.friction` gives ``dE <= 0``). A cluster with a moving wall's contact is
not checked: the wall does work.

Why one problem and not restitution then friction: a frictionless bounce followed
by a frictional projection finds a separating contact and applies no friction at
all; the impulse and its friction must be solved together (Jean, 1999).

It is solved as `granular.contact.friction.project_frictional` solves Maury's stage, on a
constraint set whose lower bounds are ``n_k - e_k U_N^-`` (``U~_N >= 0``) and whose
tangential offsets are ``o_k - et_k U_T^-`` (Coulomb's law on ``U~_T``): for spheres,
nonsmooth Gauss-Seidel, whose local answer for one contact is the closed form above.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from .coulomb_rows import csr_arrays, kernels
from .friction import project_frictional
from .problem import ContactProblem, tangential_jacobian
from ..tolerances import ENERGY_ROUNDOFF, FRICTION_SWEEP_TOLERANCE


@dataclass(frozen=True)
class ImpactAnswer:
    """The answer of `solve_impact` for the ``k`` impacting rows.

    velocities : (d,) ``u^+`` (the generalised ``(u, omega)`` of a rotating world).
    normal : (k,) normal impulses ``P_N`` (N s), >= 0.
    tangential : (k, s) friction impulses ``P_T`` along each row's tangents (N s).
    rolling : (k, 2) rolling impulses ``P_R`` (N s; torque ``R* P_R``), or None.
    restitution, tangential_restitution : (k,) the coefficients used (lowered where a
        cluster's energy would rise, module docstring).
    iterations : sweeps or pivots; violation : (m/s) of ``U~_N >= 0``.
    """

    velocities: np.ndarray
    normal: np.ndarray
    tangential: np.ndarray
    rolling: np.ndarray | None
    restitution: np.ndarray
    tangential_restitution: np.ndarray
    iterations: int
    violation: float


def is_frictional(constraints, rows: np.ndarray) -> bool:
    """Whether some of ``rows`` carries friction or rolling resistance."""
    mu_r = constraints.laws.rolling_friction
    return bool(
        np.any(constraints.laws.friction[rows] > 0.0)
        or (constraints.rolling is not None and mu_r is not None and np.any(mu_r[rows] > 0.0))
    )


def impact_set(sub, u: np.ndarray, h: float, e: np.ndarray, et: np.ndarray):
    """The constraint set of the impact problem on the impacting rows ``sub`` (a
    `ConstraintSet` of k rows): `project_frictional` applied to ``u^-`` with it solves
    (I-N), (I-T) (module docstring).

    Its bounds ``lower(h) = n - e U_N^-`` (m/s) are stored as gaps ``-h lower``, with no
    separation cap (a rebound is not an overlap being undone); its tangential offsets
    are ``o - et U_T^-`` (m/s)."""
    k = sub.size
    normal_offset = np.zeros(k) if sub.normal_offset is None else sub.normal_offset
    approach = sub.jacobian @ u - normal_offset  # U_N^- < 0 on impacting rows
    lower = normal_offset - e * approach
    offset = sub.tangential_offset
    T, s = tangential_jacobian(sub)
    if s and np.any(et > 0.0):
        wall = np.zeros((k, s)) if offset is None else offset
        slip = (T @ u).reshape(k, s) - wall  # U_T^-
        offset = wall - et[:, None] * slip
    return replace(sub, gap=-h * lower, separation_speed=None, tangential_offset=offset, normal_offset=None)


def solve_impact(
    metric, constraints, rows: np.ndarray, u: np.ndarray, h: float, sweep_aim: float | None = None
) -> ImpactAnswer:
    """Newton's impact law with Coulomb friction (module docstring) on the impacting
    ``rows`` of ``constraints``, applied to the velocity ``u`` (d,) before the impact;
    ``sweep_aim`` is the Coulomb sweeps' aim (`ContactProblem.sweep_aim`).

    Raises what `project_frictional` raises (`JammingError`, `ConvergenceError`)."""
    sub = constraints.subset(rows)
    e = sub.laws.restitution.astype(float)
    et = (
        np.zeros(sub.size) if sub.laws.tangential_restitution is None else sub.laws.tangential_restitution.astype(float)
    )
    clusters = None  # labelled when first needed (`_rising_clusters`)
    moving = _moving(sub)
    iterations = 0
    for fallback in range(3):
        problem = ContactProblem.from_constraints(metric, impact_set(sub, u, h, e, et), u, h, sweep_aim=sweep_aim)
        answer = project_frictional(problem)
        iterations += answer.iterations
        rising, clusters = _rising_clusters(metric, problem, u, answer, clusters, moving)
        if not rising.size or fallback == 2:
            break
        for cluster in rising:  # smallest e and et = 0, then inelastic (module docstring)
            members = clusters == cluster
            e[members] = e[members].min() if fallback == 0 else 0.0
            et[members] = 0.0
    return ImpactAnswer(
        answer.velocities,
        answer.impulses,
        answer.tangential_impulses,
        answer.rolling_impulses,
        e,
        et,
        iterations,
        answer.violation,
    )


def _clusters(G_I: sp.csr_matrix) -> np.ndarray:
    """Label (k,) of each impacting row's cluster: rows that share a sphere's
    coordinates, directly or through other rows: the connected components of the row
    graph ``|G_I| |G_I|^T``, found by union-find on the rows' non-zero entries without
    forming that product (`sweep_kernels.row_clusters`)."""
    return kernels().row_clusters(*csr_arrays(G_I), G_I.shape[1])


def _moving(sub) -> np.ndarray:
    """(k,) whether each of the impacting rows ``sub`` touches a moving wall (a non-zero
    contact-point velocity)."""
    moving = np.zeros(sub.size, dtype=bool)
    if sub.normal_offset is not None:
        moving |= sub.normal_offset != 0.0
    if sub.tangential_offset is not None:
        moving |= np.any(sub.tangential_offset != 0.0, axis=1)
    return moving


def _rising_clusters(metric, problem, u, answer, clusters, moving) -> tuple[np.ndarray, np.ndarray | None]:
    """Labels of the clusters (without a moving wall) of the impacting rows whose
    kinetic energy rose, and the rows' cluster labels (``clusters``, or `_clusters`
    labelled here when None and needed). ``problem`` is the impact problem the answer
    solved (`impact_set`: its rows ``G``, ``T`` and ``R`` are the impacting rows').

    A cluster's energy change is the work of its impulses, ``1/2 sum_k P_k . H_k
    (u^- + u^+)`` (clusters share no coordinate). Allowed: round-off of the energy,
    and the sweeps' tolerance, ``FRICTION_SWEEP_TOLERANCE`` times the velocity scale
    per unit impulse (a contact within ``tau`` m/s of its law does work at most ``tau
    |P|``)."""
    G, T, s, R = problem.jacobian, problem.tangents, problem.tangent_count, problem.rolling
    k = problem.size
    mean = 0.5 * (u + answer.velocities)
    local = [answer.impulses * (G @ mean)]
    if s:
        local.append(np.sum(answer.tangential_impulses * (T @ mean).reshape(k, s), axis=1))
    if R is not None and answer.rolling_impulses is not None:
        local.append(np.sum(answer.rolling_impulses * (R @ mean).reshape(k, 2), axis=1))
    work = np.sum(local, axis=0)
    impulse = answer.impulses + np.abs(answer.tangential_impulses).sum(axis=1)
    scale = max(float(np.abs(G @ u).max(initial=0.0)), float(np.abs(T @ u).max(initial=0.0)) if s else 0.0)
    excess = work - FRICTION_SWEEP_TOLERANCE * scale * impulse
    if not np.any(excess > 0.0):
        # A cluster's excess is the sum of its rows', and its allowance adds
        # ENERGY_ROUNDOFF * energy >= 0 to it: none rose.
        return np.zeros(0, dtype=np.int64), clusters
    clusters = _clusters(G) if clusters is None else clusters
    energy = metric.kinetic_energy(u)
    rising = np.bincount(clusters, weights=excess) > ENERGY_ROUNDOFF * energy
    rising[clusters[moving]] = False
    return np.flatnonzero(rising), clusters
