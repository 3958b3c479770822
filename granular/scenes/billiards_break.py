"""Billiards break: a cue ball breaks a rack of fifteen on a frictionless table.

No gravity: the balls (radius 28.575 mm, 170 g) are held in the plane of the
table between two z-planes, the cloth z = 0 and a lid z = 2r, the faces of a
closed box whose sides are the cushions (2.54 m x 1.27 m, restitution 0.8).
Ball-ball impacts have restitution 0.95. The rack is tight (1 micrometre gaps) and
the cue ball arrives at 6 m/s, so the first impacts are one simultaneous impact of
the whole rack, resolved by Moreau's law on the contacts it closes.

Prints the kinetic energy kept after the break and at the end, the fastest ball,
how many balls move, and the momentum carried by the cue ball after the break.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import granular as gr
from granular.render import animate, snapshot

RADIUS = 0.028575  # m
MASS = 0.17  # kg
TABLE = (2.54, 1.27)  # m
CUE_SPEED = 6.0  # m/s
RACK_GAP = 1e-6  # m between racked balls
DEFAULTS = dict(duration=1.5, dt=5e-4, record_every=10)
RENDERS = Path("outputs")  # under the working directory


def rack() -> np.ndarray:
    """Fifteen centres in a triangle whose apex sits on the foot spot, pointing at the cue."""
    length, width = TABLE
    apex = np.array([0.75 * length, 0.5 * width])
    pitch = 2 * RADIUS + RACK_GAP
    centres = []
    for row in range(5):
        for k in range(row + 1):
            centres.append(apex + pitch * np.array([row * np.sqrt(3) / 2, k - row / 2]))
    return np.array(centres)


def build(cue_speed: float = CUE_SPEED, offset: float = 0.004) -> gr.SphereWorld:
    """The cue ball on the head spot aimed at the apex, ``offset`` m off-centre (a slight cut)."""
    length, width = TABLE
    planar = np.vstack([[0.25 * length, 0.5 * width + offset], rack()])
    positions = np.column_stack([planar, np.full(len(planar), RADIUS)])
    velocities = np.zeros_like(positions)
    velocities[0, 0] = cue_speed
    table = gr.Box([0.0, 0.0, 0.0], [length, width, 2 * RADIUS], restitution=0.8)
    return gr.SphereWorld(
        positions, RADIUS, masses=MASS, velocities=velocities, gravity=(0.0, 0.0, 0.0), walls=[table], restitution=0.95
    )


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"], record_every: int = 1) -> gr.Trajectory:
    """Run and print; every step is recorded by default so that the break's impulses are kept."""
    sim = gr.Simulation(build(), dt=dt)
    trajectory = sim.run(duration=duration, record_every=record_every)
    speeds = np.linalg.norm(trajectory.velocities, axis=2)
    energy = trajectory.kinetic_energy / trajectory.kinetic_energy[0]
    hit = int(np.argmax(speeds[:, 1:].max(axis=1) > 0))  # first frame with a racked ball moving
    after = min(hit + 1, len(trajectory) - 1)
    moving = int(np.sum(speeds[-1] > 1e-3))
    fastest = int(np.argmax(speeds[after]))
    print(f"billiards_break: 16 balls, cue at {CUE_SPEED} m/s, dt = {dt:g} s, {len(trajectory)} frames")
    strongest = int(np.argmax([c.impulse.sum() for c in trajectory.contacts]))
    print(
        f"  strongest step ends at t = {trajectory.t[strongest]:.4f} s: "
        f"{int(np.count_nonzero(trajectory.contacts[strongest].impulse > 0))} contacts, "
        f"total impulse {trajectory.contacts[strongest].impulse.sum():.4f} N s"
    )
    print(f"  rack struck by t = {trajectory.t[hit]:.3f} s")
    print(
        f"  kinetic energy kept just after the break {energy[after]:.3f}, at t = {trajectory.t[-1]:.2f} s "
        f"{energy[-1]:.3f}"
    )
    print(f"  fastest ball just after the break: #{fastest} at {speeds[after, fastest]:.3f} m/s")
    print(
        f"  cue ball after the break: {speeds[after, 0]:.3f} m/s "
        f"({MASS * trajectory.velocities[after, 0, 0]:.4f} kg m/s along the table)"
    )
    print(
        f"  balls moving at the end: {moving} of 16; "
        f"every ball on the table: {bool(np.all(np.abs(trajectory.positions[:, :, 2] - RADIUS) < 1e-9))}"
    )
    return trajectory


if __name__ == "__main__":
    trajectory = main(*(float(a) for a in sys.argv[1:2]))

    animate(
        trajectory, RENDERS / "billiards_break.mp4", fps=25, every=20, size=(512, 320), color_by="id", title="break"
    )
    strongest = int(np.argmax([c.impulse.sum() for c in trajectory.contacts]))
    snapshot(
        trajectory,
        strongest,
        RENDERS / "billiards_break.png",
        size=(512, 320),
        forces=True,
        view=(-0.25, -0.35, 1.0),
        fit="bodies",
    )
    print(f"  wrote {RENDERS / 'billiards_break.mp4'} and {RENDERS / 'billiards_break.png'}")
