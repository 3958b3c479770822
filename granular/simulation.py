"""Simulation: one system, one scheme, one time step; `step()` and `run()`.

    sim = Simulation(system, dt=1e-3)            # scheme="velocity", solver="osqp"
    result = sim.step()                           # a StepResult
    trajectory = sim.run(duration=1.0, record_every=10)

Time is ``t_n = t_0 + n dt`` (no accumulated round-off). The scheme works on flat
arrays; results are shaped like the system's state.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from .constraints import Contacts
from .errors import GranularError, InvalidInputError, NonFiniteError
from .results import StepResult
from .trajectory import Trajectory
from .validation import positive_scalar

SCHEMES = ("velocity", "dzonou-monteiro-marques", "paoli-schatzman", "newmark")
#: Former scheme names, still accepted with a DeprecationWarning: old name -> name.
DEPRECATED_SCHEMES = {"seed000": "dzonou-monteiro-marques"}
SOLVERS = ("osqp", "cvxpy")


def make_scheme(name: str, system, dt: float, solver: str, **options):
    """The scheme object named ``name`` for ``system`` (a deprecated name warns)."""
    name = current_scheme_name(name)
    if name != "velocity" and getattr(system, "has_friction", False):
        raise InvalidInputError(f"scheme {name!r} has no Coulomb friction; use scheme='velocity' "
                                "(granular.friction) or set every friction coefficient to 0")
    if name == "velocity":
        from .schemes.velocity import VelocityScheme
        return VelocityScheme(system, dt, solver=solver, **options)
    if name == "dzonou-monteiro-marques":
        from .schemes.dzonou_monteiro_marques import DzonouMonteiroMarquesScheme
        return DzonouMonteiroMarquesScheme(system, dt, solver=solver, **options)
    if name == "paoli-schatzman":
        from .schemes.paoli_schatzman import PaoliSchatzmanScheme
        return PaoliSchatzmanScheme(system, dt, solver=solver, **options)
    if name == "newmark":
        from .schemes.newmark import NewmarkScheme
        return NewmarkScheme(system, dt, solver=solver, **options)
    raise InvalidInputError(f"scheme must be one of {SCHEMES}, got {name!r}")


def current_scheme_name(name: str) -> str:
    """``name``, or the current name of a deprecated one (with a DeprecationWarning)."""
    if isinstance(name, str) and name in DEPRECATED_SCHEMES:
        # stacklevel 4: the line that called Simulation(...), through make_scheme.
        warnings.warn(f"scheme {name!r} is deprecated: use scheme={DEPRECATED_SCHEMES[name]!r}",
                      DeprecationWarning, stacklevel=4)
        return DEPRECATED_SCHEMES[name]
    return name


class UnknownOptionError(InvalidInputError, TypeError):
    """A keyword that neither `Simulation` nor its scheme takes (a misspelling, usually).

    Also a `TypeError`, what Python raises for an unexpected keyword argument."""


#: The class of each scheme, as ``(module, class)`` under ``granular.schemes``: read
#: for its keywords before it is built (`scheme_keywords`).
_SCHEME_CLASSES = {"velocity": ("velocity", "VelocityScheme"),
                   "dzonou-monteiro-marques": ("dzonou_monteiro_marques", "DzonouMonteiroMarquesScheme"),
                   "paoli-schatzman": ("paoli_schatzman", "PaoliSchatzmanScheme"),
                   "newmark": ("newmark", "NewmarkScheme")}


def scheme_keywords(scheme) -> list[str]:
    """The keywords `Simulation` takes with scheme ``scheme``: its own and the scheme's
    options (an unknown scheme: its own only; `make_scheme` then names the schemes)."""
    import importlib
    import inspect

    own = ["dt", "solver", "scheme"]
    name = DEPRECATED_SCHEMES.get(scheme, scheme) if isinstance(scheme, str) else scheme
    if name not in _SCHEME_CLASSES:
        return own
    module, cls = _SCHEME_CLASSES[name]
    init = getattr(importlib.import_module(f"granular.schemes.{module}"), cls).__init__
    options = [p for p in inspect.signature(init).parameters if p not in ("self", "system", "dt", "solver")]
    return own + options


def check_options(scheme, options: dict) -> None:
    """Raise `UnknownOptionError` for a keyword of ``options`` the scheme does not take,
    naming the closest valid keyword: ``**options`` would otherwise hand a misspelling
    to the scheme, whose TypeError says neither what was meant nor what is valid."""
    import difflib

    valid = scheme_keywords(scheme)
    for key in options:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownOptionError(f"Simulation() got an unknown keyword {key!r}{hint}; with scheme "
                                     f"{scheme!r} it takes {', '.join(valid)}")


@dataclass(frozen=True)
class _Frame:
    """A recorded frame: a StepResult's fields plus the cumulative dissipation."""

    t: float
    positions: np.ndarray
    velocities: np.ndarray
    radii: np.ndarray | None
    kinetic_energy: float
    potential_energy: float
    cumulative_dissipation: float
    contacts: Contacts


class Simulation:
    """Advance a system in time with a scheme.

    Parameters
    ----------
    system : SphereWorld or ConstrainedSystem (or a beam system)
    dt : float
        Time step (s), positive.
    solver : {"osqp", "cvxpy"}
        Backend of the projections: OSQP (default, fast) or cvxpy (reference).
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
        self.t0, self._q, self._u = system.initial_state()
        self.steps_taken = 0
        self.dissipated_energy = 0.0

    @property
    def t(self) -> float:
        """Current time (s)."""
        return self.t0 + self.steps_taken * self.dt

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
        with np.errstate(over="ignore", invalid="ignore"):
            result = self.scheme.step(self.t, self._q, self._u)
        if not (np.all(np.isfinite(result.positions)) and np.all(np.isfinite(result.velocities))):
            t = self.t + self.dt
            raise NonFiniteError(f"the state is not finite at t = {t:.6g} s: a numerical blow-up "
                                 f"(reduce the time step dt = {self.dt:.6g} s)", t=t, status="non_finite")
        self._q = result.positions.reshape(-1).copy()
        self._u = result.velocities.reshape(-1).copy()
        self.steps_taken += 1
        self.dissipated_energy += result.dissipated_energy
        return replace(result, t=self.t)

    def run(self, duration: float | None = None, steps: int | None = None, record_every: int = 1,
            progress: Callable | None = None) -> Trajectory:
        """Run for ``duration`` seconds (rounded to whole steps) or ``steps`` steps.

        Frame 0 is the current state; then every ``record_every``-th step and the last
        one are recorded with their contacts.

        progress : callable ``(step_index, n_steps, result)`` or None
            Called after every step (the command-line progress bar uses it).

        When a step raises a `GranularError` (a jam, a solver failure, a blow-up), the
        error is raised with ``error.trajectory``: the frames recorded before it,
        ending with the last step that succeeded, whose state is the simulation's
        (a run can be saved, inspected or continued from there).
        """
        n_steps = self._count_steps(duration, steps)
        if int(record_every) != record_every or record_every < 1:
            raise InvalidInputError(f"record_every must be a positive integer, got {record_every}")
        frames = [self._current_frame()]
        last = None
        for k in range(1, n_steps + 1):
            try:
                result = self.step()
            except GranularError as error:
                if last is not None and frames[-1].t != last.t:
                    frames.append(self._frame(last))
                error.trajectory = Trajectory.from_frames(frames, self.system.describe(), self._meta(record_every))
                raise
            last = result
            if progress is not None:
                progress(k, n_steps, result)
            if k % record_every == 0 or k == n_steps:
                frames.append(self._frame(result))
        return Trajectory.from_frames(frames, self.system.describe(), self._meta(record_every))

    def _count_steps(self, duration, steps) -> int:
        if (duration is None) == (steps is None):
            raise InvalidInputError("give exactly one of duration (s) or steps")
        if steps is not None:
            if int(steps) != steps or steps < 0:
                raise InvalidInputError(f"steps must be a non-negative integer, got {steps}")
            return int(steps)
        duration = float(duration)
        if not math.isfinite(duration) or duration < 0.0:
            raise InvalidInputError(f"duration must be a non-negative number of seconds, got {duration}")
        return int(round(duration / self.dt))

    def _current_frame(self) -> _Frame:
        system, t = self.system, self.t
        radii = system.radii_at(t) if hasattr(system, "radii_at") else None
        return _Frame(t, self.positions, self.velocities, radii,
                      system.kinetic_energy(t, self._q, self._u), system.potential_energy(t, self._q),
                      self.dissipated_energy, Contacts.empty(getattr(system, "normal_dimension", 3)))

    def _frame(self, result: StepResult) -> _Frame:
        return _Frame(result.t, result.positions, result.velocities, result.radii,
                      result.kinetic_energy, result.potential_energy, self.dissipated_energy,
                      result.contacts)

    def _meta(self, record_every: int) -> dict:
        meta = {"dt": self.dt, "scheme": self.scheme.name, "solver": self.solver,
                "record_every": int(record_every)}
        masses_at = getattr(self.system, "masses_at", None)
        if masses_at is not None:
            meta["masses"] = np.asarray(masses_at(self.t)).tolist()
        return meta
