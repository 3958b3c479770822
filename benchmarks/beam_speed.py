"""Wall time of the seed's beam runs (seed 001, section 4), beta = 1/2, T = 2 s.

Times `granular.schemes.newmark.simulate_tip` (fast driver, set-up included) on
dt = 5e-5 s (40,000 steps) and dt = 1e-6 s (2 million steps), several repeats,
and, for scale, the per-step cost of `Simulation.step` with ``scheme="newmark"``
(extrapolated to the same step counts). The seed's Scilab times (2005 Mac G4)
were 15.88 s and 753.9 s.

    .venv/bin/python benchmarks/beam_speed.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from granular.schemes.newmark import simulate_tip
from granular.systems.beam import Beam

SEED_SECONDS = {5e-5: 15.88, 1e-6: 753.9}


def step_by_step_cost(beam: Beam, dt: float, steps: int = 2000) -> float:
    """Seconds per `Simulation.step` (median over ``steps`` steps)."""
    sim = gr.Simulation(beam, dt=dt, scheme="newmark", beta=0.5)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(repeats: int = 3) -> None:
    beam = Beam()
    simulate_tip(beam, 5e-5, 0.01)  # warm up imports and BLAS
    print(f"beam, beta = 1/2, T = 2 s, J = 19 (38 unknowns); {repeats} repeats")
    print(f"{'dt (s)':>8} {'steps':>9}   {'fast driver (s)':<26} {'Simulation.step (s, extrapolated)':<36} {'seed (s)':>9}")
    for dt in (5e-5, 1e-6):
        steps = int(round(2.0 / dt))
        seconds = [simulate_tip(beam, dt, 2.0, beta=0.5).seconds for _ in range(repeats)]
        per_step = step_by_step_cost(beam, dt)
        fast = f"{min(seconds):.3f} (median {np.median(seconds):.3f})"
        slow = f"{per_step * steps:.1f} ({per_step * 1e6:.0f} us/step)"
        print(f"{dt:>8.0e} {steps:>9d}   {fast:<26} {slow:<36} {SEED_SECONDS[dt]:>9.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    main(parser.parse_args().repeats)
