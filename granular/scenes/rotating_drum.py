"""Rotating drum: 500 frictional glass beads in a capped drum turning about a
horizontal axis, and their dynamic angle of repose.

The drum is a `Cylinder` of radius 0.10 m and depth 0.06 m about y, turning at
3 rad/s; the beads (radii 4.5-5.5 mm, 2,500 kg/m^3) start at rest where random
sequential addition put them (`granular.spheres.packing.fill_cylinder`, seed 0) and fall
to the bottom. Beads, drum and caps share e = 0.3, mu = 0.5 and mu_r = 0.1
(rolling resistance). The wall drags the bed up through friction until its free
surface slides: in the rolling regime of a drum (Froude number ``w^2 R / g`` =
0.09 here, below the cataracting onset near 1; Mellmann, *The transverse motion of
solids in rotating cylinders*, Powder Technology, 2001) the surface stays a plane
inclined at the dynamic angle of repose, which `summary` measures.

    granular run rotating_drum [--set omega=3.0] [--duration 1.0]
    .venv/bin/python -m granular.scenes.rotating_drum          # prints the angle over time
"""

from __future__ import annotations

import sys

import numpy as np

import granular as gr
from granular.spheres.packing import fill_cylinder

DRUM_RADIUS = 0.10  # m
DRUM_DEPTH = 0.06  # m, along the axis y
DEFAULTS = dict(duration=1.0, dt=1e-3, record_every=20)
PARAMETERS = dict(n=500, omega=3.0, friction=0.5, rolling_friction=0.1, restitution=0.3, seed=0)
PARAMETER_HELP = dict(
    n="number of beads (radii 4.5-5.5 mm)",
    omega="angular velocity of the drum about +y (rad/s)",
    friction="Coulomb friction of beads and drum (1)",
    rolling_friction="rolling resistance coefficient of beads and drum (1)",
    restitution="coefficient of restitution of beads and drum (1)",
    seed="random seed of the initial packing",
)


def build(
    n: int = 500,
    omega: float = 3.0,
    friction: float = 0.5,
    rolling_friction: float = 0.1,
    restitution: float = 0.3,
    seed: int = 0,
) -> gr.SphereWorld:
    """``n`` beads at rest inside the drum turning at ``omega`` (rad/s) about +y."""
    positions, radii = fill_cylinder(n, [0.0, 0.0, 0.0], "y", DRUM_RADIUS, DRUM_DEPTH, (0.0045, 0.0055), seed=seed)
    drum = gr.Cylinder(
        [0.0, 0.0, 0.0], [0.0, 1.0, 0.0], DRUM_RADIUS, height=DRUM_DEPTH, caps=True, angular_velocity=omega
    )
    return gr.SphereWorld(
        positions,
        radii,
        density=2500.0,
        walls=[drum],
        restitution=restitution,
        friction=friction,
        rolling_friction=rolling_friction,
    )


def dynamic_angle(positions: np.ndarray, radii: np.ndarray) -> float:
    """The inclination (degrees, from the horizontal) of the bed's free surface.

    The drum turns about y, so the surface is a line in the x-z plane. The bed is
    cut into vertical slices one mean diameter wide across its middle (the central
    60% of the chord, away from the wall's boundary layers); the top of each slice
    is its highest bead's top, ``z_i + r_i``, and the angle is that of the least
    squares line through those tops. Positive when the surface rises towards -x,
    the side where the drum's wall moves up (a turn about +y moves the point -x
    of the axis along ``y x (-x) = +z``) and drags the bed up; 0 with fewer than
    three slices.
    """
    x, top = positions[:, 0], positions[:, 2] + radii
    width = 2.0 * float(np.mean(radii))
    low, high = np.percentile(x, 20.0), np.percentile(x, 80.0)
    edges = np.arange(low, high + width, width)
    centres, tops = [], []
    for left, right in zip(edges[:-1], edges[1:]):
        inside = (x >= left) & (x < right)
        if inside.any():
            centres.append(0.5 * (left + right))
            tops.append(top[inside].max())
    if len(centres) < 3:
        return 0.0
    slope = np.polyfit(np.array(centres), np.array(tops), 1)[0]
    return float(np.degrees(np.arctan(-slope)))


def summary(trajectory: gr.Trajectory) -> dict:
    """``dynamic_angle`` (degrees): the mean of `dynamic_angle` over the frames of the
    second half of the run (the bed has reached its steady rolling regime after
    about half a turn), and its standard deviation ``dynamic_angle_spread``."""
    frames = range(len(trajectory) // 2, len(trajectory))
    angles = [dynamic_angle(np.asarray(trajectory.positions[k]), np.asarray(trajectory.radii[k])) for k in frames]
    return dict(dynamic_angle=float(np.mean(angles)), dynamic_angle_spread=float(np.std(angles)))


def main(duration: float = DEFAULTS["duration"]) -> dict:
    """Run the drum and print the angle every 0.1 s, the summary and the step cost."""
    import time

    simulation = gr.Simulation(build(), DEFAULTS["dt"])
    steps = int(round(duration / DEFAULTS["dt"]))
    every = int(round(0.1 / DEFAULTS["dt"]))
    start = time.perf_counter()
    trajectory = simulation.run(steps=steps, record_every=DEFAULTS["record_every"])
    seconds = time.perf_counter() - start
    for k in range(0, len(trajectory), max(every // DEFAULTS["record_every"], 1)):
        angle = dynamic_angle(np.asarray(trajectory.positions[k]), np.asarray(trajectory.radii[k]))
        print(f"t = {trajectory.t[k]:.2f} s: surface at {angle:5.1f} degrees")
    outcome = summary(trajectory)
    print(
        f"dynamic angle of repose {outcome['dynamic_angle']:.1f} +- {outcome['dynamic_angle_spread']:.1f} "
        f"degrees; {1e3 * seconds / steps:.1f} ms a step over {steps} steps"
    )
    return outcome


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]))
