"""What turning spheres cost: a 1,000-sphere pour, frictionless against frictional.

1,000 spheres (radius 1 cm, 2,500 kg/m^3) on a jittered 10 x 10 x 10 lattice of
spacing 2.4 r fall into an open box 0.3 m wide (restitution 0.3, dt = 1e-3 s) and
are advanced ``--steps`` steps (they land after about 0.1 s and pile up). Four
worlds, the same positions and velocities:

- ``frictionless``: mu = 0 (Maury's projection, `granular.projection`);
- ``points``: mu = 0.5, ``rotation=False`` (frictional points, 3N unknowns);
- ``turning``: mu = 0.5, spheres that turn (6N unknowns, `granular.world`);
- ``rolling``: as ``turning`` with rolling resistance mu_r = 0.1.

Prints, per world, the mean and median wall time per step, the share of the
contact solve, the mean number of active contacts and of Gauss-Seidel sweeps (the
solver's iteration count), and the kinetic energy at the end; a world whose
contact solve stalls (`ConvergenceError`) is reported with the step it reached. Figures are
reported, not asserted (they depend on the machine and its load).

    .venv/bin/python benchmarks/rotation_speed.py [--steps K] [--worlds frictionless,points,turning,rolling]

Measured (300 steps, 2 cores shared with other work, so wall times are high and
noisy; the solve share and sweep counts are the robust figures)::

    world           mean ms   median  solve  contacts  iter/step  KE end (J)
    frictionless      216.5    151.7    94%       730         11      0.0381   (65 s)
    points            654.7    529.9    98%       702        374      0.0103   (196 s)
    turning           411.1     26.5    97%       250        150        1.63   (79 s)
      stopped after 191 steps: the Gauss-Seidel sweeps did not converge in 5000 sweeps
      at t = 0.192 s (a contact 0.0102 m/s from its law, tolerance 0.000561 m/s)
    rolling          2380.9   1217.5    99%       739        516      0.0138   (714 s)

Frictional points cost 3 times the frictionless step (Gauss-Seidel sweeps against
the active-set solver); turning spheres with rolling resistance 11 times (1.4
times more sweeps on twice the unknowns, and steps of thousands of sweeps while the
pile forms); turning spheres without rolling resistance stall when the first
layers land (free rolling modes; see README, "Known limit").
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr

RADIUS = 0.01
BOX = 0.3
WORLDS = {
    "frictionless": dict(friction=0.0),
    "points": dict(friction=0.5, rotation=False),
    "turning": dict(friction=0.5),
    "rolling": dict(friction=0.5, rolling_friction=0.1),
}


def pour(seed: int = 0, **options) -> gr.SphereWorld:
    """The 1,000-sphere lattice above the open box, with ``options`` (friction, ...)."""
    rng = np.random.default_rng(seed)
    spacing = 2.4 * RADIUS
    grid = np.stack(np.meshgrid(*[np.arange(10)] * 3, indexing="ij"), -1).reshape(-1, 3)
    offset = 0.5 * (BOX - 9 * spacing)
    positions = grid * spacing + np.array([offset, offset, 0.05])
    positions[:, :2] += rng.uniform(-0.15, 0.15, (len(positions), 2)) * RADIUS
    velocities = rng.normal(0.0, 0.05, positions.shape)
    return gr.SphereWorld(positions, RADIUS, velocities=velocities, density=2500.0, restitution=0.3,
                          walls=[gr.Box([0, 0, 0], [BOX, BOX, 0.6], open_top=True)], **options)


def measure(name: str, steps: int) -> dict:
    simulation = gr.Simulation(pour(**WORLDS[name]), 1e-3)
    walls, solves, contacts, iterations, failure = [], [], [], [], None
    for _ in range(steps):
        start = time.perf_counter()
        try:
            result = simulation.step()
        except gr.ConvergenceError as error:   # a stalled contact solve: report it
            failure = str(error)
            break
        walls.append(time.perf_counter() - start)
        solves.append(result.solver.seconds.get("solve", 0.0))
        contacts.append(int(np.count_nonzero(result.contacts.impulse > 0.0)))
        iterations.append(result.solver.iterations)
    walls = np.array(walls)
    return dict(name=name, mean=walls.mean(), median=float(np.median(walls)), solve=np.sum(solves) / walls.sum(),
                contacts=float(np.mean(contacts)), iterations=float(np.mean(iterations)),
                energy=result.kinetic_energy, total=walls.sum(), failure=failure, steps=len(walls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--worlds", default=",".join(WORLDS))
    args = parser.parse_args()
    print(f"1,000-sphere pour, {args.steps} steps of 1 ms")
    print(f"  {'world':14}{'mean ms':>9}{'median':>9}{'solve':>7}{'contacts':>10}{'iter/step':>11}{'KE end (J)':>12}")
    for name in args.worlds.split(","):
        row = measure(name, args.steps)
        print(f"  {name:14}{1e3 * row['mean']:9.1f}{1e3 * row['median']:9.1f}{100 * row['solve']:6.0f}%"
              f"{row['contacts']:10.0f}{row['iterations']:11.0f}{row['energy']:12.3g}   ({row['total']:.0f} s)",
              flush=True)
        if row["failure"]:
            print(f"    stopped after {row['steps']} steps: {row['failure']}", flush=True)


if __name__ == "__main__":
    main()
