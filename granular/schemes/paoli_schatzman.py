"""Paoli and Schatzman's position-based scheme (*A numerical scheme for impact problems*,
1999, (1.13)-(1.17)).

Positions ``U^m`` at ``t_m = t_0 + m h``. Given ``U^{m-1}`` and ``U^m``:

    W^m     = (2 U^m - (1 - e) U^{m-1} + h^2 F^m) / (1 + e)               (1.24)
    U^{m+1} = -e U^{m-1} + (1 + e) P_K(W^m)                                (1.16)

``K = {x : g_k(t_{m+1}, x) >= 0 for all k}`` (admissible means ``g >= 0``) and
``P_K`` the projection onto ``K`` in the metric of ``M(U^m)``: the configuration
known at the start of the step. Paoli and Schatzman use the Riemannian distance of
``M(.)``; both agree to first order in the (O(h)) length of the projection,
the order of the scheme.

Force: ``F^m = M(U^m)^{-1} f(t_m, U^m, V^{m-1})`` with the backward difference
``V^{m-1} = (U^m - U^{m-1}) / h`` as the velocity argument. For a force that does
not depend on the velocity this is (1.17) exactly; otherwise it replaces (1.17)'s
centred, implicit ``(U^{m+1} - U^{m-1}) / 2h`` by an explicit first-order value
(no fixed point needed).

Nonlinear ``g``: ``P_K`` is computed by successive linearisation,
``Z_{j+1} = argmin |Z - W|_M  s.t.  g(Z_j) + grad g(Z_j) (Z - Z_j) >= 0``, from
``Z_0 = W`` (one row in closed form, several by `granular.contact.projection.project`),
until ``|Z_{j+1} - Z_j|_M <= tolerance * |W - U^m|_M`` (plus round-off); a
`ConvergenceError` naming the time after ``max_iterations``. Affine constraints
converge in two iterations.

First step (1.14): ``U^1 = q_0 + h u_0 + h z(h)``. We take the Taylor point
``x = q_0 + h u_0 + h^2/2 M^{-1} f`` when it is admissible (``z = h F / 2``, a
second-order start) and otherwise one step of (1.16) from the fictitious
``U^{-1} = q_0 - h u_0``, which applies the impact law to an impact inside the
first step and leaves a body resting on a constraint exactly at rest (``z = O(h)``
either way). The scheme's state (`TwoStepState`) carries ``U^{m-1}``; a state
without it (`init`) starts this way. `step(t, q, u)`, for callers that keep
``(t, q, u)`` themselves, continues the state it returned last when given it back
and starts again from any other.

Reported velocity: ``V^m = (U^{m+1} - U^m) / h`` ((1.28) of Paoli and Schatzman, 1999), at the end
of the step together with ``U^{m+1}``. Then (1.29) multiplied by ``M(U^m)`` is the
discrete momentum balance ``M (V^m - p) = G^T lambda`` with the prediction
``p = V^{m-1} + h F^m`` and the impulses ``lambda = (1 + e) mu / h`` (N s), where
``mu`` are the multipliers of the position projection
(``M (P_K W - W) = G^T mu``, units kg m). The gradient ``G`` is taken at ``P_K W``.
In the first step (Taylor branch) ``p = u_0 + h F / 2`` and no impulse acts.

Restitution per constraint: the step uses the smallest coefficient among the
constraints violated at ``2 U^m - U^{m-1} + h^2 F`` (``W`` for ``e = 0``) or at
``U^{m-1}``: the dissipative rule of the other schemes, and one coefficient for
both steps of an impact (choosing per constraint at its own ``W`` lets a large
coefficient act on the separating step and push the body out again). When
``P_K W = W``, ``e`` drops out of (1.16).

Energy bookkeeping: an impact takes two steps; the first usually removes more
kinetic energy than the law asks and the second gives some back, so the step's
``dissipated_energy`` can be negative on the second step while the sum over the
impact is the law's ``(1 - e^2)`` loss.

Positions: ``P_K W`` is admissible, ``U^{m+1}`` need not be: after an impact it
lies outside ``K`` by at most ``e`` times one step's travel. Contacts report the
gap and gradient at ``P_K W`` (``gap = 0`` on an active contact).
"""

from __future__ import annotations

import time

import numpy as np

from dataclasses import replace

from ..errors import ConvergenceError, InvalidInputError
from ..records.results import SolverStats, StepResult
from .common import (
    TwoStepState,
    constraint_contacts,
    initial_state,
    make_result,
    metric_projection,
    restitution_coefficients,
)
from .registry import refuse_unless_supported

#: Round-off allowance of the linearisation stop test, in units of ``|Z|_M``.
_ROUNDOFF = 64.0 * np.finfo(float).eps


class PaoliSchatzmanScheme:
    """Scheme (1.13)-(1.17) of Paoli and Schatzman, 1999 (see the module docstring).

    Parameters
    ----------
    system : ConstrainedSystem
    dt : float
        Time step ``h`` (s).
    solver : {"osqp", "cvxpy"}
        Backend of the linearised projections with two or more rows.
    max_iterations : int
        Cap on the successive linearisations of one projection.
    tolerance : float
        Stop when a linearisation moves ``Z`` by less than this fraction of the
        step's displacement ``|W - U^m|_M``.
    """

    name = "paoli-schatzman"

    def __init__(self, system, dt: float, solver: str = "osqp", max_iterations: int = 50, tolerance: float = 1e-10):
        refuse_unless_supported(self.name, system, dt)
        if int(max_iterations) != max_iterations or max_iterations < 1:
            raise InvalidInputError(f"max_iterations must be a positive integer, got {max_iterations}")
        if not tolerance > 0.0:
            raise InvalidInputError(f"tolerance must be > 0, got {tolerance}")
        self.system = system
        self.dt = float(dt)
        self.solver = solver
        self.max_iterations = int(max_iterations)
        self.tolerance = float(tolerance)
        self.restitution = restitution_coefficients(system)
        self.state = self.init(*system.initial_state())

    # -- the state -------------------------------------------------------------------
    def init(self, t: float, q: np.ndarray, u: np.ndarray) -> TwoStepState:
        """The state at ``(t, q, u)`` without ``U^{m-1}``: the next step is (1.14)."""
        return TwoStepState(*initial_state(t, q, u))

    def resume(self, t: float, q: np.ndarray, u: np.ndarray) -> TwoStepState:
        """The current state if ``(t, q, u)`` is it (to a millionth of a step in
        time, bit for bit in ``q`` and ``u``), else a fresh start there."""
        state = self.state
        if abs(t - state.t) <= 1e-9 * self.dt and np.array_equal(q, state.q) and np.array_equal(u, state.u):
            return state
        return self.init(t, q, u)

    def warm_values(self, state: TwoStepState) -> dict:
        """``{"_last": (t, U^m, V^{m-1}, U^{m-1})}`` (the run-file form), or {} at a start."""
        return {} if state.previous is None else {"_last": (state.t, state.q, state.u, state.previous)}

    def restored(self, state: TwoStepState, values: dict) -> TwoStepState:
        """``state`` with the ``U^{m-1}`` of a run file's restart group, if that group
        was saved at this very state (else ``state``, which starts with (1.14))."""
        last = values.get("_last")
        if last is None:
            return state
        t, q, u, previous = last
        if abs(t - state.t) <= 1e-9 * self.dt and np.array_equal(q, state.q) and np.array_equal(u, state.u):
            return replace(state, previous=np.array(previous, dtype=float))
        return state

    # -- the step --------------------------------------------------------------------
    def step(self, t: float, q: np.ndarray, u: np.ndarray) -> StepResult:
        """Advance ``(t, q, u)`` by one step (`resume`); returns a `StepResult` at ``t + h``."""
        self.state, result = self.advance(self.resume(t, q, u), t)
        return result

    def advance(self, state: TwoStepState, t: float | None = None) -> tuple[TwoStepState, StepResult]:
        """One step from ``state`` (at time ``t``, ``state.t`` by default):
        ``(the state at t + h carrying U^m, the StepResult)``."""
        start = time.perf_counter()
        t = state.t if t is None else t
        q, u, previous = state.q, state.u, state.previous
        metric = self.system.metric(t, q)
        acceleration = metric.solve(self.system.force(t, q, u))  # F^m
        if previous is None:
            outcome = self._first_step(metric, t, q, u, acceleration)
        else:
            outcome = self._advance(metric, t, q, previous, u, acceleration)
        q_next, mu, e, gaps, rows, predicted, stats = outcome
        h = self.dt
        velocity = (q_next - q) / h
        impulses = (1.0 + e) * mu / h
        dissipated = -0.5 * float((rows.T @ impulses) @ (velocity + predicted))
        timing = {"solve": stats[2], "total": time.perf_counter() - start}
        result = make_result(
            self.system,
            t + h,
            q_next,
            velocity,
            predicted,
            constraint_contacts(gaps, rows, impulses),
            dissipated,
            SolverStats(stats[0], stats[1], 0.0, timing),
        )
        return TwoStepState(t + h, q_next.copy(), velocity.copy(), np.array(q, dtype=float)), result

    def _first_step(self, metric, t, q, u, acceleration):
        """(1.14): the Taylor point if admissible, else (1.16) from ``U^{-1} = q - h u``."""
        h = self.dt
        taylor = q + h * u + 0.5 * h * h * acceleration
        gaps = self.system.gaps(t + h, taylor)
        if np.all(gaps >= 0.0):
            rows = self.system.gradients(t + h, taylor)
            return (taylor, np.zeros(gaps.size), 0.0, gaps, rows, u + 0.5 * h * acceleration, ("unconstrained", 0, 0.0))
        return self._advance(metric, t, q, q - h * u, u, acceleration)

    def _advance(self, metric, t, q, previous, u, acceleration):
        """(1.16) from ``U^{m-1} = previous``, ``U^m = q``; ``u = V^{m-1}``, ``acceleration = F^m``.

        Returns ``(U^{m+1}, mu, e, gaps, rows, p, stats)`` with the prediction
        ``p = V^{m-1} + h F^m``.
        """
        h = self.dt
        free = 2.0 * q - previous + h * h * acceleration  # W for e = 0; (1.16) with P_K = identity
        e = self._coefficient(t + h, free, previous)
        target = (free + e * previous) / (1.0 + e)
        scale = np.sqrt(2.0 * metric.kinetic_energy(target - q))
        projected, mu, gaps, rows, stats = self.project_onto_admissible(metric, t + h, target, scale)
        # -e U^{m-1} + (1+e) P_K(W) written as free + (1+e)(P_K W - W): exact when inactive.
        q_next = free + (1.0 + e) * (projected - target)
        return q_next, mu, e, gaps, rows, u + h * acceleration, stats

    def _coefficient(self, t_next, free, previous) -> float:
        """Smallest coefficient among the constraints violated at ``free`` (``W`` for
        e = 0) or at ``U^{m-1}``. ``W(e)`` lies between the two, so for affine
        constraints no other constraint can be violated at ``W`` whatever ``e`` is,
        and the coefficient stays the same over the two steps of an impact. With no
        candidate, the smallest of all (``e`` then drops out unless ``g`` is curved)."""
        coefficients = self.restitution
        if coefficients.size == 0:
            return 0.0
        system = self.system
        candidates = (system.gaps(t_next, free) < 0.0) | (system.gaps(t_next, previous) < 0.0)
        return float(coefficients[candidates].min() if candidates.any() else coefficients.min())

    def project_onto_admissible(self, metric, t: float, target: np.ndarray, scale: float):
        """``P_K(target)`` by successive linearisation (module docstring).

        ``scale`` (kinetic norm of a displacement) sets the stop test. Returns
        ``(Z, mu, gaps, rows, (status, iterations, seconds))`` with gaps and
        gradient rows of every constraint at ``Z`` and ``M (Z - target) = rows^T mu``.
        """
        system = self.system
        point = target
        gaps = system.gaps(t, point)
        rows = system.gradients(t, point)
        mu = np.zeros(gaps.size)
        if np.all(gaps >= 0.0):
            return point, mu, gaps, rows, ("unconstrained", 0, 0.0)
        iterations, seconds, status, change = 0, 0.0, "closed_form", np.inf
        linearised = gaps < 0.0  # grows only, so the active set cannot cycle
        for count in range(1, self.max_iterations + 1):
            rows_in = np.flatnonzero(linearised)
            step, multipliers, status, inner, spent = metric_projection(
                metric, rows[rows_in], target - point, -gaps[rows_in], self.solver, t
            )
            iterations, seconds = iterations + inner, seconds + spent
            mu = np.zeros(gaps.size)
            mu[rows_in] = multipliers
            change = np.sqrt(2.0 * metric.kinetic_energy(step))
            point = point + step
            gaps = system.gaps(t, point)
            rows = system.gradients(t, point)
            outside = (gaps < 0.0) & ~linearised
            linearised |= gaps < 0.0
            # Round-off floor: Z itself is only known to a few ulps of |Z|_M.
            roundoff = _ROUNDOFF * np.sqrt(2.0 * metric.kinetic_energy(point))
            if count > 1 and not outside.any() and change <= self.tolerance * scale + roundoff:
                return point, mu, gaps, rows, (status, iterations, seconds)
        raise ConvergenceError(
            f"Paoli-Schatzman projection onto the admissible set did not converge in {self.max_iterations} "
            f"linearisations at t = {t:.6g} s (last move {change:.3g}, displacement scale {scale:.3g}, "
            f"kinetic norm)",
            t=t,
            status="linearisation",
        )
