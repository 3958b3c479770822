"""The Coulomb sweeps under other momentum restarts, replayed on steps of Siconos' box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/momentum_restart.py [--n 1000] [--mu 0.5]
        [--seed 0] [--steps 50 53 ... 197] [--restarts 1 1.05 1.1 1.2]

The momentum of `friction_gauss_seidel._Momentum` restarts when a sweep's squared
fixed-point residual exceeds `friction_gauss_seidel.MOMENTUM_RESTART` times the last
one's. The run is stepped to each of ``steps`` and the stage-4 solve of that step is
kept (`sweep_trace.kept_solves`); each kept solve is then solved again, whole (stall
rules, repairs and Newton calls included), under each threshold of ``restarts``. A
solve that stops (`ConvergenceError`) counts its sweeps up to the stop.

It prints, per threshold, the sweeps over all the solves, the solves that stop, the
longest solve, and against the first threshold the solves made faster and slower, the
largest ratio of a solve's sweeps to its sweeps there and the geometric mean of those
ratios.
"""

from __future__ import annotations

import argparse

import numpy as np

import granular as gr
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.contact.friction import FRICTION_SWEEPS
from sweep_trace import add_solve_arguments, replayed_solves


def sweeps_under(solves, restart: float) -> tuple[np.ndarray, int]:
    """``(sweeps (k,), stopped)``: each kept solve's sweeps with the restart threshold
    ``restart``, and how many of them stopped."""
    kept, counts, stopped = gauss_seidel.MOMENTUM_RESTART, [], 0
    gauss_seidel.MOMENTUM_RESTART = restart
    try:
        for rows, predicted, start, tolerance, floor in solves:
            try:
                counts.append(gauss_seidel.solve(rows, predicted, start, tolerance, FRICTION_SWEEPS, floor=floor)[1])
            except gr.ConvergenceError as error:
                counts.append(error.iterations)
                stopped += 1
    finally:
        gauss_seidel.MOMENTUM_RESTART = kept
    return np.array(counts), stopped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_solve_arguments(parser, 1000, range(50, 200, 3))
    parser.add_argument("--restarts", type=float, nargs="+", default=[1.0, 1.05, 1.1, 1.2])
    args = parser.parse_args()
    solves = [solve[1:] for solve in replayed_solves(args)]
    print(f"n {args.n}: {len(solves)} kept solves (steps {min(args.steps)}-{max(args.steps)})", flush=True)
    first = None
    for restart in args.restarts:
        counts, stopped = sweeps_under(solves, restart)
        first = counts if first is None else first
        ratios = counts / np.maximum(first, 1)
        print(
            f"restart above {restart:g}: {counts.sum()} sweeps, {stopped} stopped, longest {counts.max()}; "
            f"against {args.restarts[0]:g}: {(counts < first).sum()} faster, {(counts > first).sum()} slower, "
            f"at most {ratios.max():.2f} times, geometric mean {np.exp(np.mean(np.log(ratios))):.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
