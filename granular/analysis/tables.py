"""The measurements of a run as tables (pandas), one row per frame (or per frame and
surface, or per position), written as CSV or Parquet.

- `series`: per frame, the contacts (count, mean and largest force), the
  coordination numbers, the stress over a region (its components, pressure,
  deviatoric stress), the load on the floor against the weight.
- `wall_table`: per frame and contact surface, force, torque and power.
- `profile_table`: the coarse-grained fields of a frame, or their average over
  frames, along an axis.
- `flow_table`: the mass flow rate through a plane between frames.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import averages, coarse, flow, stress, structure, walls
from .forces import frame_forces, sphere_masses
from ..records.files import atomic_path
from ..walls import surface_names

TABLE_SUFFIXES = (".csv", ".parquet")
_COMPONENTS = [f"sigma_{a}{b}" for a in "xyz" for b in "xyz"]


def _pandas():
    import pandas

    return pandas


def frames_of(trajectory, frames=None) -> list[int]:
    """The frames to measure: all but the first (which has no step, hence no forces), or ``frames``."""
    if frames is None:
        return list(range(1, len(trajectory))) or [0]
    return [int(k) % len(trajectory) for k in frames]


def weight(trajectory, k: int) -> float:
    """``sum m_i |g|`` (N) of frame ``k``."""
    g = np.linalg.norm(np.asarray(trajectory.system.get("gravity") or np.zeros(3), float))
    return float(sphere_masses(trajectory, k).sum() * g)


def floor_load(trajectory, k: int) -> float:
    """The force (N) the spheres press on the surfaces named "floor", along gravity."""
    forces = trajectory.wall_forces
    gravity = np.asarray(trajectory.system.get("gravity") or np.zeros(3), float)
    if forces is None or not np.linalg.norm(gravity) > 0.0:
        return 0.0
    names = surface_names(trajectory.system.get("walls", []))
    floors = [s for s, name in enumerate(names) if name == "floor" and s < forces.shape[1]]
    down = gravity / np.linalg.norm(gravity)
    return float(forces[k][floors].sum(axis=0) @ down) if floors else 0.0


def series(trajectory, region=None, frames=None, kinetic: bool = True):
    """A DataFrame, one row per frame (module docstring); stress columns when ``region`` is given."""
    rows = []
    for k in frames_of(trajectory, frames):
        forces = frame_forces(trajectory, k)
        magnitudes = forces.contact_force_magnitudes()
        numbers = structure.coordination(forces)
        row = {
            "frame": k,
            "t": float(trajectory.t[k]),
            "spheres": forces.n,
            "pair_contacts": len(forces.pair_i),
            "wall_contacts": len(forces.wall_sphere),
            "mean_force": float(magnitudes.mean()) if magnitudes.size else 0.0,
            "largest_force": float(magnitudes.max(initial=0.0)),
            "z": numbers.z,
            "z_mechanical": numbers.z_mechanical,
            "rattler_fraction": numbers.rattler_fraction,
            "floor_load": floor_load(trajectory, k),
            "weight": weight(trajectory, k),
            "kinetic_energy": float(trajectory.kinetic_energy[k]),
        }
        if region is not None:
            sigma = stress.region_stress(forces, region, kinetic=kinetic)
            row.update(dict(zip(_COMPONENTS, sigma.ravel())))
            row["pressure"] = float(stress.pressure(sigma))
            row["deviatoric"] = float(stress.deviatoric_stress(sigma))
        rows.append(row)
    return _pandas().DataFrame(rows)


def wall_table(trajectory, axis=(0.0, 0.0, 1.0), origin=(0.0, 0.0, 0.0), frames=None):
    """A DataFrame, one row per frame and contact surface: ``force_x, force_y, force_z``
    (N), ``torque`` (N m) about the axis, ``power`` (W) (`granular.analysis.walls`)."""
    names = surface_names(trajectory.system.get("walls", []))
    rows = []
    for k in frames_of(trajectory, frames):
        forces = frame_forces(trajectory, k, threshold=0.0)
        shifts = None if trajectory.wall_displacements is None else trajectory.wall_displacements[k]
        loads = walls.wall_loads(forces, trajectory.system, axis, origin, shifts, walls.translations(trajectory, k))
        for s in range(len(loads["torque"])):
            rows.append(
                {
                    "frame": k,
                    "t": float(trajectory.t[k]),
                    "surface": s,
                    "name": names[s] if s < len(names) else f"wall {s}",
                    "force_x": loads["force"][s, 0],
                    "force_y": loads["force"][s, 1],
                    "force_z": loads["force"][s, 2],
                    "torque": loads["torque"][s],
                    "power": loads["power"][s],
                }
            )
    return _pandas().DataFrame(rows)


def profile_table(
    trajectory,
    k: int,
    axis="z",
    positions=None,
    kernel: str = "lucy",
    width: float | None = None,
    area: float | None = None,
    frames=None,
):
    """The coarse-grained fields of frame ``k`` along ``axis`` as a DataFrame, one row
    per position: density, packing fraction, velocity, stress components, pressure,
    temperature. With ``frames`` (a slice or indices), their average
    (`granular.analysis.averages`) instead of frame ``k``'s. Defaults, from frame ``k``:
    ``width`` the mean diameter, 100 positions over the spheres' extent, ``area`` the
    cross-section of the spheres' bounding box across the axis."""
    forces = frame_forces(trajectory, k, threshold=0.0)
    a = coarse.axis_index(axis)
    width = float(2.0 * forces.radii.mean()) if width is None else float(width)
    kernel_ = coarse.Kernel(kernel, width)
    if positions is None:
        low = forces.centres[:, a].min() - forces.radii.max() - kernel_.cutoff
        high = forces.centres[:, a].max() + forces.radii.max() + kernel_.cutoff
        positions = np.linspace(low, high, 100)
    if area is None:
        across = [b for b in range(3) if b != a]
        extent = [np.ptp(forces.centres[:, b]) + 2.0 * forces.radii.max() for b in across]
        area = float(extent[0] * extent[1])
    if frames is None:
        fields = coarse.profile(forces, a, positions, kernel_, area)
    else:
        fields = averages.average_profile(trajectory, frames, a, positions, kernel_, area)
    table = {
        "position": np.asarray(positions, float),
        "density": fields.density,
        "packing_fraction": fields.packing_fraction,
        "velocity_x": fields.velocity[:, 0],
        "velocity_y": fields.velocity[:, 1],
        "velocity_z": fields.velocity[:, 2],
    }
    table.update({name: fields.stress.reshape(-1, 9)[:, c] for c, name in enumerate(_COMPONENTS)})
    table["pressure"] = stress.pressure(fields.stress)
    table["temperature"] = fields.temperature
    return _pandas().DataFrame(table)


def flow_table(trajectory, point, normal):
    """The mass flow rate (kg/s) through a plane between frames (`granular.analysis.flow`)."""
    t, rates = flow.mass_flow(trajectory, point, normal)
    return _pandas().DataFrame({"t": t, "mass_flow": rates})


def save_table(table, path) -> Path:
    """Write ``table`` as CSV or Parquet, by ``path``'s suffix (a ValueError for others)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"path: a table is written as {' or '.join(TABLE_SUFFIXES)}, not {path.name}")
    with atomic_path(path) as temporary:
        if suffix == ".csv":
            table.to_csv(temporary, index=False)
        else:
            table.to_parquet(temporary, index=False)
    return path
