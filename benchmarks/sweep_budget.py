"""Where a whole run's Coulomb sweeps go: before and after each solve first meets its tolerance.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sweep_budget.py [--n 1000] [--mu 0.5]
        [--seed 0] [--steps 200] [--longest 8]

The scene is `peer_scenes.siconos_box` (as in `stress.py`). Every call of
`friction_gauss_seidel.solve` in the run is watched: its sweeps, and the largest
natural residual (in units of each contact's tolerance) at each of its measurements
(`friction_gauss_seidel.contact_residuals`, made at the checks that measure; between
them the solve estimates it). It prints the run's time, sweeps and largest step, and the steps
that kept a best answer beyond the tolerance; per window of `stress.py` the median step, the
sweeps, and the share of them made before each solve's first measured residual within
its tolerance; then the ``longest`` solves: their sweeps, that first sweep, the sweep of
their lowest measured residual, and the residual they ended at.

The watching wrappers add a little to each step's time; the sweeps and residuals are the
run's own (the answers are unchanged: the wrappers only read).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import granular as gr
from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from peer_scenes import siconos_box
from stress import WINDOWS


def watched_run(n: int, mu: float, seed: int, steps: int):
    """``(seconds (steps,), solves, kept)``: each step's wall time; per solve a dict of
    its step, contacts, sweeps and measured residuals ``[(sweep, ratio), ...]``; and the
    steps that kept a best answer beyond the tolerance, ``[(step, ratio), ...]``
    (`SolverStats.missed`)."""
    world, dt = siconos_box(n=n, seed=seed, friction=mu)
    simulation = gr.Simulation(world, dt=dt)
    solve, residuals, sweep = gauss_seidel.solve, gauss_seidel.contact_residuals, coulomb_rows.CompiledRows.sweep
    solves, current, seconds, kept = [], {}, [], []

    def counting(self, u, r, scale=None):
        current["sweeps"] += 1
        return sweep(self, u, r, scale)

    def measuring(rows, u, r):
        residual = residuals(rows, u, r)
        if "tolerance" in current and residual.size == current["tolerance"].size:
            ratio = float((residual / current["tolerance"]).max(initial=0.0))
            current["measured"].append((current["sweeps"], ratio))
        return residual

    def watching(rows, predicted, start, tolerance, max_sweeps, **options):
        m = rows.cols.shape[0]
        current.update(tolerance=np.broadcast_to(np.asarray(tolerance, dtype=float), (m,)), sweeps=0, measured=[])
        try:
            return solve(rows, predicted, start, tolerance, max_sweeps, **options)
        finally:
            solves.append(dict(step=len(seconds), contacts=m, sweeps=current["sweeps"], measured=current["measured"]))
            current.pop("tolerance")

    gauss_seidel.solve, gauss_seidel.contact_residuals = watching, measuring
    coulomb_rows.CompiledRows.sweep = counting
    try:
        for _ in range(steps):
            start = time.perf_counter()
            result = simulation.step()
            seconds.append(time.perf_counter() - start)
            if result.solver.missed > 0.0:
                kept.append((len(seconds) - 1, result.solver.missed))
    finally:
        gauss_seidel.solve, gauss_seidel.contact_residuals = solve, residuals
        coulomb_rows.CompiledRows.sweep = sweep
    return np.array(seconds), solves, kept


def first_within(measured) -> int | None:
    """The sweep of the first measured residual within the tolerance, or None."""
    return next((sweep for sweep, ratio in measured if ratio <= 1.0), None)


def sweeps_before_the_tolerance(solve) -> int:
    """The sweeps a solve made before its first measured residual within the tolerance
    (all of them when none was)."""
    first = first_within(solve["measured"])
    return solve["sweeps"] if first is None else min(solve["sweeps"], first)


def window_lines(seconds, solves) -> list[str]:
    """Per window: the median step, the sweeps, and their share before the first
    residual within the tolerance."""
    lines = []
    for first, last in WINDOWS:
        inside = [solve for solve in solves if first <= solve["step"] < last]
        if not inside:
            continue
        sweeps = sum(solve["sweeps"] for solve in inside)
        before = sum(sweeps_before_the_tolerance(solve) for solve in inside)
        lines.append(
            f"steps {first}-{last - 1}: median step {1e3 * np.median(seconds[first:last]):.1f} ms; "
            f"{len(inside)} solves, {sweeps} sweeps, {100 * before / max(sweeps, 1):.0f}% of them before "
            f"the first residual within the tolerance"
        )
    return lines


def longest_lines(solves, count: int) -> list[str]:
    """The ``count`` solves of most sweeps."""
    lines = []
    for solve in sorted(solves, key=lambda solve: solve["sweeps"], reverse=True)[:count]:
        measured = solve["measured"] or [(0, np.nan)]
        lowest = min(measured, key=lambda pair: pair[1])
        lines.append(
            f"step {solve['step']}: {solve['contacts']} contacts, {solve['sweeps']} sweeps; first within the "
            f"tolerance at sweep {first_within(measured)}; lowest {lowest[1]:.2f} at sweep {lowest[0]}; "
            f"ended at {measured[-1][1]:.2f} tolerances"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--longest", type=int, default=8)
    args = parser.parse_args()
    warnings.simplefilter("ignore", gr.TimeStepWarning)
    warnings.simplefilter("once", gr.SolverToleranceWarning)
    seconds, solves, kept = watched_run(args.n, args.mu, args.seed, args.steps)
    misses = ", ".join(f"step {step} at {ratio:.2f}" for step, ratio in kept) or "none"
    print(
        f"n {args.n} mu {args.mu} seed {args.seed}: run {seconds.sum():.1f} s, "
        f"{sum(solve['sweeps'] for solve in solves)} sweeps; largest step {seconds.max():.2f} s "
        f"(step {int(seconds.argmax())}); steps that kept a best answer (tolerances): {misses}"
    )
    print("\n".join(window_lines(seconds, solves) + longest_lines(solves, args.longest)))


if __name__ == "__main__":
    main()
