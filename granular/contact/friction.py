"""Coulomb friction: Moreau's discrete contact law with Maury's gap constraint.

The discrete contact law follows a study of Moreau's contact dynamics with Coulomb
friction and its discrete contact law (Springer, 2017, doi:10.1007/978-3-319-55795-3_40),
called "the 2017 study" below.

The contact step of the velocity scheme, for constraints that carry a friction
coefficient ``mu_k > 0`` and a tangent basis.

Notation (shapes; ``m`` constraints, ``s`` tangent directions per constraint: 1 in
the plane, 2 in 3D, ``d`` coordinates):

- ``v`` (d,) the predicted velocity ``u^n + h M^{-1} f``, ``M`` the mass metric;
- ``G`` (m, d) the normal rows (gradients of the gaps ``D``, m), ``T`` (m s, d) the
  tangential rows, row ``s k + a`` the velocity of contact ``k`` along its unit
  tangent ``a``. ``G_k`` and ``T_k`` must be the Jacobians of the contact point's
  displacement along a *unit* normal and *unit* tangents, so that the impulses
  below are physical impulses (N s) and ``mu`` a physical coefficient;
- ``lambda_N`` (m,) normal and ``lambda_T`` (m, s) tangential impulses over the step;
- ``u = v + M^{-1} (G^T lambda_N + T^T lambda_T)``, the discrete momentum balance.

The discrete contact law (the "Coulomb-Maury law")
--------------------------------------------------
For every contact ``k``:

(N) ``0 <= lambda_N,k``, ``D_k + h G_k u >= 0`` and ``lambda_N,k (D_k + h G_k u) = 0``
    (Maury's normal law: positions stay admissible; Bernicot and Lefebvre-Lepot,
    *Existence results for non-smooth second order differential inclusions, convergence
    result for a numerical scheme and application to the modelling of inelastic
    collisions*, 2010);
(T) ``|lambda_T,k| <= mu_k lambda_N,k``; if ``|lambda_T,k| < mu_k lambda_N,k`` the
    contact sticks, ``T_k u = 0``; otherwise it slides against the reaction,
    ``T_k u = -a lambda_T,k`` with ``a >= 0`` (Coulomb's law (5) of the 2017 study).

Relation to the 2017 study. Its reaction cone is ``R(q) = R+ (n(q) + D_1(q))``; here
``R(q) = {G^T l_N + T^T l_T : |l_T| <= mu l_N}``, i.e. ``n = G / |G|`` and the
friction disc ``D_1(q) = {T^T w / |G| : |w| <= mu}``, a closed bounded convex set
that contains 0 and does not contain ``grad g`` in its span: the hypothesis (H3) of
the study (for a generalised coordinate system the physical disc is the image of the
contact point's tangent plane, not the Euclidean complement of ``n``). Its
discrete law is ``S(q, v) = v`` if ``v`` is admissible, otherwise the
kinetic-metric projection of 0 onto ``(v + M^{-1} R(q)) cap T(q)``, with
``T(q) = {u : G u = 0}``. For one contact with ``D = 0`` the law above *is*
``S(q, v)``:

- ``G v >= 0`` (admissible): ``lambda = 0``, ``u = v`` satisfies (N) and (T).
  In Painleve's configurations a second answer with ``lambda_N > 0`` (a
  tangential impact) can satisfy them too; like Moreau (section 2 of the 2017 study) the
  solver returns ``u = v``: no jump without an approaching contact.
- ``G v < 0``: (N) forces ``G u = 0`` and ``lambda_N > 0``. Along the set
  ``F = {l_T : (l_N(l_T), l_T) in cone}`` where ``l_N(l_T)`` makes ``G u = 0``, the
  derivative of ``1/2 |u|_M^2`` is ``(T u) . dl_T``, so ``u`` minimises the kinetic
  norm over ``(v + M^{-1} R) cap T(q)`` iff ``-T u`` lies in the normal cone of F at
  ``l_T``. In the plane (s = 1) F is an interval whose end points are exactly the
  points of the cone's boundary, so this is (T); in 3D it is (T) when
  ``G M^{-1} T^T = 0`` (spheres, turning or not: the normal row has no rotational
  part and is orthogonal to the tangents, so the friction impulse of a contact
  does not move its normal velocity). The tests compute the study's projection
  directly (`reference_contact_law` in `tests/support/reference.py`, with cvxpy) and check
  that both agree.

With a gap ``D > 0`` (Maury's anticipation) the normal part becomes
``G u = -D / h`` instead of ``G u = 0``, and for several contacts (N) and (T) hold
contact by contact, which no single projection expresses (Coulomb's law is not
associated: it is not the optimality condition of a convex program).

Proposition 1 of the 2017 study holds for every solution: ``r = G^T l_N + T^T l_T`` lies
in ``R(q)``, ``<u, r> = -l_N . D / h + sum_k l_T,k . T_k u <= 0`` (positions
admissible, friction opposes sliding), hence ``|u|_M <= |v|_M``.

How it is solved
----------------
- Plane (s = 1): the law is exactly the linear complementarity problem of
  Stewart-Trinkle / Anitescu-Potra with the two friction directions ``+t, -t``
  and the sliding speed ``gamma`` (`planar_lcp`): the segment friction "disc" has
  two extreme points, so nothing is approximated. It is solved by Lemke's
  complementary pivoting (`lemke`), exact up to round-off; Anitescu and Potra
  (1997) show this LCP always has a solution and Lemke's method finds it. A QP
  cannot be used here: the fixed point over convex QPs (below) stalls when the
  sliding speed is large against the normal impulse, and has no solution to find
  in Painleve's inconsistent configurations, where the LCP gives the tangential
  impact the 2017 study describes.
- 3D (s = 2), spheres: when the metric is diagonal and every frictional
  contact's Delassus block is ``diag(w_k, v_k, v_k)`` (spheres and walls:
  ``v = w`` without rotation, ``v = w + r_i^2/J_i + r_j^2/J_j`` for turning spheres),
  by nonsmooth Gauss-Seidel (`granular.contact.friction_gauss_seidel`): each
  contact in turn takes its exact local answer, colour by colour (vectorised),
  with extrapolation along the drift of stalled sweeps and, when they stall for
  good (turning spheres), a hand-over to a semismooth Newton method on the same
  law (Alart and Curnier's function; `granular.contact.friction_gauss_seidel`). It stops when every
  contact is within ``tolerance * scale`` (m/s) of its local law (the cone
  holds exactly) with ``FRICTION_SWEEP_TOLERANCE``, or raises
  `ConvergenceError` naming the worst contact.
  Pure numpy. On the sand pile's dense pour (300 spheres, 1000 candidate rows,
  250-450 active) the De Saxce fixed point below needed 100s of SOCPs a step and
  stopped converging at t = 0.23 s; the sweeps take 20 to a few 1000 a step and
  carry the pour to rest (benchmarks/README.md, "Measurements behind the
  constants").
- 3D (s = 2), any other metric: the law is a second-order cone complementarity
  problem, solved as the fixed point of De Saxce's reformulation (Acary,
  Cadoux, Lemarechal, Malick 2011): for a shift ``sigma`` (m,) the convex SOCP

      min_l  1/2 l^T W l + l^T (c + E sigma)   s.t.  (mu_k l_N,k, l_T,k) in SOC_k

  (``W = H M^{-1} H^T``, ``H = [G; T]``, ``c = H v + (D/h, 0)``, ``E`` the normal
  components) has KKT conditions ``l_k in C_k``, ``w_k + sigma_k e_N in C_k*``,
  ``l_k . (w_k + sigma_k e_N) = 0``; with ``sigma_k = mu_k |T_k u|`` they are exactly
  (N) and (T). The iteration ``sigma <- mu |T u(sigma)|`` (half steps for the
  contacts whose update changes sign) stops when the law holds to
  ``FRICTION_TOLERANCE`` times the velocity scale (`_law_residual`). Each SOCP is
  solved by Clarabel (an interior-point conic solver, a core dependency)
  directly: going through cvxpy costs its problem compilation at every iteration
  for the same answer. The iteration is not guaranteed to converge (Acary et al.
  give no such result): it raises `ConvergenceError` after 400 solves. Measured:
  40 random 3D problems (random SPD M, 1-4 coupled contacts) converge for
  ``mu <= 1`` in 6-14 solves on average (at most 234); at ``mu <= 1.5`` 1 of 40
  failed.

Contacts without friction (``mu_k = 0``) keep only their normal impulse. A set
with no frictional row never reaches this module: the velocity scheme then calls
`granular.contact.projection.project`, so ``mu = 0`` is Maury's step bit for bit.

Spheres turn (`granular.spheres.world`): their tangential rows carry the rotational part
``-r (n x t)`` of the contact point's velocity, so a sliding contact applies a
torque and a sphere can roll; the law above is unchanged, on the generalised
velocity ``(u, omega)`` in the metric ``diag(m, J)``.

Rolling resistance (spheres). A contact with a coefficient ``mu_r > 0`` also has
two rolling rows ``R_k`` (`granular.spheres.world`): the relative angular velocity of the
two spheres (of the sphere, on a wall) along the contact's tangents, times the
rolling radius ``R* = r_i r_j / (r_i + r_j)`` (``r_i`` on a wall), a velocity
(m/s). Its impulse ``l_R`` (N s; the torque impulse is ``R* l_R``, N m s, on
``omega_j``, minus on ``omega_i``) obeys the same discrete law as friction, with
its own disc:

(R) ``|l_R,k| <= mu_r,k lambda_N,k``; if inside, the contact does not roll,
    ``R_k u = 0``; otherwise it rolls against the torque, ``R_k u = -a l_R,k``,
    ``a >= 0``.

This is the rolling friction cone of Tasora and Anitescu (*A complementarity-based
rolling friction model for rigid contacts*, Meccanica, 2013), i.e. the constant
directional torque ``mu_r R* F_N`` of model A in Ai, Chen, Rotter and Ooi
(*Assessment of rolling resistance models in discrete element simulations*,
Powder Technology, 2011), made implicit: at rest the torque is whatever keeps the
contact from rolling up to the bound, so there is none of model A's chatter
around zero rolling velocity in explicit DEM (the reason Ai et al. recommend the
elastic-plastic model C there). Spin about the normal is not resisted. Like (T),
(R) does no positive work, so Proposition 1 and ``|u|_M <= |v|_M`` still hold.
Only the sphere sweeps solve it (`granular.contact.friction_gauss_seidel`).

Impacts with restitution ``e > 0``: friction acts during the bounce too, in the
restitution stage of the velocity scheme, by Newton's law with Coulomb friction
(`granular.contact.impact`; the impact's friction impulse is bounded by ``mu`` times its
whole normal impulse). This module solves it, on a constraint set whose bounds
and tangential offsets are those of the impact law.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..errors import ConvergenceError, InvalidInputError, SolverError
from . import coulomb_rows
from . import friction_gauss_seidel as gauss_seidel
from . import working_set
from .conic import conic_fixed_point
from .kkt import coulomb_holds, coulomb_weights, frictional_residual, shifted_normal_allowance
from .pivoting import lemke
from .problem import ContactProblem, check_friction
from .solution import ContactSolution
from .working_set import RoundAnswer
from ..tolerances import FRICTION_SWEEP_TOLERANCE, FRICTION_SWEEPS, FRICTION_TOLERANCE, VELOCITY_TOLERANCE

#: Rounds of adding violated rows to the working set before solving them all.
_MAX_GENERATION_ROUNDS = 12
#: Rows whose predicted normal velocity ``c = G v - b`` is below this fraction of the
#: problem's velocity scale join the sweeps' first working set, with the rows the
#: prediction violates and those that pushed at the previous step. Why: friction and
#: spin move velocities sideways and close contacts that the prediction leaves
#: slowly separating; each round that adds them costs the sweeps hundreds more
#: sweeps (the new rows redistribute the load through the whole pile), while too
#: wide a set makes each sweep costlier. Tuned on the 1,000-sphere pour of turning
#: spheres (`benchmarks/rotation_speed.py`); benchmarks/README.md, "Measurements
#: behind the constants". The answer does not depend on it: rows outside the set
#: still join when violated.
NEAR_CONTACT = 0.1


# -- the projection ----------------------------------------------------------------------


def project_frictional(problem: ContactProblem, strict: bool = True) -> ContactSolution:
    """The Coulomb-Maury law (module docstring) of ``problem``
    (`ContactProblem.from_constraints`: the step's rows, bounds ``b = -D/h``, friction
    and rolling coefficients). Its ``warm_start`` (m,) are the previous normal
    impulses (rows with a positive value join the first working set), its
    ``warm_tangential`` (m, s) the previous friction impulses in the rows' tangent
    bases and its ``warm_rolling`` (m, 2) the previous rolling impulses (both used by
    the sphere sweeps only; None starts them from zero).

    Working set: rows the prediction violates (``D + h G v < 0``) and warm rows are
    solved first; rows the answer violates are added until none is, as in
    `granular.contact.projection.project`. Rows left out carry no impulse and are satisfied.

    Raises `JammingError` (no admissible velocity), `ConvergenceError` (3D fixed
    point or sweeps, or an answer beyond its method's bound: `judge`), `SolverError`
    (an answer that breaks (N) beyond tolerance); their messages do not name the time, which the calling scheme adds.
    With ``strict=False`` sweeps that miss their tolerance, and answers beyond
    their bound, do not raise: the best answer is returned with the error in
    ``missed`` (`ContactSolution`).
    """
    start = time.perf_counter()
    metric, G, predicted, lower = problem.metric, problem.jacobian, problem.predicted, problem.lower
    T, s, mu, R = problem.tangents, problem.tangent_count, problem.friction, problem.rolling
    offset = problem.tangential_offset  # a moving wall's tangential velocity
    m = G.shape[0]
    c = G @ predicted - lower
    zero_t = np.zeros((m, s))
    if m == 0 or np.all(c >= 0.0):
        return ContactSolution(
            predicted.copy(),
            np.zeros(m),
            "unconstrained",
            0,
            0.0,
            time.perf_counter() - start,
            tangential_impulses=zero_t,
            rolling_impulses=None if R is None else np.zeros((m, 2)),
        )
    scale = velocity_scale(problem, c)
    feasibility = VELOCITY_TOLERANCE * scale
    warm_start = problem.warm_start
    warm = np.zeros(m) if warm_start is None else np.nan_to_num(np.asarray(warm_start, dtype=float))
    sweep_rows = (
        coulomb_rows.sweep_rows(metric, G, T, mu, lower, R, problem.rolling_friction, offset) if s == 2 else None
    )
    if sweep_rows is not None:  # a diagonal metric and sphere blocks: the sweeps apply
        return _project_by_sweeps(problem, c, warm, scale, feasibility, start, sweep_rows, strict)
    if R is not None:
        raise InvalidInputError(
            "rolling resistance is solved for spheres only (a diagonal metric with "
            "sphere contact blocks, granular.contact.friction_gauss_seidel)"
        )
    # In the plane a row the prediction does not violate stays out of the first set
    # even if it was active before: with Painleve's coupling the LCP may then admit
    # a spurious jump on it, and Moreau's choice is no jump (module docstring).
    working = (c < 0.0) | ((warm > 0.0) & (s != 1))
    iterations = 0

    def solve(rows):
        nonlocal iterations
        normal, tangential, status, more = _solve_rows(metric, G, T, s, mu, predicted, lower, rows, scale, offset)
        iterations += more
        velocities = predicted + metric.solve(G.T @ normal + T.T @ tangential.reshape(-1))
        return RoundAnswer(velocities, G @ velocities - lower, normal, status, tangential)

    answer = working_set.grow_until_feasible(working, solve, feasibility, _MAX_GENERATION_ROUNDS)
    violation = float(max((-answer.slack).max(initial=0.0), 0.0))
    if violation > max(feasibility, FRICTION_TOLERANCE * scale) or not np.all(np.isfinite(answer.velocities)):
        raise SolverError(
            f"the frictional projection left a constraint violated (by {violation:.3g}, velocity units)",
            status=answer.status,
        )
    solution = ContactSolution(
        answer.velocities,
        answer.impulses,
        answer.status,
        iterations,
        violation,
        time.perf_counter() - start,
        tangential_impulses=answer.tangential,
    )
    return judge(problem, solution, FRICTION_TOLERANCE * scale, strict)


def velocity_scale(problem: ContactProblem, c: np.ndarray | None = None) -> float:
    """The velocity scale (m/s) the frictional tolerances are relative to: the largest
    of the prediction's approach ``-min(G v - b)`` and of the speeds ``|G| |v|``,
    ``|T| |v|``, ``|R| |v|`` a row sees, and of a moving wall's tangential speed.
    ``c`` (m,): ``G v - b`` when the caller has it."""
    G, T, R, predicted = problem.jacobian, problem.tangents, problem.rolling, problem.predicted
    offset = problem.tangential_offset
    c = G @ predicted - problem.lower if c is None else c
    speeds = np.abs(predicted)
    return max(
        float(-c.min(initial=0.0)),
        _largest_row_speed(G, speeds),
        _largest_row_speed(T, speeds) if T is not None else 0.0,
        _largest_row_speed(R, speeds) if R is not None else 0.0,
        float(np.abs(offset).max(initial=0.0)) if offset is not None else 0.0,
    )


def _largest_row_speed(rows, speeds: np.ndarray) -> float:
    """``max(|rows| @ speeds)`` (0 without rows) for sparse or dense ``rows`` and
    ``speeds`` >= 0 (`sweep_kernels.largest_row_speed`)."""
    if not sp.issparse(rows):
        return float((np.abs(rows) @ speeds).max(initial=0.0))
    rows = rows.tocsr()  # itself when already CSR
    return float(coulomb_rows.kernels().largest_row_speed(rows.indptr, rows.indices, rows.data, speeds))


def judge(problem: ContactProblem, solution: ContactSolution, tolerance: float, strict: bool = True) -> ContactSolution:
    """``solution`` with its Coulomb residual recorded (m/s, the largest over its
    contacts; `granular.contact.kkt.frictional_residual`, the measure the sweeps
    accept by), judged against what its method guarantees at ``tolerance`` (m/s):

    - Lemke's pivoting (plane) is exact up to round-off: every contact within
      ``tolerance``;
    - the 3D fixed point stops when the shifts are within ``tolerance`` and its
      SOCPs are solved to ``FIXED_POINT_SOLVE_ACCURACY`` of ``tolerance``; an answer
      whose normal velocities are off by ``e`` has a residual of at most ``e``
      times `kkt.shifted_normal_allowance` (its derivation), so each contact must be
      within ``tolerance`` times that allowance plus the solves' accuracy.

    An answer beyond its bound raises `ConvergenceError` naming the contact, or, with
    ``strict`` False, is kept with that error in ``missed``."""
    weights = coulomb_weights(problem)
    residuals = frictional_residual(problem, solution, weights)
    bound = np.full(problem.size, tolerance)
    if solution.status == "fixed_point":
        mu = np.zeros(problem.size) if problem.friction is None else np.asarray(problem.friction, dtype=float)
        allowance = shifted_normal_allowance(mu, *weights)
        bound = tolerance * (allowance + FIXED_POINT_SOLVE_ACCURACY * (1.0 + allowance))
    solution = replace(solution, residual=float(residuals.max(initial=0.0)))
    if residuals.size == 0 or coulomb_holds(residuals, bound):
        return solution
    worst = int(np.argmax(residuals / bound))
    where = problem.contact_name(worst) if problem.contact_name else f"contact {worst}"
    error = ConvergenceError(
        f"the {solution.status} answer misses the Coulomb law: {where} is "
        f"{residuals[worst]:.3g} m/s from its local law (bound {bound[worst]:.3g} m/s)",
        status=solution.status,
        residual=float(residuals[worst]),
        tolerance=float(bound[worst]),
        where=where,
    )
    if strict:
        raise error
    return replace(solution, status="inaccurate", missed=error)


#: The accuracy of the 3D fixed point's SOCP solves, as a fraction of its tolerance:
#: Clarabel's duality gap of 1e-13 leaves velocities wrong by about 1e-8 of the
#: velocity scale (`granular.contact.conic`), 1e-3 of ``FRICTION_TOLERANCE = 1e-5``;
#: the contacts the stopping rule leaves out (impulses below 1e-3 of the tolerance
#: over their Delassus entry) add at most as much again.
FIXED_POINT_SOLVE_ACCURACY = 2e-3


def _project_by_sweeps(problem, c, warm, scale, feasibility, start, sweep_rows, strict=True) -> ContactSolution:
    """3D law by nonsmooth Gauss-Seidel (`granular.contact.friction_gauss_seidel`).

    Working set as in `project_frictional`: rows the prediction violates, rows
    with a warm impulse and rows separating slower than `NEAR_CONTACT` times the
    velocity scale first; rows the answer violates by more than the law's
    tolerance join and the set is solved again from its answer (a round after one
    that ran past the stall floor short of the sweeps' aim aims at the level that
    round reached: `_later_round_target`). Returns impulses
    that satisfy (N)-(T) at every contact to ``FRICTION_SWEEP_TOLERANCE * scale``
    (m/s), or raises `ConvergenceError` naming the worst contact; with ``strict``
    False, the sweeps' best answer instead, with that error in ``missed``.
    """
    metric, G, T, R = problem.metric, problem.jacobian, problem.tangents, problem.rolling
    predicted, lower, m = problem.predicted, problem.lower, problem.size
    name = problem.contact_name or (lambda k: f"contact {k}")
    tolerance = sweep_tolerance(scale, lower, warm, c)
    width = 3 if R is None else 5
    impulses = np.zeros((m, width))
    impulses[:, 0] = warm
    warm_tangential = problem.warm_tangential
    if warm_tangential is not None:
        warm_tangential = np.nan_to_num(np.asarray(warm_tangential, dtype=float))
        impulses[:, 1 : 1 + warm_tangential.shape[1]] = warm_tangential
    if R is not None and problem.warm_rolling is not None:
        impulses[:, 3:5] = np.nan_to_num(np.asarray(problem.warm_rolling, dtype=float))
    working = (warm > 0.0) | (c < NEAR_CONTACT * scale)  # scale >= 0: the violated rows (c < 0) too
    sweeps, residual, missed = 0, 0.0, None
    last = None  # the last round's rows and answer

    def solve(rows):
        nonlocal sweeps, impulses, residual, missed, last
        sub = sweep_rows.subset(rows)
        try:
            solved, more, residual = gauss_seidel.solve(
                sub,
                predicted,
                impulses[rows, : sub.width],
                tolerance[rows],
                FRICTION_SWEEPS,
                names=lambda k: name(rows[k]),
                floor=problem.stall_floor,
                target=_later_round_target(last, predicted, tolerance, problem.stall_floor, problem.sweep_aim),
                aim=problem.sweep_aim,
            )
            missed = None
        except ConvergenceError as error:
            if strict or error.best is None:
                raise
            solved, residual, missed = error.best, error.residual, error
            more = FRICTION_SWEEPS if error.iterations is None else error.iterations
        sweeps += more
        last = (sub, solved, rows, more)
        impulses = np.zeros((m, width))
        impulses[rows, : sub.width] = solved
        change = coulomb_rows.transposed_product(G, impulses[:, 0]) + coulomb_rows.transposed_product(
            T, impulses[:, 1:3].reshape(-1)
        )
        if R is not None:
            change = change + coulomb_rows.transposed_product(R, impulses[:, 3:].reshape(-1))
        velocities = predicted + metric.solve(change)
        return RoundAnswer(velocities, G @ velocities - lower)

    answer, _ = working_set.grow(
        working, solve, lambda answer: answer.slack < -tolerance, _MAX_GENERATION_ROUNDS, full_last=True
    )
    velocities, slack = answer.velocities, answer.slack
    violation = float(max((-slack).max(initial=0.0), 0.0))
    # A kept best answer was already found short of its law; its normal rows miss by
    # as much, which the residual it carries reports.
    violated = np.any(-slack > np.maximum(feasibility, tolerance)) and missed is None
    if violated or not np.all(np.isfinite(velocities)):
        raise SolverError(
            f"the Gauss-Seidel answer left a constraint violated (by {violation:.3g}, velocity units)",
            status="gauss_seidel",
        )
    return ContactSolution(
        velocities,
        impulses[:, 0].copy(),
        "gauss_seidel" if missed is None else "inaccurate",
        sweeps,
        violation,
        time.perf_counter() - start,
        tangential_impulses=impulses[:, 1:3].copy(),
        rolling_impulses=None if R is None else impulses[:, 3:].copy(),
        residual=residual,
        missed=missed,
    )


def _later_round_target(
    last, predicted: np.ndarray, tolerance: np.ndarray, floor: int | None = None, aim: float | None = None
) -> float | None:
    """The aim (in tolerances, `friction_gauss_seidel.solve`'s ``target``) of a working-set
    round after ``last`` (the last round's ``(rows, answer, their indices, sweeps)``, None
    for the first round): the run's aim (None; ``aim`` is `ContactProblem.sweep_aim`, and
    `friction_gauss_seidel.TARGET` when None), unless the last round ran past the
    stall floor (``floor`` as the round's sweeps took it,
    `friction_gauss_seidel.effective_floor`) and ended with its largest residual above
    that aim. Then the next round, which adds a few rows to that answer, aims at the
    level the last one reached (at most the tolerance): in the same deep network its
    sweeps would stall again at that level and end, like the last round, only by the
    stall rule, after as many sweeps again (a one-row second round of 19,014 sweeps on
    the 8,000-sphere box, benchmarks/README.md, `stress.py`). Rounds that end before the
    floor keep the aim: later rounds aimed at the tolerance throughout made the
    following steps harder (the drum's median step 5% longer)."""
    if last is None:
        return None
    rows, answer, indices, sweeps = last
    if sweeps <= gauss_seidel.effective_floor(floor, rows.cols.shape[0]):
        return None
    ratio = float((coulomb_rows.natural_residual(rows, predicted, answer) / tolerance[indices]).max(initial=0.0))
    return min(ratio, 1.0) if ratio > (gauss_seidel.TARGET if aim is None else aim) else None


def sweep_tolerance(scale: float, lower: np.ndarray, warm: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The velocity tolerance (m/s) of the sweeps, per row (m,):
    ``FRICTION_SWEEP_TOLERANCE * scale``, and, for a contact that carried an impulse
    at the previous step (``warm > 0``) and that the prediction pushes together
    again (``c = G v + D/h < 0``), at least its own gap mismatch ``|D_k| / h``
    (``lower = -D/h``).

    Why the second term: such a contact should have ``D = 0``; its ``D`` is the
    previous steps' error (at their tolerance, larger while the pour was fast) or
    the curvature their linearisation missed. A loop of sticking contacts cannot
    close all these ``D/h`` at once, and the sweeps then drift for 1000s of sweeps
    at that level (measured on the settling heap: stalled at 1.1-6 times a
    tolerance that had fallen with the velocity scale). Allowing a contact its own
    mismatch does not let it grow: a penetration velocity at most ``|D_k| / h``
    leaves an overlap at most ``|D_k|``. The allowance is the contact's own: a
    global one (the largest mismatch, as before) let a pair that never touched sink
    by another contact's mismatch (15 um in one step, found by the property tests).
    """
    tolerance = np.full(lower.size, FRICTION_SWEEP_TOLERANCE * scale)
    inherited = (warm > 0.0) & (c < 0.0)
    tolerance[inherited] = np.maximum(tolerance[inherited], np.abs(lower[inherited]))
    return tolerance


def _solve_rows(metric, G, T, s, mu, predicted, lower, rows, scale, offset=None):
    """Impulses of the sub-problem on ``rows``, scattered to full (m,) and (m, s) arrays
    (``offset`` (m, s): a moving wall's tangential velocity, taken off ``T v``)."""
    m = G.shape[0]
    frictional = rows[mu[rows] > 0.0]
    tangent_rows = (s * frictional[:, None] + np.arange(s)).reshape(-1)
    H = sp.vstack([G[rows], T[tangent_rows]]).tocsr()
    W = _dense(metric.delassus(H))
    free = H @ predicted
    free[: rows.size] -= lower[rows]
    if offset is not None:
        free[rows.size :] -= offset[frictional].reshape(-1)
    slot = np.searchsorted(rows, frictional)  # position of each frictional row among rows
    if s == 1:
        normal_sub, tangential_sub, pivots = planar_lcp(W, free, mu[frictional], slot)
        status, iterations = "lemke", pivots
    else:
        normal_sub, tangential_sub, iterations = conic_fixed_point(W, free, mu[frictional], slot, s, scale)
        status = "fixed_point"
    normal = np.zeros(m)
    normal[rows] = normal_sub
    tangential = np.zeros((m, s))
    tangential[frictional] = tangential_sub.reshape(-1, s)
    return normal, tangential, status, iterations


def _dense(W) -> np.ndarray:
    return W.toarray() if sp.issparse(W) else np.asarray(W)


# -- plane: an exact LCP ---------------------------------------------------------------


def planar_lcp(W: np.ndarray, free: np.ndarray, mu: np.ndarray, slot: np.ndarray):
    """Solve the planar law on ``n`` normal rows of which ``f`` are frictional.

    ``W`` ((n + f) square) is the Delassus matrix of ``H = [G; T]`` (normal rows first,
    then one tangent row per frictional contact), ``free`` (n + f,) the free
    velocities ``(G v + D/h, T v)``, ``mu`` (f,) and ``slot`` (f,) the index of each
    frictional contact among the normal rows. Unknowns ``z = (l_N, b+, b-, gamma)``,
    ``l_T = b+ - b-``:

        w_N   = W_NN l_N + W_NT l_T + c_N        >= 0  perp  l_N   >= 0
        w_+   = W_TN l_N + W_TT l_T + c_T + gamma >= 0  perp  b+    >= 0
        w_-   = -(W_TN l_N + W_TT l_T + c_T) + gamma >= 0  perp  b- >= 0
        w_gam = mu l_N(slot) - b+ - b-             >= 0  perp  gamma >= 0

    ``gamma > 0`` forces ``b+ + b- = mu l_N`` and exactly one of ``w_+, w_-`` zero:
    sliding at speed ``gamma`` against the friction impulse; ``gamma = 0`` forces
    ``T u = 0`` (sticking) within the segment. Returns ``(l_N (n,), l_T (f,), pivots)``.
    """
    n, f = free.size - mu.size, mu.size
    W_NN, W_NT = W[:n, :n], W[:n, n:]
    W_TN, W_TT = W[n:, :n], W[n:, n:]
    select = np.zeros((f, n))
    select[np.arange(f), slot] = 1.0
    eye, zeros_nf, zeros_ff = np.eye(f), np.zeros((n, f)), np.zeros((f, f))
    matrix = np.block(
        [
            [W_NN, W_NT, -W_NT, zeros_nf],
            [W_TN, W_TT, -W_TT, eye],
            [-W_TN, -W_TT, W_TT, eye],
            [mu[:, None] * select, -eye, -eye, zeros_ff],
        ]
    )
    q = np.concatenate([free[:n], free[n:], -free[n:], np.zeros(f)])
    z, pivots = lemke(matrix, q)
    normal = z[:n]
    tangential = z[n : n + f] - z[n + f : n + 2 * f]
    return normal, tangential, pivots


# -- 3D with a non-diagonal metric: granular.contact.conic; diagnostics ----------------------------


def coulomb_residuals(
    constraints, h: float, velocities: np.ndarray, normal: np.ndarray, tangential: np.ndarray
) -> dict:
    """How far an answer is from the law (N)-(T), per quantity (absolute units).

    Returns a dict of (m,) arrays: ``"cone"`` = ``max(|l_T| - mu l_N, 0)`` (N s),
    ``"negative_normal"`` = ``max(-l_N, 0)``, ``"penetration"`` =
    ``max(-(D/h + G u), 0)`` (velocity), ``"separation_with_impulse"`` =
    ``l_N (D/h + G u)`` clipped at 0 (N s x velocity), ``"stick_slip"`` = ``|T u|``
    where the impulse is strictly inside the cone (relative margin 1e-6), and
    ``"sliding_alignment"`` = ``|T u + a l_T|`` for the best ``a >= 0`` where it is on
    the boundary (velocity units).
    """
    mu, T, s = check_friction(constraints)
    G = constraints.jacobian
    m = G.shape[0]
    normal_velocity = G @ velocities - constraints.lower(h)
    tangential_velocity = (T @ velocities).reshape(m, s) if s else np.zeros((m, 0))
    if s and getattr(constraints, "tangential_offset", None) is not None:
        tangential_velocity = tangential_velocity - constraints.tangential_offset
    norm_t = np.linalg.norm(tangential, axis=1) if s else np.zeros(m)
    bound = mu * normal
    inside = norm_t < bound * (1.0 - 1e-6)
    stick = np.where(inside, np.linalg.norm(tangential_velocity, axis=1) if s else 0.0, 0.0)
    alignment = np.zeros(m)
    for k in np.flatnonzero(~inside & (norm_t > 0.0)):
        direction = tangential[k] / norm_t[k]
        a = max(-float(tangential_velocity[k] @ direction), 0.0)
        alignment[k] = np.linalg.norm(tangential_velocity[k] + a * direction)
    return {
        "cone": np.maximum(norm_t - bound, 0.0),
        "negative_normal": np.maximum(-normal, 0.0),
        "penetration": np.maximum(-normal_velocity, 0.0),
        "separation_with_impulse": np.maximum(normal * normal_velocity, 0.0),
        "stick_slip": stick,
        "sliding_alignment": alignment,
    }
