"""The rotating drum's step: its median, tail and where its time goes.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/drum.py [--steps 1000] [--skip 10]

The scene is `granular.scenes.rotating_drum` as it is packaged (500 beads of radii
4.5-5.5 mm, e = 0.3, mu = 0.5, mu_r = 0.1, in a capped drum turning at 3 rad/s),
stepped with ``Simulation(world, dt=1e-3)``, the user's first run of it. Prints:

- the wall time per step (median, 99th percentile, largest) over the steps after the
  first ``--skip`` (the first step compiles the sweeps' loops);
- the sweeps of the whole run, and the steps that kept a best answer short of the
  tolerance (`SolverStats.missed`), with their times and ratios;
- the median of each part of a step (`SolverStats.seconds`): neighbour search,
  assembly of the rows, the restitution stage (frictional impacts, e > 0), the
  projection (the Coulomb sweeps), the gap closure, and the rest (the step's
  bookkeeping: results, rotation);
- a fingerprint of the trajectory (the sum of |positions| every 100 steps), equal to
  the last digit between two trees that must give the same steps.

Figures are reported, not asserted: they move with the machine's load by up to a
tenth between runs of the same tree (benchmarks/README.md, "the rotating drum").
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import granular as gr
from granular.scenes import rotating_drum


def run(steps: int):
    """``(wall times (steps,), SolverStats per step, fingerprint)`` of the drum."""
    simulation = gr.Simulation(rotating_drum.build(), dt=1e-3)
    times, stats, fingerprint = [], [], 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the kept steps are counted below
        for step in range(steps):
            start = time.perf_counter()
            result = simulation.step()
            times.append(time.perf_counter() - start)
            stats.append(result.solver)
            if step % 100 == 99:
                fingerprint += float(np.abs(result.positions).sum())
    return np.array(times), stats, fingerprint


def parts(stats) -> dict[str, np.ndarray]:
    """Per-step wall times (s) of the parts of a step, from `SolverStats.seconds`."""
    seconds = [s.seconds for s in stats]

    def part(key):
        return np.array([step.get(key, 0.0) for step in seconds])

    total, solve, impacts = part("total"), part("solve"), part("impacts")
    measured = part("neighbors") + part("assembly") + solve + part("closure")
    return {
        "neighbours": part("neighbors"),
        "assembly": part("assembly"),
        "impacts": impacts,
        "projection": solve - impacts,
        "closure": part("closure"),
        "rest": total - measured,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--skip", type=int, default=10, help="first steps left out of the figures")
    args = parser.parse_args()
    times, stats, fingerprint = run(args.steps)
    kept = times[args.skip :]
    print(
        f"rotating drum, {args.steps} steps: median {1e3 * np.median(kept):.1f} ms, 99th percentile "
        f"{1e3 * np.percentile(kept, 99):.1f} ms, largest {kept.max():.3f} s (steps after the first {args.skip})"
    )
    sweeps = sum(s.iterations for s in stats)
    missed = [(k + 1, s.missed) for k, s in enumerate(stats) if s.missed]
    print(f"sweeps of the run {sweeps:,}; steps that kept a best answer: {len(missed)}")
    for step, ratio in missed:
        print(f"  t = {1e-3 * step:.3f} s at {ratio:.2f} tolerances")
    print("median part of a step (ms):")
    for name, values in parts(stats[args.skip :]).items():
        print(f"  {name:11s} {1e3 * np.median(values):6.2f}")
    print(f"fingerprint {fingerprint!r}")


if __name__ == "__main__":
    main()
