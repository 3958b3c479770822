"""How often the sand pile's pours keep a step beyond the Coulomb sweeps' tolerance.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sand_pours.py [--seeds 3 48] [--sweep-aim 1] [--workers 2]

For every seed of the range (both ends included), the five pours of
`granular.scenes.sand_pile.POURS` (300 spheres in a quasi-2D slot, mu = 0.6, points or
turning spheres with rolling resistance 0 to 0.3) run until the heap rests or 2 s
(`sand_pile.pours`, ``--workers`` processes). Prints each pour (the solver iterations of
its run, the ratios residual / tolerance of the steps that kept a best answer,
`Simulation.missed_steps`, the angle of repose and the time reached) and the totals:
pours, runs a solver stopped, iterations, steps kept beyond the tolerance (and in how
many pours), those beyond 5 tolerances, the worst. ``--sweep-aim X`` runs with the
scheme's option ``sweep_aim=X``. Figures are reported, not asserted: which steps stall
depends on the trajectory (benchmarks/README.md, "a stall floor by work").
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
    parser.add_argument("--workers", type=int, default=2, help="pours run at a time (2)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the kept steps are counted below
    start = time.perf_counter()
    runs = sand_pile.pours(range(args.seeds[0], args.seeds[1] + 1), args.workers, args.sweep_aim)
    kept = []
    for run in runs:
        ratios = [round(float(ratio), 2) for _, _, ratio in run["missed"]]
        kept += [(run["seed"], run["rotation"], run["rolling_friction"], ratio) for ratio in ratios]
        print(
            f"seed {run['seed']} rotation {run['rotation']} mu_r {run['rolling_friction']}: {run['iterations']} "
            f"iterations, kept {ratios}, angle {run['angle']:.1f}, t {run['t']:.2f} s"
        )
    ratios = np.array([k[-1] for k in kept])
    stopped = sum(run["failure"] is not None for run in runs)
    iterations = sum(run["iterations"] for run in runs)
    print(
        f"{len(runs)} pours, {stopped} stopped, {iterations} iterations, {len(kept)} steps kept beyond the "
        f"tolerance in {len({k[:3] for k in kept})} pours, {int((ratios > 5).sum())} beyond 5 tolerances, worst "
        f"{ratios.max(initial=0.0):.2f}; {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
