"""Wall time of the beam runs of Dumont and Paoli (*Vibrations of a beam between
obstacles. Convergence of a fully discretized approximation*, 2006, section 4),
beta = 1/2, T = 2 s.

Times `granular.schemes.newmark.simulate_tip` (the tip of every step, set-up
included) and `Simulation.run` (its Newmark fast path, a frame every 5 ms, a
`Trajectory`) on dt = 5e-5 s (40,000 steps) and dt = 1e-6 s (2 million steps),
several repeats, and, for scale, the per-step cost of `Simulation.step` with
``scheme="newmark"`` (extrapolated to the same step counts). The paper's Scilab
times (2005 Mac G4) were 15.88 s and 753.9 s.

    .venv/bin/python benchmarks/beam_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from granular.schemes.newmark import simulate_tip
from granular.systems.beam import Beam

PAPER_SECONDS = {5e-5: 15.88, 1e-6: 753.9}
FRAME_INTERVAL = 5e-3  # s, between the frames of Simulation.run


def step_by_step_cost(beam: Beam, dt: float, steps: int = 2000) -> float:
    """Seconds per `Simulation.step` (median over ``steps`` steps)."""
    sim = gr.Simulation(beam, dt=dt, scheme="newmark", beta=0.5)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def run_seconds(beam: Beam, dt: float) -> float:
    """Wall time (s) of `Simulation.run` over 2 s, set-up included (its fast path)."""
    start = time.perf_counter()
    gr.Simulation(beam, dt, scheme="newmark", beta=0.5).run(duration=2.0, record_every=int(round(FRAME_INTERVAL / dt)))
    return time.perf_counter() - start


def main(repeats: int = 3) -> None:
    beam = Beam()
    simulate_tip(beam, 5e-5, 0.01)  # warm up imports and BLAS
    print(f"beam, beta = 1/2, T = 2 s, J = 19 (38 unknowns); {repeats} repeats")
    print(
        f"{'dt (s)':>8} {'steps':>9}   {'simulate_tip (s)':<26} {'Simulation.run (s)':<26} "
        f"{'Simulation.step (s, extrapolated)':<36} {'paper (s)':>9}"
    )
    for dt in (5e-5, 1e-6):
        steps = int(round(2.0 / dt))
        seconds = [simulate_tip(beam, dt, 2.0, beta=0.5).seconds for _ in range(repeats)]
        runs = [run_seconds(beam, dt) for _ in range(repeats)]
        per_step = step_by_step_cost(beam, dt)
        fast = f"{min(seconds):.3f} (median {np.median(seconds):.3f})"
        run = f"{min(runs):.3f} (median {np.median(runs):.3f})"
        slow = f"{per_step * steps:.1f} ({per_step * 1e6:.0f} us/step)"
        print(f"{dt:>8.0e} {steps:>9d}   {fast:<26} {run:<26} {slow:<36} {PAPER_SECONDS[dt]:>9.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    main(parser.parse_args().repeats)
