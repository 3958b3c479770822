"""Large piles: a settled pile of 100,000 spheres, and 1,000,000 spheres poured into a box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/large_piles.py settled [--n 100000] [--steps 10]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/large_piles.py pour [--n 1000000] [--steps 5]

Both start from a lattice of spheres of radius 1 cm (radii jittered by up to 5%,
density 2500 kg/m^3, e = 0) in an open box under gravity, dt = 1e-3 s.

- ``settled``: a wide, low lattice (``layers`` high, spacing 2.1 r) falls onto the
  floor and settles; once every sphere is slower than ``g dt`` (it has come to
  rest: the speed a resting sphere picks up in one step before its contacts stop
  it), the next ``--steps`` steps are timed. Prints the settling steps, the median
  and mean wall time per settled step, the contact rows and active contacts, the
  kinetic energy and the smallest gap (fraction of the smallest radius) after
  any step.
- ``pour``: a cubic lattice (spacing 2.2 r) starts to fall; ``--steps`` steps are
  timed. Prints the wall time per step, the contact rows and the peak resident
  memory of the process.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import granular as gr
from granular.neighbors import candidate_pairs, pair_gaps

RADIUS = 0.01
DT = 1e-3
G = 9.81


def lattice_world(n: int, layers: int, spacing: float, seed: int = 0) -> gr.SphereWorld:
    """n spheres on a lattice ``side x side x layers`` (spacing in radii) in an open box."""
    side = int(np.ceil(np.sqrt(n / layers)))
    index = np.arange(n)
    grid = np.stack([index % side, (index // side) % side, index // side ** 2], axis=1)
    pitch = spacing * RADIUS
    positions = grid * pitch + 1.1 * RADIUS
    rng = np.random.default_rng(seed)
    radii = RADIUS * (1.0 - 0.05 * rng.random(n))
    positions[:, :2] += rng.uniform(-0.02, 0.02, (n, 2)) * RADIUS
    length = side * pitch + 0.2 * RADIUS
    box = gr.Box([0.0, 0.0, 0.0], [length, length, 10.0 * length], open_top=True)
    return gr.SphereWorld(positions, radii, density=2500.0, walls=[box], restitution=0.0)


def smallest_relative_gap(world, result) -> float:
    radii = result.radii
    i, j = candidate_pairs(result.positions, radii, 0.0)
    gaps = [pair_gaps(result.positions, radii, i, j)]
    gaps += [(result.positions - plane.point) @ plane.normal - radii for plane in world.planes]
    return float(np.concatenate(gaps).min(initial=np.inf) / radii.min())


def settled(n: int, steps: int, layers: int):
    world = lattice_world(n, layers, 2.1)
    sim = gr.Simulation(world, dt=DT)
    began, worst, settling = time.perf_counter(), np.inf, 0
    while True:
        result = sim.step()
        settling += 1
        worst = min(worst, smallest_relative_gap(world, result))
        speed = float(np.linalg.norm(result.velocities, axis=1).max())
        if settling % 20 == 0:
            print(f"  settling step {settling}: {time.perf_counter() - began:.0f} s, max speed {speed:.3g} m/s, "
                  f"{int(result.contacts.active.sum())} active", flush=True)
        if speed < G * DT:
            break
    print(f"{n} spheres settled after {settling} steps ({time.perf_counter() - began:.0f} s)", flush=True)
    seconds = []
    for _ in range(steps):
        clock = time.perf_counter()
        result = sim.step()
        seconds.append(time.perf_counter() - clock)
        worst = min(worst, smallest_relative_gap(world, result))
    print(f"settled step: median {np.median(seconds):.3f} s, mean {np.mean(seconds):.3f} s over {steps} steps")
    print(f"last step: {len(result.contacts)} rows, {int(result.contacts.active.sum())} active, "
          f"kinetic energy {result.kinetic_energy:.3g} J")
    print(f"smallest gap after any step: {worst:.3e} of the smallest radius")


def pour(n: int, steps: int):
    clock = time.perf_counter()
    world = lattice_world(n, int(round(n ** (1.0 / 3.0))), 2.2)
    sim = gr.Simulation(world, dt=DT)
    print(f"{n} spheres built in {time.perf_counter() - clock:.1f} s", flush=True)
    seconds = []
    for k in range(steps):
        clock = time.perf_counter()
        result = sim.step()
        seconds.append(time.perf_counter() - clock)
        print(f"  step {k + 1}: {seconds[-1]:.2f} s, {len(result.contacts)} rows, "
              f"{int(result.contacts.active.sum())} active", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # kB -> GiB
    print(f"step: mean {np.mean(seconds):.2f} s over {steps} steps; peak resident memory {peak:.2f} GiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["settled", "pour"])
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--layers", type=int, default=10, help="settled: lattice layers")
    args = parser.parse_args()
    if args.case == "settled":
        settled(args.n or 100_000, args.steps or 10, args.layers)
    else:
        pour(args.n or 1_000_000, args.steps or 5)


if __name__ == "__main__":
    main()
