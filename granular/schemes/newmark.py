"""The Newmark projection scheme (P_h beta) of Dumont and Paoli (*Vibrations of a beam
between obstacles. Convergence of a fully discretized approximation*, 2006, sections 2
and 4), and a fast driver for long runs of it.

For a linear system ``M q'' + S q = F(t)`` with unilateral constraints (constant
mass ``M`` and stiffness ``S``, (d, d); load ``F`` (d,)), positions ``q^n`` at
``t_n = t_0 + n dt`` obey (Newmark, ``gamma = 1/2``, ``0 <= beta <= 1/2``):

    M (q^{n+1} - 2 q^n + q^{n-1}) / dt^2 + S (beta q^{n+1} + (1 - 2 beta) q^n + beta q^{n-1})
        + d psi_K(q^{n+1})  contains  G^n = beta F^{n+1} + (1 - 2 beta) F^n + beta F^{n-1},

with ``F^n`` the mean of ``F`` over ``[t_n, t_{n+1}]`` (the paper's definition;
`system.mean_load(t0, t1)`: exact for the beam, Simpson's rule for a
`ConstrainedSystem` built with ``stiffness=`` and ``load=``).
So ``q^{n+1}`` is the projection onto ``K`` of the unconstrained update ``q'`` in
the metric of ``A = M + dt^2 beta S`` (eq. 21), where

    q' = 2 q^n - q^{n-1} + dt^2 A^{-1} (G^n - S q^n)

(algebraically the paper's ``A^{-1} F^n``, written as an increment to keep the
round-off of ``dt^2``-small changes low). ``A`` is factorised once.

Projection, ``projection=`` (``"auto"``, the default: ``"lemma"`` when the system
declares ``coordinate_bounds``, else ``"qp"``):

- ``"lemma"`` (Lemma 4.1): for ``K = {lower <= q_i <= upper}`` on one coordinate
  ``i`` (the system's ``coordinate_bounds = (i, lower, upper)``, as `Beam` has),
  ``q^{n+1}_i = clip(q'_i)`` and ``q^{n+1} = q' + (q^{n+1}_i - q'_i) / c * w`` with
  ``w = A^{-1} e_i`` and ``c = w_i`` computed once: one linear solve a step (the
  paper solves two). The clipped coordinate is stored exactly, so ``q^{n+1}`` is
  admissible bit for bit.
- ``"qp"``: the generic metric projection `granular.contact.projection.project` (OSQP or
  cvxpy) of the velocity ``(q' - q^n)/dt`` onto ``{V : g(t_{n+1}, q^n) + dt G V >= 0}``
  in the metric ``A`` (constraints linearised at ``q^n``; exact for the beam).

Multipliers are impulses over the step (N s in SI units): ``A (V - V') = G^T lambda``
with ``V = (q^{n+1} - q^n)/dt`` the reported velocity and ``V' = (q' - q^n)/dt``
the prediction; ``dt lambda`` is the paper's ``dt^2`` times the mean reaction. The
reported ``dissipated_energy`` is ``|V'|_A^2 / 2 - |V|_A^2 / 2 >= 0``, the energy the
projection removes in the metric ``A``.

Penalty (normal compliance, Remark 4.2): a system with a ``penalty`` (see
`granular.systems.beam.TipPenalty`) has its piecewise-linear tip force weighted like
the stiffness, ``beta p^{n+1} + (1 - 2 beta) p^n + beta p^{n-1}``. The paper
extrapolates ``q^{n+1}`` to get ``p^{n+1}``; here the scalar piecewise-linear
equation ``x = x' + dt^2 beta c p(x)`` is solved exactly, so the penalty scheme is
the implicit Newmark scheme itself.

Start (Dumont and Paoli, 2006, section 2): from ``(q, u)`` the first step returns
``q^1 = P_K(q + dt u)`` (``u^1 = u^0 + dt v^0``; forces enter from the next step).
The scheme's state (`TwoStepState`) carries ``q^{n-1}``; a state without it
(`init`) starts this way. `step(t, q, u)`, for callers that keep ``(t, q, u)``
themselves, continues the state it returned last when given its ``(t, q)`` back
and starts again from any other.

Energy (proof of Propositions 3.1, 3.3): without constraints and loads
`discrete_energy` is conserved exactly for every beta (the familiar
``|V|_M^2/2 + qbar^T S qbar / 2`` with ``qbar`` the midpoint when beta = 1/4); with
the constraints and no load it never rises.

Fast path: `Simulation.run` of a system with a harmonic load and bounds or a
penalty on one coordinate (the beam) goes through `run_fast`, which jumps over
blocks of steps with powers of the scheme's affine maps and returns the same
`Trajectory`, up to round-off, as stepping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import scipy.linalg

from ..constraints import ConstraintSet, Contacts
from ..errors import InvalidInputError, solver_errors_at
from ..metric import DenseMetric
from ..contact.problem import ContactProblem
from ..contact.projection import project
from ..records.results import SolverStats, StepResult
from .common import TwoStepState, initial_state, make_result
from .newmark_blocks import BlockHistory, affine_maps, run_blocks
from .registry import refuse_unless_supported

PROJECTIONS = ("auto", "lemma", "qp")


def check_newmark_system(system, dt: float, beta: float):
    """Validate ``system`` for the Newmark scheme; return ``(M, S)`` (d, d)."""
    if not 0.0 <= beta <= 0.5:
        raise InvalidInputError(f"beta must lie in [0, 1/2] (Dumont and Paoli, 2006, section 2), got {beta}")
    if not (np.isfinite(dt) and dt > 0.0):
        raise InvalidInputError(f"dt must be a positive finite number, got {dt}")
    refuse_unless_supported("newmark", system, dt)  # a linear system (granular.protocols)
    d = system.dimension
    S = np.asarray(system.stiffness, dtype=float)
    if S.shape != (d, d) or not np.all(np.isfinite(S)):
        raise InvalidInputError(f"stiffness must be a finite ({d}, {d}) matrix, got shape {S.shape}")
    if system.penalty is not None and system.constraint_list:
        raise InvalidInputError("a penalised system must have no constraints (the penalty replaces them)")
    t0, q0, _ = system.initial_state()
    return system.metric(t0, q0).matrix(), S


class Operators:
    """``A = M + dt^2 beta S`` factorised, and ``w = A^{-1} e_i``, ``c = w_i`` for the
    contact coordinate ``i`` (bounds or penalty), shared by the scheme and the driver."""

    def __init__(self, system, dt: float, beta: float):
        self.M, self.S = check_newmark_system(system, dt, beta)
        self.dt, self.beta = float(dt), float(beta)
        self.A = self.M + self.dt**2 * self.beta * self.S
        self.metric = DenseMetric(self.A, "A = M + dt^2 beta S")
        self.factor = scipy.linalg.cho_factor(self.A)
        penalty, bounds = system.penalty, system.coordinate_bounds
        self.penalty = penalty
        self.index, self.lower, self.upper = (None, -np.inf, np.inf)
        if penalty is not None:
            self.index, self.lower, self.upper = penalty.index, penalty.lower, penalty.upper
        elif bounds is not None:
            self.index, self.lower, self.upper = int(bounds[0]), float(bounds[1]), float(bounds[2])
        self.w, self.c = None, None
        if self.index is not None:
            e = np.zeros(system.dimension)
            e[self.index] = 1.0
            self.w = self.solve(e)
            self.c = float(self.w[self.index])

    def solve(self, x: np.ndarray) -> np.ndarray:
        return scipy.linalg.cho_solve(self.factor, x, check_finite=False)

    def contact_tip(self, x: float) -> float:
        """The contact coordinate after the step, from its unconstrained value ``x'``:
        the clip of Lemma 4.1, or the exact solution of the implicit penalty."""
        if self.penalty is None:
            return min(max(x, self.lower), self.upper)
        eta = self.dt**2 * self.beta * self.penalty.stiffness * self.c
        if x > self.upper:
            return (x + eta * self.upper) / (1.0 + eta)
        if x < self.lower:
            return (x + eta * self.lower) / (1.0 + eta)
        return x


@dataclass(frozen=True)
class NewmarkUpdate:
    """One step of (P_h beta) from ``(q^{n-1}, q^n)``.

    positions : (d,) ``q^{n+1}``.
    unconstrained : (d,) ``q'``, the update without contacts.
    impulses : (m,) multipliers of the constraint rows (N s), >= 0.
    constraints : the `ConstraintSet` of the step (gaps at ``t_{n+1}``, ``q^n``).
    status, iterations, violation : of the projection (see `SolverStats`).
    """

    positions: np.ndarray
    unconstrained: np.ndarray
    impulses: np.ndarray
    constraints: ConstraintSet
    status: str = "unconstrained"
    iterations: int = 0
    violation: float = 0.0


class NewmarkScheme:
    """Scheme (P_h beta) of Dumont and Paoli, 2006 (see the module docstring).

    Parameters
    ----------
    system : ConstrainedSystem with constant mass, ``stiffness`` (d, d) and ``load(t)``
        e.g. `granular.systems.beam.Beam` or its ``penalised`` variant.
    dt : float
        Time step (s).
    solver : {"osqp", "cvxpy"}
        Backend of ``projection="qp"``.
    beta : float
        Newmark parameter in [0, 1/2]; 1/2 is unconditionally stable with
        constraints (Proposition 3.3), 1/4 the trapezoidal rule.
    projection : {"auto", "lemma", "qp"}
        Lemma 4.1 (needs ``system.coordinate_bounds``), the generic projection, or
        (``"auto"``) the first when the system declares its bounds, else the second.
    """

    name = "newmark"

    def __init__(self, system, dt: float, solver: str = "osqp", beta: float = 0.25, projection: str = "auto"):
        if projection not in PROJECTIONS:
            raise InvalidInputError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        self.system, self.dt, self.solver, self.beta = system, float(dt), solver, float(beta)
        self.ops = Operators(system, dt, beta)
        if projection == "auto":
            projection = "lemma" if system.coordinate_bounds is not None else "qp"
        self.projection = projection
        if projection == "lemma" and system.constraint_list:
            self._check_lemma()
        self._mean_load = system.mean_load
        self._maps = None  # the fast path's affine maps and powers, a cache (block_history)
        self.state = self.init(*system.initial_state())

    # -- the state -------------------------------------------------------------------
    def init(self, t: float, q: np.ndarray, u: np.ndarray) -> TwoStepState:
        """The state at ``(t, q, u)`` without ``q^{n-1}``: the next step is the start."""
        return TwoStepState(*initial_state(t, q, u))

    def resume(self, t: float, q: np.ndarray, u: np.ndarray) -> TwoStepState:
        """The current state if ``(t, q)`` is its own (to a millionth of a step in
        time, bit for bit in ``q``), else a fresh start at ``(t, q, u)``."""
        state = self.state
        if state.previous is not None and abs(state.t - t) <= 1e-6 * self.dt and np.array_equal(state.q, q):
            return state
        return self.init(t, q, u)

    def warm_values(self, state: TwoStepState) -> dict:
        """``{"_last": (t, q^n, q^{n-1})}`` (the run-file form), or {} at a start."""
        return {} if state.previous is None else {"_last": (state.t, state.q, state.previous)}

    def restored(self, state: TwoStepState, values: dict) -> TwoStepState:
        """``state`` with the ``q^{n-1}`` of a run file's restart group, if that group
        was saved at this very state (else ``state``, which starts afresh)."""
        last = values.get("_last")
        if last is None:
            return state
        t, q, previous = last
        if abs(t - state.t) <= 1e-6 * self.dt and np.array_equal(q, state.q):
            return replace(state, previous=np.array(previous, dtype=float))
        return state

    def _check_lemma(self):
        system, ops = self.system, self.ops
        if system.coordinate_bounds is None:
            raise InvalidInputError(
                "projection='lemma' (Lemma 4.1) needs constraints lower <= q_i <= upper on "
                "one coordinate, declared as `coordinate_bounds = (i, lower, upper)`; "
                f"{type(system).__name__} has none: use projection='qp'"
            )
        rows = system.gradients(system.t0, system.q0)
        unit = np.zeros(system.dimension)
        unit[ops.index] = 1.0
        for k, row in enumerate(rows):
            if not (np.array_equal(row, unit) or np.array_equal(row, -unit)):
                raise InvalidInputError(
                    f"constraint {k} is not a bound on coordinate {ops.index} (gradient "
                    f"{np.array2string(row, precision=3)}): use projection='qp'"
                )

    # -- the step --------------------------------------------------------------------
    def step(self, t: float, q: np.ndarray, u: np.ndarray) -> StepResult:
        """Advance from ``(t, q, u)`` (`resume`) to ``t + dt``; returns a `StepResult`
        whose velocity is ``(q^{n+1} - q^n) / dt``."""
        self.state, result = self.advance(self.resume(t, q, u), t)
        return result

    def advance(self, state: TwoStepState, t: float | None = None) -> tuple[TwoStepState, StepResult]:
        """One step from ``state`` (at time ``t``, ``state.t`` by default):
        ``(the state at t + dt carrying q^n, the StepResult)``."""
        start = time.perf_counter()
        t = state.t if t is None else t
        q = state.q
        if state.previous is not None:
            update = self.update(t, state.previous, q)
        else:
            update = self.start(t, q, state.u)
        result = self._result(t + self.dt, q, update, time.perf_counter() - start)
        return TwoStepState(
            t + self.dt, update.positions.copy(), result.velocities.copy(), np.array(q, dtype=float)
        ), result

    def start(self, t: float, q: np.ndarray, u: np.ndarray) -> NewmarkUpdate:
        """The first step of Dumont and Paoli (2006), ``q^1 = P_K(q^0 + dt v^0)`` (metric A)."""
        q = np.asarray(q, dtype=float)
        return self._contact(t + self.dt, q, q + self.dt * np.asarray(u, dtype=float), first=True)

    def update(self, t: float, q_previous: np.ndarray, q: np.ndarray) -> NewmarkUpdate:
        """``q^{n+1}`` from ``q^{n-1}`` (at ``t - dt``) and ``q^n`` (at ``t``)."""
        ops, dt, beta = self.ops, self.dt, self.beta
        G = (
            beta * self._mean_load(t + dt, t + 2.0 * dt)
            + (1.0 - 2.0 * beta) * self._mean_load(t, t + dt)
            + beta * self._mean_load(t - dt, t)
        )
        rhs = G - ops.S @ q
        if ops.penalty is not None:
            i = ops.index
            rhs[i] += (1.0 - 2.0 * beta) * ops.penalty.force(q[i]) + beta * ops.penalty.force(q_previous[i])
        unconstrained = 2.0 * q - q_previous + dt**2 * ops.solve(rhs)
        return self._contact(t + dt, q, unconstrained)

    def _contact(self, t_next: float, q: np.ndarray, unconstrained: np.ndarray, first: bool = False):
        system, ops = self.system, self.ops
        constraints = system.constraints(t_next, q, self.dt)
        if ops.penalty is not None:
            if first:  # Dumont and Paoli (2006) start the penalised scheme unprojected as well
                return NewmarkUpdate(unconstrained, unconstrained, np.zeros(0), constraints)
            return self._lemma(constraints, unconstrained)
        if constraints.size == 0:
            return NewmarkUpdate(unconstrained, unconstrained, np.zeros(0), constraints)
        if self.projection == "lemma":
            return self._lemma(constraints, unconstrained)
        return self._qp(t_next, q, constraints, unconstrained)

    def _lemma(self, constraints: ConstraintSet, unconstrained: np.ndarray) -> NewmarkUpdate:
        """Lemma 4.1 (or the implicit penalty): move coordinate ``i`` to
        ``contact_tip(q'_i)`` along ``w = A^{-1} e_i``."""
        ops, i = self.ops, self.ops.index
        x_free = unconstrained[i]
        x = ops.contact_tip(x_free)
        if x == x_free:
            return NewmarkUpdate(unconstrained, unconstrained, np.zeros(constraints.size), constraints)
        positions = unconstrained + ((x - x_free) / ops.c) * ops.w
        positions[i] = x
        # A (q - q') = nu e_i with nu = (x - x') / c = dt (lambda_lower - lambda_upper).
        nu = (x - x_free) / ops.c
        impulses = np.zeros(constraints.size)
        for k in range(constraints.size):
            pushes_up = constraints.normal[k, i] > 0.0
            impulses[k] = max(nu if pushes_up else -nu, 0.0) / self.dt
        status = "solved" if constraints.size else "penalty"
        return NewmarkUpdate(positions, unconstrained, impulses, constraints, status)

    def _qp(self, t_next, q, constraints: ConstraintSet, unconstrained) -> NewmarkUpdate:
        dt = self.dt
        predicted = (unconstrained - q) / dt
        with solver_errors_at(t_next):
            answer = project(
                ContactProblem(self.ops.metric, constraints.jacobian, predicted, -constraints.gap / dt),
                solver=self.solver,
            )
        return NewmarkUpdate(
            q + dt * answer.velocities,
            unconstrained,
            answer.impulses,
            constraints,
            answer.status,
            answer.iterations,
            dt * answer.violation,
        )

    def _result(self, t_next, q, update: NewmarkUpdate, seconds: float):
        dt = self.dt
        velocities = (update.positions - q) / dt
        predicted = velocities if self.ops.penalty is not None else (update.unconstrained - q) / dt
        change = self.ops.A @ (velocities - predicted)
        dissipated = -0.5 * float(change @ (velocities + predicted))
        stats = SolverStats(update.status, update.iterations, update.violation, {"total": seconds})
        return make_result(
            self.system,
            t_next,
            update.positions,
            velocities,
            predicted,
            Contacts.from_constraints(update.constraints, update.impulses),
            dissipated,
            stats,
        )

    # -- the fast path (simulate_tip, Simulation.run) -------------------------------------
    def has_fast_path(self) -> bool:
        """Whether `run_fast` applies: a harmonic load and Lemma 4.1's bounds, or a
        penalty, on one coordinate (the beam)."""
        by_lemma = self.projection == "lemma" or not self.system.constraint_list
        return (
            self.ops.index is not None
            and self.system.harmonic_load() is not None
            and (self.ops.penalty is not None or by_lemma)
        )

    def block_history(
        self,
        q: np.ndarray,
        q_before: np.ndarray,
        t_origin: float,
        first: int,
        steps: int,
        max_block: int = 256,
        unconstrained: bool = True,
    ) -> BlockHistory:
        """``steps`` steps by blocks of affine maps (`simulate_tip`) from ``q`` at step
        ``first`` after ``t_origin`` (time ``t_origin + first dt``) and ``q_before`` one
        step earlier; the unconstrained tips too if ``unconstrained``."""
        ops, i, d = self.ops, self.ops.index, self.system.dimension
        p_sin, p_cos, omega = self.system.harmonic_load()
        if self._maps is None or self._maps[0] != max_block:  # computed once: matrix powers
            self._maps = (max_block, affine_maps(ops, p_sin, p_cos, omega, max_block))
        maps = self._maps[1]
        force = ops.penalty.force if ops.penalty is not None else (lambda x: 0.0)
        z = np.concatenate([q, q_before, [0.0, 0.0, force(q[i]), force(q_before[i]), 1.0]])
        tips = np.empty(steps + 1)
        free = np.empty(steps + 1) if unconstrained else None
        tips[0] = q[i]
        if free is not None:
            free[0] = q[i]
        with np.errstate(over="ignore", invalid="ignore"):
            last = run_blocks(z, tips, free, maps, ops, t_origin, first, self.dt, omega, 2 * d)
        return BlockHistory(tips, free, last)

    def run_fast(
        self, state: TwoStepState, t_origin: float, first: int, recorded, dissipated: float = 0.0
    ) -> tuple | None:
        """Steps ``1 .. recorded[-1]`` from ``state`` (at step ``first`` after
        ``t_origin``) by blocks, the steps of the sorted ``recorded`` by `advance`.

        Each recorded step is recomputed from the block's state before it, and the
        blocks go on from the state it returns: a run continued from a recorded
        frame (`Simulation.from_trajectory`) computes the same products in the same
        shapes as the uninterrupted run, hence the same frames bit for bit.
        ``dissipated`` (J) is the energy dissipated before step 1; each step's loss
        is added to it in step order, one addition a step (`np.cumsum` is a
        sequential sum, unlike the pairwise `np.sum`), the grouping of
        `Simulation.step`: a continued run then carries the same total bit for bit.
        Returns ``(records, state, violation)``: a list of ``(k, result,
        dissipated through step k)`` (J; a block step's projection loss from its
        tip alone, `_tip_losses`), the state after the last step, and the largest
        bound violation of the contact coordinate over every step (m); None if a
        step was not finite (the caller then steps, and reports where)."""
        dt, d = self.dt, self.system.dimension
        i = self.ops.index
        records, lost, done, tips = [], float(dissipated), 0, []
        if state.previous is None:  # the start formula is not one of the affine maps
            state, result = self.advance(state, t_origin + first * dt)
            lost, done = lost + result.dissipated_energy, 1
            records += [(1, result, lost)] if 1 in recorded else []
            tips.append(result.positions[i : i + 1])
        for k in (k for k in recorded if k > done):
            q, q_before = state.q, state.previous
            if k - 1 > done:  # block steps done+1 .. k-1, then step k by `advance`
                history = self.block_history(q, q_before, t_origin, first + done, k - 1 - done)
                z = history.last
                if not (np.all(np.isfinite(history.tips)) and np.all(np.isfinite(z))):
                    return None
                lost = float(np.cumsum(np.concatenate(([lost], self._tip_losses(history))))[-1])
                tips.append(history.tips)
                q, q_before = z[:d].copy(), z[d : 2 * d].copy()
            t = t_origin + (first + k - 1) * dt
            state, result = self.advance(TwoStepState(t, q, (q - q_before) / dt, q_before), t)
            if not (np.all(np.isfinite(result.positions)) and np.isfinite(result.kinetic_energy)):
                return None
            lost += result.dissipated_energy
            records.append((k, result, lost))
            tips.append(result.positions[i : i + 1])
            done = k
        return records, state, _violation(self.ops, np.concatenate(tips))

    def _tip_losses(self, history: BlockHistory) -> np.ndarray:
        """The projection loss of each block step (J): ``-(x - x') / (2 c dt) (V_i + V'_i)``
        with ``V_i = (x - x_n) / dt``, ``V'_i = (x' - x_n) / dt`` (`_result`); none
        under a penalty, whose step is not a projection."""
        if self.ops.penalty is not None:
            return np.zeros(history.tips.size - 1)
        x, x_free, x_now = history.tips[1:], history.unconstrained[1:], history.tips[:-1]
        dt = self.dt
        return -0.5 * (x - x_free) / (self.ops.c * dt) * ((x - x_now) + (x_free - x_now)) / dt


def discrete_energy(
    mass: np.ndarray, stiffness: np.ndarray, q: np.ndarray, q_next: np.ndarray, dt: float, beta: float
) -> float:
    """The energy of Propositions 3.1/3.3 (halved), between ``t_n`` and ``t_{n+1}``:
    ``|V|_M^2 / 2 + ((1 - 2 beta) q^T S q' + beta (q'^T S q' + q^T S q)) / 2`` with
    ``q' = q^{n+1}``, ``V = (q' - q) / dt``; J in SI units. ``q``, ``q_next`` may be
    (d,) or (n, d) for a whole history."""
    q, q_next = np.atleast_2d(q), np.atleast_2d(q_next)
    V = (q_next - q) / dt
    kinetic = 0.5 * np.einsum("ni,ij,nj->n", V, mass, V)
    cross = np.einsum("ni,ij,nj->n", q, stiffness, q_next)
    square = np.einsum("ni,ij,nj->n", q_next, stiffness, q_next) + np.einsum("ni,ij,nj->n", q, stiffness, q)
    energy = kinetic + 0.5 * ((1.0 - 2.0 * beta) * cross + beta * square)
    return float(energy[0]) if energy.size == 1 else energy


# -- the fast driver -------------------------------------------------------------------


class TipRun(NamedTuple):
    """What `simulate_tip` returns.

    t : (k,) times of the recorded steps (s).
    tip : (k,) the contact coordinate ``q_i`` there (the tip displacement ``u(L, t)``, m).
    violation : largest ``max(q_i - upper, lower - q_i, 0)`` over every step (m).
    seconds : wall time of the run, set-up included (s).
    """

    t: np.ndarray
    tip: np.ndarray
    violation: float
    seconds: float


def simulate_tip(
    system, dt: float, duration: float, beta: float = 0.5, record_every: int = 1, max_block: int = 256
) -> TipRun:
    """Run scheme (P_h beta) (Lemma 4.1 or the implicit penalty) for ``duration``
    seconds and return the tip history of every step (``record_every``-th), much
    faster than stepping `NewmarkScheme`: the paper's figures and violations need
    every step's tip, which a `Trajectory` of millions of frames would not hold
    (`Simulation.run` takes the same fast path and records whole frames).

    The system must be linear with a harmonic load (``system.harmonic_load()`` gives
    ``(P_sin, P_cos, w)``, ``F(t) = P_sin sin(w t) + P_cos cos(w t)``) and bounds or a
    penalty on one coordinate, as `granular.systems.beam.Beam`.

    Why it is fast: the state ``z = (q^n, q^{n-1}, sin w t_n, cos w t_n, p^n, p^{n-1}, 1)``
    (the load obeys a rotation recurrence, ``p`` is the penalty force) evolves by one of
    three affine maps, free flight or contact with the upper or lower obstacle, the
    mode being decided each step by the unconstrained tip value ``x' = r . z``. The
    powers ``T_m^j`` (``j <= max_block``) and the rows ``r T_m^j`` are computed once;
    a block then predicts ``x'`` for its steps with one matrix-vector product, finds
    the first step whose mode differs (exact per-step detection), and jumps there
    with one more product. Blocks double while the mode holds and restart small
    after a change. The load phase is reset to ``sin``/``cos`` of ``t_n`` at every
    block, so no rotation round-off accumulates. The result equals `NewmarkScheme`
    step by step up to round-off (tested).
    """
    start = time.perf_counter()
    scheme = NewmarkScheme(system, dt, beta=beta)
    if not scheme.has_fast_path():
        raise InvalidInputError(
            f"simulate_tip needs `harmonic_load()` and bounds or a penalty on one "
            f"coordinate; {type(system).__name__} lacks them: step NewmarkScheme instead"
        )
    if int(record_every) != record_every or record_every < 1:
        raise InvalidInputError(f"record_every must be a positive integer, got {record_every}")
    n_steps = int(round(float(duration) / dt))
    if n_steps < 1:
        raise InvalidInputError(f"duration must cover at least one step of {dt} s, got {duration}")
    t0, q0, u0 = system.initial_state()
    q1 = scheme.start(t0, q0, u0).positions
    history = scheme.block_history(q1, q0, t0, 1, n_steps - 1, max_block, unconstrained=False)
    tips = np.concatenate([[q0[scheme.ops.index]], history.tips])
    times = t0 + dt * np.arange(0, n_steps + 1, int(record_every))
    return TipRun(times, tips[:: int(record_every)].copy(), _violation(scheme.ops, tips), time.perf_counter() - start)


def _violation(ops, tips: np.ndarray) -> float:
    """Largest ``max(x - upper, lower - x, 0)`` over a tip history (m)."""
    return float(max(np.max(tips - ops.upper), np.max(ops.lower - tips), 0.0))
