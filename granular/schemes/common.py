"""Pieces the schemes share: the `StepResult` of a step (`make_result`), the
explicit state a two-step scheme carries (`TwoStepState`), and the helpers of the
schemes on a `ConstrainedSystem` (restitution per constraint, gap rates, the
metric projection with its one-row closed form, one contact record per constraint).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..constraints import Contacts
from ..errors import InvalidInputError, JammingError, solver_errors_at
from ..contact.problem import ContactProblem
from ..contact.projection import project
from ..protocols import CoordinateSystem
from ..records.results import StepResult


@dataclass(frozen=True)
class SchemeState:
    """The state of a one-step scheme that carries nothing else: time ``t`` (s),
    positions ``q`` and velocities ``u`` (flat arrays)."""

    t: float
    q: np.ndarray
    u: np.ndarray


@dataclass(frozen=True)
class TwoStepState(SchemeState):
    """What a two-step scheme (Paoli and Schatzman, Newmark) carries between steps:
    ``previous``, the positions one step before ``q`` (``U^{m-1}``, ``q^{n-1}``), or
    None at a start, when the next step is the scheme's first-step formula."""

    previous: np.ndarray | None = None


def initial_state(t, q, u) -> tuple[float, np.ndarray, np.ndarray]:
    """``(t, q, u)`` as a float and two float arrays (copies: a state is a value)."""
    return float(t), np.array(q, dtype=float), np.array(u, dtype=float)


def kinetic_energy(system, t: float, q: np.ndarray, u: np.ndarray, omega: np.ndarray | None) -> float:
    """The kinetic energy (J) of ``system`` at ``t`` with velocities ``u`` and, for
    spheres, the angular velocities ``omega`` (N, 3) (rad/s) that the scheme's state
    holds (None: a system without rotational state). The system is asked, not
    changed: a rotating `granular.spheres.world.SphereWorld` knows its angular velocities
    only at ``t0``."""
    if omega is None:
        return system.kinetic_energy(t, q, u)
    return system.kinetic_energy(t, q, u, angular_velocities=omega)


def make_result(system, t, q, u, predicted, contacts, dissipated, stats, rotation=None, radii=None) -> StepResult:
    """A `StepResult` with energies filled in from the system (``radii`` (N,) of
    spheres, or None for a system of generalised coordinates).

    ``u`` and ``predicted`` may be generalised velocities ``(u, omega)`` (6N,) of a
    rotating world: the result keeps the centres' part as its velocities, and the
    kinetic energy includes the rotation. ``rotation`` is ``(omega (N, 3),
    orientations (N, 4))`` or None."""
    shape = system.state_shape
    size = int(np.prod(shape))
    omega, orientations = (None, None) if rotation is None else rotation
    return StepResult(
        t=t,
        positions=q.reshape(shape),
        velocities=u[:size].reshape(shape),
        contacts=contacts,
        predicted=predicted[:size].reshape(shape),
        kinetic_energy=kinetic_energy(system, t, q, u[:size], omega),
        potential_energy=system.potential_energy(t, q),
        dissipated_energy=dissipated,
        radii=radii,
        solver=stats,
        angular_velocities=omega,
        orientations=orientations,
    )


def check_constrained_system(system, scheme: str) -> None:
    """Raise `InvalidInputError` unless ``system`` offers `granular.protocols.CoordinateSystem`."""
    if not isinstance(system, CoordinateSystem):
        raise InvalidInputError(
            f"scheme {scheme!r} needs a ConstrainedSystem; {type(system).__name__} does not "
            "offer it (granular.protocols.CoordinateSystem)"
        )


def restitution_coefficients(system) -> np.ndarray:
    """Coefficient of each constraint (m,): its own, or the system's default."""
    return np.array(
        [system.restitution if c.restitution is None else c.restitution for c in system.constraint_list], dtype=float
    )


def gap_rates(system, t: float, q: np.ndarray, rows: np.ndarray, h: float) -> np.ndarray:
    """``dg_k/dt`` at fixed ``q`` for the constraints ``rows``, by central differences.

    The time step is ``1e-3 h``: small against any motion the scheme resolves, large
    enough that round-off stays near ``1e-13 |g| / h``. A time-independent ``g``
    gives exactly 0 (the two evaluations coincide).
    """
    delta = 1e-3 * h
    constraints = system.constraint_list
    return np.array(
        [(constraints[k].value(t + delta, q) - constraints[k].value(t - delta, q)) / (2.0 * delta) for k in rows],
        dtype=float,
    )


def metric_projection(metric, G: np.ndarray, v: np.ndarray, lower: np.ndarray, solver: str, t: float):
    """Project ``v`` (d,) onto ``{x : G x >= lower}`` in the metric ``M``.

    One row: closed form ``mu = max(0, (lower - G v) / (G M^-1 G^T))``, exact and
    free of solver noise. Several rows: `granular.contact.projection.project`.
    Returns ``(x, mu, status, iterations, seconds)`` with ``M (x - v) = G^T mu``.
    """
    start = time.perf_counter()
    if G.shape[0] == 1:
        row = G[0]
        direction = metric.solve(row)
        weight = float(row @ direction)
        deficit = float(lower[0] - row @ v)
        if deficit <= 0.0:
            return v.copy(), np.zeros(1), "unconstrained", 0, time.perf_counter() - start
        if not weight > 0.0:
            raise JammingError(
                f"constraint gradient vanishes at t = {t:.6g} s while the constraint is "
                f"violated: no admissible velocity",
                t=t,
                status="infeasible",
            )
        mu = deficit / weight
        return v + mu * direction, np.array([mu]), "closed_form", 0, time.perf_counter() - start
    with solver_errors_at(t):
        result = project(ContactProblem(metric, sp.csr_matrix(G), v, lower), solver=solver)
    return result.velocities, result.impulses, result.status, result.iterations, result.seconds


def constraint_contacts(gaps: np.ndarray, rows: np.ndarray, impulses: np.ndarray) -> Contacts:
    """One contact record per constraint: ``i`` the constraint index, ``j = wall = -1``."""
    index = np.arange(gaps.size, dtype=np.int64)
    minus = -np.ones(gaps.size, dtype=np.int64)
    return Contacts(
        index,
        minus,
        minus,
        np.asarray(gaps, dtype=float),
        np.asarray(rows, dtype=float),
        np.asarray(impulses, dtype=float),
    )
