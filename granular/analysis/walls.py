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
dissipate (`granular.results.StepResult.wall_work`).
"""
from __future__ import annotations

import numpy as np

from .forces import FrameForces


def surface_walls(system: dict) -> list[dict]:
    """The description of the wall of each contact surface, by surface index."""
    from ..walls import surface_count

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


def material_velocity(wall: dict, points: np.ndarray, displacement=None) -> np.ndarray:
    """Velocity (k, 3) (m/s) of the wall's material at ``points`` (k, 3): its constant
    translation (a velocity given as a function is not in the run file: 0 is used,
    and the power then counts the spin alone) plus its spin about its axis, moved by
    ``displacement`` (3,) (m) when given."""
    velocity = wall.get("velocity")
    translation = np.asarray(velocity, float) if isinstance(velocity, list) else np.zeros(3)
    result = np.broadcast_to(translation, points.shape).copy()
    omega, axis, centre = _spin(wall)
    if omega != 0.0:
        shift = np.zeros(3) if displacement is None else np.asarray(displacement, float)
        result += np.cross(omega * axis, points - (centre + shift))
    return result


def wall_loads(forces: FrameForces, system: dict, axis=(0.0, 0.0, 1.0), origin=(0.0, 0.0, 0.0),
               displacements=None) -> dict:
    """Per contact surface: ``force`` (S, 3) (N), ``torque`` (S,) (N m) about the axis
    through ``origin`` along ``axis``, and ``power`` (S,) (W) delivered to it (module
    docstring). ``displacements`` (W, 3): the walls' shifts at this frame, or None."""
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
    shifts = _shift_of_surface(system, displacements, len(owners))
    for s, wall in enumerate(owners):
        rows = forces.wall_surface == s
        if rows.any():
            w = material_velocity(wall, forces.wall_point[rows], shifts[s])
            power[s] = float(np.sum(on_wall[rows] * w))
    return {"force": force, "torque": torque, "power": power}


def _shift_of_surface(system: dict, displacements, surfaces: int) -> list:
    from ..walls import surface_count

    if displacements is None:
        return [None] * surfaces
    shifts: list = []
    walls = [w for w in system.get("walls", []) if isinstance(w, dict)]
    for wall, shift in zip(walls, np.asarray(displacements, float)):
        shifts += [shift] * surface_count(wall)
    return shifts
