"""Growing spheres up to jamming: the most degenerate contact networks a user meets.

300 equal spheres in a periodic unit cube, placed at random at packing fraction
0.35 (uniform positions, overlaps removed by `granular.remove_overlaps`), no
gravity, at rest, with radii ``r0 (1 + 2 t)`` and dt = 1e-3 s, are advanced until
the projection admits no velocity (`JammingError`). Prints the wall time of the
run, the mean time per step of the first 75 steps and of the last 27 before the
jam, the time and packing fraction of the jam, and the smallest gap met after any
step (as a fraction of the radius).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/growing_jam.py [--n 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from granular.spheres.neighbors import candidate_pairs, pair_gaps

FRACTION = 0.35
GROWTH = 2.0  # 1/s: r(t) = r0 (1 + GROWTH t)
DT = 1e-3


def start(n: int, seed: int):
    """Positions (n, 3) at packing fraction FRACTION in the unit cell, and r0 (m)."""
    r0 = (FRACTION * 3.0 / (4.0 * np.pi * n)) ** (1.0 / 3.0)
    cell = gr.PeriodicBox([0, 0, 0], [1, 1, 1])
    rng = np.random.default_rng(seed)
    positions = gr.remove_overlaps(rng.random((n, 3)), r0, periodic=cell)
    return positions, r0, cell


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    positions, r0, cell = start(args.n, args.seed)

    def radii(t):
        return np.full(args.n, r0 * (1.0 + GROWTH * t))

    world = gr.SphereWorld(positions, radii, masses=1.0, gravity=(0.0, 0.0, 0.0), periodic=cell)
    sim = gr.Simulation(world, dt=DT)
    seconds, worst = [], np.inf
    began = time.perf_counter()
    try:
        while True:
            clock = time.perf_counter()
            result = sim.step()
            seconds.append(time.perf_counter() - clock)
            r = result.radii
            i, j = candidate_pairs(result.positions, r, 0.0, cell)
            gaps = pair_gaps(result.positions, r, i, j, cell)
            worst = min(worst, float(gaps.min(initial=np.inf) / r[0]))
    except gr.JammingError as jam:
        total = time.perf_counter() - began
        seconds = np.array(seconds)
        print(
            f"{args.n} spheres, r0 = {r0:.5f} m, jammed at t = {jam.t:.3f} s after {seconds.size} steps "
            f"(packing fraction {4.0 / 3.0 * np.pi * args.n * radii(jam.t)[0] ** 3:.4f})"
        )
        print(f"wall time to the JammingError: {total:.2f} s")
        print(f"mean step: first 75 {seconds[:75].mean():.4f} s, last 27 {seconds[-27:].mean():.4f} s")
        print(f"smallest gap after any step: {worst:.3e} of a radius")


if __name__ == "__main__":
    main()
