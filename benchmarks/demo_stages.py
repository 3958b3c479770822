"""Where `make demo`'s steps go: the Maury stage against the small projections.

Runs `granular/scenes/box_pour.py`'s pour (300 spheres, e = 0.3, 1,000 steps of 1 ms, no
rendering) and prints the processor time of the run and, for the projections of
the velocity scheme, their count, median rows and time: Maury's stage (one a step,
about 1,000 rows on the settled pile) and the restitution stage's impact clusters
and force increments (2-3 a step, median 11-13 rows). Figures are reported, not
asserted.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/demo_stages.py
"""

from __future__ import annotations

import time

import numpy as np

import granular as gr
import granular.schemes.maury as maury
from granular.scenes import box_pour


def main(steps: int = 1000) -> None:
    calls = {"Maury stage": [], "restitution and force increment": []}
    project = maury.project

    def timed(problem, **options):
        start = time.process_time()
        answer = project(problem, **options)
        # Maury's stage alone passes the solver's workspace (granular.schemes.maury)
        stage = "Maury stage" if "workspace" in options else "restitution and force increment"
        calls[stage].append((problem.size, time.process_time() - start))
        return answer

    maury.project = timed
    simulation = gr.Simulation(box_pour.build(), dt=1e-3)
    start = time.process_time()
    for _ in range(steps):
        simulation.step()
    total = time.process_time() - start
    maury.project = project
    print(f"box_pour, {steps} steps: {total:.2f} s of processor time")
    for stage, entries in calls.items():
        entries = np.array(entries).reshape(-1, 2)
        print(
            f"  {stage:34} {len(entries):5d} calls, median {np.median(entries[:, 0]):6.0f} rows, "
            f"{entries[:, 1].sum():6.2f} s ({1e3 * entries[:, 1].mean():.3f} ms a call)"
        )


if __name__ == "__main__":
    main()
