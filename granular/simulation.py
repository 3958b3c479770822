"""Simulation: one system, one scheme, one time step; `step()` and `run()`.

    sim = Simulation(system, dt=1e-3)            # scheme="velocity", solver="osqp"
    result = sim.step()                           # a StepResult
    trajectory = sim.run(duration=1.0, record_every=10)

Time is ``t_n = t_0 + n dt`` (no accumulated round-off). The scheme works on flat
arrays; results are shaped like the system's state.

The scheme's state is a value (``scheme.state``: positions, velocities and what the
scheme carries, such as the previous position of a two-step scheme or the warm
start of the contact solver); a step is ``state, result = scheme.advance(state,
t_n)``, and the new state is kept only when the step succeeded with a finite result.
Schemes are looked up in `granular.schemes.registry`, which says what each needs
of a system (`granular.protocols`).
"""

from __future__ import annotations

import json
import math
import signal
import warnings
from dataclasses import replace
from typing import Callable

import numpy as np

from .constraints import Contacts
from .errors import GranularError, InvalidInputError, NonFiniteError, RunInterrupted, TimeStepWarning
from .records.restarts import continue_from
from .protocols import CoordinateSystem, searches_neighbours
from .records.recording import Frame, Recorder, missed_summary
from .records.results import StepResult
from .schemes import registry
from .schemes.common import kinetic_energy
from .schemes.registry import check_options, make_scheme
from .records.streaming import FrameWriter, StopRequest
from .records.trajectory import Trajectory
from .validation import positive_scalar
from .records.trajectory import check_frame
from .records.trajectory_format import jsonable
from .schemes.newmark import NewmarkScheme

SCHEMES = tuple(registry.SCHEMES)
SOLVERS = ("osqp", "cvxpy")

#: Largest travel of a sphere in one step, as a fraction of its radius, before a run
#: warns (`TimeStepWarning`).
#:
#: A step keeps the linearised gaps ``D + h G u >= 0`` of the pairs found near at its
#: start. The linearisation is exact along the line of centres and misses the
#: second-order term of the tangential motion: two spheres at distance ``d = r_i +
#: r_j`` whose relative tangential displacement over the step is ``s`` end
#: ``d (sqrt(1 + s^2/d^2) - 1) ~ s^2 / (2 d)`` further apart than the linear gap
#: says (a sphere sliding inside a cylinder of radius R sinks by ``s^2 / (2 (R - r))``
#: the same way). With every sphere travelling at most ``delta = MAX_TRAVEL r``,
#: ``s <= 2 delta`` and, for equal spheres (``d = 2 r``), the step's contact
#: geometry errs by at most ``(2 delta)^2 / (4 r) = MAX_TRAVEL^2 r``: 1 % of a radius
#: for a tenth. The line of centres turns by at most ``s / d = MAX_TRAVEL`` rad in
#: the step, so the normal's error ``1 - cos`` stays under 0.5 %. The error grows
#: quadratically: a sphere travelling a radius a step misjudges gaps by a whole
#: radius, and an impact is resolved on a contact the linearisation placed wrongly.
MAX_TRAVEL = 0.1


def storable_options(options: dict) -> tuple[dict, list[str]]:
    """``(options a run file's JSON meta holds, the names of those it cannot)``: numpy
    scalars and arrays become Python numbers and lists (`jsonable`: ``np.float32(0.5)``
    is not JSON, ``0.5`` is)."""
    stored, left_out = {}, []
    for name, value in options.items():
        value = jsonable(value)
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            left_out.append(name)
        else:
            stored[name] = value
    return stored, left_out


def _copied(value):
    """A copy of a warm-state value: an array, a tuple of arrays and numbers, or None."""
    if isinstance(value, tuple):
        return tuple(_copied(v) for v in value)
    return value.copy() if isinstance(value, np.ndarray) else value


class Simulation:
    """Advance a system in time with a scheme.

    Parameters
    ----------
    system : SphereWorld or ConstrainedSystem (or a beam system)
    dt : float
        Time step (s), positive.
    solver : {"osqp", "cvxpy"}
        Route of the frictionless projections. ``"osqp"`` (default): the exact
        active-set method with a sparse factor kept from step to step, then linear
        programs that tell a jam, then OSQP, each only when the one before cannot
        certify an answer (`granular.contact.projection`). ``"cvxpy"``: the
        independent reference (Clarabel through cvxpy), slow. Frictional contacts
        are solved by the Coulomb sweeps (`granular.contact.friction`) with either.
    scheme : {"velocity", "dzonou-monteiro-marques", "paoli-schatzman", "newmark"}
        Time-stepping scheme; see `granular.schemes`.
    **options
        Passed to the scheme (``force_update="implicit"``, ``beta=0.25``, ...).
    """

    def __init__(self, system, dt: float, solver: str = "osqp", scheme: str = "velocity", **options):
        check_options(scheme, options)
        self.dt = positive_scalar(dt, "dt")
        if solver not in SOLVERS:
            raise InvalidInputError(f"solver must be one of {SOLVERS}, got {solver!r}")
        self.system = system
        self.solver = solver
        self.scheme = make_scheme(scheme, system, self.dt, solver, **options)
        self.t0 = float(system.initial_state()[0])
        self.is_sphere_world = searches_neighbours(system)
        self.steps_taken = 0
        self._record_rotation = False  # set by run(): whether its frames keep the spin
        self.dissipated_energy = 0.0
        #: Work (J) the moving walls did on the spheres since the start of the run
        #: (`granular.records.results.StepResult.wall_work`; a restart from a run file goes on
        #: from the work stored with the frame).
        self.wall_work = 0.0
        #: Potential energy (J) the gap closure gave the spheres since the start of the run
        #: (`granular.records.results.StepResult.closure_energy`), continued likewise.
        self.closure_energy = 0.0
        self._travel_warned = False  # TimeStepWarning given (reset by each run)
        #: ``(t, residual, missed)`` of each step that kept a contact solver's best
        #: answer short of its tolerance (`SolverStats`): time (s), residual (m/s) and
        #: residual / tolerance; summarised in a run file's meta (`_meta`).
        self.missed_steps: list[tuple[float, float, float]] = []
        self.options = dict(options)
        self._unstorable_warned = False  # the run-file warning of `run_meta`, given once
        self.has_flows = self.is_sphere_world and bool(getattr(system, "has_flows", False))
        #: Whether the scheme closes the gaps the Coulomb sweeps or curved walls leave
        #: (frictional spheres, or walls of a `Cylinder` or `Cone`;
        #: `granular.contact.gap_closure`): its frames then carry ``closure_energy``.
        self.closes_gaps = (
            self.is_sphere_world
            and bool(getattr(self.scheme, "close_gaps", False))
            and bool(system.has_friction or system.has_rolling_friction or getattr(system, "curved_walls", False))
        )
        self._stepped = (np.zeros(0, dtype=np.int64), np.zeros(0))  # ids and counters of the last step
        if self.has_flows and not hasattr(self.scheme, "exchanged"):
            raise InvalidInputError(
                f"scheme {self.scheme.name!r} cannot carry its state over spheres that come "
                "and go: inlets and outlets need scheme='velocity'"
            )

    @classmethod
    def from_trajectory(cls, trajectory, frame: int = -1, scene_file=None, world=None) -> "Simulation":
        """The simulation of a saved run, continued from frame ``frame`` (the last by default).

        The system is ``world`` when given (a run made in Python: the system it ran,
        built again by the caller, with the ``dt``, scheme, solver and scheme options
        the run stored); otherwise the scene is rebuilt from the name and parameters
        the run stores (`granular.scenes.rebuild_simulation`: a scene of the scenes
        directories, or ``scene_file`` given by the caller; never a file the run
        names). Then the frame's state is set: positions, velocities, the step count (so ``t_n = t_0 +
        n dt`` goes on without round-off, and time-dependent radii follow), the
        cumulative dissipation, and for spheres that carry them the angular
        velocities and orientations. Raises `InvalidInputError` for a run made
        without a scene (no provenance) and given no ``world``, a ``world`` whose state
        has another shape than the run's, a frame out of range, a time that is not
        a whole number of steps after the start, or a rotating world whose run did
        not record its rotation.

        What the scheme carries between steps (`warm_state`: the velocity scheme's
        previous impulses and sustained-contact kick, which set its next
        projection's start and its impact threshold; the previous positions of the
        two-step schemes) is set too when the trajectory has it for that frame (a
        run saved by `granular.app.runs.save_run` stores it for its last frame): the
        continued run is then identical bit for bit to the uninterrupted one
        (``tests/test_restart.py``). Without it the first step starts cold, and the
        kick decides which contacts bounce: a pour's velocities then differed by
        3.6e-3 m/s (0.2 %) at the first step after the restart, not by round-off.
        The velocity scheme's active-set factor is not stored; it is rebuilt, which
        changed no bit in that test. For a world with inlets or outlets the spheres
        present in the frame (their ids, radii and masses) and the counters
        (`granular.spheres.flows.FlowCounters`) are set first; the cumulative work of the
        moving walls is set from the frame when the run stored it.
        """
        from .scenes import rebuild_simulation  # cycle: scenes imports simulation

        k = check_frame(trajectory, frame)
        if world is not None:
            if scene_file is not None:
                raise InvalidInputError("give world= or scene_file=, not both")
            meta = trajectory.meta
            if "dt" not in meta:
                raise InvalidInputError("this trajectory does not store its time step (no 'dt' in its meta)")
            simulation = cls(
                world,
                dt=float(meta["dt"]),
                solver=meta.get("solver", "osqp"),
                scheme=meta.get("scheme", "velocity"),
                **dict(meta.get("simulation_options", {})),
            )
        else:
            simulation, _ = rebuild_simulation(trajectory.meta, scene_file)
        continue_from(simulation, trajectory, k)
        return simulation

    def warm_state(self) -> dict:
        """What the scheme carries from one step to the next beyond ``(t, q, u)``, for a
        restart (`granular.app.runs.save_run` stores it; `from_trajectory` sets it back).

        ``{"t": time, "scheme": name, "values": {name: value}}``, values being
        arrays, tuples of arrays and floats, or None (copies): the scheme's
        ``warm_values`` of its state (e.g. `granular.schemes.maury_state.MauryState`)."""
        values = self.scheme.warm_values(self.scheme.state)
        return {
            "t": self.t,
            "scheme": self.scheme.name,
            "values": {name: _copied(value) for name, value in values.items()},
        }

    def set_warm_state(self, state: dict) -> None:
        """Set what the scheme carries beyond ``(t, q, u)`` from ``state``, a `warm_state`
        of a simulation of the same scheme at the same time (copies; a restart that
        continues bit for bit)."""
        values = {name: _copied(value) for name, value in state["values"].items()}
        self.scheme.state = self.scheme.restored(self.scheme.state, values)

    def angular_velocities(self):
        """The spheres' angular velocities the scheme carries (N, 3), or None."""
        return self.scheme.state.omega if self.is_sphere_world else None

    @property
    def t(self) -> float:
        """Current time (s)."""
        return self.t0 + self.steps_taken * self.dt

    @property
    def _q(self) -> np.ndarray:
        return self.scheme.state.q

    @property
    def _u(self) -> np.ndarray:
        return self.scheme.state.u

    @property
    def positions(self) -> np.ndarray:
        return self._q.reshape(self.system.state_shape).copy()

    @property
    def velocities(self) -> np.ndarray:
        return self._u.reshape(self.system.state_shape).copy()

    def step(self) -> StepResult:
        """Advance one step; the state moves only if the step succeeded.

        Raises `NonFiniteError` (a `SolverError`) naming the time when the step
        produces a state that is not finite (a numerical blow-up)."""
        if self.has_flows:
            self.exchange()
        with np.errstate(over="ignore", invalid="ignore"):
            state, result = self.scheme.advance(self.scheme.state, self.t)
        if not (np.all(np.isfinite(result.positions)) and np.all(np.isfinite(result.velocities))):
            t = self.t + self.dt
            raise NonFiniteError(
                f"the state is not finite at t = {t:.6g} s: a numerical blow-up "
                f"(reduce the time step dt = {self.dt:.6g} s)",
                t=t,
                status="non_finite",
            )
        self.scheme.state = state
        if self.has_flows:  # who took part in this step, for its frame (`_frame_extras`)
            self._stepped = (self.system.ids.copy(), self.system.flow.as_row())
        self.steps_taken += 1
        self.dissipated_energy += result.dissipated_energy
        self.wall_work += result.wall_work
        self.closure_energy += result.closure_energy
        result = replace(result, t=self.t)
        if result.solver.missed > 0.0:
            self.missed_steps.append((self.t, float(result.solver.residual), float(result.solver.missed)))
        if not self._travel_warned:
            self.check_travel(result)
        return result

    def exchange(self) -> None:
        """Apply the world's outlets and inlets at the current time (`granular.spheres.flows`) and
        carry the scheme's state over to the spheres then present: the first part of
        `step` in a world with inlets or outlets (`granular.spheres.world.SphereWorld.exchange`)."""
        system = self.system
        n_before = system.n
        exchange = system.exchange(self.t, self.dt, self._q)
        if exchange.changes:
            self.scheme.state = self.scheme.exchanged(self.scheme.state, exchange, n_before)

    def check_travel(self, result: StepResult) -> float | None:
        """Warn (`TimeStepWarning`, once per run) when a sphere of ``result`` travelled
        more than `MAX_TRAVEL` of its radius in the step, ``dt |u_i| > MAX_TRAVEL r_i``
        (``q^{n+1} = q^n + dt u^{n+1}``), giving the largest time step that would have
        kept it under, ``dt MAX_TRAVEL / max_i(dt |u_i| / r_i)`` (s), rounded down to
        two digits. Returns that step when it warns, else None; systems other than
        spheres are not checked."""
        if not self.is_sphere_world or result.radii is None:
            return None
        speeds = np.linalg.norm(np.asarray(result.velocities, float).reshape(-1, 3), axis=1)
        travel = self.dt * speeds / np.asarray(result.radii, float)
        k = int(np.argmax(travel)) if travel.size else 0
        if not travel.size or not travel[k] > MAX_TRAVEL:
            return None
        self._travel_warned = True
        suggested = _floor_two_digits(self.dt * MAX_TRAVEL / float(travel[k]))
        warnings.warn(
            TimeStepWarning(
                f"sphere {k} travelled {travel[k]:.3g} radii in the step ending at t = {result.t:.6g} s "
                f"(dt = {self.dt:g} s, {speeds[k]:.3g} m/s): more than {MAX_TRAVEL:g} of a radius a step makes "
                f"the linearised contacts inaccurate; use dt <= {suggested:.2g} s",
                dt=self.dt,
                suggested_dt=suggested,
                t=float(result.t),
                sphere=k,
                travel=float(travel[k]),
            ),
            stacklevel=2,
        )
        return suggested

    def run(
        self,
        duration: float | None = None,
        steps: int | None = None,
        record_every: int = 1,
        progress: Callable | None = None,
        out=None,
        checkpoint_every: float | None = None,
        read_back: bool = True,
    ) -> Trajectory | None:
        """Run for ``duration`` seconds (a whole number of steps, `count_steps`) or ``steps`` steps.

        Frame 0 is the current state; then every ``record_every``-th step and the last
        one are recorded with their contacts.

        progress : callable ``(step_index, n_steps, result)`` or None
            Called after every step (the command-line progress bar uses it); on the
            fast path below, after every recorded step.
        out : str, Path, `granular.records.streaming.FrameWriter` or None
            Stream the frames to this run file (HDF5) as they are recorded, flushing
            after each (`granular.records.streaming`): the frames are not kept in memory, so
            memory stays flat in the number of frames, and a process that dies
            leaves every frame up to the last flush. A path is created or replaced
            at the start; the scheme's warm state is written at the end, so
            `from_trajectory(granular.app.runs.load_run(out))` continues bit for bit.
        checkpoint_every : float or None
            With ``out``: also write the warm state at the first recorded frame at
            least this many simulated seconds (s) after the previous checkpoint, so
            that a run killed later restarts from that frame to round-off.
        read_back : bool
            With ``out`` a path: return the run read back from the file
            (`Trajectory.load`; memory then grows with the frames once, at the end),
            or None when False. With ``out`` a writer, None.

        When a step raises a `GranularError` (a jam, a solver failure, a blow-up), the
        error is raised with ``error.trajectory``: the frames recorded before it,
        ending with the last step that succeeded, whose state is the simulation's
        (a run can be saved, inspected or continued from there); with ``out`` they
        are in the file too (``error.trajectory`` read back from a path, None for
        a writer).

        SIGINT (Ctrl-C) and SIGTERM (a batch scheduler's stop), received while the
        run is in the main thread, stop it at the end of the current step: that
        step is recorded (and written, with the warm state, to ``out``) and
        `granular.errors.RunInterrupted` is raised, carrying the frames as above.
        A second signal interrupts the step itself (`KeyboardInterrupt`).

        Each run warns once (`TimeStepWarning`) when a sphere travels more than
        `MAX_TRAVEL` of its radius in a step (`check_travel`).

        Fast path: the Newmark scheme on a system with a harmonic load and bounds or
        a penalty on one coordinate (the beam of Dumont and Paoli, 2006) jumps over
        the steps between recorded frames by blocks of affine maps
        (`granular.schemes.newmark.NewmarkScheme.run_fast`) and recomputes the
        recorded steps: the same frames as stepping to round-off, and ``meta``
        gains ``"violation"``, the contact coordinate's largest bound violation over
        every step (m).
        """
        n_steps = self.count_steps(duration, steps)
        if int(record_every) != record_every or record_every < 1:
            raise InvalidInputError(f"record_every must be a positive integer, got {record_every}")
        if checkpoint_every is not None:
            checkpoint_every = positive_scalar(checkpoint_every, "checkpoint_every")
            if out is None:
                raise InvalidInputError("checkpoint_every needs out=PATH: the run file that holds the checkpoints")
        self._record_rotation = self._turns()
        self._travel_warned = False
        own = out is not None and not isinstance(out, FrameWriter)
        writer = FrameWriter(out, self.system.describe(), self.run_meta(record_every)) if own else out
        recorder = Recorder(self, writer, record_every, checkpoint_every)
        try:
            recorder.add(self._current_frame())
            if n_steps and self._has_fast_path():
                fast = self._run_fast([recorder.last], n_steps, record_every, progress)
                if fast is not None:
                    return recorder.finish(own, read_back, fast)
            last = None
            with StopRequest() as stop:
                for k in range(1, n_steps + 1):
                    try:
                        result = self.step()
                    except GranularError as error:
                        if last is not None and recorder.last.t != last.t:
                            recorder.add(self._frame(last))
                        error.trajectory = recorder.finish(own, read_back)
                        raise
                    last = result
                    if progress is not None:
                        progress(k, n_steps, result)
                    if k % record_every == 0 or k == n_steps or stop.signal is not None:
                        recorder.add(self._frame(result))
                    if stop.signal is not None and k < n_steps:
                        name = signal_name(stop.signal)
                        trajectory = recorder.finish(own, read_back)
                        raise RunInterrupted(
                            f"{name} received: the run stopped at t = {self.t:.6g} s, after step {k} of {n_steps}",
                            stop.signal,
                            self.t,
                            trajectory,
                        )
            return recorder.finish(own, read_back)
        finally:
            if own and not writer.closed:  # an error that is not the run's (a bug, a second Ctrl-C)
                writer.close()

    def count_steps(self, duration: float | None = None, steps: int | None = None) -> int:
        """The number of steps of a run of ``duration`` seconds, or ``steps`` checked.

        ``duration / dt`` is rounded to the nearest whole number of steps (a duration
        written in decimals, 0.3 s at 1e-3 s, is 299.99999999999994 steps). A positive
        duration shorter than one step (beyond that round-off) is refused with
        `InvalidInputError`: rounding would run no step, or run one step longer than
        asked, and say nothing."""
        if (duration is None) == (steps is None):
            raise InvalidInputError("give exactly one of duration (s) or steps")
        if steps is not None:
            if int(steps) != steps or steps < 0:
                raise InvalidInputError(f"steps must be a non-negative integer, got {steps}")
            return int(steps)
        duration = float(duration)
        if not math.isfinite(duration) or duration < 0.0:
            raise InvalidInputError(f"duration must be a non-negative number of seconds, got {duration}")
        ratio = duration / self.dt
        if duration > 0.0 and ratio < 1.0 - 1e-9:
            raise InvalidInputError(
                f"duration {duration:g} s is shorter than one time step dt = {self.dt:g} s "
                f"({ratio:.3g} steps): give a longer duration or a smaller dt"
            )
        return int(round(ratio))

    def trajectory_of(self, frames: list, record_every: int) -> Trajectory:
        """The recorded frames as a `Trajectory`, with where the moving walls were at
        each frame (a run file cannot call the walls' velocity functions later)."""
        poses = [self.wall_poses(f.t) for f in frames]
        displacements = None if poses[0][0] is None else np.stack([pose[0] for pose in poses])
        rotations = None if poses[0][1] is None else np.stack([pose[1] for pose in poses])
        return Trajectory.from_frames(
            frames,
            self.system.describe(),
            self.run_meta(record_every),
            wall_displacements=displacements,
            wall_rotations=rotations,
        )

    def wall_poses(self, t: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Where the walls are at ``t`` (s): their displacements (W, 3) (m) when some wall
        moves and their rotations (W, 3, 3) when a mesh turns, else None each."""
        moving = self.is_sphere_world and self.system.has_moving_walls
        turning = self.is_sphere_world and self.system.has_turning_meshes
        return (
            self.system.wall_displacements(t) if moving else None,
            self.system.wall_rotations(t) if turning else None,
        )

    def _has_fast_path(self) -> bool:
        return isinstance(self.scheme, NewmarkScheme) and self.scheme.has_fast_path()

    def _run_fast(self, frames: list, n_steps: int, record_every: int, progress) -> Trajectory | None:
        """`run` by `NewmarkScheme.run_fast`; None (nothing changed) if a step was not
        finite, so that stepping reports where."""
        recorded = [k for k in range(1, n_steps + 1) if k % record_every == 0 or k == n_steps]
        outcome = self.scheme.run_fast(self.scheme.state, self.t0, self.steps_taken, recorded, self.dissipated_energy)
        if outcome is None:
            return None
        records, state, violation = outcome
        start = self.steps_taken
        for k, result, dissipated in records:
            self.steps_taken, self.dissipated_energy = start + k, dissipated
            result = replace(result, t=self.t)
            if progress is not None:
                progress(k, n_steps, result)
            frames.append(self._frame(result))
        self.scheme.state = state
        trajectory = self.trajectory_of(frames, record_every)
        trajectory.meta["violation"] = violation
        return trajectory

    def _turns(self) -> bool:
        """Whether a run records angular velocities and orientations: spheres that
        turn (friction couples their spin) or that were given a spin. Spheres that
        never turn would store identity orientations in every frame."""
        omega = self.angular_velocities()
        return omega is not None and (bool(self.system.rotates) or bool(np.any(omega != 0.0)))

    def _current_frame(self) -> Frame:
        system, t = self.system, self.t
        radii = system.radii_at(t) if self.is_sphere_world else None
        turning = self._record_rotation
        return Frame(
            t,
            self.positions,
            self.velocities,
            radii,
            kinetic_energy(system, t, self._q, self._u, self.angular_velocities()),
            system.potential_energy(t, self._q),
            self.dissipated_energy,
            Contacts.empty(self._normal_dimension()),
            self.scheme.angular_velocities if turning else None,
            self.scheme.orientations if turning else None,
            **self._frame_extras(),
        )

    def _frame_extras(self, contacts: Contacts | None = None) -> dict:
        """The ids, flow counters and wall work of a frame (`Frame`), and its contacts
        with sphere ids in place of indices, for a world with inlets or outlets: those
        of the last step taken when ``contacts`` (its contacts) are given, else the
        world's now."""
        extras: dict = {}
        if self.is_sphere_world and self.system.has_moving_walls:
            extras["wall_work"] = self.wall_work
        if self.closes_gaps:
            extras["closure_energy"] = self.closure_energy
        if self.has_flows:
            ids, flow = (self.system.ids.copy(), self.system.flow.as_row()) if contacts is None else self._stepped
            extras.update(ids=ids, flow=flow)
            if contacts is not None and len(contacts):
                i, j = np.asarray(contacts.i, np.int64), np.asarray(contacts.j, np.int64)
                extras["contacts"] = replace(contacts, i=ids[i], j=np.where(j >= 0, ids[np.maximum(j, 0)], j))
        return extras

    def _normal_dimension(self) -> int:
        """Columns of a contact normal: the coordinates of a `ConstrainedSystem`, 3 for spheres."""
        return self.system.normal_dimension if isinstance(self.system, CoordinateSystem) else 3

    def _frame(self, result: StepResult) -> Frame:
        turning = self._record_rotation
        extras = self._frame_extras(result.contacts)
        contacts = extras.pop("contacts", result.contacts)
        return Frame(
            result.t,
            result.positions,
            result.velocities,
            result.radii,
            result.kinetic_energy,
            result.potential_energy,
            self.dissipated_energy,
            contacts,
            result.angular_velocities if turning else None,
            result.orientations if turning else None,
            **extras,
        )

    def run_meta(self, record_every: int) -> dict:
        meta = {"dt": self.dt, "scheme": self.scheme.name, "solver": self.solver, "record_every": int(record_every)}
        # The scheme's options, which a restart passes back: numpy scalars as numbers, and
        # what JSON cannot hold left out with a warning (a restart then takes its default).
        options, unstorable = storable_options(self.options)
        meta["simulation_options"] = options
        if unstorable and not self._unstorable_warned:
            self._unstorable_warned = True  # run_meta is read at a file's start and end
            warnings.warn(
                f"the run file cannot hold the option(s) {', '.join(unstorable)}: a run continued "
                "from it takes their defaults unless they are given again",
                UserWarning,
                stacklevel=2,
            )
        if self.has_flows:
            meta["masses"] = np.asarray(self.system.masses_by_id).tolist()  # by id
        elif self.is_sphere_world:
            meta["masses"] = np.asarray(self.system.masses_at(self.t)).tolist()
        if self.missed_steps:
            meta["missed_steps"] = missed_summary(self.missed_steps)
        return meta


def _floor_two_digits(value: float) -> float:
    """``value`` rounded down to two significant digits (a suggested time step must not
    round up past the bound it keeps)."""
    exponent = math.floor(math.log10(value)) - 1
    return math.floor(value / 10.0**exponent) * 10.0**exponent


def signal_name(number: int) -> str:
    """``"SIGTERM"`` for 15, and so on."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
