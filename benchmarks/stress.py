"""Tail latency on Siconos' box at growing sizes: the largest step against the
median of its window.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/stress.py [--n 1000 2000 3375 5000 8000]
        [--mu 0 0.5] [--seeds 0 1 2] [--steps 200] [--momentum-restart 1.1] [--sweep-aim 0.5]

The scene is `peer_scenes.siconos_box` with ``n`` spheres (r = 0.01 m, m = 1 kg,
``ceil(n^(1/3))`` lattice sites a side, spacing 0.021 m, velocities
``default_rng(seed).normal(0, 0.5)``, an open box, e = 0, h = 1e-3 s) and Coulomb
friction ``mu`` (turning spheres). For each run it prints the median wall time of
`Simulation.step` in the windows of steps 10-49, 50-99, 100-149 and 150-199, the
largest step of each window and its ratio to that window's median, the whole run's
time and the part of it its gap closures took (`granular.contact.gap_closure`), and the
worst ratio, then the solver iterations summed over the run (the Coulomb
sweeps, with friction) and the steps that kept a best answer beyond the tolerance
(`StepResult.solver.missed`) with the largest of their residuals, and the iterations a
step (each window's median, and near the run's median step); a run that raises
prints the error and the step. The target: no step over 10 times its window's median.
``--momentum-restart X`` runs with `friction_gauss_seidel.MOMENTUM_RESTART` set to X, and
``--sweep-aim X`` with the scheme's option ``sweep_aim=X`` (the sweeps' aim, an eighth of
the tolerance by default).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import granular as gr
from granular.contact import friction_gauss_seidel as gauss_seidel
from peer_scenes import siconos_box
from tails import tail_line

WINDOWS = ((10, 50), (50, 100), (100, 150), (150, 200))


def timed_run(n: int, mu: float, seed: int, steps: int, sweep_aim: float | None = None):
    """Per-step wall times (s), the error that stopped the run (or None), and per step
    the solver's iterations (the Coulomb sweeps with friction), ``missed`` (the
    residual, in tolerances, of a best answer kept beyond the tolerance; 0 otherwise)
    and the gap closure's wall time (s), all from `StepResult.solver`. ``sweep_aim`` is
    the scheme's option (None: its default)."""
    world, dt = siconos_box(n=n, seed=seed, friction=mu)
    sim = gr.Simulation(world, dt=dt, sweep_aim=sweep_aim)
    seconds, iterations, missed, closures = [], [], [], []
    error = None
    try:
        for _ in range(steps):
            start = time.perf_counter()
            result = sim.step()
            seconds.append(time.perf_counter() - start)
            iterations.append(result.solver.iterations)
            missed.append(result.solver.missed)
            closures.append(result.solver.seconds.get("closure", 0.0))
    except gr.GranularError as stopped:
        error = stopped
    return np.array(seconds), error, np.array(iterations), np.array(missed), np.array(closures)


def kept_report(iterations: np.ndarray, missed: np.ndarray) -> str:
    """The run's solver iterations and the steps it kept beyond the tolerance."""
    kept = missed[missed > 0.0]
    worst = f" (largest {kept.max():.2f} tolerances)" if kept.size else ""
    steps = "1 step" if kept.size == 1 else f"{kept.size} steps"
    return f"{int(iterations.sum())} solver iterations; {steps} kept beyond the tolerance{worst}"


def sweeps_report(seconds: np.ndarray, iterations: np.ndarray) -> str:
    """The solver iterations a step (the Coulomb sweeps, with friction): the median of
    each window, and the median over the 20 steps ranked nearest the run's median step
    by wall time, the steps that set that median (how the sweeps grow with the pile's
    depth: benchmarks/README.md, "the ten-times target on a second machine")."""
    if seconds.size == 0:
        return "no steps"
    windows = " / ".join(
        f"{np.median(iterations[first:last]):.0f}" for first, last in WINDOWS if iterations[first:last].size
    )
    middle = seconds.size // 2
    ranked = np.argsort(seconds, kind="stable")[max(middle - 10, 0) : middle + 10]
    return f"iterations a step: {windows} by window, {np.median(iterations[ranked]):.0f} near the median step"


def window_report(seconds) -> tuple[str, float]:
    """The windows' medians and largest steps, and the worst largest-to-median ratio."""
    parts, worst = [], 0.0
    for first, last in WINDOWS:
        window = seconds[first:last]
        if window.size == 0:
            continue
        median, largest = float(np.median(window)), float(window.max())
        worst = max(worst, largest / median)
        parts.append(f"{first}-{last - 1}: {1e3 * median:.1f} / {1e3 * largest:.0f} ms ({largest / median:.1f}x)")
    return "; ".join(parts), worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 2000, 3375, 5000, 8000])
    parser.add_argument("--mu", type=float, nargs="+", default=[0.0, 0.5])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--momentum-restart",
        type=float,
        help="friction_gauss_seidel.MOMENTUM_RESTART for these runs (the library's value by default)",
    )
    parser.add_argument(
        "--sweep-aim",
        type=float,
        help="the scheme's sweep_aim for these runs (its default, an eighth of the tolerance, when not given)",
    )
    args = parser.parse_args()
    if args.momentum_restart is not None:
        gauss_seidel.MOMENTUM_RESTART = args.momentum_restart
    # The peer's scene starts at up to 2 m/s (0.2 radii a step): its time step is the
    # peer's, so the time-step warning is left out of the table.
    warnings.simplefilter("ignore", gr.TimeStepWarning)
    warnings.simplefilter("once", gr.SolverToleranceWarning)
    print("window: median / largest step (largest / median)")
    for n in args.n:
        for mu in args.mu:
            for seed in args.seeds:
                seconds, error, iterations, missed, closures = timed_run(n, mu, seed, args.steps, args.sweep_aim)
                windows, worst = window_report(seconds)
                stop = "" if error is None else f"; STOPPED at step {seconds.size}: {error}"
                print(
                    f"n {n} mu {mu} seed {seed}: run {seconds.sum():.1f} s (gap closures {closures.sum():.1f} s); "
                    f"{windows}; worst {worst:.1f}x; "
                    f"{tail_line(seconds)}; {kept_report(iterations, missed)}; "
                    f"{sweeps_report(seconds, iterations)}{stop}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
