"""How often the sand pile's pours keep a step beyond the Coulomb sweeps' tolerance.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sand_pours.py [--seeds 3 48] [--sweep-aim 1]

For every seed of the range (both ends included), the five pours of
`granular.scenes.sand_pile.POURS` (300 spheres in a quasi-2D slot, mu = 0.6, points or
turning spheres with rolling resistance 0 to 0.3) run until the heap rests or 2 s. Prints
each pour (the solver iterations of its run, the ratios residual / tolerance of the steps
that kept a best answer, `Simulation.missed_steps`, the angle of repose and the time
reached) and the totals: pours, runs a solver stopped, iterations, steps kept beyond the
tolerance (and in how many pours), those beyond 5 tolerances, the worst. ``--sweep-aim X``
runs with the scheme's option ``sweep_aim=X``. Figures are reported, not asserted: which
steps stall depends on the trajectory (benchmarks/README.md, "a stall floor by work").
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from granular.scenes import sand_pile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs=2, default=[3, 48], metavar=("FIRST", "LAST"))
    parser.add_argument("--sweep-aim", type=float, help="the scheme's sweep_aim (its default when not given)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the kept steps are counted below
    start = time.perf_counter()
    kept, pours, stopped, iterations = [], 0, 0, 0
    for seed in range(args.seeds[0], args.seeds[1] + 1):
        for friction, rotation, rolling, width in sand_pile.POURS:
            run = sand_pile.pour(
                friction, rotation=rotation, rolling_friction=rolling, width=width, seed=seed, sweep_aim=args.sweep_aim
            )
            pours, stopped, iterations = (
                pours + 1,
                stopped + (run["failure"] is not None),
                iterations + run["iterations"],
            )
            ratios = [round(float(ratio), 2) for _, _, ratio in run["missed"]]
            kept += [(seed, rotation, rolling, ratio) for ratio in ratios]
            print(
                f"seed {seed} rotation {rotation} mu_r {rolling}: {run['iterations']} iterations, kept {ratios}, "
                f"angle {run['angle']:.1f}, t {run['t']:.2f} s",
                flush=True,
            )
    ratios = np.array([k[-1] for k in kept])
    print(
        f"{pours} pours, {stopped} stopped, {iterations} iterations, {len(kept)} steps kept beyond the tolerance "
        f"in {len({k[:3] for k in kept})} pours, {int((ratios > 5).sum())} beyond 5 tolerances, worst "
        f"{ratios.max(initial=0.0):.2f}; {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
