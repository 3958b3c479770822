"""Small systems several test files share."""

from __future__ import annotations

import numpy as np

import granular as gr


def exploding_spring(stiffness: float = 1e8) -> gr.ConstrainedSystem:
    """A spring of ``stiffness`` (N/m) on 1 kg starting at q = 0.5 m, with a constraint
    that never acts (gap 1e300 - q): stepped explicitly with dt = 1e-3 s (omega dt = 10
    for 1e8 N/m, far past the stability limit 2) it grows about 100-fold a step until
    it overflows."""
    return gr.ConstrainedSystem(
        [0.5],
        [0.0],
        mass=[[1.0]],
        force=lambda t, q, u: -stiffness * q,
        constraints=[gr.Constraint(gap=lambda t, q: 1e300 - q[0], gradient=lambda t, q: np.array([-1.0]))],
    )


def lattice_in_a_box(seed: int) -> gr.SphereWorld:
    """64 equal spheres (radius 5 mm, 2,500 kg/m^3: 1.3 g) on a jittered 4 x 4 x 4
    lattice (spacing 1.5 diameters) settling without friction, e = 0, into an open
    box 6 cm wide: a packing with many redundant contacts."""
    radius, side = 0.005, 0.06
    rng = np.random.default_rng(seed)
    sites = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = (sites + 0.5) * (side / 4) + np.array([0.0, 0.0, 0.002])
    positions[:, :2] += rng.uniform(-0.1, 0.1, (64, 2)) * radius
    velocities = rng.normal(0.0, 0.02, (64, 3))
    return gr.SphereWorld(
        positions,
        radius,
        velocities=velocities,
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [side, side, 0.08], open_top=True)],
        restitution=0.0,
    )


def sand_pile_scene():
    """`granular/scenes/sand_pile.py` as a module (its `pour` runs one of the scene's pours)."""
    from granular.scenes import sand_pile

    return sand_pile


class InverseMassDiagonal:
    """A diagonal metric as the contact solvers read it from a sphere world: only its
    ``inverse_diagonal`` (d,), the inverse masses (1/kg) and moments of inertia
    (1/(kg m^2)) of the coordinates (`granular.metric.DiagonalMetric`)."""

    def __init__(self, inverse_diagonal):
        self.inverse_diagonal = inverse_diagonal
