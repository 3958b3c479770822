"""The cost of a triangle-mesh floor: a 1,000-sphere frictionless pile at rest on a
20,000-triangle floor against the same pile on a `Plane`.

The pile: 1,000 spheres of radius 1 cm (density 2500 kg/m^3, e = 0) poured from a
jittered 10 x 10 x 10 lattice into a square container (four `Plane` sides) and
settled for ``--settle`` steps on a `Plane` floor. From the settled state, the
same world is built twice: with the `Plane` floor, and with a `TriangleMesh` floor
covering the container's footprint, a 100 x 100 grid of squares cut in two
(20,000 triangles of 2.2 mm sides, a fifth of a sphere's radius: the worst case for
the index, each bottom sphere near about a hundred triangles). A flat triangulated
floor gives a `Plane`'s rows bit for bit (`granular.walls.mesh_geometry`), so the two runs
take the same steps and only the floor's cost differs. The two are stepped in
alternating blocks of ``--block`` steps (so that a busy machine slows both alike),
``--steps`` each; the script prints, for each, the tail line
(`benchmarks/tails.py`), the median wall time of the wall rows (the world's
"assembly" phase, which holds them), and the ratio of the medians.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/mesh_floor.py [--steps 300] [--block 50] [--settle 800]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from tails import tail_line

RADIUS = 0.01
SIDE = 10  # spheres per lattice edge
PITCH = 2.2 * RADIUS
WIDTH = SIDE * PITCH  # m, the container's inner width
CELLS = 100  # squares per side of the floor's grid: 2 * CELLS^2 triangles


def sides() -> list:
    return [
        gr.Plane([0, 0, 0], [1, 0, 0]),
        gr.Plane([WIDTH, 0, 0], [-1, 0, 0]),
        gr.Plane([0, 0, 0], [0, 1, 0]),
        gr.Plane([0, WIDTH, 0], [0, -1, 0]),
    ]


def grid_floor(cells: int = CELLS) -> gr.TriangleMesh:
    """The container's footprint ``[0, WIDTH]^2`` at z = 0 as ``2 cells^2`` triangles."""
    ticks = np.linspace(0.0, WIDTH, cells + 1)
    x, y = np.meshgrid(ticks, ticks, indexing="ij")
    vertices = np.column_stack([x.ravel(), y.ravel(), np.zeros(x.size)])
    index = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
    a, b, c, d = index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    faces = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    return gr.TriangleMesh(vertices, faces)


def settled_pile(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities (N, 3) of the pile after ``steps`` steps on a Plane."""
    rng = np.random.default_rng(0)
    grid = np.stack(np.meshgrid(*[np.arange(SIDE)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = (grid + 0.5) * PITCH
    positions[:, :2] += rng.uniform(-0.05, 0.05, (len(positions), 2)) * RADIUS
    world = gr.SphereWorld(positions, RADIUS, density=2500.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1]), *sides()])
    simulation = gr.Simulation(world, dt=1e-3)
    for _ in range(steps):
        simulation.step()
    return simulation.positions, simulation.velocities


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--settle", type=int, default=800)
    args = parser.parse_args()
    positions, velocities = settled_pile(args.settle)
    mesh = grid_floor()
    floors = {"plane": gr.Plane([0, 0, 0], [0, 0, 1]), "mesh": mesh}
    simulations = {
        name: gr.Simulation(
            gr.SphereWorld(positions, RADIUS, velocities=velocities, density=2500.0, walls=[floor, *sides()]), dt=1e-3
        )
        for name, floor in floors.items()
    }
    simulations["mesh"].system.constraints(1e-3, positions.reshape(-1), 1e-3, 0.0)  # builds the index once
    seconds = {name: [] for name in floors}
    assembly = {name: [] for name in floors}
    rows = {}
    while len(seconds["plane"]) < args.steps:
        for name, simulation in simulations.items():
            for _ in range(args.block):
                start = time.perf_counter()
                result = simulation.step()
                seconds[name].append(time.perf_counter() - start)
                assembly[name].append(result.solver.seconds.get("assembly", 0.0))
                rows[name] = int(np.sum(result.contacts.wall >= 0))
    speed = float(np.linalg.norm(simulations["plane"].velocities, axis=1).max())
    print(
        f"mesh_floor: {len(positions)} spheres at rest (fastest {speed:.2e} m/s after {args.settle} settling "
        f"steps), floor of {len(mesh.faces)} triangles, {args.steps} steps each, blocks of {args.block}"
    )
    for name in floors:
        print(
            f"  {name:5s}  {tail_line(seconds[name])}; wall rows {rows[name]}, "
            f"assembly median {np.median(assembly[name]) * 1e3:.3f} ms"
        )
    same = np.array_equal(simulations["plane"].positions, simulations["mesh"].positions)
    ratio = np.median(seconds["mesh"]) / np.median(seconds["plane"])
    print(f"  mesh / plane median step: {ratio:.3f} (+{100 * (ratio - 1):.1f} %); same positions bit for bit: {same}")


if __name__ == "__main__":
    main()
