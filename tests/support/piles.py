"""Piles of spheres at rest in an open box, for the measurements of `granular.analysis`.

The settled configurations are stored in ``tests/data/pile_*.csv`` (positions,
radii, velocities); ``python -m tests.support.piles`` pours them again: 120 spheres of
radii 9-11 mm placed at random (`granular.spheres.packing.fill_box`, seed 3) fall into a
box of 8 x 8 cm with e = 0 and settle (about 10 s of computing each). A test
loads one and steps it a few times, recording every step, so that the frames it
measures are steps of a pile at rest.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np

import granular as gr
from granular.records.configurations import read_configuration, write_configuration
from granular.spheres.packing import fill_box

DATA = Path(__file__).parent.parent / "data"
SIDE = 0.08  # m, the box's side
DT = 1e-3  # s
DENSITY = 2500.0  # kg/m^3
#: Settling time (s) of each pile: a frictional pile creeps for longer.
SETTLE = {0.0: 0.8, 0.5: 2.0}


def box() -> gr.Box:
    return gr.Box([0.0, 0.0, 0.0], [SIDE, SIDE, 0.4], open_top=True)


def path(friction: float) -> Path:
    return DATA / f"pile_mu{friction:g}.csv"


def world(positions, radii, friction: float, velocities=None) -> gr.SphereWorld:
    # "separate": a settled pile keeps overlaps of the solver's tolerance (1e-9 m here),
    # which the first steps close at a fraction of a micrometre a second.
    return gr.SphereWorld(
        positions,
        radii,
        density=DENSITY,
        walls=[box()],
        restitution=0.0,
        friction=friction,
        velocities=velocities,
        initial_overlaps="separate",
    )


def pour(friction: float) -> gr.SphereWorld:
    """Pour the pile again and write its settled configuration (``tests/data``)."""
    positions, radii = fill_box(120, [0.0, 0.0, 0.0], [SIDE, SIDE, 0.3], (0.009, 0.011), seed=3)
    simulation = gr.Simulation(world(positions, radii, friction), dt=DT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        run = simulation.run(duration=SETTLE[friction], record_every=100, progress=None)
    write_configuration(path(friction), run.positions[-1], run.radii[-1], run.velocities[-1])
    return run


@functools.lru_cache(maxsize=None)
def pile(friction: float = 0.0, steps: int = 5) -> gr.Trajectory:
    """The stored pile stepped ``steps`` times, a frame each step (``steps + 1`` frames)."""
    configuration = read_configuration(path(friction))
    settled = world(configuration.positions, configuration.radii, friction, configuration.velocities)
    return gr.Simulation(settled, dt=DT).run(duration=steps * DT, record_every=1, progress=None)


if __name__ == "__main__":
    for mu in SETTLE:
        last = pour(mu)
        print(
            f"mu = {mu:g}: kinetic energy {last.kinetic_energy[-1]:.3g} J, "
            f"largest speed {np.abs(last.velocities[-1]).max():.3g} m/s -> {path(mu)}"
        )
