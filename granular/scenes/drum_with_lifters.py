"""Drum with lifters: a rotating drum read from an STL file, with four lifter bars.

The drum is a closed cylinder (radius 8 cm, length 4 cm, 48 facets around) with four
lifters, bars 1.2 cm high along its length at 90 degrees from one another, written
as one STL file by trimesh and read back as a `granular.TriangleMesh` (so the scene
runs from the STL as a user's CAD drum would). The mesh turns about its horizontal
axis at ``omega`` rad/s; frictional turning spheres fill its lower part. The lifters
carry grains up the rising side and drop them (cascading), which a smooth drum of
this fill and speed does not do.

`summary` gives the torque the drum needs (N m): the mean power of the walls over
the second half of the run, the slope of `granular.Trajectory.wall_work` against
time, divided by ``omega`` (a turning wall's work per step is ``torque omega dt``,
`granular.records.results.StepResult.wall_work`), and the highest centre (m) any grain
reached above the drum's axis, which the lifters raise.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import granular as gr
from granular.progress import progress

RADIUS = 0.08  # m, the drum's inner radius
LENGTH = 0.04  # m
LIFTER_HEIGHT = 0.012  # m
GRAIN = 0.004  # m, the spheres' radius
DEFAULTS = dict(duration=1.0, dt=5e-4, record_every=40)
PARAMETERS = dict(omega=3.0, n=150, friction=0.5, seed=0)
PARAMETER_HELP = dict(
    omega="the drum's angular velocity (rad/s)",
    n="number of spheres",
    friction="Coulomb coefficient of every contact",
    seed="seed of the initial positions",
)


def write_stl(path: Path) -> Path:
    """The drum and its lifters as one STL file at ``path`` (trimesh): a closed
    cylinder about the y axis through the origin and four boxes against its side."""
    import trimesh

    shell = trimesh.creation.cylinder(radius=RADIUS, height=LENGTH, sections=48)
    shell.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))  # axis z -> y
    parts = [shell]
    for k in range(4):
        bar = trimesh.creation.box(extents=(LIFTER_HEIGHT, 0.98 * LENGTH, 0.006))
        angle = k * np.pi / 2
        inward = RADIUS - LIFTER_HEIGHT / 2 - 1e-4
        bar.apply_transform(trimesh.transformations.rotation_matrix(-angle, [0, 1, 0]))
        bar.apply_translation([inward * np.cos(angle), 0.0, inward * np.sin(angle)])
        parts.append(bar)
    trimesh.util.concatenate(parts).export(path)
    return path


def grains(n: int, seed: int) -> np.ndarray:
    """``n`` centres in the drum's lower half, clear of the lifters and of one another."""
    rng, centres = np.random.default_rng(seed), []
    reach = RADIUS - LIFTER_HEIGHT - 1.2 * GRAIN
    while len(centres) < n:
        p = rng.uniform([-reach, -LENGTH / 2 + 1.1 * GRAIN, -reach], [reach, LENGTH / 2 - 1.1 * GRAIN, 0.3 * reach])
        if np.hypot(p[0], p[2]) < reach and all(np.linalg.norm(p - c) > 2.05 * GRAIN for c in centres):
            centres.append(p)
    return np.array(centres)


def build(
    omega: float = PARAMETERS["omega"],
    n: int = PARAMETERS["n"],
    friction: float = PARAMETERS["friction"],
    seed: int = PARAMETERS["seed"],
) -> gr.SphereWorld:
    """The drum read from its STL file, turning at ``omega`` about y, and ``n`` grains."""
    with tempfile.TemporaryDirectory() as folder:
        drum = gr.TriangleMesh.from_file(
            write_stl(Path(folder) / "drum.stl"),
            angular_velocity=omega,
            axis=(0.0, 1.0, 0.0),
            centre=(0.0, 0.0, 0.0),
            friction=friction,
            name="drum",
        )
    return gr.SphereWorld(grains(int(n), int(seed)), GRAIN, density=2500.0, walls=[drum], friction=friction)


def summary(trajectory: gr.Trajectory) -> dict:
    """``torque`` (N m) and ``highest`` (m above the axis), module docstring."""
    omega = float(trajectory.system["walls"][0]["angular_velocity"])
    half = trajectory.t >= trajectory.t[0] + 0.5 * (trajectory.t[-1] - trajectory.t[0])
    work = trajectory.wall_work if trajectory.wall_work is not None else np.zeros(len(trajectory))
    power = float(np.polyfit(trajectory.t[half], work[half], 1)[0]) if np.count_nonzero(half) >= 2 else float("nan")
    return dict(torque=power / omega, highest=float(np.max(trajectory.positions[:, :, 2])))


def main(duration: float = DEFAULTS["duration"]) -> gr.Trajectory:
    simulation = gr.Simulation(build(), dt=DEFAULTS["dt"])
    trajectory = simulation.run(duration=duration, record_every=DEFAULTS["record_every"], progress=progress())
    figures = summary(trajectory)
    print(
        f"drum_with_lifters: torque {figures['torque']:.4g} N m, grains raised to {figures['highest']:.3g} m "
        "above the axis"
    )
    return trajectory


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]))
