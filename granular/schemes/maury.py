"""Maury's velocity projection with a restitution law (Bernicot and Lefebvre-Lepot,
*Existence results for non-smooth second order differential inclusions, convergence
result for a numerical scheme and application to the modelling of inelastic
collisions*, 2010).

One step from ``(t_n, q^n, u^n)`` with step ``h``:

1. Predict ``v = u^n + h M^{-1} f`` (``f`` at ``(t_n, q^n, u^n)``, or at
   ``u^{n+1}`` by a fixed point when ``force_update="implicit"``).
2. Build the constraints at ``(t_{n+1}, q^n)``: gaps ``D`` and Jacobian ``G``.
3. Restitution stage (only rows with ``e_k > 0``). The impacting rows ``I`` are
   those predicted to close within the step (``D_k + h G_k v < 0``) whose normal
   velocity before the step approaches faster than the force alone can change it in
   one step (``a_k = G_k u^n < -h |G_k M^{-1} f|``), plus what the sustained
   (non-impact) contacts of the previous step changed it by (``|G_k| |M^{-1} G^T
   lambda_prev|``, the force increment a body in a pile receives through its
   supports): a slower approach cannot be told from a resting contact at this step
   size and is treated inelastically (the bounce threshold of game engines, here
   derived, not tuned). Impact impulses do not raise the threshold, so a body struck
   in one step bounces off the next body in the following step. On them apply
   Moreau's impact law to ``u^n`` in the mass metric (Dzonou, Monteiro Marques and
   Paoli, *A convergence result for a vibro-impact problem with a general inertia
   operator*, 2009, eq. 3; Paoli and Schatzman, *A numerical scheme for impact
   problems*, 1999, eq. 1.6):
   ``w = P_C u^n`` with ``C = {G_I u >= 0}`` and multipliers ``mu``, then
   ``u* = w + M^{-1} G_I^T (e mu)``, i.e. ``u* = P_C u^n - e P_N u^n`` for a common
   ``e``. Tangential components are kept, normal ones reversed and scaled by e.
   Impacting rows of spheres that carry friction (or rolling resistance) instead
   take Newton's law with Coulomb friction, normal and tangential impulses solved
   together in one problem from ``u^n`` (`granular.contact.impact`: Coulomb's law between
   the impulse and the modified velocity ``U_N^+ + e U_N^-``, ``U_T^+ + e_t U_T^-``;
   Jean, 1999; Acary and Brogliato, 2008): a frictionless bounce followed by the
   frictional stage 4 would find a separating contact and apply no friction, so a
   collision would neither rub nor spin. For one contact both laws give the same
   normal rebound ``-e`` times the approach. Should the impact's sweeps not
   converge, that impact is Moreau's frictionless one (the run goes on).
4. Maury's projection of ``v* = u* + h M^{-1} f`` onto
   ``K = {u : D + h G u >= 0}``, where a row that bounced at stage 3 also keeps its
   rebound, ``G_k u >= G_k u*``; then ``q^{n+1} = q^n + h u^{n+1}``.
5. Frictional spheres, and spheres against curved walls: the Coulomb sweeps meet
   the constraint of stage 4 to their tolerance, not to round-off, and a linearised
   row of a `Cylinder`'s side or a `Cone` misses the surface's curvature, so the
   positions are then moved by the smallest displacement in the metric that closes
   the gaps they leave, ``q^{n+1} = q^n + h (u^{n+1} + w)`` with ``u^{n+1}`` kept
   (`granular.contact.gap_closure`; ``close_gaps=False`` skips it). A frictionless
   step is closed only when a curved wall's row sinks beyond the closure's accuracy.

Why this discrete law (and the traps it avoids):

- With every ``e_k = 0`` the set ``I`` is empty and the step *is* Maury's scheme.
- The bounce uses the velocity before the step, so the restitution does not depend
  on where inside the step the contact closes; the impact is applied up to one
  step's travel before contact, a first-order (O(h)) position and timing error.
- The rebound is exactly ``-e`` times the approach (``G_k u^{n+1} = -e G_k u^n`` for a
  lone impact): over the impact step the contact also takes the normal part of the
  force impulse ``h f``, as an impulsive reaction does. Letting the force act on
  top of the rebound instead (``G_k u^{n+1} = -e a_k + h G_k M^{-1} f``) loses
  ``g h`` of rebound speed a bounce: 4.4% of the energy of an e = 1 ball over ten
  bounces at h = 1e-3, and the ball comes to rest early. With the rebound kept, an
  elastic ball retraces each flight backwards (the explicit free flight is
  time-reversible) and returns to its apex to solver tolerance.
- A contact closed by the previous step (``D = 0``, ``a = -D_prev/h`` with
  ``D_prev < g h^2``) approaches slower than the force increment ``g h``: it is not
  an impact, so the ball settles instead of hopping and comes exactly to rest.
- Energy: ``|u*|_M <= |u^n|_M`` (Moreau's decomposition) and, without forces,
  Maury's projection never raises the kinetic energy (0 is admissible): E never
  rises. With a force ``f`` the explicit free flight loses ``1/2 h^2 |f|^2_{M^-1}``
  a step and an impact step returns up to ``h |lambda_k G_k M^{-1} f|`` (the force
  impulse the contact took), so an elastic ball's energy swings by
  ``1/2 m g h V`` about its initial value instead of drifting. With per-contact
  coefficients Moreau's law can create energy in a cluster of simultaneous
  impacts (``mu^T E W E mu > mu^T W mu``); such a cluster then uses its smallest
  coefficient.
- Positions stay feasible: the last stage is Maury's constraint (met exactly by the
  frictionless projection, and closed by stage 5 where friction is swept).

The total multiplier is ``lambda = (1 + e) mu + lambda_K`` (``P_N + lambda_K`` for a
frictional impact) and the discrete momentum balance ``M (u^{n+1} - v) = G^T lambda
+ T^T lambda_T`` holds, ``lambda_T`` the impact's and Maury's friction impulses
together (both reported in the step's `Contacts`).

Rotation (`granular.spheres.world`). The scheme carries each sphere's angular velocity
``omega`` (N, 3) (rad/s) and orientation (N, 4) (unit quaternions), because the
state the `Simulation` hands it is ``(q, u)`` of the centres. For a world that
`rotates` (frictional), the steps above run on the generalised velocity ``(u,
omega)`` (6N,) in the metric ``diag(m .., J ..)``: the prediction is ``(u^n + h
M^{-1} f, omega^n)`` (no torque but the contacts'), normal rows have no
rotational part, and the tangential rows of the frictional impact law (stage 3)
and of the frictional projection (stage 4) turn the spheres. Otherwise ``omega``
is constant.
Either way the orientation then turns by the exact rotation of angle ``|omega^{n+1}|
h`` about ``omega^{n+1}`` (`granular.spheres.rotation.rotate_quaternions`), as ``q^{n+1} = q^n +
h u^{n+1}``. The rotational state advances only with a step whose results are
finite; `set_rotation` restarts it (e.g. when stepping from a foreign state).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import numpy as np

from ..constraints import Contacts
from ..errors import (
    ConvergenceError,
    InvalidInputError,
    JammingError,
    SolverToleranceWarning,
    at_time,
    solver_errors_at,
)
from ..contact.coulomb_rows import transposed_product
from ..contact.friction import project_frictional
from ..contact.friction_gauss_seidel import recent_sweeps_after, stall_floor
from ..contact.problem import ContactProblem, tangential_jacobian
from ..contact import active_set
from ..contact.gap_closure import close_gaps, closure_workspace, overlaps_a_wall
from ..contact.projection import project
from ..protocols import CoordinateSystem, searches_neighbours
from ..records.results import SolverStats, StepResult
from ..spheres.rotation import rotate_quaternions, unit_quaternions
from ..validation import as_number, finite_array
from .common import initial_state, make_result
from .maury_impacts import restitution_stage
from .maury_state import (
    MauryState,
    exchanged_state,
    remembered,
    warm_starts,
)
from .registry import refuse_unless_supported

#: The statuses of a spheres' frictional answer found by the Coulomb sweeps (accepted, or
#: a best answer kept; a frictionless projection's kept answer is "inaccurate" too, so
#: the frictional branch is checked as well): their sweep counts set the next stalls' floor
#: (`granular.contact.friction_gauss_seidel.stall_floor`).
SWEPT = ("gauss_seidel", "inaccurate")


def checked_sweep_aim(value) -> float | None:
    """``sweep_aim`` (`MauryScheme`): None, or one number in (0, 1]; `InvalidInputError`
    saying what was given otherwise (an aim of 0 would never be met, and one above 1
    would accept answers beyond the tolerance)."""
    if value is None:
        return None
    if isinstance(value, (bool, str, bytes)):  # True would read as 1, "0.5" as a number
        raise InvalidInputError(f"sweep_aim must be None or one number in (0, 1], got {value!r}")
    number = as_number(value, "sweep_aim", "None or one number in (0, 1]")
    if not 0.0 < number <= 1.0:  # NaN fails too
        raise InvalidInputError(f"sweep_aim must lie in (0, 1] (a fraction of the tolerance), got {number}")
    return number


def _missed_ratio(missed) -> float:
    """How far a kept best answer missed its tolerance (residual / tolerance at the worst
    contact), 0 when the law held."""
    if missed is None or not missed.tolerance:
        return 0.0
    return float(missed.residual / missed.tolerance)


class MauryScheme:
    """The default scheme: velocity projection with restitution (module docstring).

    Parameters
    ----------
    system : SphereWorld or ConstrainedSystem
    dt : float
        Time step (s).
    solver : {"osqp", "cvxpy"}
        Route of the frictionless projections (`granular.Simulation`); frictional
        contacts are solved by the Coulomb sweeps with either.
    force_update : {"explicit", "implicit"}
        ``explicit`` evaluates the force at ``u^n``; ``implicit`` at ``u^{n+1}`` by a
        fixed point (Dzonou, Monteiro Marques and Paoli, 2009, section 2), stopped when successive iterates differ by
        less than ``fixed_point_tolerance`` (relative, kinetic norm) or raising
        `ConvergenceError` after ``fixed_point_iterations``.
    warm_start : bool
        Start the contact solvers (the active-set method, the Coulomb sweeps, the gap
        closure) from the previous step's impulses of the contacts that persist.
    absorb_force_at_impact : bool
        Keep each bounced row's rebound ``G_k u*`` in Maury's stage (default, module
        docstring); ``False`` lets the force act on top of it (for comparison only:
        it loses ``h |G_k M^{-1} f|`` of rebound speed a bounce).
    strict : bool
        A contact solve that misses its tolerance (the Coulomb sweeps, or every route
        of the frictionless projection) raises (`ConvergenceError`, `SolverError`):
        the step fails and the simulation keeps its last state. By default (False)
        the step keeps the solver's best answer, records its residual in
        `SolverStats` (``residual``, ``missed``) and warns once per scheme
        (`SolverToleranceWarning`). A jam (`JammingError`) raises either way.
    close_gaps : bool
        Move the positions of frictional spheres, and of spheres against a curved wall
        (a `Cylinder`'s side, a `Cone`), after each step by the smallest displacement
        that closes the gaps the Coulomb sweeps or the curvature leave (stage 5 of the
        module docstring; `granular.contact.gap_closure`). Default True: contacts end
        each step touching, within a tenth of the overlap the world accepts as contact
        (``OVERLAP_TOLERANCE`` of a radius), also inside curved walls. False keeps
        ``q^{n+1} = q^n + h u^{n+1}``, for a cheaper step: closed contacts then overlap
        by up to ``h`` times the sweeps' tolerance, and a sphere sliding by ``delta``
        a step inside a wall of radius ``R`` by about ``delta^2 / (2 R)``.
    sweep_aim : float or None
        The fraction of their tolerance, in (0, 1], the Coulomb sweeps of spheres aim
        at (in Maury's stage and the frictional impacts; a later working-set round
        after a stalled one aims at the level that round reached,
        `granular.contact.friction._later_round_target`). An answer is accepted when
        every contact is within the tolerance and the loaded contacts are within the
        aim of it in root mean square, or when every contact is within the tolerance
        once the sweeps stall, so every accepted answer meets the tolerance whatever the
        aim; the Newton repairs aim at a quarter of it. None (the default) aims at an
        eighth, so that the network carrying the load is typically an eighth of the
        tolerance from its law. 1 accepts any answer within the tolerance
        (`granular.contact.friction_gauss_seidel.TARGET`).
    """

    name = "velocity"

    def __init__(
        self,
        system,
        dt: float,
        solver: str = "osqp",
        force_update: str = "explicit",
        fixed_point_tolerance: float = 1e-10,
        fixed_point_iterations: int = 50,
        warm_start: bool = True,
        absorb_force_at_impact: bool = True,
        strict: bool = False,
        close_gaps: bool = True,
        sweep_aim: float | None = None,
    ):
        refuse_unless_supported(self.name, system, dt)
        if force_update not in ("explicit", "implicit"):
            raise InvalidInputError(f"force_update must be 'explicit' or 'implicit', got {force_update!r}")
        self.system = system
        self.dt = dt
        self.solver = solver
        self.force_update = force_update
        self.fixed_point_tolerance = fixed_point_tolerance
        self.fixed_point_iterations = fixed_point_iterations
        self.warm_start = warm_start
        self.absorb_force_at_impact = absorb_force_at_impact
        self.strict = bool(strict)
        self.close_gaps = bool(close_gaps)
        self.sweep_aim = checked_sweep_aim(sweep_aim)
        self._warned_missed = False  # one SolverToleranceWarning per scheme, i.e. per run
        # What the system offers, decided once (granular.protocols): spheres found by
        # a neighbour search carry radii, speeds and a rotational state.
        self._spheres = searches_neighbours(system)
        self._rotating = self._spheres and bool(system.rotates)
        # Frictionless steps are exact but for curved walls, whose linearised rows let a
        # sliding sphere sink: their gaps are closed too (`granular.contact.gap_closure`).
        self._curved_walls = self._spheres and bool(getattr(system, "curved_walls", False))
        self._moving_metric = isinstance(system, CoordinateSystem) and not system.constant_metric
        #: The contact solver's cache (`granular.contact.active_set.Workspace`): its factor,
        #: kept across steps, not state (rebuilding it changes no result, so a restart need
        #: not store it), and the statistics of its last solve (``workspace.last``).
        self.workspace = active_set.Workspace()
        #: The gap closure's own factor cache (`granular.contact.gap_closure`), likewise.
        self.closure_workspace = closure_workspace()
        self.state = self.init(*system.initial_state())

    @property
    def _n(self) -> int:
        """The contact keys' body count: the spheres present (it changes with inlets)."""
        return self.system.n if self._spheres else 0

    # -- the state -------------------------------------------------------------------
    def init(self, t: float, q: np.ndarray, u: np.ndarray) -> MauryState:
        """The state at ``(t, q, u)`` with nothing carried: no warm start, no kick,
        the system's initial rotation."""
        omega, orientations = self.system.initial_rotation() if self._spheres else (None, None)
        return MauryState(
            *initial_state(t, q, u), np.zeros(0, dtype=np.int64), np.zeros(0), omega=omega, orientations=orientations
        )

    def resume(self, t: float, q: np.ndarray, u: np.ndarray) -> MauryState:
        """The current state moved to ``(t, q, u)``: what is carried stays (`step`)."""
        return replace(self.state, t=float(t), q=np.asarray(q, dtype=float), u=np.asarray(u, dtype=float))

    def exchanged(self, state: MauryState, exchange, n_before: int) -> MauryState:
        """``state`` carried over to the spheres after ``exchange`` (a
        `granular.spheres.flows.Exchange` of the world's ``n_before`` spheres): positions,
        velocities, rotation and sustained-contact kick of the kept spheres, then the
        inserted ones (at rest in rotation, identity orientations, no kick); the warm
        starts of the rows between kept spheres and walls, under their new keys
        (`granular.constraints.remap_keys`), so they follow the spheres' ids."""
        # the solvers' factors belong to the former rows and columns: rebuilt at the next step
        self.workspace = active_set.Workspace()
        self.closure_workspace = closure_workspace()
        return exchanged_state(state, exchange, n_before, self._n)

    def warm_values(self, state: MauryState) -> dict:
        """What ``state`` carries beyond ``(t, q, u)``, by run-file name (`MauryState`)."""
        return state.warm_values()

    def restored(self, state: MauryState, values: dict) -> MauryState:
        """``state`` with the carried values of a run file's restart group set."""
        return state.with_warm_values(values)

    # -- the rotational state -----------------------------------------------------------
    @property
    def angular_velocities(self):
        """Current angular velocities (N, 3) (rad/s), or None for a system without rotation."""
        return None if self.state.omega is None else self.state.omega.copy()

    @property
    def orientations(self):
        """Current orientations (N, 4), unit quaternions ``(w, x, y, z)``, or None."""
        return None if self.state.orientations is None else self.state.orientations.copy()

    def set_rotation(self, angular_velocities, orientations=None) -> None:
        """Restart the rotational state: ``angular_velocities`` (N, 3) rad/s and
        ``orientations`` (N, 4) unit quaternions (kept when None). The scheme's state
        holds them; the system is not changed."""
        state = self.state
        if state.omega is None:
            raise InvalidInputError("this system has no rotational state")
        omega = finite_array(angular_velocities, "angular_velocities", state.omega.shape).copy()
        orientations = state.orientations if orientations is None else unit_quaternions(orientations, omega.shape[0])
        self.state = replace(state, omega=omega, orientations=orientations)

    # -- the step --------------------------------------------------------------------
    def step(self, t: float, q: np.ndarray, u: np.ndarray) -> StepResult:
        """Advance ``(t, q, u)`` by one step with what the scheme carries (`resume`),
        keep the new state and return the `StepResult` (for callers that hold the
        state themselves as ``(t, q, u)``; `Simulation` calls `advance`)."""
        self.state, result = self.advance(self.resume(t, q, u), t)
        return result

    def advance(self, state: MauryState, t: float | None = None) -> tuple[MauryState, StepResult]:
        """One step from ``state``: ``(the state at t + dt, the StepResult)``.

        ``t`` (s) is the state's time as the caller counts it (`Simulation` passes
        ``t_0 + n dt``, free of accumulated round-off); ``state.t`` by default. The
        scheme object is not changed (but for its solver's factor cache)."""
        system, h = self.system, self.dt
        t = state.t if t is None else t
        q, u = state.q, state.u
        t_next = t + h
        start = time.perf_counter()
        if self._rotating:  # the generalised velocity (u, omega), module docstring
            assert state.omega is not None  # a rotating world's state carries omega (init)
            u = np.concatenate([u, state.omega.reshape(-1)])
        metric = system.metric(t_next, self._metric_point(q, u))
        force = system.force(t, q, u)
        predicted = u + h * metric.solve(force)
        speed = self._speed_bound(u, predicted)
        slack = system.speed_slack(t_next, h) if self._spheres else 0.0
        while True:
            outcome = self._solve(metric, t, q, u, force, predicted, speed, state)
            new_speed = self._speed_after(outcome["velocities"])
            if new_speed <= speed + slack:
                break
            speed = 2.0 * new_speed  # a sphere outran the search margin: widen it and redo
        if self.force_update == "implicit":
            outcome, predicted = self._implicit(metric, t, q, u, outcome, speed, state)
        if self.close_gaps and (outcome["frictional_spheres"] or self._curved_walls):
            outcome = self._closed(metric, outcome, state, t_next)
        return self._result(t_next, q, outcome, predicted, metric, time.perf_counter() - start, state)

    def _speed_limit(self, t_next):
        """Speed (m/s) of a sphere that crosses its own radius in one step: Maury's
        linearised gaps stop describing a step that needs faster ones."""
        return float(self.system.radii_at(t_next).min(initial=np.inf)) / self.dt if self._spheres else None

    def _metric_point(self, q, u):
        """Where the metric is evaluated: ``q^n + h u^n`` (the ``q_{n+1}`` of Dzonou,
        Monteiro Marques and Paoli, 2009) for a configuration-dependent mass."""
        return q + self.dt * u if self._moving_metric else q

    def _speed_bound(self, u, predicted) -> float:
        """The neighbour search's speed bound (m/s); infinite without a search."""
        if not self._spheres:
            return np.inf
        speeds = self.system.body_speeds
        return float(max(speeds(u).max(initial=0.0), speeds(predicted).max(initial=0.0)))

    def _speed_after(self, velocities) -> float:
        return float(self.system.body_speeds(velocities).max(initial=0.0)) if self._spheres else 0.0

    def _solve(self, metric, t, q, u, force, predicted, speed, state) -> dict:
        system, h = self.system, self.dt
        t_next = t + h
        clock = time.perf_counter()
        constraints = system.constraints(t_next, q, h, speed)
        building = time.perf_counter() - clock
        G = constraints.jacobian
        clock = time.perf_counter()
        try:
            u_star, restitution_impulse, impact = restitution_stage(
                metric,
                constraints,
                u,
                predicted - u,
                self.dt,
                self.solver,
                self._spheres,
                t_next,
                state.previous_kick,
                self.sweep_aim,
            )
        except JammingError as error:
            raise self._jamming(error, t_next) from None
        impacts = time.perf_counter() - clock
        increment, absorbed = self._force_increment(metric, constraints, predicted - u, restitution_impulse, t_next)
        restitution_impulse = restitution_impulse + absorbed
        warm, warm_friction, warm_rolling, warm_closure = warm_starts(constraints, state, self._n, self.warm_start)
        try:
            with solver_errors_at(t_next):
                # granular.contact.friction
                frictional = bool(np.any(constraints.laws.friction > 0.0) or constraints.rolling is not None)
                if frictional:
                    problem = ContactProblem.from_constraints(
                        metric,
                        constraints,
                        u_star + increment,
                        h,
                        warm_start=warm,
                        warm_tangential=warm_friction,
                        warm_rolling=warm_rolling,
                        stall_floor=stall_floor(state.recent_sweeps),
                        sweep_aim=self.sweep_aim,
                    )
                    maury = project_frictional(problem, strict=self.strict)
                else:
                    problem = ContactProblem(
                        metric,
                        G,
                        u_star + increment,
                        constraints.lower(h),
                        warm_start=warm,
                        keys=constraints.keys(self._n),
                    )
                    maury = project(
                        problem,
                        solver=self.solver,
                        workspace=self.workspace,
                        speed_limit=self._speed_limit(t_next),
                        strict=self.strict,
                    )
        except JammingError as error:
            raise self._jamming(error, t_next) from None
        self._warn_if_missed(maury.missed, t_next)
        solve = time.perf_counter() - clock
        tangential, rolling = maury.tangential_impulses, maury.rolling_impulses
        return dict(
            constraints=constraints,
            velocities=maury.velocities,
            impulses=maury.impulses + restitution_impulse,
            maury_impulses=maury.impulses,
            sustained=np.where(restitution_impulse > 0.0, 0.0, maury.impulses),
            tangential_impulses=_total(tangential, impact.tangential),
            rolling_impulses=_total(rolling, impact.rolling),
            maury_tangential=tangential,
            maury_rolling=rolling,
            status=maury.status,
            iterations=maury.iterations + impact.iterations,
            violation=max(maury.violation, impact.violation),
            residual=maury.residual,
            missed=_missed_ratio(maury.missed),
            swept=maury.iterations if frictional and self._spheres and maury.status in SWEPT else None,
            frictional_spheres=frictional and self._spheres,
            warm_closure=warm_closure,
            seconds={
                "neighbors": constraints.seconds.get("neighbors", 0.0),
                "assembly": building - constraints.seconds.get("neighbors", 0.0),
                "solve": solve,
                "impacts": impacts,
            },
        )

    def _closed(self, metric, outcome: dict, state: MauryState, t_next: float) -> dict:
        """``outcome`` with the gap closure of stage 5 (`granular.contact.gap_closure`):
        ``closure`` the velocity (d,) whose step closes the gaps at ``t_next`` (s),
        ``closure_impulses`` its multipliers (m,), both None when no gap needed closing."""
        clock = time.perf_counter()
        constraints = outcome["constraints"]
        swept_to = self.system.advance(state.q, outcome["velocities"], self.dt)
        walls_after = self.system.wall_rows_at(constraints, t_next, swept_to)
        smallest_radius = float(self.system.radii_at(t_next).min(initial=np.inf))
        if not outcome["frictional_spheres"] and not overlaps_a_wall(constraints, walls_after, smallest_radius):
            return outcome  # an exact frictionless step with nothing sunk into a curved wall
        closure, multipliers = close_gaps(
            metric,
            constraints,
            outcome["velocities"],
            self.dt,
            constraints.keys(self._n),
            self.closure_workspace,
            outcome["warm_closure"],
            pushing=outcome["maury_impulses"] > 0.0,
            walls_after=walls_after,
            smallest_radius=smallest_radius,
        )
        seconds = dict(outcome["seconds"], closure=time.perf_counter() - clock)
        return dict(outcome, closure=closure, closure_impulses=multipliers, seconds=seconds)

    def _warn_if_missed(self, missed, t_next) -> None:
        """Warn once per scheme that the step ending at ``t_next`` (s) kept a best answer
        short of its tolerance."""
        if missed is None or self._warned_missed:
            return
        self._warned_missed = True
        warnings.warn(
            SolverToleranceWarning(
                f"{at_time(missed, t_next)}; the step keeps that best answer and records its residual in "
                "StepResult.solver (residual, missed), and so do later steps without a further warning; "
                "pass strict=True (granular run --strict) to stop instead"
            ),
            stacklevel=2,
        )

    def _force_increment(self, metric, constraints, increment, restitution_impulse, t_next):
        """The force's velocity increment ``h M^{-1} f`` (d,) that Maury's stage adds to
        ``u*``, and the impulses (m,) the bounced rows take from it.

        On the rows that bounced in this step (``restitution_impulse > 0``) the
        increment is projected onto ``{w : G_k w >= 0}`` in the metric M: the contact
        takes the part of the force impulse that pushes into it, as an impulsive
        reaction does, so the rebound leaves at ``e`` times the approach speed
        (module docstring). Other contacts then act on ``u* + w`` as usual.
        """
        zero = np.zeros(constraints.size)
        bounced = np.flatnonzero(restitution_impulse > 0.0)
        if not self.absorb_force_at_impact or bounced.size == 0:
            return increment, zero
        rows = constraints.jacobian[bounced]
        try:
            with solver_errors_at(t_next):
                projected = project(ContactProblem(metric, rows, increment, np.zeros(bounced.size)), solver=self.solver)
        except JammingError as error:
            raise self._jamming(error, t_next) from None
        absorbed = zero.copy()
        absorbed[bounced] = projected.impulses
        return projected.velocities, absorbed

    def _implicit(self, metric, t, q, u, outcome, speed, state):
        """Fixed point on ``u^{n+1}`` of ``f(t_{n+1}, q, u^{n+1})`` (the implicit update of
        Dzonou, Monteiro Marques and Paoli, 2009)."""
        h = self.dt
        previous = outcome["velocities"]
        scale = max(np.sqrt(2.0 * metric.kinetic_energy(u)), np.sqrt(2.0 * metric.kinetic_energy(previous)), 1e-300)
        for _ in range(self.fixed_point_iterations):
            force = self.system.force(t + h, q, previous)
            predicted = u + h * metric.solve(force)
            outcome = self._solve(metric, t, q, u, force, predicted, speed, state)
            change = np.sqrt(2.0 * metric.kinetic_energy(outcome["velocities"] - previous))
            previous = outcome["velocities"]
            if change <= self.fixed_point_tolerance * scale:
                return outcome, predicted
        raise ConvergenceError(
            f"implicit force update did not converge in {self.fixed_point_iterations} iterations "
            f"at t = {t + h:.6g} s (last change {change:.3g}, kinetic norm)",
            t=t + h,
            status="fixed_point",
        )

    def _jamming(self, error: JammingError, t_next: float) -> JammingError:
        fraction = self.system.packing_fraction(t_next) if self._spheres else None
        detail = "" if fraction is None else f"; packing fraction {fraction:.4f}"
        return JammingError(
            f"no admissible velocity at t = {t_next:.6g} s: the bodies cannot fit (jammed){detail}",
            t=t_next,
            status=error.status,
            packing_fraction=fraction,
        )

    def _result(self, t_next, q, outcome, predicted, metric, seconds, state) -> tuple[MauryState, StepResult]:
        system, h = self.system, self.dt
        constraints = outcome["constraints"]
        velocities = outcome["velocities"]
        impulses = outcome["impulses"]
        tangential = outcome.get("tangential_impulses")
        maury_tangential, maury_rolling = outcome.get("maury_tangential"), outcome.get("maury_rolling")
        # Maury's impulses alone start the next step's projection: a row that bounced
        # separates at the next step, and its impact impulse would only mislead it.
        carried = remembered(
            constraints,
            outcome["maury_impulses"],
            maury_tangential,
            state,
            self._n,
            self.warm_start,
            rolling=maury_rolling,
            closure=outcome.get("closure_impulses"),
        )
        contact_change = constraints.jacobian.T @ impulses
        sustained = outcome["sustained"]
        # Without impacts the sustained impulses are all of them (one product saved).
        sustained_change = contact_change if np.array_equal(sustained, impulses) else constraints.jacobian.T @ sustained
        rolling = outcome.get("rolling_impulses")
        if tangential is not None:
            friction_change = _friction_change(constraints, tangential, rolling)
            contact_change = contact_change + friction_change
            # An impact's friction is no sustained force: it does not raise the threshold.
            if maury_tangential is not tangential or maury_rolling is not rolling:
                friction_change = _friction_change(constraints, maury_tangential, maury_rolling)
            sustained_change = sustained_change + friction_change
        # Only sustained contacts (Maury stage, not an impact) raise the next bounce
        # threshold: a sphere struck by an impact must be able to bounce at the next step.
        kick = metric.solve(sustained_change)
        closure = outcome.get("closure")
        q_next = system.advance(q, velocities if closure is None else velocities + closure, h)
        wall_work = _wall_work(constraints, impulses, tangential)
        dissipated = -0.5 * float(contact_change @ (velocities + predicted)) + wall_work
        timing = dict(outcome["seconds"], total=seconds)
        rotation = self._advance_rotation(velocities, state)
        torque = None if rolling is None else rolling * constraints.rolling_radius[:, None]  # N m s
        radii = system.radii_at(t_next) if self._spheres else None
        result = make_result(
            system,
            t_next,
            q_next,
            velocities,
            predicted,
            Contacts.from_constraints(constraints, impulses, tangential, torque),
            dissipated,
            SolverStats(
                outcome["status"],
                outcome["iterations"],
                outcome["violation"],
                timing,
                outcome["residual"],
                outcome["missed"],
            ),
            rotation,
            radii,
        )
        if wall_work:
            result = replace(result, wall_work=wall_work)
        if closure is not None:  # the displacement's potential energy (potential_energy is linear in q)
            result = replace(result, closure_energy=system.potential_energy(t_next, h * closure[: q_next.size]))
        omega, orientations = state.omega, state.orientations
        if rotation is not None and np.all(np.isfinite(rotation[0])) and np.all(np.isfinite(rotation[1])):
            omega, orientations = rotation  # only a finite rotation is carried
        swept = outcome.get("swept")
        recent = state.recent_sweeps if swept is None else recent_sweeps_after(state.recent_sweeps, swept)
        return MauryState(
            t_next,
            q_next.copy(),
            velocities[: q_next.size].copy(),
            previous_kick=kick,
            omega=omega,
            orientations=orientations,
            recent_sweeps=recent,
            **carried,
        ), result

    def _advance_rotation(self, velocities, state):
        """``(omega^{n+1} (N, 3), orientations^{n+1} (N, 4))``, or None without rotational
        state (the spheres' rotation: ``omega`` from the projection when the world
        `rotates`, else constant, and the orientations turned by it over the step)."""
        if state.omega is None:
            return None
        n = state.omega.shape[0]
        omega = velocities[3 * n :].reshape(n, 3).copy() if self._rotating else state.omega
        orientations = state.orientations
        if np.any(omega):
            orientations = rotate_quaternions(orientations, omega, self.dt)
        return omega.copy(), orientations.copy()


def _total(maury, impact):
    """Maury's impulses plus the impact's (either may be None)."""
    if impact is None:
        return maury
    return impact if maury is None else maury + impact


def _wall_work(constraints, impulses, tangential) -> float:
    """Work (J) the moving walls did on the spheres over the step: each wall row's
    impulse (``lambda_k n_k + sum_a l_T,k,a t_a``, N s) times the wall's material
    velocity at the contact, ``sum_k lambda_k (n_k . w_k) + sum_{k,a} l_T,k,a (t_a . w_k)``
    (`granular.constraints.ConstraintSet.normal_offset` and ``tangential_offset``; 0
    for still walls and pairs). An impulse ``P`` delivered while the wall's material
    moves at ``w`` does the work ``P . w`` (the wall's velocity is prescribed, so
    constant through the impulse); the kinetic energy the spheres gain is ``P . (u^{n+1}
    + v) / 2``, so the energy the contacts dissipate is the difference, ``-P . ((u^{n+1}
    - w) + (v - w)) / 2``: the still-wall expression in the wall's frame, >= 0 for
    Moreau's and Newton's laws whatever the wall's motion. Rolling rows see the
    sphere's own spin only and do no work on the wall."""
    work = 0.0
    if constraints.normal_offset is not None:
        work += float(np.dot(impulses, constraints.normal_offset))
    if tangential is not None and constraints.tangential_offset is not None and tangential.shape[1]:
        work += float(np.sum(tangential * constraints.tangential_offset))
    return work


def _friction_change(constraints, tangential, rolling):
    """``T^T l_T + R^T l_R`` (d,) (N s), the generalised impulse of friction and rolling
    (0 for ``tangential`` None)."""
    if tangential is None:
        return 0.0
    change = (
        transposed_product(tangential_jacobian(constraints)[0], tangential.reshape(-1))
        if tangential.shape[1] and constraints.tangents is not None
        else 0.0
    )
    if rolling is not None:
        change = change + transposed_product(constraints.rolling, rolling.reshape(-1))
    return change
