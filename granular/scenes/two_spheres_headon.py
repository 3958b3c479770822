"""Two spheres head-on: one partially elastic impact checked against Newton's law.

Spheres of 1 kg and 3 kg (radius 5 cm) approach each other along x at 1 m/s and
-0.5 m/s with no gravity; restitution e = 0.8. Newton's impact law gives the
velocities after the impact,

    v1' = (m1 v1 + m2 v2 - m2 e (v1 - v2)) / (m1 + m2)
    v2' = (m1 v1 + m2 v2 + m1 e (v1 - v2)) / (m1 + m2),

the impulse ``m1 m2 (1 + e) (v1 - v2) / (m1 + m2)`` and the kinetic energy lost
``(1 - e^2) m1 m2 (v1 - v2)^2 / (2 (m1 + m2))``. Prints the simulated and exact
values side by side.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import granular as gr
from granular.render import animate, snapshot

RADIUS = 0.05  # m
MASSES = (1.0, 3.0)  # kg
SPEEDS = (1.0, -0.5)  # m/s along x
RESTITUTION = 0.8
DEFAULTS = dict(duration=0.5, dt=1e-3, record_every=1)  # every step: the impact step is kept
RENDERS = Path("outputs")  # under the working directory


def build(restitution: float = RESTITUTION) -> gr.SphereWorld:
    """The two spheres, 0.4 m apart centre to centre, approaching."""
    positions = [[-0.2, 0.0, 0.0], [0.2, 0.0, 0.0]]
    velocities = [[SPEEDS[0], 0.0, 0.0], [SPEEDS[1], 0.0, 0.0]]
    return gr.SphereWorld(
        positions, RADIUS, masses=MASSES, velocities=velocities, gravity=(0.0, 0.0, 0.0), restitution=restitution
    )


def exact(e: float = RESTITUTION) -> dict:
    """Newton's law for the head-on impact."""
    (m1, m2), (v1, v2) = MASSES, SPEEDS
    total = m1 + m2
    return {
        "v1": (m1 * v1 + m2 * v2 - m2 * e * (v1 - v2)) / total,
        "v2": (m1 * v1 + m2 * v2 + m1 * e * (v1 - v2)) / total,
        "impulse": m1 * m2 * (1 + e) * (v1 - v2) / total,
        "loss": (1 - e**2) * m1 * m2 * (v1 - v2) ** 2 / (2 * total),
    }


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"]) -> gr.Trajectory:
    sim = gr.Simulation(build(), dt=dt)
    trajectory = sim.run(duration=duration, record_every=DEFAULTS["record_every"])
    after = trajectory.velocities[-1][:, 0]
    impulse = sum(float(c.impulse.sum()) for c in trajectory.contacts)
    loss = trajectory.kinetic_energy[0] - trajectory.kinetic_energy[-1]
    momentum = np.array(MASSES) @ trajectory.velocities[:, :, 0].T
    reference = exact()
    print(f"two_spheres_headon: m = {MASSES} kg, v = {SPEEDS} m/s, e = {RESTITUTION}, dt = {dt:g} s")
    print(f"  {'':22}{'simulated':>12}{'Newton':>12}")
    print(f"  {'v1 after (m/s)':22}{after[0]:12.6f}{reference['v1']:12.6f}")
    print(f"  {'v2 after (m/s)':22}{after[1]:12.6f}{reference['v2']:12.6f}")
    print(f"  {'impulse (N s)':22}{impulse:12.6f}{reference['impulse']:12.6f}")
    print(f"  {'energy lost (J)':22}{loss:12.6f}{reference['loss']:12.6f}")
    print(f"  momentum drift          {np.ptp(momentum):.3g} kg m/s over {len(trajectory)} frames")
    return trajectory


if __name__ == "__main__":
    trajectory = main(*(float(a) for a in sys.argv[1:2]))

    view = (0.0, -1.0, 0.35)
    animate(
        trajectory,
        RENDERS / "two_spheres_headon.mp4",
        fps=25,
        every=5,
        size=(512, 384),
        view=view,
        color_by="speed",
        title="e = 0.8",
    )
    impact = int(np.argmax([c.impulse.max(initial=0.0) for c in trajectory.contacts]))
    snapshot(
        trajectory,
        impact,
        RENDERS / "two_spheres_headon.png",
        forces=True,
        size=(512, 384),
        view=view,
        sphere_opacity=0.5,
    )
    print(f"  wrote {RENDERS / 'two_spheres_headon.mp4'} and {RENDERS / 'two_spheres_headon.png'}")
