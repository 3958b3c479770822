"""A small run with motion and contacts, for the analysis over frames and the commands:
eight spheres of radius 1 cm dropped 1 cm into an open box land on its floor and on
each other (dt = 1 ms, 0.1 s, a frame every 10 steps: 11 frames)."""

from __future__ import annotations

import functools

import numpy as np

import granular as gr

SIDE = 0.062  # m, the box's side
RADIUS = 0.01  # m


def world() -> gr.SphereWorld:
    grid = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
    return gr.SphereWorld(
        np.array([0.0205, 0.0205, 0.03]) + grid * 0.0205,
        RADIUS,
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [SIDE, SIDE, 0.2], open_top=True)],
    )


@functools.lru_cache(maxsize=None)
def falling() -> gr.Trajectory:
    """The run (cached: the tests only read it)."""
    return gr.Simulation(world(), dt=1e-3).run(duration=0.1, record_every=10, progress=None)


def save(path) -> None:
    """Write the run file to ``path``."""
    falling().save(path)
