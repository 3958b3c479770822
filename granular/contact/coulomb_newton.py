"""The way out of a stall of the Coulomb sweeps: a regularised semismooth Newton
method on Alart and Curnier's function of the same law (`AlartCurnier`), with its
sparse LU solves priced in the sweeps' unit of work, so that a hand-over has a budget
that does not depend on the machine (`factorisation_cost`).

`granular.contact.friction_gauss_seidel` decides when to hand over (its module
docstring: why the sweeps stall, and why Newton's answer is judged by the sweeps'
residual alone).

Why Newton is the way out of a stall and not the main method: each iteration factorises
a matrix with the sparsity of the contact network, whose fill in three dimensions grows
faster than the number of contacts. On the settling boxes of `benchmarks/stress.py` the
matrix of the loaded contacts has 26-43 times as many entries in its factors at 8,000
spheres as at 1,000. SuperLU factorises it in 0.2-1.7 s, where a whole step of sweeps
takes about 0.1 s. From a step's warm start Newton also needs 23 or more iterations
(benchmarks/README.md, "the ten-times target against each family of methods").
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .coulomb_rows import SweepRows, add_impulses, natural_residual, onto_cones

#: Newton iterations of one `newton` call (each: one sparse LU of the contacts' Jacobian).
ITERATIONS = 20
#: A Newton variant stops after this many iterations that do not improve on the best
#: residual met (it converges in 3-20 when it does on the pours' stalls).
PATIENCE = 6
#: The Newton variants `newton` tries: (regularisation ``eps`` of ``J + eps I``, relative
#: to the unit diagonal ``J`` has on a sticking or open contact; whether steps are damped).
VARIANTS = ((1e-2, False), (1e-3, True), (3e-2, False))

#: Newton calls of one hand-over, each with the contacts the last one's answer
#: approached (`newton_on_loaded`).
ROUNDS = 3


def newton_on_loaded(
    rows: SweepRows,
    predicted: np.ndarray,
    r: np.ndarray,
    residual: np.ndarray,
    tolerance: np.ndarray,
    target: float,
    budget: float = np.inf,
) -> tuple[np.ndarray, float, float]:
    """`newton` on the contacts that carry an impulse in ``r`` or miss their law
    (``residual`` (m,) > 0, m/s: the natural residual at ``r``), the others kept at
    zero impulse: ``(r (m, q), ratio)``, the ratio over the contacts its last call
    solved.

    Why: an open contact with no impulse that meets its law adds its rows to
    Newton's system without taking part (its equation is ``r_k = 0``), and the
    sweeps' working set holds many of them (the rows that join it before they close,
    `granular.contact.friction.NEAR_CONTACT`): about 20% of the 2,300 contacts of the stalls
    of the 1,000-sphere pour. On the same stalls, this set costs less than the whole
    working set, with answers within the tolerance either way (figures in
    benchmarks/README.md, "Measurements behind the constants").

    ``budget`` (sweeps of ``rows``) bounds the factorisations of the call (`newton`);
    returns ``(r, ratio, work)``, ``work`` the factorisations made, in sweeps.

    A contact left out may be approached by Newton's answer. When Newton meets the
    tolerance on its contacts and such contacts miss their law at its answer, they
    join and Newton runs again from its answer, up to `ROUNDS` times (the
    working set of `granular.contact.friction`, inside one call). Why: at stalls of the sand
    pile's pour of turning spheres (seed 4), Newton solved its contacts to 0.03-0.86
    times the tolerance and 2-3 contacts outside them then missed their law by 10-30
    times it, attempt after attempt, until the solve failed after 20,000 sweeps; with
    the rounds, the stall of t = 0.698 s (504 contacts,
    `tests/data/stall_of_approached_contacts.npz`) is solved in 1,626 sweeps, and the
    pour runs to its end. Contacts still left out are seen by the residual test `solve`
    makes after one sweep from Newton's answer, and the sweeps go on."""
    taking_part = (r[:, 0] > 0.0) | (residual > 0.0)
    solved, ratio, start, work = np.zeros_like(r), np.inf, r, 0.0
    sweep_size = float(rows.values.size)  # what a sweep reads of the rows, the unit of `budget`
    for round_ in range(ROUNDS):
        part = np.flatnonzero(taking_part)
        if part.size == 0 or work >= budget:
            break
        solved = np.zeros_like(r)
        solved[part], ratio, more = newton(
            rows.subset(part), predicted, start[part], tolerance[part], target, (budget - work) * sweep_size
        )
        work += more / sweep_size
        if ratio > 1.0 or round_ == ROUNDS - 1:
            break
        missed = (natural_residual(rows, predicted, onto_cones(rows, solved)) > tolerance) & ~taking_part
        if not missed.any():
            break
        taking_part |= missed
        start = solved
    return solved, ratio, work


#: The variants of `VARIANTS` a local repair tries (`newton_on_cluster`): the first only.
#: A repair that misses is followed by sweeps and, if the stall lasts, by a repair on a
#: larger cluster; the other variants cost as much again for the same cluster.
REPAIR_VARIANTS = 1


def newton_on_cluster(
    rows: SweepRows,
    u: np.ndarray,
    r: np.ndarray,
    members: np.ndarray,
    tolerance: np.ndarray,
    target: float,
    budget: float = np.inf,
    variants: int = REPAIR_VARIANTS,
) -> tuple[np.ndarray, float, float]:
    """`newton` on the contacts ``members`` (indices) alone, the impulses of the others
    held: their part of the velocities ``u`` (d + 1,) (those of the impulses ``r``
    (m, q)) is the cluster's prediction, with the first ``variants`` of `VARIANTS`.
    Returns ``(r with the cluster's answer, its ratio over the cluster, work)``,
    ``budget`` and ``work`` in sweeps of ``rows``.

    Why: a stall of a large working set is often local. On a captured step of a
    settling box of 3,375 turning spheres (7,291 contacts) the sweeps stalled at
    1.1-1.4 times the tolerance with 2-6 contacts above it, and the cluster of those
    contacts and their neighbours (tens to hundreds of contacts) is solved in
    milliseconds, where Newton on the loaded contacts (4,924) took seconds. The held
    contacts then see new velocities, so the sweeps go on from the answer
    (`granular.contact.friction_gauss_seidel.solve` repeats the repair on the grown
    cluster at the next stall)."""
    cluster = rows.subset(members)
    held = u.copy()
    add_impulses(cluster, held, -r[members])
    sweep_size = float(rows.values.size)
    solved, ratio, work = newton(
        cluster, held[:-1], r[members], tolerance[members], target, budget * sweep_size, VARIANTS[:variants]
    )
    repaired = r.copy()
    repaired[members] = solved
    return repaired, ratio, work / sweep_size


#: The continuation in the friction coefficients (`newton_by_continuation`): its
#: largest step of the scale ``s`` of every ``mu``, and the step below which it gives
#: up (Newton fails at every shorter step: the path ends before ``s = 1``). Why 1/256:
#: on thirteen captured stops, giving up below 1/32 lost three of the paths that reach
#: the law, below 1/64 none; below 1/256 rather than 1/64 costs the one path that fails
#: a quarter more (benchmarks/README.md, "a last Newton from the start, and along a path
#: in mu").
CONTINUATION_STEP = 0.25
CONTINUATION_SMALLEST_STEP = 1.0 / 256.0


def newton_by_continuation(
    rows: SweepRows,
    predicted: np.ndarray,
    start: np.ndarray,
    tolerance: np.ndarray,
    target: float,
    budget: float = np.inf,
) -> tuple[np.ndarray, float, float]:
    """`newton` along a path of problems: every friction coefficient ``mu`` scaled by
    ``s``, from the frictionless law (``s = 0``) to the law itself (``s = 1``), each
    problem started from the answer of the last. Returns ``(r (m, q), ratio, work)``:
    the answer at ``s = 1`` (Newton's, not projected onto the cones) and its largest
    natural residual in units of ``tolerance``, or ``start`` and infinity when the path
    was not followed to its end;
    ``work`` the factorisations made, in entries a sweep reads (``budget`` bounds it,
    as in `newton`).

    A step of ``s`` is taken when Newton ends it within the tolerance, and the next
    step is then twice as long (at most `CONTINUATION_STEP`); otherwise it is halved,
    and the path is given up below `CONTINUATION_SMALLEST_STEP`. Rolling resistance
    keeps its coefficients along the path.

    Why: the frictionless law is a projection, convex, its velocities unique (Newton
    from the solve's start solved it on every stop below), and an answer at ``s`` is a
    good start for a slightly larger ``s`` where answers vary continuously with it (a
    homotopy; Allgower and Georg, *Numerical continuation methods: an introduction*,
    1990). Where the sweeps, the repairs and Newton
    from the start all stop beyond the tolerance, the Coulomb law's answer may still be
    reached along the path: on twelve stops captured from the sand pile's pours
    (317-504 contacts, kept at 1.8-10.1 tolerances) the path reached ``s = 1`` within the
    tolerance in eleven, for 1.3-15 times the sweeps the solve had made. Scaling the
    rolling resistance with ``mu`` as well, the path stopped short of the law on the
    worst of them (10.1 tolerances, at ``s`` = 0.97) (benchmarks/README.md, "a last
    Newton from the start, and along a path in mu").
    """
    if not np.any(rows.mu > 0.0):  # no friction: no path, the law is the frictionless one
        return start, np.inf, 0.0

    def scaled(s: float) -> SweepRows:
        return dataclasses.replace(rows, mu=rows.mu * s)

    frictionless = scaled(0.0)
    r, ratio, work = newton(frictionless, predicted, onto_cones(frictionless, start), tolerance, target, budget)
    if ratio > 1.0:
        return start, np.inf, work
    s, step = 0.0, CONTINUATION_STEP
    while s < 1.0 and work < budget:
        trial = min(1.0, s + step)
        problem = scaled(trial)
        answer, trial_ratio, more = newton(problem, predicted, onto_cones(problem, r), tolerance, target, budget - work)
        work += more
        if trial_ratio <= 1.0:
            s, r, ratio, step = trial, answer, trial_ratio, min(2.0 * step, CONTINUATION_STEP)
            continue
        if more == 0.0:  # the budget allowed no factorisation, or every factor was singular
            break
        step *= 0.5
        if step < CONTINUATION_SMALLEST_STEP:
            break
    return (r, ratio, work) if s == 1.0 else (start, np.inf, work)


class AlartCurnier:
    """The law (N)-(T)-(R) of all contacts as the zero of Alart and Curnier's function
    (*A mixed formulation for frictional contact problems prone to Newton like
    solution methods*, Computer Methods in Applied Mechanics and Engineering, 1991),
    ``F(r) = r - P(r - rho U(r))``, ``U(r) = W r + U_0`` the contacts' velocities,
    ``W = H M^{-1} H^T`` (sparse), ``P`` per contact: ``l_N -> max(l_N, 0)`` and the
    projections onto the discs ``|l_T| <= mu l_N``, ``|l_R| <= mu_r l_N``, ``rho`` the
    inverse diagonal of ``W``. ``F(r) = 0`` exactly when every contact satisfies its
    local law, i.e. when the natural residual of the sweeps is 0."""

    def __init__(self, rows: SweepRows, predicted: np.ndarray):
        m, q, p = rows.values.shape
        d = predicted.size
        index = np.repeat(np.arange(m * q), p)
        cols = np.repeat(rows.cols[:, None, :], q, axis=1).ravel()
        values = rows.values.ravel()
        keep = (cols < d) & (values != 0.0)
        H = sp.csr_matrix((values[keep], (index[keep], cols[keep])), shape=(m * q, d))
        self.rows, self.predicted, self.shape = rows, predicted, (m, q)
        self.W = (H @ sp.diags(rows.inverse_mass[:-1]) @ H.T).tocsr()
        self.free = rows.local_velocities(np.append(predicted, 0.0)).ravel()
        diagonal = self.W.diagonal()
        self.scale = diagonal.reshape(m, q)  # 1/rho, 1/kg: F * scale is a velocity
        self.rho = np.where(diagonal > 0.0, 1.0 / np.where(diagonal > 0.0, diagonal, 1.0), 0.0).reshape(m, q)
        discs = [(1, rows.mu)]
        if q == 5:
            discs.append((3, rows.rolling_friction))
        self.discs = discs
        block = np.arange(m * q).reshape(m, q)
        self.block_rows = np.repeat(block, q, axis=1).ravel()
        self.block_cols = np.tile(block, (1, q)).ravel()

    def value(self, r: np.ndarray, jacobian: bool = False):
        """``F(r)`` (m, q) and, if asked, a generalised Jacobian (sparse (mq, mq))."""
        m, q = self.shape
        U = (self.W @ r.ravel() + self.free).reshape(m, q)
        z = r - self.rho * U
        F = np.empty_like(r)
        F[:, 0] = r[:, 0] - np.maximum(z[:, 0], 0.0)
        A = np.zeros((m, q, q))  # dF/dr = A + B (I - rho W), blocks per contact
        B = np.zeros((m, q, q))
        A[:, np.arange(q), np.arange(q)] = 1.0
        B[:, 0, 0] = np.where(z[:, 0] > 0.0, -1.0, 0.0)
        loaded = r[:, 0] > 0.0
        for a, mu in self.discs:
            radius = mu * np.maximum(r[:, 0], 0.0)
            zt = z[:, a : a + 2]
            size = np.hypot(zt[:, 0], zt[:, 1])
            outside = (size > radius) | (radius <= 0.0)  # P = 0 on a disc of radius 0
            direction = zt / np.where(size > 0.0, size, 1.0)[:, None]
            ratio = np.where(outside, radius / np.where(size > 0.0, size, 1.0), 1.0)
            F[:, a : a + 2] = r[:, a : a + 2] - zt * ratio[:, None]
            if jacobian:
                tangent = np.eye(2)[None] - outside[:, None, None] * direction[:, :, None] * direction[:, None, :]
                B[:, a : a + 2, a : a + 2] = -ratio[:, None, None] * tangent
                A[:, a : a + 2, 0] = -np.where(outside & loaded, 1.0, 0.0)[:, None] * direction * mu[:, None]
        if not jacobian:
            return F, None
        size = m * q
        blocks_AB = sp.csr_matrix(((A + B).ravel(), (self.block_rows, self.block_cols)), shape=(size, size))
        blocks_B = sp.csr_matrix((B.ravel(), (self.block_rows, self.block_cols)), shape=(size, size))
        return F, (blocks_AB - blocks_B @ sp.diags(self.rho.ravel()) @ self.W).tocsc()

    def merit(self, F: np.ndarray) -> float:
        return 0.5 * float(np.sum((self.scale * F) ** 2))


def newton(
    rows: SweepRows,
    predicted: np.ndarray,
    r: np.ndarray,
    tolerance: np.ndarray,
    target: float,
    budget: float = np.inf,
    variants=VARIANTS,
) -> tuple[np.ndarray, float, float]:
    """Impulses from regularised semismooth Newton iterations on `AlartCurnier`'s
    function, started at ``r`` (m, q), their largest natural residual in units
    of ``tolerance`` and the work of the factorisations made (`factorisation_cost`):
    the best iterate met (by that residual), stopping below ``target``, or before a
    factorisation that would take the work over ``budget`` (entries a sweep reads).
    The variants of `VARIANTS` are tried in turn from ``r``
    until one reaches ``target``, or the tolerance once the first has run (fewer
    calls, each answer within the tolerance; benchmarks/README.md, "Measurements
    behind the constants").

    Each iteration solves ``(J + eps I) dr = -F(r)`` with a generalised Jacobian
    ``J``. ``J`` is singular wherever the impulses are not unique (more sticking
    contacts than a sphere has degrees of freedom make ``W`` singular); ``eps``
    gives such directions the step of a proximal-point iteration (``eps |dr|^2``
    added to the linearised problem) and changes nothing at a zero of ``F``, which
    is what is sought. A variant takes full steps or halves them until the merit
    ``1/2 |F / rho|^2`` (velocities squared) decreases: neither is robust alone on
    the pours' stalled sets (the merit is not smooth where contacts change status,
    and backtracking stops on such kinks; full steps may wander), hence the
    variants. The answer is judged by the natural residual alone.
    """
    system = AlartCurnier(rows, predicted)
    start = r
    best, best_residual = r, residual_ratio(rows, predicted, r, tolerance)
    work, last = 0.0, 0.0  # factorisation work so far and the last one's (`factorisation_cost`)
    for variant, (eps, damped) in enumerate(variants):
        # The next variant only when this one did not reach the tolerance itself: an
        # answer within it is what `solve` accepts (module docstring), and each
        # variant costs up to `ITERATIONS` sparse LUs.
        if best_residual <= target or (variant > 0 and best_residual <= 1.0):
            break
        r, stale = start, 0
        regularisation = eps * sp.identity(r.size, format="csc")
        ordering = None  # `sparse_solve` picks it at the first factorisation
        F, J = system.value(r, jacobian=True)
        merit = system.merit(F)
        if last == 0.0:  # no factorisation made yet: the a-priori estimate stands in
            last = estimated_factorisation_cost(J.nnz + r.size, r.size)
        for _ in range(ITERATIONS):
            overhead = iteration_cost(J.nnz)
            if work + last + overhead > budget:  # the next iteration would overrun the budget
                break
            try:
                step, ordering, last = sparse_solve(J + regularisation, -F.ravel(), ordering)
                work += last + overhead
                step = step.reshape(r.shape)
            except RuntimeError:  # a singular factor: no step
                break
            if not np.all(np.isfinite(step)):
                break
            length = 1.0
            if damped:
                for _ in range(12):
                    F_trial, _ = system.value(r + length * step)
                    if system.merit(F_trial) <= (1.0 - 1e-4 * length) * merit:
                        break
                    length *= 0.5
                else:
                    break
            r = r + length * step
            F, J = system.value(r, jacobian=True)
            merit = system.merit(F)
            residual = residual_ratio(rows, predicted, r, tolerance)
            if residual < best_residual:
                best, best_residual, stale = r, residual, 0
            else:
                stale += 1
            if best_residual <= target or stale >= PATIENCE:
                break
    return best, best_residual, work


#: SuperLU's orderings for Newton's matrices ``J + eps I`` (`sparse_solve`): a
#: minimum-degree ordering of ``J + J^T`` in symmetric mode, and COLAMD.
ORDERINGS = {
    "MMD_AT_PLUS_A": dict(permc_spec="MMD_AT_PLUS_A", options=dict(SymmetricMode=True)),
    "COLAMD": dict(permc_spec="COLAMD"),
}


def sparse_solve(matrix: sp.spmatrix, right: np.ndarray, ordering: str | None = None):
    """``(matrix^{-1} right, ordering, cost)`` by SuperLU with ``ordering`` (a key of
    `ORDERINGS`), or, when None, with each of them, keeping the one whose factor has
    fewer entries (deterministic); ``cost`` is `factorisation_cost` of the
    factorisations made. Why both: ``J`` has the symmetric pattern of ``W``
    plus diagonal blocks, and which ordering suits it depends on the blocks. On the
    1,000-sphere pour (`benchmarks/rotation_speed.py`) the minimum-degree ordering
    halves COLAMD's fill for turning spheres, and doubles it with rolling resistance
    (figures in benchmarks/README.md, "Measurements behind the constants"). A Newton call keeps
    ``J``'s pattern, so it chooses once (`newton`)."""
    matrix = sp.csc_matrix(matrix)
    if ordering is not None:
        factor = spla.splu(matrix, **ORDERINGS[ordering])
        return factor.solve(right), ordering, factorisation_cost(factor)
    best, cost = None, 0.0
    for name, options in ORDERINGS.items():
        factor = spla.splu(matrix, **options)
        cost += factorisation_cost(factor)
        fill = factor.L.nnz + factor.U.nnz
        if best is None or fill < best[0]:
            best = (fill, name, factor)
    return best[2].solve(right), best[1], cost


#: Floating-point operations of a sparse LU per entry read by a sweep, in units of
#: ``fill^2 / n`` (`factorisation_cost`). Why a model and not a clock: the hand-over's
#: budget must not depend on the machine, so that a run is repeatable. The model
#: ``fill^2 / n`` (the operations of a factor whose columns have the mean count) over
#: this factor matched the measured time of a factorisation in sweeps within a factor
#: 1.5 on the stalls of the 1,000-sphere box and of a periodic layer of 1,000 turning
#: spheres (benchmarks/README.md, "Measurements behind the constants").
LU_OPERATIONS_PER_SWEEP_ENTRY = 4.0
#: Below a fill of about a million, SuperLU's time grows as its fill, not as
#: ``fill^2 / n``: 37-62 ns per entry of the factor, 25-50 entries a sweep reads, on
#: clusters of 5-4,000 contacts of settling boxes of turning spheres, where
#: ``fill^2 / n`` priced the small factors 3-20 times too low. The cost of a factor is
#: the larger of the two.
SWEEP_ENTRIES_PER_FACTOR_ENTRY = 30.0
#: A Newton iteration also evaluates Alart and Curnier's function and assembles its
#: Jacobian (`AlartCurnier.value`, sparse products in numpy): about 0.45 ms plus 10-20
#: ns per entry of ``J`` on the same clusters, in entries a sweep reads (1.1-2 ns
#: each) a fixed part and a part per entry of ``J``.
ITERATION_SWEEP_ENTRIES = 3.0e5
SWEEP_ENTRIES_PER_JACOBIAN_ENTRY = 10.0


def _lu_cost(fill: float, n: int) -> float:
    """The work (entries a sweep reads) of an LU of order ``n`` whose factor has ``fill`` entries."""
    return max(fill * fill / max(n, 1) / LU_OPERATIONS_PER_SWEEP_ENTRY, SWEEP_ENTRIES_PER_FACTOR_ENTRY * fill)


def estimated_factorisation_cost(entries: int, n: int) -> float:
    """`factorisation_cost` of an ``n x n`` matrix with ``entries`` nonzeros before
    factorising it: its fill taken as ``entries n^(1/3)``, the growth of a nested
    dissection of a three-dimensional mesh (George, *Nested dissection of a regular
    finite element mesh*, SIAM J. Numer. Anal., 1973: fill O(n^(4/3)) in 3D). On the
    stalls of the 1,000-sphere box and of a periodic layer of 1,000 turning spheres it
    was within a factor 1.6 of SuperLU's fill (benchmarks/README.md, "Measurements
    behind the constants"). Why: the first factorisation of a Newton call must be
    priced before it is made; at 100,000 spheres one would take longer than the whole
    sweep budget."""
    return _lu_cost(float(entries) * float(n) ** (1.0 / 3.0), n)


def factorisation_cost(factor) -> float:
    """The work of a SuperLU factorisation ``factor`` in entries a sweep reads
    (divide by a sweep's ``values.size`` for sweeps): the larger of ``fill^2 / n``
    over `LU_OPERATIONS_PER_SWEEP_ENTRY` and `SWEEP_ENTRIES_PER_FACTOR_ENTRY` times
    the fill."""
    return _lu_cost(float(factor.L.nnz + factor.U.nnz), factor.shape[0])


def iteration_cost(jacobian_entries: int) -> float:
    """The work (entries a sweep reads) of a Newton iteration besides its factorisation:
    `ITERATION_SWEEP_ENTRIES` plus `SWEEP_ENTRIES_PER_JACOBIAN_ENTRY` per entry of ``J``."""
    return ITERATION_SWEEP_ENTRIES + SWEEP_ENTRIES_PER_JACOBIAN_ENTRY * jacobian_entries


def residual_ratio(rows: SweepRows, predicted: np.ndarray, r: np.ndarray, tolerance: np.ndarray) -> float:
    """Largest natural residual of ``r`` in units of each contact's tolerance."""
    return float((natural_residual(rows, predicted, r) / tolerance).max(initial=0.0))
