"""The metric projection at the heart of every step: Maury's scheme as studied by
Bernicot and Lefebvre-Lepot (*Existence results for non-smooth second order
differential inclusions, convergence result for a numerical scheme and application
to the modelling of inelastic collisions*), their eq. 1.13 and Remark 4.1.

    u = argmin 1/2 (u - v)^T M (u - v)   subject to   G u >= b

``v`` (d,) is the predicted velocity, ``M`` the mass metric, ``G`` (m x d) the
constraint Jacobian and ``b`` (m,) the lower bounds (for Maury's scheme
``b = -D/h``). The multipliers ``lambda`` (m,) satisfy the discrete momentum
balance ``M (u - v) = G^T lambda`` with ``lambda >= 0`` and
``lambda_k (G_k u - b_k) = 0``; with ``b`` in velocity units ``lambda`` is an
impulse (N s for spheres).

`project` rebuilds ``u`` from the multipliers, checks every answer against the KKT
conditions at the tolerances of `granular.tolerances` and raises rather than
return a wrong answer. With the default ``solver="osqp"`` the multipliers come, in
this order, from:

1. the proximal primal-dual active-set method of `granular.contact.active_set`, started
   from the previous step's impulses and sparse factor;
2. when it cannot certify an answer: linear programs that tell a jam (no
   admissible velocity, `JammingError`), on at most `JAM_CHECK_ROWS` rows, those
   nearest (through shared bodies) to the rows the prediction violates most: a
   subset of rows with no admissible velocity certifies that the whole set has
   none, and the certificate's cost no longer grows with the pile;
3. otherwise OSQP on the multiplier form, on a working set grown by constraint
   generation, with impact clusters of at most `SMALL_PROBLEM` rows solved by
   complementary pivoting and answers that miss the tolerances refined by a
   primal-dual interior-point method.

The jam check precedes OSQP because OSQP does not stop early on a jam: its
infeasibility test is set tight (``eps_dual_inf``) so that it never calls a
degenerate pile jammed, and it then runs every working-set round to its
iteration limit, fifty times the cost of the bounded check on the growing jam of
`benchmarks/growing_jam.py` (figures in `benchmarks/README.md`).

``solver="cvxpy"`` is the independent reference (velocity form, Clarabel).
"""

from __future__ import annotations

import time
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from . import active_set, delassus_rows, working_set
from .interior_point import interior_point
from .kkt import accurate, kkt_holds
from ..metric import DiagonalMetric
from .backends import get_backend
from .pivoting import lemke
from .problem import ContactProblem
from .solution import ContactSolution
from .working_set import RoundAnswer
from ..errors import ConvergenceError, GranularError, JammingError, NonFiniteError, SolverError
from ..tolerances import COMPLEMENTARITY_TOLERANCE, VELOCITY_TOLERANCE


def project(
    problem: ContactProblem,
    solver: str = "osqp",
    workspace: active_set.Workspace | None = None,
    speed_limit: float | None = None,
    strict: bool = True,
) -> ContactSolution:
    """Project ``problem.predicted`` onto ``{u : G u >= lower}`` in the metric ``M``
    (the problem's tangent rows, if any, are not read).

    The problem's ``warm_start`` (m,) are the previous impulses of its rows, its
    ``keys`` (m,) identify the rows across steps and ``workspace`` carries the
    active-set solver's factor from one call to the next (`granular.contact.active_set`).
    ``speed_limit`` (velocity units) is the speed beyond which the system's
    linearised constraints no longer describe it (for spheres, a radius per
    step): a set with no admissible velocity of at most that speed in every
    coordinate is reported as jammed.

    A prediction that already satisfies every constraint is returned unchanged
    (bit for bit) with zero multipliers.

    Constraint generation: the QP is first solved on a working set of rows, those
    the prediction violates and those with a positive warm start (contacts
    active at the previous step); rows the answer violates are added and the
    working set solved again, until no row outside it is violated beyond the
    feasibility tolerance. The answer is then the projection onto the full set
    (rows left out are satisfied and have zero multipliers, so the KKT conditions
    of the full problem hold). In a dense pile this keeps the solve to the rows
    that matter instead of every row the neighbour search proposes.

    Raises
    ------
    JammingError
        The constraints admit no velocity: the backend reports infeasibility, or it
        fails and a linear program (HiGHS) certifies that the set is empty.
    SolverError
        The backend did not reach tolerance. With ``strict=False`` the best answer
        found is returned instead (`_best_effort`), with the error in ``missed``
        (`ContactSolution`).

    The messages do not name the time: the calling scheme adds it
    (`granular.errors.at_time`).
    """
    start = time.perf_counter()
    metric, jacobian, predicted, lower = problem.metric, problem.jacobian, problem.predicted, problem.lower
    warm_start, keys = problem.warm_start, problem.keys
    m = lower.size
    if not (np.all(np.isfinite(predicted)) and np.all(np.isfinite(lower))):
        raise NonFiniteError(
            "the predicted velocity or the constraint bounds are not finite: "
            "a numerical blow-up (reduce the time step)",
            status="non_finite",
        )
    compact = solver == "osqp" and _compact_applies(metric, jacobian)
    if compact:
        answer = _compact(metric, jacobian, predicted, lower, warm_start, keys, workspace, start)
        if answer is not None:
            return answer
    normal_velocity = jacobian @ predicted
    if m == 0 or np.all(normal_velocity >= lower):
        return ContactSolution(predicted.copy(), np.zeros(m), "unconstrained", 0, 0.0, time.perf_counter() - start)
    c = normal_velocity - lower
    feasibility, complementarity = _tolerances(c, abs(jacobian) @ np.abs(predicted))
    warm = _warm_impulses(warm_start, m)
    if solver == "osqp":
        if not compact:  # (the compact path ran the active-set method on this problem already)
            answer = _by_active_set(
                metric, jacobian, predicted, lower, c, warm, keys, workspace, feasibility, complementarity, start
            )
            if answer is not None:
                return answer
        # The active-set method fails on empty sets (jams) above all: linear programs
        # on a bounded number of rows say so in a fraction of a second, where OSQP
        # would iterate to its limit (`JAM_CHECK_ROWS`).
        _raise_if_jammed(jacobian, lower, -c, feasibility, speed_limit)
    try:
        velocities, impulses, status, iterations = _generate_constraints(
            metric, jacobian, predicted, lower, solver, warm, feasibility, complementarity
        )
        violation = _violation(jacobian, velocities, lower)
        if violation > feasibility or not np.all(np.isfinite(velocities)):
            raise SolverError(
                f"the projection did not converge (solver {solver!r}, status "
                f"{status!r}, constraint violation {violation:.3g} in velocity units)",
                status=status,
            )
    except JammingError:
        raise
    except SolverError as error:
        # OSQP often ends "not converged" rather than "infeasible" on a jammed set:
        # an LP tells the two apart, so a jam is never reported as a solver failure
        # (the default solver's active-set path ran the check already).
        if solver != "osqp":
            _raise_if_jammed(jacobian, lower, -c, feasibility, speed_limit)
        if strict:
            raise error
        return _best_effort(
            ContactProblem(metric, jacobian, predicted, lower),
            c,
            solver,
            warm,
            feasibility,
            complementarity,
            error,
            start,
        )
    return ContactSolution(velocities, impulses, status, iterations, violation, time.perf_counter() - start)


#: Looser tolerances, as multiples of the KKT test's, at which a projection that is
#: not strict accepts the interior point's answer when every route missed the test.
BEST_EFFORT_MARGINS = (10.0, 1e3, 1e5)


def _best_effort(
    problem: ContactProblem, c: np.ndarray, solver, warm, feasibility, complementarity, error, start
) -> ContactSolution:
    """The answer kept by a projection that is not strict when every route missed the
    KKT test: the interior point's at the first of `BEST_EFFORT_MARGINS` times the
    tolerances it meets, else the backend's on all rows, its impulses clipped at 0.
    ``error`` (the `SolverError` that a strict projection raises) is re-raised if
    neither gives a finite answer."""
    metric, jacobian, predicted, lower = problem.metric, problem.jacobian, problem.predicted, problem.lower
    impulses, iterations = None, 0
    for margin in BEST_EFFORT_MARGINS:
        try:
            impulses = interior_point(problem.delassus(), c, margin * feasibility, margin * complementarity)
            break
        except SolverError:
            continue
    if impulses is None:
        result = get_backend(solver).solve(problem, warm if np.any(warm > 0.0) else None)
        impulses, iterations = np.maximum(np.nan_to_num(result.impulses), 0.0), result.iterations
    velocities = predicted + metric.solve(jacobian.T @ impulses)
    if not np.all(np.isfinite(velocities)):
        raise error
    violation = _violation(jacobian, velocities, lower)
    missed = ConvergenceError(
        f"{error}; the best answer found leaves a constraint violated by {violation:.3g} "
        f"(velocity units, tolerance {feasibility:.3g})",
        status=error.status,
        best=impulses,
        residual=violation,
        tolerance=feasibility,
        where="the projection's most violated row",
    )
    return ContactSolution(
        velocities,
        impulses,
        "inaccurate",
        iterations,
        violation,
        time.perf_counter() - start,
        residual=violation,
        missed=missed,
    )


#: Projections with at most this many rows and a diagonal metric are first solved on
#: the coordinates their rows touch, in dense arrays (`_compact`). Why: the impact
#: clusters of the restitution stage are small (median 13 rows, on 900 coordinates,
#: in `make demo`'s pour) and the sparse path's per-call cost (constructors,
#: transposes, index checks) does not depend on the size, so it dominates such
#: calls (benchmarks/README.md, "Measurements behind the constants"). The
#: dense Cholesky of `granular.contact.active_set` serves the same sizes.
_COMPACT_ROWS = delassus_rows.DENSE_ROWS


def _compact_applies(metric, jacobian) -> bool:
    return sp.issparse(jacobian) and jacobian.shape[0] <= _COMPACT_ROWS and isinstance(metric, DiagonalMetric)


def _tolerances(c: np.ndarray, magnitude: np.ndarray) -> tuple[float, float]:
    """``(feasibility, complementarity)`` (velocity units) of a problem with linear term
    ``c = G v - b`` (m,) and ``magnitude = |G| |v|`` (m,).

    Velocity scale of the problem: violations are measured against it. |G||v|
    (not |G v|) is the round-off level of G v: a sliding contact has G v ~ 0.
    Rows the prediction satisfies do not set it: a far obstacle has a huge D/h."""
    scale = max(float(-c.min()), float(magnitude.max()))
    return VELOCITY_TOLERANCE * scale, COMPLEMENTARITY_TOLERANCE * scale


def _warm_impulses(warm_start, m: int) -> np.ndarray:
    return np.zeros(m) if warm_start is None else np.maximum(np.nan_to_num(warm_start), 0.0)


def _compact(metric, jacobian, predicted, lower, warm_start, keys, workspace, start) -> ContactSolution | None:
    """`project` of a small problem on the coordinates its rows touch (`_COMPACT_ROWS`):
    the rows as a dense (m, k) array, the active-set method on it, the other
    coordinates unchanged (no row moves them). None, for `project` to take its general
    path, when the active-set method certifies no answer."""
    G = sp.csr_matrix(jacobian)
    m = lower.size
    coordinates, position = np.unique(G.indices, return_inverse=True)
    dense = np.zeros((m, coordinates.size))
    np.add.at(dense, (np.repeat(np.arange(m), np.diff(G.indptr)), position), G.data)
    local = predicted[coordinates]
    normal_velocity = dense @ local
    if m == 0 or np.all(normal_velocity >= lower):
        return ContactSolution(predicted.copy(), np.zeros(m), "unconstrained", 0, 0.0, time.perf_counter() - start)
    c = normal_velocity - lower
    feasibility, complementarity = _tolerances(c, np.abs(dense) @ np.abs(local))
    answer = _by_active_set(
        metric.restricted(coordinates),
        dense,
        local,
        lower,
        c,
        _warm_impulses(warm_start, m),
        keys,
        workspace,
        feasibility,
        complementarity,
        start,
    )
    if answer is None:
        return None
    velocities = predicted.copy()
    velocities[coordinates] = answer.velocities
    return ContactSolution(
        velocities, answer.impulses, answer.status, answer.iterations, answer.violation, time.perf_counter() - start
    )


def _by_active_set(
    metric, jacobian, predicted, lower, c, warm, keys, workspace, feasibility, complementarity, start
) -> ContactSolution | None:
    """The projection by `granular.contact.active_set` (the previous step's impulses and
    factor as a start), or None when it does not certify an answer."""
    rows = delassus_rows.DelassusRows(metric, jacobian, c)
    keys = np.arange(c.size, dtype=np.int64) if keys is None else keys
    workspace = workspace if workspace is not None else active_set.Workspace()

    def accurate(impulses, slack):
        return kkt_holds(slack, impulses, rows.diagonal, feasibility, complementarity)

    impulses = active_set.solve(rows, keys, warm, accurate, feasibility, workspace)
    if impulses is None:
        return None
    velocities = predicted + metric.solve(jacobian.T @ impulses)
    violation = _violation(jacobian, velocities, lower)
    if violation > feasibility or not np.all(np.isfinite(velocities)):
        return None
    return ContactSolution(
        velocities, impulses, "active-set", workspace.last.iterations, violation, time.perf_counter() - start
    )


def _generate_constraints(metric, jacobian, predicted, lower, solver, warm, feasibility, complementarity):
    """Constraint generation (see `project`, `granular.contact.working_set`); returns
    ``(u, lambda, status, iterations)``."""
    c = jacobian @ predicted - lower
    working = (c < 0.0) | (warm > 0.0)
    working, warm, iterations = _approximate_working_set(
        metric, jacobian, predicted, lower, solver, warm, working, feasibility, complementarity
    )

    def solve(rows):
        nonlocal iterations, warm
        sub = ContactProblem(metric, jacobian[rows], predicted, lower[rows])
        sub_impulses, status, more = _solve_rows(sub, solver, warm[rows], feasibility, complementarity)
        iterations += more
        answer = _answer(metric, jacobian, predicted, lower, rows, sub_impulses, status)
        warm = answer.impulses  # each round starts from the last answer
        return answer

    answer = working_set.grow_until_feasible(working, solve, feasibility, _MAX_GENERATION_ROUNDS)
    return answer.velocities, answer.impulses, answer.status, iterations


def _approximate_working_set(metric, jacobian, predicted, lower, solver, warm, working, feasibility, complementarity):
    """Grow the working set with the backend's answers alone, before any refinement.

    Each round solves the working rows to the backend's own accuracy (OSQP, eps
    ``OSQP_EPS``) and adds the rows its answer violates. Refining an answer that a
    later round discards costs a whole interior-point solve; in a settled pile
    the first working set usually misses a few near contacts. Returns the grown
    working set (m,) bool, the last answer as a warm start (m,) and the backend
    iterations spent.
    """
    iterations = 0

    def solve(rows):
        nonlocal iterations, warm
        sub = ContactProblem(metric, jacobian[rows], predicted, lower[rows])
        sub_impulses, status, more = _solve_rows(sub, solver, warm[rows], feasibility, complementarity, refine=False)
        iterations += more
        answer = _answer(metric, jacobian, predicted, lower, rows, sub_impulses, status)
        warm = answer.impulses
        return answer

    answer, working = working_set.grow(working, solve, lambda answer: answer.slack < 0.0, _MAX_GENERATION_ROUNDS)
    return working, answer.impulses, iterations


def _answer(metric, jacobian, predicted, lower, rows, sub_impulses, status) -> RoundAnswer:
    """The answer ``sub_impulses`` on ``rows``, spread to all m rows."""
    impulses = np.zeros(lower.size)
    impulses[rows] = sub_impulses
    velocities = predicted + metric.solve(jacobian.T @ impulses)
    return RoundAnswer(velocities, jacobian @ velocities - lower, impulses, status)


#: Rows at most in a jam's linear programs. A subset of rows with no admissible
#: velocity certifies a jam of the whole set, so the programs are restricted to
#: the rows nearest the violated ones. HiGHS's time grows faster than the rows
#: (benchmarks/README.md, "Measurements behind the constants"), while the jams the
#: tests know fit in it whole.
JAM_CHECK_ROWS = 2000


def _raise_if_jammed(jacobian, lower, violation, feasibility, speed_limit) -> None:
    """`JammingError` if no velocity meets the rows nearest the violated ones (those
    with the largest ``violation`` (m,), velocity units, first), or none of at most
    ``speed_limit`` in every coordinate (linear programs, `infeasible`)."""
    rows = _rows_near_violation(jacobian, violation, JAM_CHECK_ROWS)
    G, b = _restricted(jacobian, rows), lower[rows]
    if infeasible(G, b, feasibility):
        raise JammingError(
            "the projection is infeasible: the constraints admit no velocity (certified by a linear program)",
            status="infeasible",
        )
    if speed_limit is not None and infeasible(G, b, feasibility, bound=speed_limit):
        raise JammingError(
            f"the bodies cannot make room: every admissible velocity exceeds "
            f"{speed_limit:.3g} in some coordinate, where the step's linearised "
            "constraints stop describing them (certified by a linear program)",
            status="infeasible",
        )


def _rows_near_violation(jacobian, violation: np.ndarray, budget: int) -> np.ndarray:
    """At most ``budget`` rows (sorted indices): all rows if there are that few, else
    the rows reached first by a breadth-first search, through shared coordinates,
    from the rows in decreasing order of ``violation``."""
    m = violation.size
    if m <= budget:
        return np.arange(m)
    from scipy.sparse.csgraph import breadth_first_order

    pattern = sp.csr_matrix(jacobian, copy=True)
    pattern.data = np.ones_like(pattern.data)
    neighbours = (pattern @ pattern.T).tocsr()
    chosen = np.zeros(m, dtype=bool)
    count = 0
    for seed in np.argsort(-violation, kind="stable"):
        if chosen[seed]:
            continue
        reached = breadth_first_order(neighbours, int(seed), directed=False, return_predecessors=False)
        reached = reached[~chosen[reached]][: budget - count]
        chosen[reached] = True
        count += reached.size
        if count >= budget:
            break
    return np.flatnonzero(chosen)


def _restricted(jacobian, rows: np.ndarray) -> sp.csr_matrix:
    """The rows ``rows`` of the Jacobian on the coordinates they touch (the others
    are free in the linear programs and change nothing)."""
    G = sp.csr_matrix(jacobian)[rows]
    columns = np.unique(G.indices)
    return G[:, columns]


def infeasible(jacobian: sp.csr_matrix, lower: np.ndarray, tolerance: float = 0.0, bound: float | None = None) -> bool:
    """Whether ``{u : G u >= lower}`` is empty, decided by a linear program (HiGHS,
    scipy's linprog) that maximises a common margin ``t <= 1`` in ``G u >= lower + t``:
    the set is empty when the best margin is below ``-tolerance`` (velocity units).

    The margin form always has a solution, so HiGHS answers it where the plain
    feasibility problem ends in numerical trouble (measured: spheres jammed at a
    packing fraction of 0.61, 1,425 rows, best margin -0.096 m/s, which the plain
    form did not certify). If the margin LP fails, the plain form decides.
    ``bound`` limits every coordinate of ``u`` to ``[-bound, bound]``.
    """
    from scipy.optimize import linprog

    m, d = jacobian.shape
    with_margin = sp.hstack([-sp.csr_matrix(jacobian), sp.csr_matrix(np.ones((m, 1)))]).tocsr()
    objective = np.zeros(d + 1)
    objective[-1] = -1.0
    box = (None, None) if bound is None else (-bound, bound)
    outcome = linprog(objective, A_ub=with_margin, b_ub=-lower, bounds=[box] * d + [(None, 1.0)], method="highs")
    if outcome.status == 0:
        return -outcome.fun < -tolerance
    outcome = linprog(np.zeros(d), A_ub=-sp.csr_matrix(jacobian), b_ub=-lower, bounds=[box] * d, method="highs")
    return outcome.status == 2


#: Rounds of constraint generation before the full problem is solved at once.
_MAX_GENERATION_ROUNDS = 12


def _solve_rows(
    problem: ContactProblem,
    solver: str,
    warm: np.ndarray,
    feasibility: float,
    complementarity: float,
    refine: bool = True,
):
    """Multipliers of one (sub)problem to the given absolute tolerances:
    the backend, then interior-point refinement if it is not accurate enough
    (``refine=False``: the backend's answer as it is)."""
    backend = get_backend(solver)
    c = problem.jacobian @ problem.predicted - problem.lower
    if solver == "osqp" and c.size <= SMALL_PROBLEM:
        impulses = pivoted_impulses(problem.delassus(), c, feasibility, complementarity)
        if impulses is not None:
            return impulses, "pivoting", 0
    result = backend.solve(problem, warm if np.any(warm > 0.0) else None)
    if result.status == "infeasible":
        raise JammingError("the projection is infeasible: the constraints admit no velocity", status=result.status)
    if not refine:
        return result.impulses, result.status, result.iterations
    if accurate(problem.delassus(), c, result.impulses, feasibility, complementarity):
        return result.impulses, result.status, result.iterations
    # Degenerate contact networks (redundant contacts) defeat OSQP's polishing: the
    # smallest multipliers first; then the plain interior-point method, aiming at a
    # tenth of the tolerances (margin for rebuilding u from the multipliers), from
    # OSQP's answer and afresh (a warm start can stall near the boundary), and at the
    # tolerances themselves (a nearly degenerate network can stall at round-off).
    impulses = _bounded_impulses(problem.delassus(), c, feasibility, complementarity, result.impulses)
    if impulses is not None:
        return impulses, "refined", result.iterations
    for start, margin in ((result.impulses, 0.1), (None, 0.1), (None, 1.0)):
        try:
            impulses = interior_point(
                problem.delassus(), c, margin * feasibility, margin * complementarity, start=start
            )
            return impulses, "refined", result.iterations
        except SolverError:
            continue
    raise SolverError(
        f"the projection did not converge (solver {solver!r}, status "
        f"{result.status!r}, then interior-point refinement)",
        status=result.status,
    )


#: Sub-problems with at most this many rows are first tried by complementary
#: pivoting (dense, exact up to round-off): OSQP's setup and the interior-point
#: refinement cost milliseconds on the few-row impact clusters of a pile.
SMALL_PROBLEM = 40


def pivoted_impulses(W, c, feasibility, complementarity) -> np.ndarray | None:
    """Multipliers of ``min_{l >= 0} 1/2 l^T W l + c^T l`` by Lemke's method on its
    KKT conditions (the LCP ``W l + c >= 0, l >= 0, l . (W l + c) = 0``), or None
    when pivoting fails or misses the tolerances (the caller then uses OSQP)."""
    try:
        impulses, _ = lemke(W.toarray() if sp.issparse(W) else np.asarray(W), c)
    except GranularError:
        return None
    if not accurate(W, c, impulses, feasibility, complementarity):
        return None
    return impulses


def _violation(jacobian, velocities, lower) -> float:
    residual = lower - jacobian @ velocities
    return float(max(residual.max(initial=0.0), 0.0))


#: Proximal regularisations of `_bounded_impulses`, relative to the Delassus
#: diagonal, strongest (smallest multipliers) first.
_PROXIMAL = (1e-8, 1e-10, 1e-12)
#: Proximal iterations of `_bounded_impulses` before giving up.
_PROXIMAL_ITERATIONS = 20


def _bounded_impulses(W, c, feasibility, complementarity, start) -> np.ndarray | None:
    """Bounded multipliers of ``min_{l >= 0} 1/2 l^T W l + c^T l``, or None when this
    route does not reach the tolerances.

    With a chain of contacts pinned between two walls (or any redundant network)
    the optimal multipliers form an unbounded set: an interior-point method follows
    its central path off along it (impulses of 50 N s that cancel, seen in a box
    pour of 10 g spheres) until round-off swamps the slacks, and users reading the
    force network would see absurd impulses. So the proximal problem with
    ``W + rho diag(W)`` is solved instead (unique, bounded multipliers;
    `interior_point`; its central path stays bounded), for each ``rho`` of
    `_PROXIMAL` in turn: its answer violates
    the true problem by about ``rho`` times an impulse's own velocity change, so it
    is accepted when it meets the tolerances for ``W`` itself, after proximal-point
    iterations on its active rows A, ``(W_AA + rho diag) l_A <- -c_A + rho diag l_A``
    (one factorisation), which converge to the optimal multipliers nearest to the
    proximal ones.
    """
    for rho in _PROXIMAL:
        try:
            impulses = interior_point(W, c, 0.1 * feasibility, 0.1 * complementarity, start=start, regularisation=rho)
        except SolverError:
            continue
        if accurate(W, c, impulses, feasibility, complementarity):
            return impulses
        polished = _proximal_points(W, c, impulses, rho, feasibility, complementarity)
        if polished is not None:
            return polished
    return None


def _proximal_points(W, c, impulses, rho, feasibility, complementarity) -> np.ndarray | None:
    """Proximal-point iterations from ``impulses`` on their active rows (see
    `_bounded_impulses`); None if they leave the orthant or miss the tolerances."""
    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    slack = W @ impulses + c + rho * diagonal * impulses
    active = np.flatnonzero(diagonal * impulses > slack)
    if active.size == 0:
        return None
    prox = rho * diagonal[active]
    factor = spla.splu(
        (W[active][:, active] + sp.diags(prox)).tocsc(),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        options=dict(SymmetricMode=True),
    )
    values = impulses[active]
    for _ in range(_PROXIMAL_ITERATIONS):
        values = factor.solve(-c[active] + prox * values)
        if values.min() < 0.0:
            return None
        impulses = np.zeros(c.size)
        impulses[active] = values
        if accurate(W, c, impulses, feasibility, complementarity):
            return impulses
    return None
