"""MuJoCo on Siconos' box, with and without friction: the peer's own friction cost.

MuJoCo is not a dependency of granular; run this script in an environment of its own:

    python3.11 -m venv /tmp/mujoco-env && /tmp/mujoco-env/bin/pip install mujoco numpy
    OMP_NUM_THREADS=1 /tmp/mujoco-env/bin/python benchmarks/mujoco_box.py [--n 1000] [--steps 200] [--seed 0]

The scene is `peer_scenes.siconos_box` written as MJCF (the same lattice, initial
velocities, box and time step; this script does not import granular): ``n`` free
spheres (1,000 by default; r = 0.01 m, 1 kg) on ``ceil(n^(1/3))`` lattice sites a side,
an open box of inner width ``ceil(n^(1/3)) * 0.021 + 0.02`` m,
gravity, dt = 1 ms. MuJoCo's contacts are soft (``solref = "0.002 1"``: a time
constant of 2 ms, critically damped) and solved by its conjugate-gradient solver.
Three worlds differ only in their contacts: frictionless (``condim = 1``), and
mu = 0.5 with MuJoCo's default pyramidal cone or its elliptic cone (``condim = 3``).

Prints, per world, the median wall time of ``mj_step`` in the windows of
`peers.py siconos` and over the run, the largest step and the 99th percentile, the frictional
medians over the frictionless ones, and, at the last step, the contacts and the
deepest overlap as a fraction of the radius.
"""

from __future__ import annotations

import argparse
import math
import time

import mujoco
import numpy as np

RADIUS, SPACING, DT = 0.01, 0.021, 1e-3
WINDOWS = ((10, 50), (50, 100), (100, 150), (150, 200))
#: world: (cone, condim); MuJoCo's default cone is pyramidal.
WORLDS = {"frictionless": ("pyramidal", 1), "pyramidal": ("pyramidal", 3), "elliptic": ("elliptic", 3)}


def scene_xml(cone: str, condim: int, count: int) -> str:
    """The box as MJCF: a floor plane and four static walls 1 m high around the lattice."""
    per_axis = math.ceil(round(count ** (1.0 / 3.0), 9))
    offset = (per_axis - 1) * SPACING / 2.0
    half = (per_axis * SPACING + 0.02) / 2.0
    contact = f'condim="{condim}" friction="0.5 0.005 0.0001" solref="0.002 1"'
    height, thick = 1.0, 0.005  # the walls' height and half thickness (m)
    walls = [
        ((half + thick, 0.0), (thick, half + 2 * thick)),
        ((-half - thick, 0.0), (thick, half + 2 * thick)),
        ((0.0, half + thick), (half + 2 * thick, thick)),
        ((0.0, -half - thick), (half + 2 * thick, thick)),
    ]
    parts = [
        '<mujoco model="siconos_box">',
        f'<option timestep="{DT}" gravity="0 0 -9.81" solver="CG" cone="{cone}"/>',
        '<size memory="1G"/>',
        "<worldbody>",
        f'<geom type="plane" size="1 1 0.1" {contact}/>',
    ]
    for (x, y), (sx, sy) in walls:
        parts.append(f'<geom type="box" pos="{x} {y} {height / 2}" size="{sx} {sy} {height / 2}" {contact}/>')
    for i in range(count):
        gx, gy, gz = i % per_axis, (i // per_axis) % per_axis, i // per_axis**2
        x, y, z = gx * SPACING - offset, gy * SPACING - offset, 0.02 + gz * SPACING
        parts.append(
            f'<body pos="{x:.6f} {y:.6f} {z:.6f}"><freejoint/>'
            f'<geom type="sphere" size="{RADIUS}" mass="1" {contact}/></body>'
        )
    parts += ["</worldbody>", "</mujoco>"]
    return "\n".join(parts)


def timed_run(world: str, steps: int, seed: int, count: int):
    """Per-step wall times (s), and the contacts and deepest overlap (fraction of r) at the end."""
    model = mujoco.MjModel.from_xml_string(scene_xml(*WORLDS[world], count))
    data = mujoco.MjData(model)
    velocities = data.qvel.reshape(count, 6)
    velocities[:, :3] = np.random.default_rng(seed).normal(0.0, 0.5, (count, 3))
    mujoco.mj_forward(model, data)
    seconds = np.empty(steps)
    for step in range(steps):
        start = time.perf_counter()
        mujoco.mj_step(model, data)
        seconds[step] = time.perf_counter() - start
    contacts = int(data.ncon)
    overlap = float(-data.contact.dist[:contacts].min(initial=0.0) / RADIUS)
    return seconds, contacts, overlap


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="spheres")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"MuJoCo {mujoco.__version__}, {args.n} spheres; medians per window (ms)")
    medians = {}
    for world in WORLDS:
        seconds, contacts, overlap = timed_run(world, args.steps, args.seed, args.n)
        medians[world] = [float(np.median(seconds[a:b])) for a, b in WINDOWS if b <= seconds.size]
        windows = " / ".join(f"{1e3 * value:.2f}" for value in medians[world])
        print(
            f"{world}: {windows}; median {1e3 * np.median(seconds):.2f} ms; "
            f"largest {1e3 * seconds.max():.1f} ms (step {int(seconds.argmax())}), "
            f"p99 {1e3 * np.percentile(seconds, 99):.1f} ms; {contacts} contacts, deepest overlap "
            f"{overlap:.3f} r"
        )
    for world in ("pyramidal", "elliptic"):
        ratios = " / ".join(f"{a / b:.2f}" for a, b in zip(medians[world], medians["frictionless"]))
        print(f"{world} / frictionless: {ratios}")


if __name__ == "__main__":
    main()
