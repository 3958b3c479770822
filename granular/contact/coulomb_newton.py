"""The way out of a stall of the Coulomb sweeps: a regularised semismooth Newton
method on Alart and Curnier's function of the same law (`AlartCurnier`), with its
sparse LU solves priced in the sweeps' unit of work, so that a hand-over has a budget
that does not depend on the machine (`factorisation_cost`).

`granular.contact.friction_gauss_seidel` decides when to hand over (its module
docstring: why the sweeps stall, and why Newton's answer is judged by the sweeps'
residual alone).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .coulomb_rows import SweepRows, add_impulses, contact_residuals, natural_residual, onto_cones, velocities

#: Newton iterations of one `newton` call (each: one sparse LU of the contacts' Jacobian).
ITERATIONS = 20
#: A Newton variant stops after this many iterations that do not improve on the best
#: residual met (it converges in 3-20 when it does on the pours' stalls).
PATIENCE = 6
#: The Newton variants `newton` tries: (regularisation ``eps`` of ``J + eps I``, relative
#: to the unit diagonal ``J`` has on a sticking or open contact; whether steps are damped).
VARIANTS = ((1e-2, False), (1e-3, True), (3e-2, False))


def newton_on_loaded(
    rows: SweepRows,
    predicted: np.ndarray,
    r: np.ndarray,
    residual: np.ndarray,
    tolerance: np.ndarray,
    target: float,
    budget: float = np.inf,
) -> tuple[np.ndarray, float, float]:
    """`smoothed_newton` from the impulses ``r`` (m, q) of ``rows``, whose natural
    residual is ``residual`` (m,) (m/s): ``(r, ratio, work)``, ``ratio`` the largest
    natural residual of every contact of the answer in units of ``tolerance``, ``work``
    its factorisations and sweeps in sweeps of ``rows``, which ``budget`` bounds.

    Newton's system holds the contacts that carry an impulse or miss their law; the
    others keep no impulse in it. Why: an open contact with no impulse that meets its
    law adds its rows to the system without taking part (its equation is ``r_k = 0``),
    and the sweeps' working set holds many of them (the rows that join it before they
    close, `granular.contact.friction.NEAR_CONTACT`): about 20% of the 2,300 contacts
    of the stalls of the 1,000-sphere pour. On the same stalls, this set cost less than
    the whole working set, with answers within the tolerance either way (figures in
    benchmarks/README.md, "Measurements behind the constants"). A contact left out may
    be approached by Newton's answer: the sweeps after each step settle it, and the
    next step's system takes in the contacts that then carry an impulse or miss their
    law. At stalls of the sand pile's pour of turning spheres (seed 4), Newton solved
    its contacts to 0.03-0.86 times the tolerance and 2-3 contacts outside them then
    missed their law by 10-30 times it, attempt after attempt
    (`tests/data/stall_of_approached_contacts.npz`, `tests/test_friction_stall.py`)."""
    sweep_size = float(rows.values.size)  # what a sweep reads of the rows, the unit of `budget`
    solved, ratio, work = smoothed_newton(rows, predicted, r, tolerance, target, budget * sweep_size)
    return solved, ratio, work / sweep_size


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
) -> tuple[np.ndarray, float, float]:
    """`newton` on the contacts ``members`` (indices) alone, the impulses of the others
    held: their part of the velocities ``u`` (d + 1,) (those of the impulses ``r``
    (m, q)) is the cluster's prediction. Returns ``(r with the cluster's answer, its
    ratio over the cluster, work)``, ``budget`` and ``work`` in sweeps of ``rows``.

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
        cluster, held[:-1], r[members], tolerance[members], target, budget * sweep_size, VARIANTS[:REPAIR_VARIANTS]
    )
    repaired = r.copy()
    repaired[members] = solved
    return repaired, ratio, work / sweep_size


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


#: Sweeps after each step of `smoothed_newton`, as a fraction of the step's
#: factorisation cost in sweeps. Why: the smoothing costs a fixed share of an iteration
#: and grows with the system as the factorisation does; on the two captured limit cycles
#: (benchmarks/README.md, "Frictional boxes") 0.3 took 3-5 factorisations, 0.1 up to 10.
SMOOTHING = 0.3
#: The first and largest regularisation of `smoothed_newton` (relative to the unit
#: diagonal of ``J`` on a sticking or open contact). It starts small: eps only rises
#: after a rejected step, and a start at 1e-2 never reached the tolerance on one of the
#: captured cycles; 1e-4 and 1e-3 both did.
SMOOTHED_EPS = 1e-3
SMOOTHED_EPS_LARGEST = 1.0
#: Iterations of one `smoothed_newton` call.
SMOOTHED_ITERATIONS = 15
#: Measured residuals during a smoothing (one every this many sweeps).
SMOOTHING_CHECK = 10


def smoothed_newton(
    rows: SweepRows,
    predicted: np.ndarray,
    r: np.ndarray,
    tolerance: np.ndarray,
    target: float,
    budget: float = np.inf,
) -> tuple[np.ndarray, float, float]:
    """Impulses from semismooth Newton steps on `AlartCurnier`'s function, each followed
    by Gauss-Seidel sweeps, started at ``r`` (m, q): ``(r, ratio, work)`` as `newton`
    returns them (the best iterate met, its largest natural residual in units of
    ``tolerance``, the work in entries a sweep reads), stopping below ``target`` or
    before the work would exceed ``budget``.

    Each iteration solves ``(J + eps I) dr = -F(r)`` at the best iterate, takes the full
    step, then `SMOOTHING` times the factorisation's cost in sweeps from it and keeps the
    lowest measured residual: the multiplicative composition of Newton's method with
    nonlinear Gauss-Seidel (Brune, Knepley, Smith and Tu, *Composing scalable nonlinear
    algebraic solvers*, SIAM Review, 2015). The step carries the correction that spans
    the whole contact network, which the sweeps take thousands of sweeps to make; its
    errors are local (contacts pushed out of their cones or across a change of status),
    which the sweeps repair in tens. The step is accepted when the smoothed residual
    falls below the best, and ``eps`` then shrinks tenfold (the model is trusted more);
    otherwise the best is kept and ``eps`` grows tenfold: the Levenberg-Marquardt
    update of a trust region (More, *The Levenberg-Marquardt algorithm: implementation
    and theory*, 1978), judged by the natural residual, which a sweep makes monotone
    enough to judge, where the merit ``1/2 |F / rho|^2`` of `newton` is not (it is not
    smooth where contacts change status). Once the best is within the tolerance, the
    first rejected step ends the call.

    The system holds the contacts that carry an impulse or miss their law at the best
    iterate (`newton_on_loaded`: why), chosen again after each accepted step; the
    sweeps run over every contact of ``rows``. Measured (benchmarks/README.md,
    "Frictional boxes"; `tests/test_friction_repair.py`): on the limit cycle of step 119
    of Siconos' box of 2,000 turning spheres (4,048 contacts, best 1.4 tolerances) 0.02
    tolerances in one factorisation, where `newton`'s variants made no progress; on the
    stall of the 3,375-sphere box's step 135 (7,291 contacts) from the sweeps' best after
    3,000 sweeps, 0.02 tolerances in two (`newton`: 0.24 in twelve), after 800 sweeps
    0.97 in three. It does not end every cycle: on step 127 of the 3,375-sphere box,
    seed 2, its step approaches contacts outside the system and the sweeps after it
    fall back into the cycle."""
    best, best_ratio = r, residual_ratio(rows, predicted, r, tolerance)
    part, F, J = _loaded_system(rows, predicted, best)
    eps, work = SMOOTHED_EPS, 0.0
    # One ordering chosen by the rows, not by factorising with both (`sparse_solve`): the
    # minimum-degree ordering halves COLAMD's fill for Coulomb contacts and doubles it
    # with rolling resistance (benchmarks/README.md, "Measurements behind the constants").
    ordering = "COLAMD" if rows.width == 5 else "MMD_AT_PLUS_A"
    sweep_size = float(rows.values.size)
    last = estimated_factorisation_cost(J.nnz + J.shape[0], J.shape[0])  # the next factorisation's price
    for _ in range(SMOOTHED_ITERATIONS):
        overhead = iteration_cost(J.nnz)
        if part.size == 0 or best_ratio <= target or work + overhead + last > budget:
            break
        try:
            step, ordering, cost = sparse_solve(J + eps * sp.identity(J.shape[0], format="csc"), -F.ravel(), ordering)
        except RuntimeError:  # a singular factor: no step
            break
        work += cost + overhead
        last = cost
        if not np.all(np.isfinite(step)):
            break
        trial = best.copy()
        trial[part] += step.reshape(part.size, -1)
        sweeps = max(SMOOTHING_CHECK, int(SMOOTHING * cost / sweep_size))
        trial, ratio = best_of_sweeps(rows, predicted, trial, tolerance, sweeps)
        work += sweeps * sweep_size
        if ratio < best_ratio:
            best, best_ratio, eps = trial, ratio, max(eps / 10.0, SMOOTHED_EPS / 10.0)
            part, F, J = _loaded_system(rows, predicted, best)
        elif best_ratio <= 1.0:
            break
        else:
            eps = min(eps * 10.0, SMOOTHED_EPS_LARGEST)
    return best, best_ratio, work


def _loaded_system(rows: SweepRows, predicted: np.ndarray, r: np.ndarray):
    """``(part, F, J)``: the contacts that carry an impulse in ``r`` or miss their law
    (indices), and the value and Jacobian of `AlartCurnier`'s function on them at
    ``r[part]`` (the others carry no impulse, so the part's velocities are the whole
    answer's)."""
    part = np.flatnonzero((r[:, 0] > 0.0) | (natural_residual(rows, predicted, r) > 0.0))
    F, J = AlartCurnier(rows.subset(part), predicted).value(r[part], jacobian=True)
    return part, F, J


def best_of_sweeps(rows: SweepRows, predicted: np.ndarray, r: np.ndarray, tolerance: np.ndarray, sweeps: int):
    """``(r, ratio)``: the measured iterate with the lowest largest natural residual
    (in units of ``tolerance``) among ``sweeps`` Gauss-Seidel sweeps from ``r`` (put onto
    the cones first), measured every `SMOOTHING_CHECK` sweeps and at the last."""
    r = onto_cones(rows, r)
    u = velocities(rows, predicted, r)
    best, best_ratio = r.copy(), np.inf
    for sweep in range(1, sweeps + 1):
        rows.compiled.sweep(u, r)
        if sweep % SMOOTHING_CHECK == 0 or sweep == sweeps:
            ratio = float((contact_residuals(rows, u, r) / tolerance).max(initial=0.0))
            if ratio < best_ratio:
                best, best_ratio = r.copy(), ratio
    return best, best_ratio


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
