"""The acceptance tests of every contact answer, in velocity units (m/s for spheres).

Frictionless: the KKT conditions of ``min_{l >= 0} 1/2 l^T W l + c^T l`` (``W = G M^{-1}
G^T``, ``c = G v - b``) at the caller's tolerances (`kkt_holds`). Every solver's answer
(`granular.contact.active_set`, OSQP, pivoting, the interior point) passes through it
before `granular.contact.projection` returns it, so no solver is trusted on its own
stopping rule.

Frictional: the natural residual of the Coulomb-Maury law at each contact
(`coulomb_residual`, `coulomb_holds`; `frictional_residual` for a `ContactSolution`):
the cone ``|l_T| <= mu l_N``, ``l_N >= 0``, normal complementarity, and a sliding
velocity opposite to the friction impulse, in one number per contact.
"""

from __future__ import annotations

import numpy as np


def accurate(W, c, impulses, feasibility, complementarity) -> bool:
    """`kkt_holds` for the multipliers ``impulses`` of ``(W, c)``."""
    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    return kkt_holds(W @ impulses + c, impulses, diagonal, feasibility, complementarity)


def kkt_holds(slack, impulses, diagonal, feasibility, complementarity) -> bool:
    """The KKT test of every answer: ``l >= 0``, ``s = W l + c >= -feasibility`` and the
    natural residual ``max_k |min(W_kk l_k, s_k)| <= complementarity`` (velocity units)."""
    if not np.all(np.isfinite(slack)) or -slack.min(initial=0.0) > feasibility or impulses.min(initial=0.0) < 0.0:
        return False
    return float(np.abs(np.minimum(diagonal * impulses, slack)).max(initial=0.0)) <= complementarity


def natural_residual(W, c, impulses, diagonal) -> float:
    """``max_k |min(W_kk l_k, s_k)|`` with ``s = W l + c`` (velocity units)."""
    slack = W @ impulses + c
    return float(np.abs(np.minimum(diagonal * impulses, slack)).max(initial=0.0))


# -- the Coulomb law -----------------------------------------------------------------------------


def coulomb_residual(
    slack: np.ndarray,
    tangential_velocity: np.ndarray,
    normal: np.ndarray,
    tangential: np.ndarray,
    mu: np.ndarray,
    normal_weight: np.ndarray,
    tangential_weight: np.ndarray,
) -> np.ndarray:
    """The natural residual (m,) of the Coulomb-Maury law at every contact, m/s: the
    acceptance test of a frictional answer (`granular.contact.friction`, law (N)-(T)).

    slack : (m,) ``U_N = G u - b`` (m/s); tangential_velocity : (m, s) ``U_T = T u - o``
    (m/s, ``o`` a moving wall's surface velocity); normal : (m,) ``l_N``; tangential :
    (m, s) ``l_T`` (N s); mu : (m,); normal_weight, tangential_weight : (m,) positive
    weights ``w_k``, ``v_k`` (1/kg: the diagonal of the contact's Delassus block,
    one ``v_k`` for its tangents, so that the disc stays a disc).

    The local law's answer at the contact's velocities is ``l_N' = max(0, l_N - U_N /
    w)``, ``l_T' = l_T - U_T / v`` scaled onto the disc ``|l_T'| <= mu l_N'``; the
    residual is ``|diag(w, v) (l' - l)|``. It is 0 exactly when ``l_N >= 0``, ``U_N >= 0``,
    ``l_N U_N = 0``, ``|l_T| <= mu l_N``, ``U_T = 0`` inside the disc and ``U_T = -a l_T``
    (``a >= 0``) on its boundary, whatever the weights; with the weights of the
    contact's own block it is the distance (m/s) that the nonsmooth Gauss-Seidel sweeps
    measure (`granular.contact.friction_gauss_seidel`, whose compiled kernels compute
    this same quantity; Jean, *The non-smooth contact dynamics method*, 1999).
    """
    normal_answer = np.maximum(normal - slack / normal_weight, 0.0)
    free = tangential - tangential_velocity / tangential_weight[:, None]
    size = np.linalg.norm(free, axis=1)
    limit = mu * normal_answer
    outside = size > limit
    factor = np.where(outside, limit / np.where(outside, size, 1.0), 1.0)
    tangential_answer = free * factor[:, None]
    normal_part = normal_weight * (normal_answer - normal)
    tangential_part = tangential_weight[:, None] * (tangential_answer - tangential)
    return np.sqrt(normal_part**2 + np.sum(tangential_part**2, axis=1))


def coulomb_holds(residual: np.ndarray, tolerance) -> bool:
    """The acceptance test of a frictional answer: every contact's `coulomb_residual`
    within ``tolerance`` (m/s; one number, or one per contact (m,))."""
    return bool(np.all(np.isfinite(residual)) and np.all(residual <= tolerance))


def frictional_residual(problem, solution, weights=None) -> np.ndarray:
    """`coulomb_residual` (m,) of a frictional `ContactSolution` of a `ContactProblem`
    (m/s), with the diagonal of the Delassus matrix of ``[G; T]`` as weights (the mean
    of a contact's tangent entries as its ``v_k``; `coulomb_weights`, or ``weights``
    when the caller has them). Contacts without friction count their normal law
    only; rolling rows are not read."""
    G, T, s = problem.jacobian, problem.tangents, problem.tangent_count
    m = problem.size
    u = solution.velocities
    slack = G @ u - problem.lower
    normal_weight, tangential_weight = coulomb_weights(problem) if weights is None else weights
    mu = np.zeros(m) if problem.friction is None else np.asarray(problem.friction, dtype=float)
    if s == 0 or T is None:
        return coulomb_residual(
            slack, np.zeros((m, 1)), solution.impulses, np.zeros((m, 1)), np.zeros(m), normal_weight, normal_weight
        )
    tangential_velocity = (T @ u).reshape(m, s)
    if problem.tangential_offset is not None:
        tangential_velocity = tangential_velocity - problem.tangential_offset
    return coulomb_residual(
        slack,
        tangential_velocity,
        solution.impulses,
        solution.tangential_impulses,
        mu,
        normal_weight,
        tangential_weight,
    )


def coulomb_weights(problem) -> tuple[np.ndarray, np.ndarray]:
    """The weights ``(w, v)`` (m,), 1/kg, of `frictional_residual`: the diagonal of
    ``G M^{-1} G^T`` and, per contact, the mean of its tangents' diagonal entries of
    ``T M^{-1} T^T`` (``w`` where a contact has no tangent)."""
    G, T, s = problem.jacobian, problem.tangents, problem.tangent_count
    normal_weight = np.maximum(np.asarray(problem.metric.delassus(G).diagonal()).reshape(-1), np.finfo(float).tiny)
    if s == 0 or T is None:
        return normal_weight, normal_weight
    tangent_diagonal = np.asarray(problem.metric.delassus(T).diagonal()).reshape(problem.size, s).mean(axis=1)
    return normal_weight, np.where(tangent_diagonal > 0.0, tangent_diagonal, normal_weight)


def shifted_normal_allowance(mu: np.ndarray, normal_weight: np.ndarray, tangential_weight: np.ndarray) -> np.ndarray:
    """How far (m,), in units of ``e``, the `coulomb_residual` of an exact answer of
    the law with every normal velocity ``U_N`` moved by at most ``e`` can be.

    Derivation: the local answer ``l_N' = max(0, l_N - U_N / w)`` is 1/w-Lipschitz in
    ``U_N``; the disc radius ``mu l_N'`` then moves by at most ``mu e / w``, and the
    projection onto a disc is 1-Lipschitz in its radius, so ``l_T'`` moves by at most
    ``mu e / w``. An exact answer is its own local answer, so the residual
    ``|diag(w, v) (l' - l)|`` is at most ``e sqrt(1 + (mu v / w)^2)``. This is what
    the De Saxce fixed point leaves (`granular.contact.conic`): its answer is an exact
    answer of the law whose normal velocities are off by the shifts' error
    ``|sigma_k - mu_k |T_k u||``, which its stopping rule bounds."""
    ratio = mu * tangential_weight / normal_weight
    return np.sqrt(1.0 + ratio**2)
