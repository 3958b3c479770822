"""Exceptions raised by granular.

Every error names what is wrong and where: the offending index, pair, time or value.
User mistakes are `InvalidInputError` (also a `ValueError`); failures of the numerical
method are `SolverError` (also a `RuntimeError`). The simulation never continues
from a step that raised.
"""

from __future__ import annotations

import copy
import re
from contextlib import contextmanager


class GranularError(Exception):
    """Base class of every error raised by granular.

    ``trajectory`` is set when `Simulation.run` fails: the frames it recorded before
    the failing step, ending with the last step that succeeded (None otherwise).
    """

    trajectory = None


class InvalidInputError(GranularError, ValueError):
    """An argument has the wrong shape, a non-finite value or an inadmissible value."""


class OverlapError(InvalidInputError):
    """The initial configuration is not admissible: two bodies overlap (gap < 0).

    Attributes
    ----------
    pair : tuple
        ``(i, j)`` sphere indices, ``(i, "wall k")`` for a wall, or ``("constraint", k)``.
    overlap : float
        The penetration depth, ``-gap`` (metres for spheres), positive.
    """

    def __init__(self, message: str, pair=None, overlap: float | None = None):
        super().__init__(message)
        self.pair = pair
        self.overlap = overlap


class RadiusError(InvalidInputError):
    """A radius callable returned the wrong shape or a non-positive radius at time ``t``."""

    def __init__(self, message: str, t: float | None = None, index: int | None = None):
        super().__init__(message)
        self.t = t
        self.index = index


class MassMatrixError(InvalidInputError):
    """A mass matrix is not square, not symmetric or not positive definite."""


class SolverError(GranularError, RuntimeError):
    """The projection of a step could not be solved to tolerance.

    Attributes
    ----------
    t : float
        Time at the end of the step that failed (s).
    status : str
        Status reported by the backend.
    """

    def __init__(self, message: str, t: float | None = None, status: str | None = None):
        super().__init__(message)
        self.t = t
        self.status = status


class JammingError(SolverError):
    """The admissible set of the step is empty: the bodies can no longer fit.

    Raised, for instance, when growing spheres jam in a container.

    Attributes
    ----------
    packing_fraction : float or None
        Solid volume over container volume at the failing step, when a container is known.
    """

    def __init__(
        self, message: str, t: float | None = None, status: str | None = None, packing_fraction: float | None = None
    ):
        super().__init__(message, t=t, status=status)
        self.packing_fraction = packing_fraction


class ConvergenceError(SolverError):
    """An iteration of a scheme (fixed point, successive linearisation) did not converge.

    Attributes (beyond `SolverError`'s)
    ----------
    best : array or None
        The best iterate found (for the Coulomb sweeps: the impulses (m, 3 or 5), N s),
        which a caller that does not stop on a missed tolerance keeps.
    residual : float or None
        Its largest residual (m/s for the Coulomb law).
    tolerance : float or None
        The tolerance that residual missed, at the same contact (m/s).
    where : str or None
        Which contact (or unknown) holds that residual.
    iterations, idle : int or None
        The iterations made (sweeps, for the Coulomb sweeps) and how many of the last
        ones made no progress.
    """

    def __init__(
        self,
        message: str,
        t: float | None = None,
        status: str | None = None,
        best=None,
        residual: float | None = None,
        tolerance: float | None = None,
        where: str | None = None,
        iterations: int | None = None,
        idle: int | None = None,
    ):
        super().__init__(message, t=t, status=status)
        self.best = best
        self.residual = residual
        self.tolerance = tolerance
        self.where = where
        self.iterations = iterations
        self.idle = idle


def at_time(error: SolverError, t: float) -> SolverError:
    """``error`` naming the time ``t`` (s) of the step that failed: a copy of the same
    class with every attribute kept (``status``, ``best``, ``packing_fraction`` ...),
    ``.t`` set, and " at t = ... s" after the message's first clause (before its first
    ": ", " (" or "; ", else at its end), so that "the projection is infeasible: ..."
    reads "the projection is infeasible at t = 0.25 s: ...". The contact solvers do not
    know the time; the scheme that calls them adds it (`solver_errors_at`). An error
    that already names its time is returned unchanged."""
    if error.t is not None:
        return error
    message = str(error)
    when = f" at t = {t:.6g} s"
    clause = re.search(r": | \(|; ", message)
    cut = len(message) if clause is None else clause.start()
    timed = copy.copy(error)
    timed.args = (message[:cut] + when + message[cut:],)
    timed.t = t
    return timed


@contextmanager
def solver_errors_at(t: float):
    """Re-raise a `SolverError` of the block as `at_time` of it: the same error, naming
    the time ``t`` (s) of the step."""
    try:
        yield
    except SolverError as error:
        raise at_time(error, t).with_traceback(error.__traceback__) from None


class SolverToleranceWarning(UserWarning):
    """A step kept its contact solver's best answer although it missed the tolerance
    (the default; ``strict=True`` raises `ConvergenceError` instead). The step's
    `SolverStats` record the residual and the tolerance."""


class NonFiniteError(SolverError):
    """A state, a force or a predicted velocity became NaN or infinite at time ``t``:
    a numerical blow-up (typically a time step too large for a stiff force). The
    simulation keeps the last finite state."""


class TrajectoryFileError(GranularError):
    """A trajectory file is missing, unreadable, or not a granular trajectory."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by a signal (SIGINT, Ctrl-C; SIGTERM, what a batch scheduler
    sends) at the end of the step it was computing (`granular.records.streaming.StopRequest`).

    A `KeyboardInterrupt`, not a `GranularError`: code that catches ``Exception``
    does not swallow it. Attributes: ``signal`` the signal's number, ``t`` the time
    of the last step taken (s), ``trajectory`` the frames recorded up to and
    including that step (None when they are only in the run file ``out``).
    """

    def __init__(self, message: str, signal: int, t: float, trajectory=None):
        super().__init__(message)
        self.signal = signal
        self.t = t
        self.trajectory = trajectory


class IneffectiveWallWarning(UserWarning):
    """A wall's motion cannot act on the spheres: it turns (about its axis or normal)
    but its contacts have no friction, so it is a still wall to them."""


class TimeStepWarning(UserWarning):
    """A sphere travelled more than `granular.simulation.MAX_TRAVEL` of its radius in
    one step: the time step is too large for the linearised contact constraints.

    Attributes: ``dt`` the step (s), ``suggested_dt`` the largest step that would
    have kept that travel under the bound (s), ``t`` the end time of the step (s),
    ``sphere`` its index and ``travel`` its travel over its radius."""

    def __init__(self, message: str, dt: float, suggested_dt: float, t: float, sphere: int, travel: float):
        super().__init__(message)
        self.dt, self.suggested_dt, self.t, self.sphere, self.travel = dt, suggested_dt, t, sphere, travel


class UnknownOptionError(InvalidInputError, TypeError):
    """A keyword that neither `Simulation` nor its scheme takes (a misspelling, usually).

    Also a `TypeError`, what Python raises for an unexpected keyword argument."""


class SceneError(GranularError):
    """A scene file cannot be used: it fails to import, has no ``build()``, declares
    malformed ``PARAMETERS``, or its ``build()`` or ``summary()`` fails."""


class UnknownSceneError(InvalidInputError):
    """No scene of that name in the scenes directories, or no file at that path."""


class ParameterError(InvalidInputError):
    """A ``--set`` names no parameter of the scene, or gives a value of the wrong type."""


class UnknownAdapterError(TrajectoryFileError, InvalidInputError):
    """A description (typically read from a run file) names a drawing adapter that is
    not registered. A `TrajectoryFileError` (the ``granular`` command exits with 3, a
    bad file) and an `InvalidInputError` (a bad ``drawing`` argument of a system)."""


class NonFiniteStateError(GranularError):
    """A step returned a non-finite state or energy (a numerical blow-up).

    Attributes: ``t`` the time at the end of that step (s), ``step`` its index
    counted from 1 within the run.
    """

    def __init__(self, t: float, step: int):
        super().__init__(
            f"the state or the energies became non-finite at t = {t:.6g} s (step {step}): "
            "a numerical blow-up (try a smaller --dt, or the scheme of the scene's DEFAULTS)"
        )
        self.t = t
        self.step = step


class CommandError(Exception):
    """A user-facing failure of the ``granular`` command: a one-line message and an
    exit status (2, a usage error, unless told: `granular.cli.common`)."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


class SweepError(InvalidInputError):
    """A sweep that cannot start: bad ``--seeds``, an ``--out`` that is not a directory,
    a scheduler that cannot be reached."""


class UnknownWallVelocityWarning(UserWarning):
    """A wall's power is NaN: its velocity is a function of time and the run, not
    recorded at every step, does not hold the displacements that give it."""
