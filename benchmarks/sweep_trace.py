"""The Coulomb sweeps' largest residual, sweep by sweep, on steps of Siconos' box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sweep_trace.py [--n 8000] [--mu 0.5]
        [--seed 0] [--steps 150 170 190] [--sweeps 3000] [--every 50] [--plain]

The scene is `peer_scenes.siconos_box` (as in `stress.py`). The run is stepped to each
of ``steps``, and the stage-4 solve of that step (the arguments
`friction_gauss_seidel.solve` received) is kept. From each kept start it prints:

- what `friction_gauss_seidel.solve` itself does: its sweeps and the residual it keeps;
- ``sweeps`` sweeps with the solve's momentum (`friction_gauss_seidel._Momentum`; plain
  sweeps with ``--plain``), without its stall rules, repairs or jumps: the largest
  natural residual in units of each contact's tolerance every ``every`` sweeps, the
  first sweep at which it is within the tolerance (measured every second sweep), and
  the range it stays in after that.

On the deep 8,000-sphere box the residual meets the tolerance and then wanders about
it, where on the 1,000-sphere box it goes on down to the sweeps' aim
(benchmarks/README.md, "why the deep box costs more sweeps a step").
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import granular as gr
from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.contact.friction import FRICTION_SWEEPS
from peer_scenes import siconos_box


def kept_solves(n: int, mu: float, seed: int, steps) -> list[tuple[int, tuple, np.ndarray]]:
    """``(step, arguments, centres)`` of the stage-4 solve of each of ``steps`` (the
    largest solve of the step: the impact stage's are smaller): the arguments
    ``(rows, predicted, start, tolerance, floor)`` `friction_gauss_seidel.solve`
    received, and the sphere centres (n, 3) at the start of the step."""
    world, dt = siconos_box(n=n, seed=seed, friction=mu)
    simulation = gr.Simulation(world, dt=dt)
    solve, kept, current = gauss_seidel.solve, [], []

    def keeping(rows, predicted, start, tolerance, max_sweeps, floor=None, **options):
        current.append((rows, predicted.copy(), np.array(start, copy=True), np.array(tolerance, copy=True), floor))
        return solve(rows, predicted, start, tolerance, max_sweeps, floor=floor, **options)

    gauss_seidel.solve = keeping
    try:
        for step in range(max(steps) + 1):
            current.clear()
            centres = simulation.positions.copy()
            simulation.step()
            if step in steps and current:
                kept.append((step, max(current, key=lambda solve: solve[0].cols.shape[0]), centres))
    finally:
        gauss_seidel.solve = solve
    return kept


def trace(rows, predicted, start, tolerance, sweeps: int, plain: bool) -> list[float]:
    """The largest residual (in tolerances) before each of ``sweeps`` sweeps and after
    the last, measured every second sweep (NaN in between)."""
    m = rows.cols.shape[0]
    tolerance = np.broadcast_to(tolerance, (m,))
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    scale = compiled.visit_scale(tolerance)
    momentum = gauss_seidel._Momentum(r, u)
    momentum.enabled = not plain
    largest = []
    for sweep in range(sweeps + 1):
        measured = sweep % 2 == 0 or sweep == sweeps
        largest.append(float((coulomb_rows.contact_residuals(rows, u, r) / tolerance).max()) if measured else np.nan)
        if sweep < sweeps:
            momentum.extrapolate(r, u)
            _, change = compiled.sweep(u, r, scale)
            momentum.judge(change)
    return largest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8000)
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, nargs="+", default=[150, 170, 190])
    parser.add_argument("--sweeps", type=int, default=3000)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--plain", action="store_true", help="plain sweeps, without momentum")
    args = parser.parse_args()
    warnings.simplefilter("ignore", gr.TimeStepWarning)
    warnings.simplefilter("ignore", gr.SolverToleranceWarning)
    for step, (rows, predicted, start, tolerance, floor), _ in kept_solves(args.n, args.mu, args.seed, set(args.steps)):
        m = rows.cols.shape[0]
        tolerance = np.broadcast_to(tolerance, (m,))
        answer, used, _ = gauss_seidel.solve(rows, predicted, start, tolerance, FRICTION_SWEEPS, floor=floor)
        velocities = coulomb_rows.velocities(rows, predicted, answer)
        kept_at = float((coulomb_rows.contact_residuals(rows, velocities, answer) / tolerance).max())
        largest = np.array(trace(rows, predicted, start, tolerance, args.sweeps, args.plain))
        within = np.flatnonzero(largest <= 1.0)
        first = int(within[0]) if within.size else None
        after = largest[first:] if first is not None else largest[:0]
        after = after[np.isfinite(after)]
        print(
            f"n {args.n} step {step}: {m} contacts; the solve: {used} sweeps, kept at {kept_at:.2f} "
            f"tolerances; {'plain' if args.plain else 'accelerated'} sweeps: first within the "
            f"tolerance at sweep {first}"
            + (f", then {after.min():.2f}-{after.max():.2f} tolerances" if after.size else ""),
            flush=True,
        )
        print("  " + " ".join(f"{k}: {largest[k]:.3g}" for k in range(0, args.sweeps + 1, args.every)), flush=True)


if __name__ == "__main__":
    main()
