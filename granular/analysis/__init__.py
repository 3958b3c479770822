"""Measuring a packing as a physicist does: stress, structure, coarse-grained fields,
wall loads and flow, per frame and over a run (`granular analyse`, `granular plot`).

One job per module:

- `forces`: a frame's contact forces on spheres and walls, their contact points.
- `regions`: the box, cylinder and slab over which stresses are averaged.
- `stress`: the Love–Weber stress per sphere and over a region; pressure,
  deviator, principal directions; the virial balance of a packing at rest.
- `structure`: coordination numbers, rattlers, fabric tensor, ``P(f/<f>)``.
- `coarse`: coarse-grained density, velocity, stress and temperature fields.
- `walls`: force, torque and power per wall surface.
- `flow`: mass flow rate through a plane.
- `averages`: coarse-grained fields and region stresses averaged over frames.
- `tables`: the above over a run as pandas tables, saved as CSV or Parquet.

    from granular.analysis import frame_forces, region_stress, BoxRegion
    forces = frame_forces(trajectory, -1)
    sigma = region_stress(forces, BoxRegion([0, 0, 0], [0.1, 0.1, 0.05]))
"""

from __future__ import annotations

from .averages import average_fields, average_profile, average_region_stress, frame_list, parse_frames
from .coarse import Fields, Kernel, coarse_grain, grid, profile
from .flow import mass_flow
from .forces import FrameForces, frame_forces
from .regions import BoxRegion, CylinderRegion, SlabRegion, parse_region
from .stress import deviator, deviatoric_stress, pressure, principal, region_stress, sphere_stress, virial_balance
from .structure import Coordination, coordination, fabric, force_distribution, rattlers
from .tables import flow_table, profile_table, save_table, series, wall_table
from .walls import wall_loads

__all__ = [
    "BoxRegion",
    "Coordination",
    "CylinderRegion",
    "Fields",
    "FrameForces",
    "Kernel",
    "SlabRegion",
    "average_fields",
    "average_profile",
    "average_region_stress",
    "coarse_grain",
    "coordination",
    "deviator",
    "deviatoric_stress",
    "fabric",
    "flow_table",
    "force_distribution",
    "frame_forces",
    "frame_list",
    "grid",
    "mass_flow",
    "parse_frames",
    "parse_region",
    "pressure",
    "principal",
    "profile",
    "profile_table",
    "rattlers",
    "region_stress",
    "save_table",
    "series",
    "sphere_stress",
    "virial_balance",
    "wall_loads",
    "wall_table",
]
