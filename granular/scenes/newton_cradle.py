"""Newton's cradle: touching balls give Moreau's simultaneous law, spaced balls the textbook cradle.

Two rows of five steel balls (radius 2 cm), no gravity, elastic impacts (e = 1).
In each row the first ball strikes the other four at 1 m/s.

- Row A, balls touching: the four contacts are active at once, and the projection
  applies Moreau's impact law to all of them together, ``u+ = P_C u- - e P_N u-``
  in the mass metric, C the cone of admissible velocities. That is a simultaneous
  impact: with five equal balls the striker bounces back at -3/5 m/s and the
  other four leave together at 2/5 m/s, not the textbook cradle.
- Row B, balls 4 mm apart: the impacts happen one after the other, each a binary
  elastic impact that hands the whole velocity on; the last ball leaves at 1 m/s
  and the others stop. This is the textbook cradle (real cradles behave so because
  the balls are slightly apart or because waves separate the impacts in time).

Prints both outcomes next to the two laws and says which one each row follows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import granular as gr
from granular.render import animate, snapshot

RADIUS = 0.02  # m
BALLS = 5
SPEED = 1.0  # m/s, the striker
GAP_B = 0.004  # m, between the balls of row B (more than one step of travel)
#: Row A "touches" with a 1 nm gap: an exact zero gap currently trips a round-off
#: tolerance of the projection (see the issue tracker); 1 nm is touching at any scale drawn.
GAP_A = 1e-9
ROW_SPACING = 0.1  # m, between the rows along y
DEFAULTS = dict(duration=0.25, dt=1e-3, record_every=2)
RENDERS = Path("outputs")  # under the working directory


def row(gap: float, y: float) -> np.ndarray:
    """Centres of one row: the striker 6 cm before the first of the others."""
    x = 0.1 + np.arange(BALLS - 1) * (2 * RADIUS + gap)
    return np.vstack([[0.0, y, 0.0], np.column_stack([x, np.full(BALLS - 1, y), np.zeros(BALLS - 1)])])


def build(restitution: float = 1.0) -> gr.SphereWorld:
    """Row A (touching) at y = 0 and row B (spaced) at y = ROW_SPACING; both strikers move."""
    positions = np.vstack([row(GAP_A, 0.0), row(GAP_B, ROW_SPACING)])
    velocities = np.zeros_like(positions)
    velocities[[0, BALLS], 0] = SPEED
    return gr.SphereWorld(
        positions, RADIUS, velocities=velocities, gravity=(0.0, 0.0, 0.0), restitution=restitution, density=7800.0
    )


def moreau_law(masses: np.ndarray, u: np.ndarray, e: float = 1.0) -> np.ndarray:
    """Moreau's law for balls in a line, all contacts closed: ``P_C u - e P_N u``.

    C = {u_1 <= u_2 <= ... <= u_n} (no pair approaches); the projection in the mass
    metric is a weighted isotonic regression (pool adjacent violators).
    """
    blocks = []  # [mass, momentum, count]
    for m, v in zip(masses, u):
        blocks.append([m, m * v, 1])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][0] > blocks[-1][1] / blocks[-1][0]:
            m2, p2, c2 = blocks.pop()
            blocks[-1] = [blocks[-1][0] + m2, blocks[-1][1] + p2, blocks[-1][2] + c2]
    tangent = np.concatenate([np.full(c, p / m) for m, p, c in blocks])
    return tangent - e * (u - tangent)


def textbook(u: np.ndarray) -> np.ndarray:
    """Sequential binary elastic impacts of equal balls: the velocity moves to the last ball."""
    result = np.zeros_like(u)
    result[-1] = u[0]
    return result


def verdict(outcome: np.ndarray, laws: dict, tolerance: float = 1e-3) -> str:
    """The law an outcome follows, or the nearest when it follows none."""
    distances = {name: float(np.abs(outcome - law).max()) for name, law in laws.items()}
    best = min(distances, key=distances.get)
    if distances[best] <= tolerance * SPEED:
        return f"follows {best}"
    return f"follows neither (nearest: {best}, off by {distances[best]:.3g} m/s)"


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"]) -> gr.Trajectory:
    world = build()
    sim = gr.Simulation(world, dt=dt)
    trajectory = sim.run(duration=duration, record_every=DEFAULTS["record_every"])
    masses = np.asarray(trajectory.meta["masses"])[:BALLS]
    before = np.zeros(BALLS)
    before[0] = SPEED
    laws = {"Moreau's simultaneous law": moreau_law(masses, before), "the textbook cradle": textbook(before)}
    print(f"newton_cradle: {BALLS} balls per row, striker at {SPEED} m/s, e = 1, dt = {dt:g} s")
    for name, law in laws.items():
        print(f"  {name:28} {np.array2string(law, precision=3, suppress_small=True)}")
    for label, start in (("A, touching", 0), ("B, 4 mm apart", BALLS)):
        after = trajectory.velocities[-1][start : start + BALLS, 0]
        energy = 0.5 * masses @ after**2 / (0.5 * masses[0] * SPEED**2)
        print(
            f"  row {label:14} {np.array2string(after, precision=3, suppress_small=True)}"
            f"  kinetic energy kept {energy:.4f}; {verdict(after, laws)}"
        )
    return trajectory


if __name__ == "__main__":
    trajectory = main(*(float(a) for a in sys.argv[1:2]))

    view = (0.3, -1.0, 1.0)
    animate(
        trajectory, RENDERS / "newton_cradle.mp4", fps=25, size=(512, 384), view=view, title="A: touching, B: 4 mm gaps"
    )
    snapshot(trajectory, len(trajectory) // 3, RENDERS / "newton_cradle.png", size=(512, 384), view=view)
    print(f"  wrote {RENDERS / 'newton_cradle.mp4'} and {RENDERS / 'newton_cradle.png'}")
