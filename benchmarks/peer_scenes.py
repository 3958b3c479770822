"""The peers' own scenes, rebuilt exactly, for `benchmarks/peers.py`.

- `scopi_box`: SCoPI's ``demos/box_spheres_3d.cpp`` (n^3 spheres falling along -y
  into a box open towards +y, a force of 1 N each, no friction, e = 0). The radii,
  masses and jitters are drawn as SCoPI draws them: C++'s
  ``std::default_random_engine`` (``minstd_rand0``, seed 1) through libstdc++'s
  ``uniform_real_distribution<double>`` (`MinstdRand0`), so the initial state is
  the peer's to the last bit.
- `siconos_box`: 1,000 spheres of 1 kg and radius 1 cm poured from a lattice into
  an open box under gravity, as run with Siconos 4.4 (Moreau-Jean, NSGS).
"""

from __future__ import annotations

import numpy as np

import granular as gr


class MinstdRand0:
    """C++ ``std::minstd_rand0`` (Park-Miller, multiplier 16807) and libstdc++'s
    ``uniform_real_distribution<double>``, which uses two draws a number:
    ``(g1 - 1 + (g2 - 1) R) / R^2`` with ``R = 2^31 - 2``, in that floating-point order."""

    MODULUS = 2**31 - 1
    RANGE = float(2**31 - 2)

    def __init__(self, seed: int = 1):
        self.state = seed % self.MODULUS or 1

    def draw(self) -> int:
        self.state = (16807 * self.state) % self.MODULUS
        return self.state

    def canonical(self) -> float:
        total, scale = 0.0, 1.0
        for _ in range(2):
            total += float(self.draw() - 1) * scale
            scale *= self.RANGE
        value = total / scale
        return value if value < 1.0 else float(np.nextafter(1.0, 0.0))

    def uniform(self, low: float, high: float) -> float:
        return self.canonical() * (high - low) + low


def scopi_state(n: int, width: float = 10.0):
    """Positions (n^3, 3), radii (n^3,) and masses (n^3,) of SCoPI's box, in its order."""
    r0 = width / n / 2.0
    rng = MinstdRand0(1)
    positions, radii, masses = [], [], []
    for i in range(n):
        for j in range(n):
            for k in range(n):
                radii.append(rng.uniform(0.8 * r0, 0.9 * r0))
                masses.append(rng.uniform(1.0, 2.0))
                dx, dy, dz = (rng.uniform(-0.05, 0.05) for _ in range(3))
                positions.append(
                    (r0 + 0.1 + i * 2.0 * r0 + dx, 1.1 * r0 + 2.1 * r0 * j + dy, r0 + 0.1 + k * 2.0 * r0 + dz)
                )
    return np.array(positions), np.array(radii), np.array(masses)


def scopi_box(n: int = 10, width: float = 10.0, **world_options):
    """SCoPI's ``box_spheres_3d`` with n^3 spheres; returns ``(world, dt)``.

    Planes x = 0, x = W + 2 r0, y = 0, z = 0, z = W + 2 r0 (open towards +y); a
    force of 1 N along -y on every sphere (not an acceleration); dt = 0.09 r0.
    With n >= 20 the initial spheres overlap (radii up to 0.9 r0 on a 2 r0 grid
    jittered by 0.05): pass ``initial_overlaps="separate"``.
    """
    r0 = width / n / 2.0
    positions, radii, masses = scopi_state(n, width)
    top = width + 2.0 * r0
    walls = [
        gr.Plane([0, 0, 0], [1, 0, 0]),
        gr.Plane([top, 0, 0], [-1, 0, 0]),
        gr.Plane([0, 0, 0], [0, 1, 0]),
        gr.Plane([0, 0, 0], [0, 0, 1]),
        gr.Plane([0, 0, top], [0, 0, -1]),
    ]

    def push(t, q, u):
        force = np.zeros_like(q)
        force[:, 1] = -1.0
        return force

    world = gr.SphereWorld(
        positions,
        radii,
        masses=masses,
        gravity=(0.0, 0.0, 0.0),
        force=push,
        walls=walls,
        restitution=0.0,
        **world_options,
    )
    return world, 0.2 * 0.9 * r0 / 2.0


def siconos_box(per_axis: int = 10, seed: int = 0, n: int | None = None, friction: float = 0.0):
    """The Siconos comparison: ``n`` spheres (default per_axis^3; r = 0.01 m, 1 kg) on
    the first sites of a lattice of ``per_axis = ceil(n^(1/3))`` sites a side, spacing
    0.021 m (x first, lowest centres at z = 0.02 m), velocities
    ``default_rng(seed).normal(0, 0.5, (n, 3))``, gravity -9.81 z, in a box open at
    the top with inner faces z = 0 and x, y = +-L/2, L = per_axis 0.021 + 0.02, with
    Coulomb friction ``friction`` (turning spheres) on pairs and walls.
    Returns ``(world, dt)`` with dt = 1e-3 s."""
    if n is not None:
        per_axis = int(np.ceil(round(n ** (1.0 / 3.0), 9)))
    n = per_axis**3 if n is None else n
    radius, spacing = 0.01, 0.021
    index = np.arange(n)
    grid = np.stack([index % per_axis, (index // per_axis) % per_axis, index // per_axis**2], axis=1)
    half = (per_axis * spacing + 0.02) / 2.0
    offset = (per_axis - 1) * spacing / 2.0
    positions = np.column_stack(
        [grid[:, 0] * spacing - offset, grid[:, 1] * spacing - offset, 0.02 + grid[:, 2] * spacing]
    )
    velocities = np.random.default_rng(seed).normal(0.0, 0.5, positions.shape)
    box = gr.Box([-half, -half, 0.0], [half, half, 10.0], open_top=True)
    world = gr.SphereWorld(
        positions, radius, masses=1.0, velocities=velocities, walls=[box], restitution=0.0, friction=friction
    )
    return world, 1e-3
