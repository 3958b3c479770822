"""The ``"dzonou-monteiro-marques"`` scheme: the velocity-based scheme (9) of Dzonou,
Monteiro Marques and Paoli (*A convergence result for a vibro-impact problem with a
general inertia operator*, 2009) for a `ConstrainedSystem`, positions first. Named
after the paper's first two authors, which keeps it apart from the Paoli-Schatzman
scheme; its former scheme string is still accepted, with a deprecation warning
(`granular.schemes.registry.DEPRECATED_SCHEMES`).

One step from ``(t_i, q_i, u_i)`` with step ``h`` (ibid., section 2):

    q_{i+1} = q_i + h u_i
    u_{i+1} = -e u_i + (1 + e) proj_{q_{i+1}}(u_i + h/(1+e) M^{-1}(q_{i+1}) f_{i+1}, V_{i+1})

``proj_q(., V)`` is the projection in the kinetic metric of ``M(q_{i+1})`` onto
the admissible velocities ``V_{i+1} = {u : dg_k/dt + grad g_k . u >= 0 for every k
with g_k(t_{i+1}, q_{i+1}) <= 0}``; ``V = R^d`` when no constraint is active.
The paper writes ``g <= 0`` and a time-independent ``g``; here admissible means
``g >= 0`` (so its ``V = {grad g . u <= 0}`` becomes ``grad g . u >= 0``), and a
time-dependent ``g`` (a moving obstacle) adds its rate ``dg/dt`` (central finite
differences in time), which makes the law act on the *relative* normal velocity.

Force (``f(t, q, u)``, the system's convention):

- ``force_update="explicit"``: ``f_{i+1} = f(t_{i+1}, q_{i+1}, u_i)`` (the
  paper's explicit update, new position, old velocity);
- ``force_update="implicit"``: ``f_{i+1} = f(t_{i+1}, q_{i+1}, u_{i+1})`` by a fixed
  point on ``u_{i+1}``, started from the explicit step, stopped when two iterates
  differ by less than ``fixed_point_tolerance`` times the velocity scale (kinetic
  norm), `ConvergenceError` after ``fixed_point_iterations``.

Restitution: with one active constraint the step uses its coefficient ``e_k``
exactly. When several active constraints have different coefficients, the step
uses the smallest of them: scheme (9) has a single ``e``, and Moreau's law with
mixed coefficients can create kinetic energy in a cluster of simultaneous impacts
(see `granular.schemes.maury`); the smallest coefficient never does.

Multipliers. With ``v = u_i + h/(1+e) M^{-1} f`` the projection gives
``M (proj(v) - v) = G^T mu``, ``mu >= 0``. Writing the prediction
``p = u_i + h M^{-1} f``, the step is ``u_{i+1} = p + (1 + e)(proj(v) - v)`` (the
same algebra, with no round-off when nothing is active), so the reported impulses
``lambda = (1 + e) mu`` (N s in SI units) satisfy the discrete momentum balance
``M(q_{i+1}) (u_{i+1} - p) = G^T lambda``.

What the positions do: ``q_{i+1}`` is not projected, so the constraint is crossed
by at most one step's travel ``h |grad g . u|`` at an impact (the paper admits
this; the velocity then points back into the admissible set). Contacts report the
gap and gradient at ``q_{i+1}`` (the values that decided the active set), so an
active contact has ``gap <= 0``.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import ConvergenceError, InvalidInputError
from ..records.results import SolverStats, StepResult
from .common import (  # noqa: F401  (re-exported for the former module name)
    SchemeState,
    check_constrained_system,
    constraint_contacts,
    gap_rates,
    initial_state,
    make_result,
    metric_projection,
    restitution_coefficients,
)
from .registry import refuse_unless_supported


class DzonouMonteiroMarquesScheme:
    """Scheme (9) of Dzonou, Monteiro Marques and Paoli, 2009 (see the module docstring).

    Parameters
    ----------
    system : ConstrainedSystem
    dt : float
        Time step ``h`` (s).
    solver : {"osqp", "cvxpy"}
        Backend of `granular.contact.projection.project` when two or more constraints are
        active; one active constraint is projected in closed form.
    force_update : {"explicit", "implicit"}
    fixed_point_tolerance : float
        Relative change (kinetic norm) that stops the implicit fixed point.
    fixed_point_iterations : int
        Cap on the fixed-point iterations.
    """

    name = "dzonou-monteiro-marques"

    def __init__(
        self,
        system,
        dt: float,
        solver: str = "osqp",
        force_update: str = "explicit",
        fixed_point_tolerance: float = 1e-10,
        fixed_point_iterations: int = 50,
    ):
        refuse_unless_supported(self.name, system, dt)
        if force_update not in ("explicit", "implicit"):
            raise InvalidInputError(f"force_update must be 'explicit' or 'implicit', got {force_update!r}")
        if not fixed_point_tolerance > 0.0:
            raise InvalidInputError(f"fixed_point_tolerance must be > 0, got {fixed_point_tolerance}")
        if int(fixed_point_iterations) != fixed_point_iterations or fixed_point_iterations < 1:
            raise InvalidInputError(f"fixed_point_iterations must be a positive integer, got {fixed_point_iterations}")
        self.system = system
        self.dt = float(dt)
        self.solver = solver
        self.force_update = force_update
        self.fixed_point_tolerance = float(fixed_point_tolerance)
        self.fixed_point_iterations = int(fixed_point_iterations)
        self.restitution = restitution_coefficients(system)
        self.state = self.init(*system.initial_state())

    # -- the state: (t, q, u) and nothing else -----------------------------------------
    def init(self, t: float, q: np.ndarray, u: np.ndarray) -> SchemeState:
        return SchemeState(*initial_state(t, q, u))

    def warm_values(self, state: SchemeState) -> dict:
        return {}

    def restored(self, state: SchemeState, values: dict) -> SchemeState:
        return state

    def step(self, t: float, q: np.ndarray, u: np.ndarray) -> StepResult:
        """Advance ``(t, q, u)`` by one step; returns a `StepResult` at ``t + h``."""
        self.state, result = self.advance(SchemeState(t, q, u))
        return result

    def advance(self, state: SchemeState, t: float | None = None) -> tuple[SchemeState, StepResult]:
        """One step from ``state`` (at time ``t``, ``state.t`` by default):
        ``(the state at t + h, the StepResult)``."""
        system, h = self.system, self.dt
        t = state.t if t is None else t
        q, u = state.q, state.u
        start = time.perf_counter()
        t_next = t + h
        q_next = q + h * u
        metric = system.metric(t_next, q_next)
        gaps = system.gaps(t_next, q_next)
        rows = system.gradients(t_next, q_next)
        active = np.flatnonzero(gaps <= 0.0)
        e = float(self.restitution[active].min()) if active.size else 0.0
        G = rows[active]
        lower = -gap_rates(system, t_next, q_next, active, h)
        velocity, mu, predicted, stats = self._update(metric, u, system.force(t_next, q_next, u), G, lower, e, t_next)
        if self.force_update == "implicit":
            velocity, mu, predicted, stats = self._implicit(metric, t_next, q_next, u, velocity, G, lower, e)
        impulses = np.zeros(gaps.size)
        impulses[active] = (1.0 + e) * mu
        dissipated = -0.5 * float((rows.T @ impulses) @ (velocity + predicted))
        contacts = constraint_contacts(gaps, rows, impulses)
        timing = {"solve": stats[2], "total": time.perf_counter() - start}
        result = make_result(
            system,
            t_next,
            q_next,
            velocity,
            predicted,
            contacts,
            dissipated,
            SolverStats(stats[0], stats[1], 0.0, timing),
        )
        return SchemeState(t_next, q_next.copy(), velocity.copy()), result

    def _update(self, metric, u, force, G, lower, e, t_next):
        """``u_{i+1}`` of (9) for a given force.

        Returns ``(u_{i+1}, mu, p, (status, iterations, seconds))`` with the
        prediction ``p = u_i + h M^{-1} f``.
        """
        h = self.dt
        acceleration = metric.solve(force)
        predicted = u + h * acceleration
        if G.shape[0] == 0:
            return predicted, np.zeros(0), predicted, ("unconstrained", 0, 0.0)
        target = u + (h / (1.0 + e)) * acceleration
        projected, mu, status, iterations, seconds = metric_projection(metric, G, target, lower, self.solver, t_next)
        # -e u + (1+e) proj(target) written as p + (1+e)(proj - target): exact when inactive.
        return predicted + (1.0 + e) * (projected - target), mu, predicted, (status, iterations, seconds)

    def _implicit(self, metric, t_next, q_next, u, velocity, G, lower, e):
        """Fixed point ``u_{i+1} = Phi(f(t_{i+1}, q_{i+1}, u_{i+1}))`` (the implicit update of
        Dzonou, Monteiro Marques and Paoli, 2009)."""
        system = self.system
        scale = max(
            np.sqrt(2.0 * metric.kinetic_energy(u)),
            np.sqrt(2.0 * metric.kinetic_energy(velocity)),
            np.finfo(float).tiny,
        )
        change = np.inf
        for _ in range(self.fixed_point_iterations):
            updated, mu, predicted, stats = self._update(
                metric, u, system.force(t_next, q_next, velocity), G, lower, e, t_next
            )
            change = np.sqrt(2.0 * metric.kinetic_energy(updated - velocity))
            velocity = updated
            if change <= self.fixed_point_tolerance * scale:
                return velocity, mu, predicted, stats
        raise ConvergenceError(
            f"{self.name} implicit force update did not converge in {self.fixed_point_iterations} iterations "
            f"at t = {t_next:.6g} s (last change {change:.3g}, kinetic norm, scale {scale:.3g})",
            t=t_next,
            status="fixed_point",
        )
