"""Hopper discharge: grains empty from a wedge hopper through a slot into a bin.

A flat-bottomed hopper is a wedge of two inclined plane panels meeting a slot of
width ``3.2`` diameters; front and back walls 4 diameters apart make it a
quasi-2D hopper (the bin's y faces serve both). The grains, frictionless and
slightly inelastic, start at rest on a lattice in the hopper and drain into the
open bin below.

The panels are `granular.Panel` walls, finite rectangles: a sphere's gap is its
distance to the nearest point of the rectangle minus its radius, so the edge of the
slot is a rounded lip and no grain can slip through it. Prints the number of grains
discharged against time and the mean discharge rate, grains per second and kg/s
(Beverloo's law expects a rate constant in time while the hopper is not nearly
empty).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.runs import progress

RADIUS = 0.004         # m
DENSITY = 2500.0       # kg/m^3
DEPTH = 8 * RADIUS     # m, distance between the front and back walls
HALF_SLOT = 3.2 * RADIUS   # m, half the width of the outlet slot
OUTLET_HEIGHT = 0.06   # m, height of the slot above the bin floor
ANGLE = np.radians(35.0)   # inclination of the panels from the vertical
PANEL_LENGTH = 0.12    # m, along the slope
DEFAULTS = dict(duration=0.6, dt=1e-3, record_every=10)
RENDERS = Path("outputs")                   # under the working directory


def panels(friction: float | None = None) -> list[gr.Panel]:
    """The two inclined panels, from the slot's edges up and outwards, spanning the depth."""
    result = []
    for sign in (-1.0, 1.0):
        along = np.array([sign * np.sin(ANGLE), 0.0, np.cos(ANGLE)])
        corner = np.array([sign * HALF_SLOT, 0.0, OUTLET_HEIGHT])
        result.append(gr.Panel(corner, PANEL_LENGTH * along, [0.0, DEPTH, 0.0], friction=friction))
    return result


def build(layers: int = 12, seed: int = 2, restitution: float = 0.2, friction: float = 0.0) -> gr.SphereWorld:
    """Grains on a jittered lattice filling the hopper above the slot, at rest; ``friction``
    the Coulomb coefficient of every contact (0: frictionless grains)."""
    rng = np.random.default_rng(seed)
    spacing = 2.15 * RADIUS
    top = OUTLET_HEIGHT + PANEL_LENGTH * np.cos(ANGLE)
    ys = np.arange(RADIUS * 1.2, DEPTH - RADIUS * 1.1, spacing)
    positions = []
    for layer in range(layers):
        z = OUTLET_HEIGHT + 1.5 * RADIUS + layer * spacing
        if z > top - RADIUS:
            break
        # Half-width of the wedge at this height, minus a margin so no grain touches a panel.
        half = HALF_SLOT + (z - OUTLET_HEIGHT) * np.tan(ANGLE) - RADIUS / np.cos(ANGLE) - 0.2 * RADIUS
        xs = np.arange(-half + RADIUS, half - RADIUS + 1e-12, spacing)
        xs += 0.5 * ((half - RADIUS) - xs[-1]) if xs.size else 0.0
        for x in xs:
            for y in ys:
                positions.append((x, y, z))
    positions = np.array(positions)
    positions[:, [0, 2]] += rng.uniform(-0.04, 0.04, (len(positions), 2)) * RADIUS
    half_width = HALF_SLOT + PANEL_LENGTH * np.sin(ANGLE) + 2 * RADIUS
    box = gr.Box([-half_width, 0.0, 0.0], [half_width, DEPTH, top + 0.02], open_top=True)
    return gr.SphereWorld(positions, RADIUS, density=DENSITY, walls=[box, *panels()], restitution=restitution,
                          friction=friction)


def discharged(trajectory: gr.Trajectory) -> np.ndarray:
    """Number of grains below the slot in each frame."""
    return np.sum(trajectory.positions[:, :, 2] < OUTLET_HEIGHT - RADIUS, axis=1)


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"]) -> gr.Trajectory:
    world = build()
    sim = gr.Simulation(world, dt=dt)
    start = time.perf_counter()
    trajectory = sim.run(duration=duration, record_every=DEFAULTS["record_every"], progress=progress())  # stderr
    seconds = time.perf_counter() - start
    out = discharged(trajectory)
    mass = float(trajectory.meta["masses"][0])
    print(f"hopper_discharge: {world.n} grains, slot {2 * HALF_SLOT / (2 * RADIUS):.1f} diameters, "
          f"{sim.steps_taken} steps of {dt:g} s in {seconds:.1f} s")
    for k in range(0, len(trajectory), max(1, len(trajectory) // 6)):
        print(f"  t = {trajectory.t[k]:5.2f} s   discharged {out[k]:4d}")
    flowing = (out > 0.1 * world.n) & (out < 0.8 * world.n)
    if flowing.sum() >= 3:
        rate = np.polyfit(trajectory.t[flowing], out[flowing], 1)[0]
        print(f"  discharge rate              {rate:.1f} grains/s = {rate * mass:.4g} kg/s "
              f"(fit over {flowing.sum()} frames with 10-80 % discharged)")
    else:
        print(f"  discharged {out[-1]} of {world.n} grains by t = {trajectory.t[-1]:.2f} s "
              "(too few frames in the steady regime for a rate)")
    print(f"  smallest gap in the last frame {trajectory.contacts[-1].gap.min(initial=np.inf):.3g} m")
    return trajectory


if __name__ == "__main__":
    trajectory = main(*(float(a) for a in sys.argv[1:2]))
    from granular.render import animate, snapshot

    view = (0.25, -1.0, 0.35)
    animate(trajectory, RENDERS / "hopper_discharge.mp4", fps=20, size=(512, 384), view=view,
            title="hopper discharge")
    snapshot(trajectory, len(trajectory) // 3, RENDERS / "hopper_discharge.png", forces=True, size=(512, 384),
             view=view)
    print(f"  wrote {RENDERS / 'hopper_discharge.mp4'} and {RENDERS / 'hopper_discharge.png'}")
