"""Wall time per step on the peers' own scenes (SCoPI's box, Siconos' box).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py scopi [--n 10] [--steps 1000]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/peers.py siconos [--steps 200] [--mu 0.5] [--no-gap-closure]

Prints, per window of steps, the mean (SCoPI's windows, as SCoPI reports them)
or the median (Siconos' windows) wall time of `Simulation.step`, the peer's figure
measured on this machine and the ratio, then the smallest gap met after any step
as a fraction of the smallest radius (checked outside the timed step) and the
contact rows of the last step. The scenes are in `peer_scenes.py`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from granular.spheres.neighbors import candidate_pairs, pair_gaps
from peer_scenes import scopi_box, siconos_box
from tails import tail_line

#: The peers' figures on this machine (one process, one thread), s per step.
SCOPI_WINDOWS = {(0, 10): 0.764, (10, 100): 0.313, (100, 300): 0.963, (300, 1000): 1.968, (0, 1000): 1.606}
SICONOS_WINDOWS = {(10, 50): 0.083, (50, 100): 0.206, (100, 150): 0.626, (150, 200): 1.206}
#: SCoPI on its 27,000-sphere scene (n = 30), first 100 steps.
SCOPI_27000_WINDOWS = {(0, 100): 7.57}


def smallest_relative_gap(world: gr.SphereWorld, t: float, positions: np.ndarray) -> float:
    """Smallest gap after a step (pairs and walls) over the smallest radius."""
    radii = world.radii_at(t)
    i, j = candidate_pairs(positions, radii, 0.0, world.periodic)
    gaps = [pair_gaps(positions, radii, i, j, world.periodic)]
    gaps += [(positions - plane.point) @ plane.normal - radii for plane in world.planes]
    return float(np.concatenate(gaps).min(initial=np.inf) / radii.min())


def run(world, dt, steps: int, report_every: int = 0, **options):
    """Step ``steps`` times (``options`` for `Simulation`); returns per-step seconds, the
    smallest relative gap after any step once the initial overlaps (if any) are gone,
    and the last step's result."""
    sim = gr.Simulation(world, dt=dt, **options)
    seconds, worst = np.empty(steps), np.inf
    result, separated = None, world.initial_overlaps == "error"
    for k in range(steps):
        start = time.perf_counter()
        result = sim.step()
        seconds[k] = time.perf_counter() - start
        separated = separated or result.overlap == 0.0
        if separated:
            worst = min(worst, smallest_relative_gap(world, result.t, result.positions))
        if report_every and (k + 1) % report_every == 0:
            print(
                f"  step {k + 1}: {seconds[k]:.4f} s, {len(result.contacts)} rows, "
                f"{int(result.contacts.active.sum())} active, smallest gap {worst:.2e} r",
                flush=True,
            )
    return seconds, worst, result


def report(seconds, windows, statistic, worst, result):
    print(f"{'steps':>12} {'granular s':>11} {'peer s':>8} {'ratio':>7}")
    for (first, last), peer in windows.items():
        if last > seconds.size:
            continue
        ours = float(statistic(seconds[first:last]))
        print(f"{first:>5}-{last:<6} {ours:>11.4f} {peer:>8.3f} {peer / ours:>6.1f}x")
    print(f"all steps: {tail_line(seconds)}")
    print(f"smallest gap after any step (once initial overlaps are gone): {worst:.3e} of the smallest radius")
    print(f"last step: {len(result.contacts)} rows, {int(result.contacts.active.sum())} active")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene", choices=["scopi", "siconos"])
    parser.add_argument("--n", type=int, default=10, help="SCoPI: n^3 spheres (10, 20, 30)")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--progress", type=int, default=0, help="print a line every K steps")
    parser.add_argument("--mu", type=float, default=0.0, help="Siconos: Coulomb friction (turning spheres)")
    parser.add_argument("--spheres", type=int, default=None, help="Siconos: number of spheres (default 1,000)")
    parser.add_argument(
        "--no-gap-closure", action="store_true", help="frictional steps keep q + h u (Simulation(close_gaps=False))"
    )
    args = parser.parse_args()
    options = dict(close_gaps=False) if args.no_gap_closure else {}
    if args.scene == "scopi":
        options = {} if args.n <= 10 else dict(initial_overlaps="separate")
        world, dt = scopi_box(args.n, **options)
        steps = args.steps or 1000
        seconds, worst, result = run(world, dt, steps, args.progress)
        windows = {10: SCOPI_WINDOWS, 30: SCOPI_27000_WINDOWS}.get(args.n, {(0, steps): float("nan")})
        report(seconds, windows, np.mean, worst, result)
    else:
        world, dt = siconos_box(n=args.spheres or 1000, friction=args.mu)
        steps = args.steps or 200
        seconds, worst, result = run(world, dt, steps, args.progress, **options)
        peer = (
            SICONOS_WINDOWS
            if args.mu == 0.0 and (args.spheres or 1000) == 1000
            else {window: float("nan") for window in SICONOS_WINDOWS}
        )
        report(seconds, peer, np.median, worst, result)


if __name__ == "__main__":
    main()
