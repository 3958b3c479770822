"""Box pour: a few hundred spheres rain into an open box and settle into a pile.

Prints steps, contacts, the largest multiplier, the kinetic energy and the smallest
gap seen over the run; saves the trajectory to ``outputs/box_pour.h5``. Run as a
script (``make demo``), it also renders ``outputs/box_pour.mp4``, a still of the
settled pile with its force network, ``outputs/box_pour.png``, and the small
``outputs/box_pour.gif`` shown at the top of the README, and ``outputs/box_pour.html``,
the run in a browser (`granular.render.viewer`; opens offline).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.progress import progress
from granular.render import animate, snapshot
from granular.render.viewer import write_html

RADIUS = 0.01  # m
BOX = 0.16  # m, side of the square box
DEFAULTS = dict(duration=1.0, dt=1e-3, record_every=20)
RENDERS = Path("outputs")  # under the working directory


#: ``granular run box_pour --set n=1000 --set restitution=0.9``; the defaults are
#: ``make demo``'s pour (300 spheres, 5 x 5 x 12).
PARAMETERS = dict(n=300, restitution=0.3, friction=0.0, seed=1)
PARAMETER_HELP = dict(
    n="number of spheres, in layers of 5 x 5 (the last one partly filled)",
    restitution="coefficient of restitution e of every impact (1)",
    friction="Coulomb friction coefficient between spheres and with the box (1)",
    seed="random seed of the lattice jitter and the initial velocities",
)


def build(
    n: int = 300, restitution: float = 0.3, friction: float = 0.0, seed: int = 1, n_side: int = 5
) -> gr.SphereWorld:
    """``n`` spheres on a jittered lattice of ``n_side * n_side`` per layer above an open box."""
    if n < 1:
        raise gr.InvalidInputError(f"box_pour needs at least one sphere, got n = {n}")
    layers = -(-n // (n_side * n_side))
    rng = np.random.default_rng(seed)
    spacing = 2.4 * RADIUS
    offset = 0.5 * (BOX - (n_side - 1) * spacing)
    grid = np.stack(np.meshgrid(np.arange(n_side), np.arange(n_side), np.arange(layers), indexing="ij"), -1)
    positions = grid.reshape(-1, 3) * spacing + np.array([offset, offset, 0.05])
    positions[:, :2] += rng.uniform(-0.15, 0.15, (len(positions), 2)) * RADIUS
    velocities = rng.normal(0.0, 0.05, positions.shape)
    # the n lowest sites, in the lattice's order (all 300 of make demo's pour, in its order)
    keep = np.sort(np.argsort(grid.reshape(-1, 3)[:, 2], kind="stable")[:n])
    return gr.SphereWorld(
        positions[keep],
        RADIUS,
        velocities=velocities[keep],
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [BOX, BOX, 0.4], open_top=True)],
        restitution=restitution,
        friction=friction,
    )


def smallest_gap(result: gr.StepResult) -> float:
    """The smallest gap of the contacts considered in a step (m)."""
    gaps = result.contacts.gap
    return float(gaps.min()) if gaps.size else np.inf


def main(duration: float = 1.0, dt: float = 1e-3, out: str = "outputs/box_pour.h5") -> gr.Trajectory:
    world = build()
    sim = gr.Simulation(world, dt=dt)
    smallest = np.inf
    largest_impulse = 0.0

    def watch(step, n_steps, result):
        nonlocal smallest, largest_impulse
        smallest = min(smallest, smallest_gap(result))
        largest_impulse = max(largest_impulse, float(result.contacts.impulse.max(initial=0.0)))

    start = time.perf_counter()
    trajectory = sim.run(duration=duration, record_every=20, progress=progress().also(watch))  # bar on stderr
    seconds = time.perf_counter() - start
    path = trajectory.save(out)
    active = trajectory.contacts[-1].impulse > 0
    print(f"box_pour: {world.n} spheres, {sim.steps_taken} steps of {dt:g} s in {seconds:.1f} s")
    print(f"  active contacts at the end  {int(active.sum())}")
    print(f"  largest multiplier          {largest_impulse:.4g} N s")
    print(f"  final kinetic energy        {trajectory.kinetic_energy[-1]:.4g} J")
    print(f"  smallest gap ever seen      {smallest:.3g} m ({smallest / RADIUS:.3g} radii)")
    print(f"  trajectory                  {path}")
    return trajectory


def render(trajectory: gr.Trajectory) -> None:
    """The animation, the force network of the last frame, and the README's GIF."""
    start = time.perf_counter()
    animate(trajectory, RENDERS / "box_pour.mp4", fps=20, size=(640, 480), title="box pour")
    snapshot(trajectory, -1, RENDERS / "box_pour.png", forces=True, size=(640, 480), fit="bodies")
    animate(trajectory, RENDERS / "box_pour.gif", fps=12, every=2, size=(320, 240))
    print(
        f"  pictures                    {RENDERS / 'box_pour.mp4'}, .png, .gif in {time.perf_counter() - start:.1f} s"
    )

    page = write_html(trajectory, RENDERS / "box_pour.html")
    print(f"  in a browser                {page} ({page.stat().st_size / 1e6:.1f} MB, opens offline)")


if __name__ == "__main__":
    render(main(*(float(a) for a in sys.argv[1:2])))
