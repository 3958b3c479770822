"""Wall time per step of the N-sphere world against N.

A box of N spheres (cubic lattice start with spacing 2.2 r, random velocities of
0.5 m/s, gravity, restitution 0.5, dt = 1e-3) is advanced a number of steps; the
script prints the median wall time per step split into neighbour search,
constraint assembly and solve (the projections), and the number of constraints.

    .venv/bin/python benchmarks/step_scaling.py [N ...] [--steps K]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr

RADIUS = 0.01


def lattice_box(n: int, seed: int = 0, restitution: float = 0.5) -> gr.SphereWorld:
    side = int(np.ceil(n ** (1.0 / 3.0)))
    spacing = 2.2 * RADIUS
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    positions = grid * spacing + 1.5 * RADIUS
    length = side * spacing + RADIUS
    rng = np.random.default_rng(seed)
    velocities = rng.normal(0.0, 0.5 / np.sqrt(3.0), positions.shape)
    return gr.SphereWorld(positions, RADIUS, velocities=velocities, density=2500.0,
                          walls=[gr.Box([0, 0, 0], [length] * 3)], restitution=restitution)


def measure(n: int, steps: int) -> dict:
    world = lattice_box(n)
    sim = gr.Simulation(world, dt=1e-3)
    rows = []
    for _ in range(steps):
        start = time.perf_counter()
        result = sim.step()
        total = time.perf_counter() - start
        seconds = result.solver.seconds
        rows.append((total, seconds.get("neighbors", 0.0), seconds.get("assembly", 0.0),
                     seconds.get("solve", 0.0), len(result.contacts), int(result.contacts.active.sum())))
    rows = np.array(rows)
    median = np.median(rows, axis=0)
    return dict(n=n, total=median[0], neighbors=median[1], assembly=median[2], solve=median[3],
                constraints=int(median[4]), active=int(median[5]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 100000])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(f"{'N':>8} {'step s':>9} {'search s':>9} {'assembly s':>10} {'solve s':>9} "
          f"{'rows':>8} {'active':>7}")
    for n in args.sizes:
        r = measure(n, args.steps)
        print(f"{r['n']:>8} {r['total']:>9.4f} {r['neighbors']:>9.4f} {r['assembly']:>10.4f} "
              f"{r['solve']:>9.4f} {r['constraints']:>8} {r['active']:>7}", flush=True)


if __name__ == "__main__":
    main()
