"""The Coulomb sweeps' count under other visit orders, on Siconos' box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/visit_orders.py solves [--n 1000] [--mu 0.5]
        [--seed 0] [--steps 100 104 ... 196] [--orders colour index down up light heavy]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/visit_orders.py runs [--n 8000] [--mu 0.5]
        [--seeds 0 1 2] [--orders colour down]

Gauss-Seidel carries a change along a chain of contacts to every later contact of the
chain within one sweep, and one contact a sweep towards the earlier ones: visited by
height, a change at the top of a column reaches its floor in one sweep going down. The
solver visits the contacts colour after colour (`coulomb_rows.visit_order`), which
carries a change a contact or two a sweep either way.

The scene is `peer_scenes.siconos_box` (as in `stress.py`). ``solves``: the run is
stepped to each of ``steps``; the stage-4 solve of that step (the arguments
`friction_gauss_seidel.solve` received) is kept with the sphere centres before the step
(`sweep_trace.kept_solves`). Each kept solve is then solved again, whole (stall rules,
repairs and all), with the contacts visited in each of ``orders``:

- ``colour``: the solver's order;
- ``index``: the contacts' own order (the neighbour search's);
- ``down`` / ``up``: by the mean height of the contact's spheres, highest / lowest first;
- ``light`` / ``heavy``: by the warm start's normal impulse, smallest / largest first
  (a pile's load grows with depth, so ``light`` is ``down`` without the geometry).

It prints each solve's sweeps and time per order, then the totals. ``runs``: whole
runs of 200 steps with every solve's contacts visited in one order (``colour``, ``index``,
``down`` or ``up``; the centres are those at the start of the step), each printing its
time, median step, window medians (steps 10-49 / 50-99 / 100-149 / 150-199), sweeps
per window and largest step.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import granular as gr
from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.contact.friction import FRICTION_SWEEPS
from peer_scenes import siconos_box
from stress import WINDOWS
from sweep_trace import kept_solves

ORDERS = ("colour", "index", "down", "up", "light", "heavy")


def ordering(kind: str, centres, load: np.ndarray):
    """A replacement of `coulomb_rows.visit_order` that visits the contacts in ``kind``'s
    order. The colours stay the solver's (only the order is changed). Solves of a
    subset of the rows (a local repair's) keep the solver's order under the load
    orders, whose impulses are the whole set's."""
    solver_order = coulomb_rows.visit_order

    def visit_order(cols, dummy):
        order, colour = solver_order(cols, dummy)
        if kind == "colour" or (kind in ("light", "heavy") and load.size != cols.shape[0]):
            return order, colour
        if kind == "index":
            return np.arange(cols.shape[0], dtype=np.int64), colour
        if kind in ("light", "heavy"):
            key = load if kind == "light" else -load
        else:
            here = centres() if callable(centres) else centres
            n = here.shape[0]
            translational = cols < 3 * n  # the first 3n coordinates are the centres'
            heights = np.where(translational, here[np.minimum(cols // 3, n - 1), 2], np.nan)
            height = np.nanmean(heights, axis=1)
            key = -height if kind == "down" else height
        return np.argsort(key, kind="stable").astype(np.int64), colour

    return visit_order


def compare_solves(args) -> None:
    """Each kept solve solved again under each order."""
    solver_order = coulomb_rows.visit_order
    sweeps = dict.fromkeys(args.orders, 0)
    seconds = dict.fromkeys(args.orders, 0.0)
    for step, (rows, predicted, start, tolerance, floor), centres in kept_solves(
        args.n, args.mu, args.seed, set(args.steps)
    ):
        parts = []
        for kind in args.orders:
            coulomb_rows.visit_order = ordering(kind, centres, start[:, 0])
            rows.__dict__.pop("compiled", None)  # the cached sweep arrays hold the old order
            began = time.perf_counter()
            try:
                _, used, _ = gauss_seidel.solve(rows, predicted, start, tolerance, FRICTION_SWEEPS, floor=floor)
            finally:
                coulomb_rows.visit_order = solver_order
            spent = time.perf_counter() - began
            sweeps[kind] += used
            seconds[kind] += spent
            parts.append(f"{kind} {used} ({1e3 * spent:.0f} ms)")
        rows.__dict__.pop("compiled", None)
        print(f"step {step}, {rows.cols.shape[0]} contacts: " + ", ".join(parts), flush=True)
    print("all: " + ", ".join(f"{kind} {sweeps[kind]} sweeps ({seconds[kind]:.2f} s)" for kind in args.orders))


def whole_run(n: int, mu: float, seed: int, kind: str, steps: int = 200) -> str:
    """One run with every solve's contacts visited in ``kind``'s order, summarised."""
    world, dt = siconos_box(n=n, seed=seed, friction=mu)
    simulation = gr.Simulation(world, dt=dt)
    solver_order, solve = coulomb_rows.visit_order, gauss_seidel.solve
    counted = [0]

    def counting(*arguments, **options):
        answer = solve(*arguments, **options)
        counted[0] += answer[1]
        return answer

    coulomb_rows.visit_order = ordering(kind, lambda: simulation.positions, np.zeros(0))
    gauss_seidel.solve = counting
    seconds, sweeps = [], []
    try:
        for _ in range(steps):
            before, began = counted[0], time.perf_counter()
            simulation.step()
            seconds.append(time.perf_counter() - began)
            sweeps.append(counted[0] - before)
    finally:
        coulomb_rows.visit_order, gauss_seidel.solve = solver_order, solve
    seconds, sweeps = np.array(seconds), np.array(sweeps)
    return (
        f"n {n}, seed {seed}, {kind}: run {seconds.sum():.1f} s, median {1e3 * np.median(seconds):.1f} ms, "
        f"windows {' / '.join(f'{1e3 * np.median(seconds[a:b]):.1f}' for a, b in WINDOWS)} ms, "
        f"sweeps {sweeps.sum()} ({' / '.join(str(sweeps[a:b].sum()) for a, b in WINDOWS)}), "
        f"largest {seconds.max():.2f} s (step {seconds.argmax()})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("solves", "runs"))
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, nargs="+", default=list(range(100, 200, 4)))
    parser.add_argument("--orders", nargs="+", choices=ORDERS, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore", gr.TimeStepWarning)
    warnings.simplefilter("ignore", gr.SolverToleranceWarning)
    if args.mode == "solves":
        args.orders = args.orders or list(ORDERS)
        compare_solves(args)
        return
    for seed in args.seeds:
        for kind in args.orders or ["colour", "down"]:
            if kind in ("light", "heavy"):
                parser.error("the load orders are compared on kept solves only")
            print(whole_run(args.n, args.mu, seed, kind), flush=True)


if __name__ == "__main__":
    main()
