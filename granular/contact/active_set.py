"""Exact contact impulses by a proximal primal-dual active-set method whose sparse
factor is reused from step to step.

The multiplier form of the metric projection (`granular.contact.projection`):

    min_{l >= 0}  1/2 l^T W l + c^T l,      W = G M^{-1} G^T  (m x m),  c = G v - b,

whose KKT conditions are ``l >= 0``, ``s = W l + c >= 0`` and ``l_k s_k = 0``
(``s`` in velocity units, ``l`` impulses). ``W`` is never formed: ``s = G u - b``
with ``u = v + M^{-1} G^T l``, and only the blocks of the rows that push are built.

Method. A guess of the active set ``A`` (the rows that push) turns the problem into
the linear system ``W_AA l_A = -c_A`` with ``l = 0`` elsewhere. Settled piles are
degenerate: redundant contacts make ``W_AA`` singular and the impulses non-unique.
The linear systems are therefore those of the proximal problem,
``(W_AA + rho D_A) l_A = -c_A + rho D_A l_ref`` with ``D = diag W``, whose answer
is unique and bounded; proximal-point updates of ``l_ref`` (the same matrix, a new
right-hand side) converge to the optimal impulses nearest to the first ``l_ref``
(Rockafellar, *Monotone operators and the proximal point algorithm*, SIAM J.
Control Optim., 1976). That first reference is the previous step's impulses with
their self-stress removed (`without_self_stress`, one solve): the part that
``W_AA`` cannot see, impulses around loops of redundant contacts that cancel on
every sphere. Centred on the previous impulses themselves, a self-stress that one
step picked up was kept by every later step: a settled 4 x 4 x 4 lattice of 1.3 g
spheres showed contact impulses of 0.55 N s, 700 times the whole pile's weight
over a step, where the answer without it has 5e-5 N s (`tests/test_projection.py`).
Centred on zero instead, a body at rest was answered only to the tolerances after
proximal updates, not to round-off (the property tests saw its energy rise by
1e-32 J). The previous impulses also start the iteration and, through a few
projected SOR sweeps from them (`predicted_active`), choose the first active set,
so a settled pile needs few rounds.

The rounds are those of the primal active-set method for convex quadratic programs
(Nocedal and Wright, *Numerical Optimization*, 2nd ed., Springer, 2006, Algorithm
16.3), which keeps the impulses feasible (``l >= 0``) and never raises the proximal
objective. Each round solves the system on the working set ``A``; if some impulse
came out negative, the impulses move from the current point towards that answer
only as far as they stay ``>= 0`` (the ratio test, `ratio_step`) and the rows that
reach zero leave ``A``; otherwise the rows outside ``A`` whose proximal slack is
violated join it, and the answer with none violated is offered to the caller's KKT
test. On a convex objective the move never raises it and the working sets of
distinct rounds are not repeated, so the iteration ends (the objective is strictly
convex for ``rho > 0``). The exchanges of the primal-dual active-set method
(Hintermueller, Ito and Kunisch, *The primal-dual active set strategy as a
semismooth Newton method*, SIAM J. Optim., 2002), which flip every wrong row at
once, converge globally on M-matrices only; on a compacting pile, whose nearly
singular ``W_AA`` is not one, the whole-block flips swung the impulses along soft
directions and re-grew a few wrong rows to dozens, round after round (the pile of
`tests/test_active_set_stall.py`: 87 rounds and 26 factorisations, against 25
rounds and 1 factorisation with the ratio test). Those exchanges remain for the
`CONTINUATION`, the retry, whose strongly regularised levels are well conditioned.

Linear algebra. One sparse LDL^T factorisation (qdldl, the OSQP developers'
factorisation) of a base block ``W_BB + rho D_B`` serves many systems: a system
on another set ``A`` differs from the base by the rows added (N) and removed (R),
for which a dense Schur complement on those few rows accounts (the block-LU
update of active-set QP solvers; Gill, Murray, Saunders and Wright, *Sparse matrix
methods in optimization*, SIAM J. Sci. Stat. Comput., 1984). The base may come
from an earlier step: its solves then precondition conjugate gradients on the
current matrix, which converge in a few iterations because a settled pile barely
changes from one step to the next. The base is refactorised on the current
matrix when the border columns would cost more solves than a factorisation costs
(counted in floating-point operations of the factor, so that runs are
reproducible bit for bit), or when conjugate gradients need more than
`REFRESH_ITERATIONS`.

`solve` returns None when it cannot certify an answer (too many rounds, a stall,
an infeasible set); the caller then falls back on OSQP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .bordered_factor import BorderedFactor
from .delassus_rows import DENSE_ROWS, DelassusRows

#: Proximal regularisation, relative to the Delassus diagonal. Each proximal update
#: shrinks the distance to the plain answer by ``rho / (sigma + rho)`` along an
#: eigenvalue ``sigma`` of the scaled ``W_AA`` (1e-4 for sigma = 1e-4, the smallest
#: of a settled 1,000-sphere pile), so one or two updates meet the tolerances;
#: a singular ``W_AA`` (redundant contacts) keeps a factorisation of condition
#: about ``1 / rho``, whose border (Schur) solves lose about ``1e-16 / rho`` of
#: relative accuracy, which conjugate gradients recover.
RHO = 1e-8
#: Proximal regularisations of a cold start (no previous impulses) or of a retry:
#: each level's answer starts the next. Without a warm start the plain method
#: thrashes on degenerate sets (overlapping spheres: hundreds of rows flipped a
#: round, no convergence); a strongly regularised problem is well conditioned and
#: settles its active set in a few rounds, which the weaker levels then refine.
#: Tuned; benchmarks/README.md, "Measurements behind the constants".
CONTINUATION = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, RHO)
#: Rounds without a new fewest count of wrong rows after which a level gives up
#: (`exchange_rounds`). On a nearly singular ``W_AA`` (a compacting pile whose redundant
#: contacts leave eigenvalues of ``D^{-1} W_AA`` far below 1e-6) the weakly
#: regularised block's solutions swing along its soft directions, each round
#: flips a few rows far from their answer and the exchange rule's single flips
#: wander for hundreds of rounds; the continuation, whose strongly regularised
#: levels settle such sets in a few rounds, is then the faster route.
STALL_ROUNDS = 15
#: Intermediate levels the continuation may insert between an answered level and
#: one that gives up (`_continuation`).
MAX_BISECTIONS = 4
#: Active-set rounds of a level before it gives up: the primal rounds of the plain
#: level, or the exchanges of a level of the continuation. A level whose count of wrong
#: rows keeps reaching new lows may use them all (rounds are cheap next to the
#: continuation and the OSQP fallback: a frictionless pour with restitution,
#: `benchmarks/rotation_speed.py --seed 3`, needs hundreds); a stalled level ends
#: earlier, by `STALL_ROUNDS`. Tuned; benchmarks/README.md, "Measurements behind
#: the constants".
MAX_ROUNDS = 300
#: Proximal updates with an unchanged active set before giving up.
MAX_PROXIMAL = 8
#: Proximal updates tried at a level of the continuation before the next, weaker,
#: one: an update reuses the level's factor (one solve), where the next level
#: costs a factorisation and rounds of exchanges.
INTERMEDIATE_PROXIMAL = 3
#: The largest regularisation of an intermediate level that makes proximal updates.
UPDATES_BELOW = 1e-6
#: Conjugate-gradient iterations after which the base is refactorised on the
#: current matrix (a fresh base converges in one).
REFRESH_ITERATIONS = 10
#: Projected successive over-relaxation sweeps (`granular.contact.dual_sweeps`) that choose
#: the first active set of a warm-started problem of more than `DENSE_ROWS` rows
#: (`predicted_active`), and their relaxation factor: the guess must be nearer the
#: step's final active set than the previous support, so that the step takes fewer
#: rounds and factorisations, and over-relaxation reaches in 100 sweeps what about
#: three times as many plain ones (1.0) reach. Tuned on SCoPI's settled 1,000-sphere
#: pile; benchmarks/README.md, "Measurements behind the constants".
PREDICTION_SWEEPS = 100
PREDICTION_RELAXATION = 1.7
#: The sweeps stop early, after at least this many, once no row has entered or left
#: the support over the latter half of the sweeps made (`dual_sweeps.sweeps`): the
#: guess is the support, so further sweeps would only refine impulses that are not
#: used. On a falling box the support settles well before the hundredth sweep (the
#: same rounds and factorisations a step, fewer sweeps); on a settled pile it does
#: not and nearly every step makes them all. Tuned; benchmarks/README.md,
#: "Measurements behind the constants".
PREDICTION_SETTLE = 10
#: Only every third sweep visits every row; the two between visit the rows the last
#: full sweep changed or left pushing (`dual_sweeps.sweeps`): a small fraction of a
#: box's rows ever push during the sweeps, so partial sweeps cost a fraction of a
#: full one and leave the active-set rounds a step unchanged. Tuned (1, 2, 3, 4 and
#: 6 compared); benchmarks/README.md, "Measurements behind the constants".
PREDICTION_FULL_EVERY = 3


@dataclass
class ActiveSetStats:
    """What one `solve` cost: active-set rounds, conjugate-gradient iterations,
    factorisations and wall time (s)."""

    rounds: int = 0
    iterations: int = 0
    factorisations: int = 0
    seconds: float = 0.0


@dataclass
class Workspace:
    """What the solver carries from one step to the next (one per simulation): the
    bordered factor, and the statistics of the last solve. ``large_base``: the rows
    above which the factor is CHOLMOD's (`bordered_factor.LARGE_BASE` when None;
    `bordered_factor.REFACTORISED_LARGE_BASE` for one made anew at nearly every step)."""

    factor: "BorderedFactor | None" = None
    last: ActiveSetStats = field(default_factory=ActiveSetStats)
    large_base: int | None = None


@dataclass
class SolveContext:
    """One call of `solve`: the rows (`DelassusRows`) and their keys (m,), the caller's
    KKT test ``accurate(l, s) -> bool`` and feasibility tolerance (velocity units;
    linear solves aim at a tenth of it), the workspace and the call's statistics."""

    rows: DelassusRows
    keys: np.ndarray
    accurate: Callable[[np.ndarray, np.ndarray], bool]
    feasibility: float
    workspace: Workspace
    stats: ActiveSetStats

    def proximal_answer(self, rho: float, active: np.ndarray, reference: np.ndarray, start: np.ndarray):
        """One round's linear solve: ``(rows, l_A)`` with ``rows`` the indices of the
        working set ``active`` (m,) bool and ``l_A = (W_AA + rho D_A)^{-1} (-c_A + rho D_A
        reference_A)``, conjugate gradients started from ``start[rows]``."""
        self.stats.rounds += 1
        rows = np.flatnonzero(active)
        right = -self.rows.c[rows] + rho * self.rows.diagonal[rows] * reference[rows]
        return rows, solve_block(self, rows, rho, right, start[rows])


def solve(
    rows_data: DelassusRows,
    keys: np.ndarray,
    warm: np.ndarray,
    accurate,
    feasibility: float,
    workspace: Workspace | None = None,
) -> np.ndarray | None:
    """Impulses ``l`` (m,) of the multiplier problem, or None.

    rows_data : the rows of the projection (`DelassusRows`);
    keys : (m,) int64 identifiers of the rows, stable across steps (pair keys);
    warm : (m,) previous impulses of the persisting rows, 0 for new ones;
    accurate : callable ``(l, s) -> bool``, the caller's KKT test at its tolerances;
    feasibility : the caller's feasibility tolerance (velocity units); linear
    solves aim at a tenth of it.

    The proximal problem at `RHO` is solved first by the primal active-set rounds
    (`_monotone_rounds`) from the previous impulses, and the `CONTINUATION` of
    primal-dual exchanges is the retry. Each level of the retry is offered to
    ``accurate`` and the first accepted answer is returned, so the retry stops at
    the strongest regularisation that is accurate enough, before the nearly
    singular levels whose exchanges stall (`STALL_ROUNDS`).
    """
    start = time.perf_counter()
    workspace = workspace if workspace is not None else Workspace()
    stats = workspace.last = ActiveSetStats()
    # An impulse whose velocity change is below the feasibility tolerance is noise
    # of the previous solve (OSQP leaves ~1e-17 on inactive rows), not a contact.
    impulses = np.where(warm * rows_data.diagonal > feasibility, warm, 0.0)
    context = SolveContext(rows_data, keys, accurate, feasibility, workspace, stats)
    try:
        answer = _plain_level(context, impulses)
        if answer is None:
            answer = _continuation(context, impulses, CONTINUATION)
        return answer
    finally:
        stats.seconds = time.perf_counter() - start


def _plain_level(context: SolveContext, impulses: np.ndarray) -> np.ndarray | None:
    """The proximal problem at `RHO` by `_monotone_rounds`, from the working set that
    `predicted_active` guesses (else the support of ``impulses``, else the rows
    approaching, ``c < 0``) and from ``impulses`` (m,) on it, centred on them without
    their self-stress. Returns the accepted impulses or None."""
    active = predicted_active(context.rows, impulses, context.feasibility)
    if active is None:
        active = impulses > 0.0
    if not active.any():
        active = context.rows.c < 0.0
    reference = without_self_stress(context, impulses, active, RHO)
    return _monotone_rounds(context, RHO, np.where(active, impulses, 0.0), active, reference)


def _continuation(context: SolveContext, impulses: np.ndarray, schedule) -> np.ndarray | None:
    """The levels of ``schedule`` in turn, each started from the previous answer and
    offered to ``accurate``; the first accepted answer is returned (the last level
    makes proximal updates until it is accepted). The first active set is the support
    of ``impulses``, else the rows approaching (``c < 0``). A level that gives up after an
    answered one is approached again through the geometric mean of the two
    regularisations (at most `MAX_BISECTIONS` times): the smaller the step in
    ``rho``, the closer the previous answer is to the next one and the fewer rows
    its rounds must exchange. Returns the impulses or None."""
    active = impulses > 0.0
    if not active.any():
        active = context.rows.c < 0.0
    reference = without_self_stress(context, impulses, active, schedule[0])
    levels, answered, bisections = list(schedule), None, 0
    while levels:
        rho = levels.pop(0)
        last = not levels
        outcome = exchange_rounds(
            context, rho, impulses, active, reference, max_updates=_updates_at(rho, last=last), last=last
        )
        if outcome is None:
            if answered is None or bisections == MAX_BISECTIONS:
                return None
            bisections += 1
            levels[:0] = [float(np.sqrt(answered * rho)), rho]
            continue
        impulses, active, accepted = outcome
        if accepted:
            return impulses
        reference, answered = impulses, rho
    return None


def _updates_at(rho: float, last: bool) -> int:
    """Proximal updates allowed at a level of the continuation: `MAX_PROXIMAL` at the
    last, `INTERMEDIATE_PROXIMAL` where ``rho <= UPDATES_BELOW``, none above. Each
    update shrinks the slack error along a soft direction of eigenvalue ``sigma`` by
    ``rho / (sigma + rho)``, so what is left after ``k`` of them is about ``rho / k``
    of the impulses' velocity change: far above the feasibility tolerance (1e-9 of
    the velocity scale) at the strongly regularised levels, whose updates only move
    the active set."""
    if last:
        return MAX_PROXIMAL
    return INTERMEDIATE_PROXIMAL if rho <= UPDATES_BELOW else 0


def predicted_active(rows_data, impulses, feasibility) -> np.ndarray | None:
    """The first active set of a warm-started problem: the rows that push, or are
    violated beyond ``feasibility``, after `PREDICTION_SWEEPS` projected SOR sweeps
    from ``impulses`` (m,); None (the support of ``impulses`` then) for small, dense
    or cold problems.

    Why: the support of the previous impulses misses the contacts a creeping pile
    makes and breaks in the step (about 130 rows of 2,700 on SCoPI's settled pile),
    and the active-set iteration finds them by redistributing the load through the
    network a round at a time, flipping about 600 rows over 9 rounds with 4
    factorisations. Sweeps of projected Gauss-Seidel spread the same redistribution
    for O(nnz) each (Mangasarian, *Solution of symmetric linear complementarity
    problems by iterative methods*, J. Optim. Theory Appl., 1977; over-relaxed:
    Cryer, *The solution of a quadratic programming problem using systematic
    overrelaxation*, SIAM J. Control, 1971) and settle the active set long before
    the impulses, which they cannot give to the tolerances on an ill-conditioned
    ``W`` (the contact dynamics of Moreau, *Numerical aspects of the sweeping
    process*, Comput. Methods Appl. Mech. Engrg., 1999, iterate such sweeps to a
    looser tolerance as the solver itself). Only
    the guess of the set is taken: the proximal centre and the starts of the
    conjugate gradients stay the previous impulses, so the answer is the one the
    exact rounds give from the support (the same velocities, far within the
    feasibility tolerance), and it is still accepted by the caller's KKT test
    alone. Centred on the sweeps' impulses instead, the step took one factorisation
    less but its answer moved by many times the feasibility tolerance (within the
    complementarity tolerance, less accurate than the answer from the support;
    benchmarks/README.md, "Measurements behind the constants")."""
    if PREDICTION_SWEEPS == 0 or rows_data.size <= DENSE_ROWS or not sp.issparse(rows_data.H) or not impulses.any():
        return None
    # Imported at first use: numba's import costs a few tenths of a second, which
    # `import granular` and runs without a large warm-started projection do not pay.
    from . import dual_sweeps

    values, velocity, _ = dual_sweeps.projected_gauss_seidel(
        rows_data.H,
        rows_data.diagonal,
        rows_data.c,
        impulses,
        PREDICTION_SWEEPS,
        PREDICTION_RELAXATION,
        PREDICTION_SETTLE,
        PREDICTION_FULL_EVERY,
    )
    active = (values > 0.0) | (rows_data.H @ velocity + rows_data.c < -feasibility)
    return active if active.any() else None


def without_self_stress(context: SolveContext, impulses: np.ndarray, active: np.ndarray, rho: float) -> np.ndarray:
    """The previous impulses on the rows ``active`` with their self-stress removed:
    ``(W_AA + rho D_A)^{-1} W_AA l_A``, which keeps each component of ``l_A`` along an
    eigenvector of ``D^{-1} W_AA`` of eigenvalue ``sigma`` scaled by
    ``sigma / (sigma + rho)`` (1 - 1e-8 for a contact that carries load, so a pile at
    rest is answered at once) and sets the part ``W_AA`` cannot see (loops of
    impulses that cancel on every body, ``sigma = 0``) to zero. One solve, with the
    factor the first round then uses: the block is the whole of ``A``, the rows
    without a previous impulse (those the guessing sweeps added) entering ``l_A``
    as zeros. (Solved on the support of ``l`` alone, the block differed from the
    first round's whenever the sweeps changed the set, and every step paid a second
    factorisation; benchmarks/README.md, "Measurements behind the constants".)"""
    reference = np.zeros(context.rows.size)
    if not np.any(active & (impulses > 0.0)):
        return reference
    rows = np.flatnonzero(active)
    loads = context.rows.operator(rows, 0.0)(impulses[rows])
    reference[rows] = solve_block(context, rows, rho, loads, impulses[rows])
    return reference


def _monotone_rounds(
    context: SolveContext, rho: float, impulses: np.ndarray, active: np.ndarray, reference: np.ndarray
) -> np.ndarray | None:
    """Primal active-set rounds (module docstring) on the proximal problem with ``rho``
    centred on ``reference``, from the feasible ``impulses`` (m,), ``>= 0`` and zero
    outside the working set ``active`` (m,) bool. An answer with no row violated that
    ``accurate`` rejects is refined by up to `MAX_PROXIMAL` proximal updates, each
    continuing the rounds from it. Returns the accepted impulses, or None after
    `MAX_ROUNDS` rounds or the updates."""
    impulses, active, updates = impulses.copy(), active.copy(), 0
    for _ in range(MAX_ROUNDS):
        rows, values = context.proximal_answer(rho, active, reference, impulses)
        if (values < 0.0).any():
            impulses[rows], leaving = ratio_step(impulses[rows], values)
            active[rows[leaving]] = False
            continue
        impulses = np.zeros(context.rows.size)
        impulses[rows] = values
        slack = context.rows.slack(impulses)
        violated = ~active & (slack + rho * context.rows.diagonal * (impulses - reference) < -context.feasibility)
        if violated.any():
            active |= violated
            continue
        if context.accurate(impulses, slack):
            return impulses
        updates += 1
        if updates > MAX_PROXIMAL:
            return None
        reference = impulses
    return None


def ratio_step(current: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ratio test of a primal active-set method: the point ``current + a (target -
    current)`` with the largest ``a`` in [0, 1] that keeps every entry ``>= 0``, and
    the (k,) bool mask of the entries that block the move there (they reach zero and
    are set to exactly zero). ``current`` (k,) is ``>= 0``; ``target`` (k,) has a
    negative entry. On a convex objective whose minimiser over the working set is
    ``target``, the objective at the returned point is at most its value at
    ``current``: it is convex along the segment and least at its end."""
    blocking = target < 0.0
    ratios = np.full(current.shape, np.inf)
    ratios[blocking] = current[blocking] / (current[blocking] - target[blocking])
    step = ratios.min()
    leaving = ratios <= step
    moved = np.maximum(current + step * (target - current), 0.0)
    moved[leaving] = 0.0
    return moved, leaving


def exchange_rounds(
    context: SolveContext,
    rho: float,
    impulses: np.ndarray,
    active: np.ndarray,
    reference: np.ndarray,
    max_updates: int = MAX_PROXIMAL,
    last: bool = True,
):
    """Active-set rounds on the proximal problem with ``rho`` centred on ``reference``:
    ``(impulses, active, accepted)`` once no row is wrong, ``accepted`` by
    ``accurate``; an answer not accepted is refined by up to ``max_updates`` proximal
    updates (each a solve with the factor in hand while the set holds) and, if still
    not accepted, the level's first answer is returned (``last`` False) or the
    level gives up (``last``). None also if no answer comes in `MAX_ROUNDS`, or
    when the count of wrong rows has reached no new low for `STALL_ROUNDS` rounds
    (after an answer of a level that is not ``last``: that answer)."""
    updates, answered = 0, None  # answered: the level's first answer, kept if updates stall
    exchange = ExchangeRule()
    for _ in range(MAX_ROUNDS):
        rows, values = context.proximal_answer(rho, active, reference, impulses)
        impulses = np.zeros(context.rows.size)
        impulses[rows] = values
        slack = context.rows.slack(impulses)
        proximal_slack = slack + rho * context.rows.diagonal * (impulses - reference)
        wrong = (active & (impulses < 0.0)) | (~active & (proximal_slack < -context.feasibility))
        if wrong.any():
            if exchange.stalled():
                return None if last or answered is None else answered
            active = active ^ exchange.rows_to_flip(wrong)
            updates = 0
            continue
        if context.accurate(impulses, slack):
            return impulses, active, True
        answered = answered or (impulses, active, False)
        updates += 1
        if updates > max_updates:
            return None if last else answered
        reference = impulses
    return None


class ExchangeRule:
    """Which wrong rows (negative impulse in A, violated outside A) to flip: all of
    them while their number keeps falling to new lows, with `PATIENCE` rounds of
    grace, then only the last one (Murty's least-index rule, from the end), which
    cannot cycle on a P-matrix (Judice and Pires, *A block principal pivoting
    algorithm for large-scale strictly monotone linear complementarity problems*,
    Comput. Oper. Res., 1994). Once the single flips have begun they go on to the
    end: returning to whole-block flips at each new low (as Judice and Pires do)
    made the nearly singular blocks of compacting piles cycle, a few wrong rows
    growing back to dozens at every return (a captured step of the 8,000-sphere
    box; benchmarks/README.md, "Measurements behind the constants")."""

    PATIENCE = 6

    def __init__(self):
        self.fewest = np.inf
        self.grace = self.PATIENCE
        self.since_fewest = 0
        self.single = False

    def stalled(self) -> bool:
        """Whether `STALL_ROUNDS` rounds have passed without a new fewest count."""
        return self.since_fewest >= STALL_ROUNDS

    def rows_to_flip(self, wrong: np.ndarray) -> np.ndarray:
        count = int(wrong.sum())
        if count < self.fewest:
            self.fewest, self.since_fewest = count, 0
            if not self.single:
                self.grace = self.PATIENCE
                return wrong
        else:
            self.since_fewest += 1
            if self.grace > 0 and not self.single:
                self.grace -= 1
                return wrong
        self.single = True
        flip = np.zeros_like(wrong)
        flip[np.flatnonzero(wrong)[-1]] = True
        return flip


def solve_block(context: SolveContext, rows: np.ndarray, rho: float, right: np.ndarray, start: np.ndarray):
    """``(W_AA + rho D_A)^{-1} right`` on ``rows`` by preconditioned conjugate
    gradients to a tenth of the feasibility tolerance, refactorising the base on the
    current matrix when it no longer serves."""
    rows_data, keys, workspace, stats = context.rows, context.keys, context.workspace, context.stats
    tolerance = 0.1 * context.feasibility
    if rows.size == 0:
        return np.zeros(0)
    if rows.size <= DENSE_ROWS:
        try:
            # Finite inputs (checked by `granular.contact.projection`), finite block: no check.
            factor = scipy.linalg.cho_factor(rows_data.dense_block(rows, rho), check_finite=False)
            return scipy.linalg.cho_solve(factor, right, check_finite=False)
        except np.linalg.LinAlgError:
            pass  # not numerically definite: the sparse path with its iterative refinement
    operator = rows_data.operator(rows, rho)
    factor = workspace.factor
    apply = None if factor is None else factor.preconditioner(rows_data, rows, keys, rho)
    fresh = apply is None
    while True:
        if apply is None:
            workspace.factor = BorderedFactor(keys[rows], rows_data, rows, rho, workspace.large_base)
            stats.factorisations += 1
            apply = workspace.factor.preconditioner(rows_data, rows, keys, rho)
        values, iterations, converged = _conjugate_gradients(
            operator, right, start, apply, tolerance, 4 * REFRESH_ITERATIONS if fresh else REFRESH_ITERATIONS
        )
        stats.iterations += iterations
        if converged or fresh:
            return values
        start, apply, fresh = values, None, True


def _conjugate_gradients(operator, right, start, precondition, tolerance, max_iterations):
    """Preconditioned CG on ``operator(x) = right``, stopped when the residual is
    below ``tolerance`` in the max norm. Returns ``(x, iterations, converged)``."""
    x = np.array(start, dtype=float)
    residual = right - operator(x)
    if np.abs(residual).max() <= tolerance:
        return x, 0, True
    z = precondition(residual)
    direction = z.copy()
    rz = float(residual @ z)
    for iteration in range(1, max_iterations + 1):
        product = operator(direction)
        curvature = float(direction @ product)
        if not (curvature > 0.0 and rz > 0.0):
            return x, iteration, False
        alpha = rz / curvature
        x += alpha * direction
        residual -= alpha * product
        if np.abs(residual).max() <= tolerance:
            return x, iteration, True
        z = precondition(residual)
        rz_next = float(residual @ z)
        direction = z + (rz_next / rz) * direction
        rz = rz_next
    return x, max_iterations, False
