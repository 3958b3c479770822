"""The loads on walls: force, torque about an axis and power, per surface and frame.

A contact surface ``s`` (`granular.constraints.Contacts.wall`) receives from the
spheres the forces ``f_c = -F_c`` (`granular.analysis.forces`) at the contact points
``x_c``. Its force is ``sum_c f_c`` (N; the same as `granular.Trajectory.wall_forces`),
its torque about the axis through ``a`` along the unit ``e`` is ``e . sum_c (x_c - a) x
f_c`` (N m), and the power the spheres deliver to it is ``sum_c f_c . w(x_c)`` (W),
``w`` the wall's material velocity at the contact: its translation plus its spin
``Omega e_w x (x - c_w)`` about its own axis (a drum). The drive that keeps a wall on
its prescribed motion supplies the opposite: a drum needs the torque ``-torque``
about its axis, and the power ``-power``, which in a steady state the contacts
dissipate (`granular.records.results.StepResult.wall_work`).

The translation in ``w`` is the one the scheme used over the frame's step: a constant
velocity as described in the run file; for a velocity given as a function of time,
which a run file cannot store (it writes "function"), the mean velocity over the step
``(d(t_k) - d(t_k - h)) / h`` from the walls' recorded displacements ``d``, which a run
recorded at every step holds (`translations`). Otherwise that wall's power is NaN,
with a `UnknownWallVelocityWarning`; its force and torque are exact.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import UnknownWallVelocityWarning
from .forces import FrameForces, time_step
from ..walls import surface_count


def surface_walls(system: dict) -> list[dict]:
    """The description of the wall of each contact surface, by surface index."""
    owners: list[dict] = []
    for wall in system.get("walls", []) if isinstance(system, dict) else []:
        if isinstance(wall, dict):
            owners += [wall] * surface_count(wall)
    return owners


def _spin(wall: dict) -> tuple[float, np.ndarray, np.ndarray]:
    """``(Omega (rad/s), axis (3,), a point on it (3,))`` of a described wall."""
    omega = float(wall.get("angular_velocity", 0.0) or 0.0)
    axis = np.asarray(wall.get("axis", wall.get("normal", (0.0, 0.0, 1.0))), float)
    centre = np.asarray(wall.get("centre", wall.get("point", (0.0, 0.0, 0.0))), float)
    return omega, axis / np.linalg.norm(axis), centre


def material_velocity(wall: dict, points: np.ndarray, displacement=None, translation=None) -> np.ndarray:
    """Velocity (k, 3) (m/s) of the wall's material at ``points`` (k, 3): its
    translation (``translation`` (3,) when given, else its constant velocity; NaN for a
    velocity that is a function of time, which the description does not hold) plus its
    spin about its axis, moved by ``displacement`` (3,) (m) when given."""
    velocity = wall.get("velocity")
    if translation is None:
        if velocity == "function":
            translation = np.full(3, np.nan)
        else:
            translation = np.asarray(velocity, float) if isinstance(velocity, list) else np.zeros(3)
    result = np.broadcast_to(np.asarray(translation, float), points.shape).copy()
    omega, axis, centre = _spin(wall)
    if omega != 0.0:
        shift = np.zeros(3) if displacement is None else np.asarray(displacement, float)
        result += np.cross(omega * axis, points - (centre + shift))
    return result


def translations(trajectory, k: int) -> np.ndarray | None:
    """The walls' translation velocities (W, 3) (m/s) over frame ``k``'s step: the mean
    ``(d_k - d_{k-1}) / h`` of their recorded displacements when frame ``k - 1`` is one
    step ``h`` earlier, else each wall's constant velocity, NaN for a function of time
    (module docstring); None when no wall moves."""
    shifts = trajectory.wall_displacements
    walls = [w for w in trajectory.system.get("walls", []) if isinstance(w, dict)]
    if shifts is None or not any(w.get("velocity") == "function" for w in walls):
        return None
    h = time_step(trajectory)
    if k >= 1 and np.isclose(trajectory.t[k] - trajectory.t[k - 1], h, rtol=1e-9, atol=0.0):
        return (np.asarray(shifts[k], float) - np.asarray(shifts[k - 1], float)) / h
    return np.array(
        [
            np.full(3, np.nan)
            if w.get("velocity") == "function"
            else np.asarray(w["velocity"], float)
            if isinstance(w.get("velocity"), list)
            else np.zeros(3)
            for w in walls
        ]
    )


def wall_loads(
    forces: FrameForces, system: dict, axis=(0.0, 0.0, 1.0), origin=(0.0, 0.0, 0.0), displacements=None, velocities=None
) -> dict:
    """Per contact surface: ``force`` (S, 3) (N), ``torque`` (S,) (N m) about the axis
    through ``origin`` along ``axis``, and ``power`` (S,) (W) delivered to it (module
    docstring). ``displacements`` (W, 3): the walls' shifts at this frame, or None;
    ``velocities`` (W, 3): their translation velocities over its step (`translations`),
    or None for those the description gives. A wall whose power cannot be known is NaN
    and warns (`UnknownWallVelocityWarning`)."""
    axis = np.asarray(axis, float)
    if axis.shape != (3,) or not np.linalg.norm(axis) > 0.0:
        raise ValueError(f"axis: expected a non-zero direction (3,), got {axis.tolist()}")
    axis = axis / np.linalg.norm(axis)
    owners = surface_walls(system)
    count = max(len(owners), int(forces.wall_surface.max(initial=-1)) + 1)
    on_wall = -forces.wall_force
    force = np.zeros((count, 3))
    np.add.at(force, forces.wall_surface, on_wall)
    moment = np.cross(forces.wall_point - np.asarray(origin, float), on_wall) @ axis
    torque = np.bincount(forces.wall_surface, weights=moment, minlength=count)
    power = np.zeros(count)
    shifts = _per_surface(system, displacements, len(owners))
    moving = _per_surface(system, velocities, len(owners))
    for s, wall in enumerate(owners):
        rows = forces.wall_surface == s
        if rows.any():
            w = material_velocity(wall, forces.wall_point[rows], shifts[s], moving[s])
            power[s] = float(np.sum(on_wall[rows] * w))
    unknown = [s for s in range(len(owners)) if np.isnan(power[s])]
    if unknown:
        warnings.warn(
            f"the power on wall surfaces {unknown} is NaN: their velocity is a function of time, which "
            f"the run file does not store; record the run at every step (record_every=1) to measure it",
            UnknownWallVelocityWarning,
            stacklevel=2,
        )
    return {"force": force, "torque": torque, "power": power}


def _per_surface(system: dict, per_wall, surfaces: int) -> list:
    """Each wall's row of ``per_wall`` (W, 3) repeated for its surfaces; Nones without it."""
    if per_wall is None:
        return [None] * surfaces
    rows: list = []
    walls = [w for w in system.get("walls", []) if isinstance(w, dict)]
    for wall, row in zip(walls, np.asarray(per_wall, float)):
        rows += [row] * surface_count(wall)
    return rows
