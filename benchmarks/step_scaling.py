"""Wall time per step of the N-sphere world against N, in two regimes.

A box of N spheres on a cubic lattice (random velocities of 0.5 m/s rms, gravity,
restitution 0.5, dt = 1e-3) is advanced ``--steps`` steps; the script prints the
median wall time per step split into neighbour search, constraint assembly and
solve (all projections of the step), the number of constraint rows and of active
contacts (positive impulse).

- ``gas``: lattice spacing 3 r (gaps of one radius); collisions are sparse.
- ``dense``: lattice spacing 2.2 r; the lattice collapses under gravity and
  collisions within a few steps, so the projection sees a 3D contact network
  (about one active contact per sphere). Its cost is the sparse factorisation of
  the Delassus matrix of that network, whose fill grows faster than linearly.

    .venv/bin/python benchmarks/step_scaling.py [N ...] [--steps K] [--regime gas|dense|both]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from tails import tail_line

RADIUS = 0.01
SPACINGS = {"gas": 3.0, "dense": 2.2}


def lattice_box(n: int, spacing: float = 2.2, seed: int = 0, restitution: float = 0.5) -> gr.SphereWorld:
    """``n`` spheres of radius RADIUS on a cubic lattice of ``spacing`` radii in a closed box."""
    side = int(np.ceil(n ** (1.0 / 3.0)))
    pitch = spacing * RADIUS
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    positions = grid * pitch + 1.5 * RADIUS
    length = side * pitch + RADIUS
    rng = np.random.default_rng(seed)
    velocities = rng.normal(0.0, 0.5 / np.sqrt(3.0), positions.shape)
    return gr.SphereWorld(
        positions,
        RADIUS,
        velocities=velocities,
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [length] * 3)],
        restitution=restitution,
    )


def measure(n: int, steps: int, regime: str) -> dict:
    world = lattice_box(n, SPACINGS[regime])
    sim = gr.Simulation(world, dt=1e-3)
    rows = []
    for _ in range(steps):
        start = time.perf_counter()
        result = sim.step()
        total = time.perf_counter() - start
        seconds = result.solver.seconds
        rows.append(
            (
                total,
                seconds.get("neighbors", 0.0),
                seconds.get("assembly", 0.0),
                seconds.get("solve", 0.0),
                len(result.contacts),
                int(result.contacts.active.sum()),
            )
        )
    median = np.median(np.array(rows), axis=0)
    return dict(
        n=n,
        regime=regime,
        tail=tail_line([row[0] for row in rows]),
        total=median[0],
        neighbors=median[1],
        assembly=median[2],
        solve=median[3],
        constraints=int(median[4]),
        active=int(median[5]),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 100000])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--regime", choices=["gas", "dense", "both"], default="both")
    args = parser.parse_args()
    regimes = ["gas", "dense"] if args.regime == "both" else [args.regime]
    print(
        f"{'regime':>6} {'N':>8} {'step s':>9} {'search s':>9} {'assembly s':>10} {'solve s':>9} "
        f"{'rows':>8} {'active':>7}",
        flush=True,
    )
    for regime in regimes:
        for n in args.sizes:
            r = measure(n, args.steps, regime)
            print(
                f"{regime:>6} {r['n']:>8} {r['total']:>9.4f} {r['neighbors']:>9.4f} {r['assembly']:>10.4f} "
                f"{r['solve']:>9.4f} {r['constraints']:>8} {r['active']:>7}   {r['tail']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
