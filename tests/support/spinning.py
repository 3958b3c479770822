"""A spinning gas: 20 spheres of radius 18 mm, jittered on a 3 x 3 x 3 lattice of
spacing 5 cm in a 0.2 m box without gravity, with velocities ``normal(0, 1)`` m/s and
angular velocities ``normal(0, 80)`` rad/s (``default_rng(11)``): contacts that slide
and turn from the first collisions."""

from __future__ import annotations

import numpy as np

import granular as gr


def spinning_gas(wall_restitution=None, **laws) -> gr.SphereWorld:
    """The gas, its spheres' laws ``laws`` (``restitution``, ``friction`` ...), the box
    with friction 0.3 and restitution ``wall_restitution`` (None: the spheres')."""
    rng = np.random.default_rng(11)
    grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)[:20]
    positions = 0.05 + 0.05 * grid + rng.uniform(-0.005, 0.005, (20, 3))
    return gr.SphereWorld(
        positions,
        0.018,
        velocities=rng.normal(0, 1.0, (20, 3)),
        angular_velocities=rng.normal(0, 80.0, (20, 3)),
        gravity=(0, 0, 0),
        walls=[gr.Box([0, 0, 0], [0.2, 0.2, 0.2], friction=0.3, restitution=wall_restitution)],
        **laws,
    )
