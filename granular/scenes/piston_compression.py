"""Piston compression: a plane moving down at constant speed compresses spheres in a box.

A loose packing of equal spheres (random sequential addition, packing fraction
0.19, slow random velocities of 0.02 m/s) fills a square box, without gravity: under gravity rigid frictionless
spheres settle into a pile near random close packing that no piston can squeeze
(the projection then has no admissible velocity: a `JammingError`). A piston, a
`Plane` facing down with a prescribed velocity (`granular.walls`), comes down at
constant speed, sweeps the spheres up inelastically and squeezes them to a packing
fraction of about 0.5 by the end of the default run. Its rows use
the piston's position at the end of each step (Maury's time-dependent gap
``D(t, q)``), so no sphere ever crosses it. The force the spheres push back with is
recorded every frame (`Trajectory.wall_forces`); the scene's figure is the stress
on the piston (force over the box's cross-section, Pa) against the strain (its
travel over the initial height). Rigid spheres cannot be squeezed past jamming: a
faster or longer run ends with a `JammingError` giving the packing fraction.

    granular run piston_compression                  # -> runs/piston_compression.h5
    granular plot runs/piston_compression.h5 wall-forces forces.png
    python -m granular.scenes.piston_compression              # also outputs/piston_compression.png
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import granular as gr
from granular.render.plots import plot_stress_strain, stress_strain
from granular.spheres.packing import fill_box
from granular.progress import progress

RADIUS = 0.005  # m
SIDE = 0.06  # m, the box's square cross-section
HEIGHT = 0.05  # m, the piston's initial height above the floor
#: Every step recorded: the figure's strain bins then average the force over time
#: (the piston's load is a train of inelastic collisions, not a smooth force).
DEFAULTS = dict(duration=0.3, dt=1e-3, record_every=1)
RENDERS = Path("outputs")  # under the working directory
PISTON = 1  # index of the piston in the world's walls (after the box)
CLEARANCE = 0.004  # m, free space under the piston at the start
AGITATION = 0.02  # m/s, spread of each initial velocity component

PARAMETERS = dict(n=64, speed=0.1, restitution=0.0, friction=0.0, seed=0)
PARAMETER_HELP = dict(
    n="number of spheres, placed at random under the piston (granular.spheres.packing.fill_box)",
    speed="piston speed, downwards (m/s)",
    restitution="coefficient of restitution e of sphere impacts (1); the moving piston's own rows are inelastic",
    friction="Coulomb friction coefficient between spheres and with the walls (1)",
    seed="random seed of the initial placement",
)


def build(
    n: int = 64, speed: float = 0.1, restitution: float = 0.0, friction: float = 0.0, seed: int = 0
) -> gr.SphereWorld:
    """``n`` spheres of radius `RADIUS` placed at random in a box under a piston at
    `HEIGHT` moving down at ``speed`` (m/s)."""
    if n < 1:
        raise gr.InvalidInputError(f"piston_compression needs at least one sphere, got n = {n}")
    if not (np.isfinite(speed) and speed >= 0.0):
        raise gr.InvalidInputError(f"piston speed must be finite and >= 0, got {speed} m/s")

    # Random sequential addition under the piston (granular.spheres.packing): a lattice of
    # equal spheres collapses into simultaneous contacts the projection handles worse.
    # Up to CLEARANCE under the piston: nothing touches it in the first steps.
    positions, _ = fill_box(n, [0.0, 0.0, 0.0], [SIDE, SIDE, HEIGHT - CLEARANCE], RADIUS, seed=seed)
    velocities = np.random.default_rng(seed).normal(0.0, AGITATION, (n, 3))
    box = gr.Box([0.0, 0.0, 0.0], [SIDE, SIDE, 2.0 * HEIGHT], open_top=True)
    piston = gr.Plane([0.0, 0.0, HEIGHT], [0.0, 0.0, -1.0], velocity=[0.0, 0.0, -float(speed)])
    return gr.SphereWorld(
        positions,
        RADIUS,
        velocities=velocities,
        density=2500.0,
        walls=[box, piston],
        gravity=(0.0, 0.0, 0.0),
        restitution=restitution,
        friction=friction,
    )


def _geometry(trajectory: gr.Trajectory) -> tuple[float, float]:
    """``(area m^2, initial height m)`` of the sample, from the run file alone."""
    walls = trajectory.system["walls"]
    box, piston = walls[0], walls[PISTON]
    lower, upper = np.asarray(box["lower"], float), np.asarray(box["upper"], float)
    return float(np.prod(upper[:2] - lower[:2])), float(piston["point"][2] - lower[2])


def summary(trajectory: gr.Trajectory) -> dict:
    """``strain`` (piston travel over the initial height) and ``stress`` (Pa, the
    force on the piston over the cross-section) at the last frame, the largest
    ``peak_stress`` (Pa) and the final ``packing_fraction`` under the piston."""
    area, height = _geometry(trajectory)
    strain, stress = stress_strain(trajectory, PISTON, area, height)
    volume = area * height * (1.0 - strain[-1])
    spheres = float(np.sum(4.0 / 3.0 * np.pi * np.asarray(trajectory.radii[-1]) ** 3))
    return dict(
        strain=float(strain[-1]),
        stress=float(stress[-1]),
        peak_stress=float(stress.max()),
        packing_fraction=spheres / volume,
    )


def plot(trajectory: gr.Trajectory, path) -> Path:
    """The stress on the piston (Pa) against the strain (`granular.render.plots.plot_stress_strain`)."""
    area, height = _geometry(trajectory)
    return plot_stress_strain(trajectory, path, PISTON, area, height, title="piston compression")


def main(duration: float = DEFAULTS["duration"], out: str = "runs/piston_compression.h5") -> gr.Trajectory:
    simulation = gr.Simulation(build(**PARAMETERS), dt=DEFAULTS["dt"])
    trajectory = simulation.run(duration=duration, record_every=DEFAULTS["record_every"], progress=progress())
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    trajectory.save(out)
    figures = summary(trajectory)
    print("piston_compression: " + ", ".join(f"{k} {v:.4g}" for k, v in figures.items()))
    print(f"  wrote {out} and {plot(trajectory, RENDERS / 'piston_compression.png')}")
    return trajectory


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]))
