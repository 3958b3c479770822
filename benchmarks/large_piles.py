"""Large piles: a settled pile of 100,000 spheres, and 1,000,000 spheres poured into a box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/large_piles.py settled [--n 100000] [--steps 10] \
        [--layer-file F.npz] [--mu 0.5]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/large_piles.py pour [--n 1000000] [--steps 5]

Both start from a lattice of spheres of radius 1 cm (radii jittered by up to 5%,
density 2500 kg/m^3, e = 0) in an open box under gravity, dt = 1e-3 s.

- ``settled``: a wide, low lattice (``layers`` high, spacing 2.1 r) falls onto the
  floor and settles until it has come to rest: every sphere slower than ``g dt``
  (the speed a resting sphere picks up in one step before its contacts stop it)
  and the same contacts pushing for `REST_STEPS` steps in a row (`at_rest`); the
  next ``--steps`` steps are timed. Prints the settling steps, the median
  and mean wall time per settled step, the contact rows and active contacts, the
  kinetic energy and the smallest gap (fraction of the smallest radius) after
  any step. ``--mu`` gives spheres and floor Coulomb friction (turning spheres):
  the frictionless layer at rest settles again with friction, and the frictional
  pile at rest is timed.
- ``pour``: a cubic lattice (spacing 2.2 r) starts to fall; ``--steps`` steps are
  timed. Prints the wall time per step, the contact rows and the peak resident
  memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.spheres.neighbors import candidate_pairs, pair_gaps
from tails import tail_line

RADIUS = 0.01
DT = 1e-3
G = 9.81


def lattice_world(n: int, layers: int, spacing: float, seed: int = 0) -> gr.SphereWorld:
    """n spheres on a lattice ``side x side x layers`` (spacing in radii) in an open box."""
    side = int(np.ceil(np.sqrt(n / layers)))
    index = np.arange(n)
    grid = np.stack([index % side, (index // side) % side, index // side**2], axis=1)
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
    i, j = candidate_pairs(result.positions, radii, 0.0, world.periodic)
    gaps = [pair_gaps(result.positions, radii, i, j, world.periodic)]
    gaps += [(result.positions - plane.point) @ plane.normal - radii for plane in world.planes]
    return float(np.concatenate(gaps).min(initial=np.inf) / radii.min())


def periodic_layer(side: int, layers: int, seed: int = 0, friction: float = 0.0) -> gr.SphereWorld:
    """``side x side x layers`` spheres on a lattice (spacing 2.1 r) above a floor, in a
    cell periodic along x and y of side ``side * 2.1 r``, with Coulomb ``friction``."""
    n = side * side * layers
    index = np.arange(n)
    grid = np.stack([index % side, (index // side) % side, index // side**2], axis=1)
    pitch = 2.1 * RADIUS
    rng = np.random.default_rng(seed)
    positions = grid * pitch + np.array([0.5 * pitch, 0.5 * pitch, 1.1 * RADIUS])
    positions[:, :2] += rng.uniform(-0.02, 0.02, (n, 2)) * RADIUS
    radii = RADIUS * (1.0 - 0.05 * rng.random(n))
    length = side * pitch
    cell = gr.PeriodicBox([0.0, 0.0, 0.0], [length, length, 1.0], axes=(0, 1))
    return gr.SphereWorld(
        positions,
        radii,
        density=2500.0,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        periodic=cell,
        restitution=0.0,
        friction=friction,
    )


def tiled(world: gr.SphereWorld, positions, velocities, copies: int, friction: float = 0.0) -> gr.SphereWorld:
    """``copies x copies`` copies of a periodic layer side by side: the same state in a
    cell ``copies`` times wider."""
    length = world.periodic.upper[0] - world.periodic.lower[0]
    shifts = np.array([(a * length, b * length, 0.0) for a in range(copies) for b in range(copies)])
    many = (positions[None, :, :] + shifts[:, None, :]).reshape(-1, 3)
    speeds = np.tile(velocities, (copies * copies, 1))
    radii = np.tile(world.radii_at(world.t0), copies * copies)
    cell = gr.PeriodicBox([0.0, 0.0, 0.0], [copies * length, copies * length, 1.0], axes=(0, 1))
    # A frictional layer at rest keeps the sweeps' gap error (up to 1e-7 of a radius):
    # such overlaps are accepted, and closed by the first steps.
    return gr.SphereWorld(
        many,
        radii,
        density=2500.0,
        velocities=speeds,
        walls=world.walls,
        periodic=cell,
        restitution=0.0,
        friction=friction,
        initial_overlaps="separate" if friction > 0.0 else "error",
    )


#: Steps in a row with the same pushing contacts after which a pile slower than
#: ``g dt`` counts as at rest. Why not the speed alone: the periodic layer is slower
#: than ``g dt`` after about 1,900 steps, but its contact network still changes by a
#: few contacts a step (spheres creep by 1e-4 to 1e-3 m/s), so every step of the tiled
#: pile changed hundreds of contacts and refactorised its contact block (166-284 s a
#: step at 100,000 spheres). Frictionless spheres sliding on the floor may keep a
#: speed of 1e-4 m/s for thousands of steps without touching anything, so a speed
#: threshold far below ``g dt`` would not end.
REST_STEPS = 100


def pushing_contacts(result) -> np.ndarray:
    """The contacts that push after a step, as sorted (sphere i, sphere j, wall) rows."""
    contacts = result.contacts
    on = contacts.impulse > 0.0
    keys = np.column_stack([contacts.i[on], contacts.j[on], contacts.wall[on]])
    return keys[np.lexsort(keys.T[::-1])]


def settle(small: gr.SphereWorld):
    """Positions and velocities (N, 3) of ``small`` once it is at rest: every sphere
    slower than ``g dt`` and the same contacts pushing for `REST_STEPS` steps."""
    sim = gr.Simulation(small, dt=DT)
    began, settling, unchanged, previous = time.perf_counter(), 0, 0, None
    while True:
        result = sim.step()
        settling += 1
        speed = float(np.linalg.norm(result.velocities, axis=1).max())
        current = pushing_contacts(result)
        same = previous is not None and np.array_equal(current, previous)
        unchanged, previous = (unchanged + 1 if same else 0), current
        if speed < G * DT and unchanged >= REST_STEPS:
            break
        if settling % 200 == 0:
            print(
                f"  settling step {settling}: max speed {speed:.3g} m/s, pushing contacts unchanged for "
                f"{unchanged} steps",
                flush=True,
            )
    print(f"{small.n} spheres came to rest after {settling} steps ({time.perf_counter() - began:.0f} s)", flush=True)
    return sim.positions, sim.velocities


def settled(n: int, steps: int, layers: int, copies: int, layer_file: str | None = None, friction: float = 0.0):
    """A periodic layer of ``n / copies^2`` spheres settles to rest (every sphere slower
    than ``g dt``), is tiled ``copies x copies`` times into ``n`` spheres at rest, and
    ``steps`` steps of the tiled pile are timed after two warm-up steps. With
    ``layer_file`` (.npz), the layer at rest is read from it when it exists and
    saved to it otherwise."""
    side = int(round(np.sqrt(n / (layers * copies * copies))))
    small = periodic_layer(side, layers)
    if layer_file is not None and Path(layer_file).exists():
        saved = np.load(layer_file)
        positions, velocities = saved["positions"], saved["velocities"]
        print(f"{small.n} spheres at rest read from {layer_file}; tiled {copies} x {copies}", flush=True)
    else:
        positions, velocities = settle(small)
        if layer_file is not None:
            np.savez(layer_file, positions=positions, velocities=velocities)
    if friction > 0.0:
        # The frictionless layer at rest is a static equilibrium that friction admits
        # (zero friction impulses obey Coulomb's law); with friction it settles again
        # from there (`settle`), which is quicker than a frictional pour's settling,
        # and denser than the heap that pour would leave.
        frictional_file = None if layer_file is None else str(Path(layer_file).with_suffix("")) + f"_mu{friction}.npz"
        if frictional_file is not None and Path(frictional_file).exists():
            saved = np.load(frictional_file)
            positions, velocities = saved["positions"], saved["velocities"]
            print(f"the frictional layer at rest read from {frictional_file}", flush=True)
        else:
            print(f"friction {friction} switched on; the layer settles again", flush=True)
            positions, velocities = settle(tiled(small, positions, velocities, 1, friction))
            if frictional_file is not None:
                np.savez(frictional_file, positions=positions, velocities=velocities)
    world = tiled(small, positions, velocities, copies, friction)
    big = gr.Simulation(world, dt=DT)
    seconds, worst = [], np.inf
    for k in range(steps + 2):
        clock = time.perf_counter()
        result = big.step()
        elapsed = time.perf_counter() - clock
        print(
            f"  step {k + 1}: {elapsed:.2f} s, {int(result.contacts.active.sum())} active, "
            f"{result.solver.iterations} {result.solver.status} iterations"
            + (f", gap closure {result.solver.seconds['closure']:.2f} s" if "closure" in result.solver.seconds else ""),
            flush=True,
        )
        if k >= 2:
            seconds.append(elapsed)
        worst = min(worst, smallest_relative_gap(world, result))
    print(f"timed steps: {tail_line(seconds, first_step=3)}")
    print(
        f"{world.n} spheres at rest: step median {np.median(seconds):.3f} s, mean {np.mean(seconds):.3f} s "
        f"over {steps} steps (after 2 warm-up steps)"
    )
    print(
        f"last step: {len(result.contacts)} rows, {int(result.contacts.active.sum())} active, "
        f"kinetic energy {result.kinetic_energy:.3g} J, max speed "
        f"{np.linalg.norm(result.velocities, axis=1).max():.3g} m/s"
    )
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
        print(
            f"  step {k + 1}: {seconds[-1]:.2f} s, {len(result.contacts)} rows, "
            f"{int(result.contacts.active.sum())} active",
            flush=True,
        )
    print(f"steps: {tail_line(seconds, first_step=1)}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB -> GiB
    print(f"step: mean {np.mean(seconds):.2f} s over {steps} steps; peak resident memory {peak:.2f} GiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["settled", "pour"])
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--layers", type=int, default=10, help="settled: lattice layers")
    parser.add_argument("--copies", type=int, default=10, help="settled: tiles per side")
    parser.add_argument("--mu", type=float, default=0.0, help="settled: Coulomb friction (turning spheres)")
    parser.add_argument(
        "--layer-file", default=None, help="settled: .npz of the layer at rest (read if it exists, else written)"
    )
    args = parser.parse_args()
    if args.case == "settled":
        settled(args.n or 100_000, args.steps or 10, args.layers, args.copies, args.layer_file, args.mu)
    else:
        pour(args.n or 1_000_000, args.steps or 5)


if __name__ == "__main__":
    main()
