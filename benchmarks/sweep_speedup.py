"""Throughput of `granular sweep`: a 32-run sweep on a LocalCluster of 1, then 2 worker processes.

The runs: `granular_gas_cooling` with 100 spheres at packing fraction 0.1, four
restitutions (0.6, 0.7, 0.8, 0.9) times eight seeds, 0.5 s of simulated time at
dt = 5e-4 s (1,000 steps, a frame every 40): about 1-3 s each. Each cluster is
started and its workers import granular (`Client.run`) before the clock starts, so
the times are those of the sweep itself: submitting, running, returning and
writing the 32 run files and the summary. The speed-up is the 1-worker time over
the 2-worker time; the issue's target is >= 1.8 on 2 cores.

    OMP_NUM_THREADS=1 python benchmarks/sweep_speedup.py [--workers 1 2] [--seeds 8]

Prints the load average first: other processes on the cores lower the speed-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from granular.app import parameter_sweeps


def warm_up() -> str:
    """Import what a run imports (numpy, scipy, the solvers), on a worker."""
    import granular.simulation  # noqa: F401
    import granular.app.parameter_sweeps  # noqa: F401

    return "ready"


def time_sweep(plan, workers: int) -> tuple[float, list]:
    """Wall time (s) of ``plan`` on a fresh LocalCluster of ``workers`` processes, and its rows."""
    with parameter_sweeps.connect(workers=workers) as client, tempfile.TemporaryDirectory(prefix="sweep-bench-") as out:
        client.wait_for_workers(workers)
        client.run(warm_up)
        start = time.perf_counter()
        result = parameter_sweeps.run_sweep(plan, out, client, force=True)
        seconds = time.perf_counter() - start
    failed = [row for row in result.rows if row["status"] != parameter_sweeps.STATUS_OK]
    if failed:
        raise SystemExit(f"{len(failed)} runs failed: {failed[0]['status']}")
    return seconds, result.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seeds", type=int, default=8, help="seeds per restitution (8: 32 runs)")
    parser.add_argument("--duration", type=float, default=0.5, help="simulated time of a run (s)")
    args = parser.parse_args()
    plan = parameter_sweeps.plan_sweep(
        "granular_gas_cooling",
        ["n=100", "packing=0.1", "restitution=0.6,0.7,0.8,0.9"],
        seeds=args.seeds,
        duration=args.duration,
    )
    print(
        f"{len(plan.runs)} runs of granular_gas_cooling (n=100, packing 0.1, e = 0.6-0.9, {args.seeds} seeds), "
        f"{plan.settings.duration:g} s at dt {plan.settings.dt:g} s; {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )
    times = {}
    for workers in args.workers:
        seconds, rows = time_sweep(plan, workers)
        times[workers] = seconds
        per_run = [row["wall_time"] for row in rows]
        print(
            f"  {workers} worker{'s' if workers > 1 else ' '}: {seconds:6.1f} s for {len(rows)} runs "
            f"({len(rows) / seconds:.2f} runs/s; a run {statistics.mean(per_run):.2f} s on average, "
            f"{min(per_run):.2f}-{max(per_run):.2f} s)"
        )
    base = min(times)
    for workers, seconds in times.items():
        if workers != base:
            speedup = times[base] / seconds
            print(
                f"  speed-up {workers} workers / {base}: {speedup:.2f}x "
                f"(parallel efficiency {speedup / (workers / base):.0%})"
            )


if __name__ == "__main__":
    main()
