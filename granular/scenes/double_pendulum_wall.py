"""Double pendulum against a wall: M(q) depends on the configuration.

Angles (theta1, theta2) from the downward vertical, unit links and bobs, the tip
bob (radius 0.06 m) cannot pass the wall x = 1.2 m; e = 0.8. Started hanging
(theta = 0) with omega = (3, 4) rad/s.

Prints, per scheme (dt = 1e-3, 8 s): energy at the start and the end, each
impact's energy loss against Moreau's law in the kinetic metric of M(q),
(1 - e^2) (grad g . u)^2 / (2 grad g M^-1 grad g), the largest rise of the
energy between impacts (first-order drift), and the deepest wall crossing against
one step's travel. Paoli-Schatzman's energy dips for one step inside each impact:
its reported velocity (U^{m+1} - U^m)/h is half-way through the two-step reflection.
Writes ``outputs/double_pendulum_wall.png`` (energy and tip against time) and
``outputs/double_pendulum_wall_frames.png`` (snapshots drawn from the system's
drawing adapter), ``outputs/double_pendulum_wall.mp4`` (the velocity-scheme run in
real time) and ``outputs/double_pendulum_wall_still.png`` (the first impact).

    python -m granular.scenes.double_pendulum_wall
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import granular as gr
from granular.drawing.adapters import shapes_of
from granular.systems.examples import double_pendulum_wall, pendulum_mass_matrix, pendulum_tip
from granular.render import animate, snapshot

DT, DURATION, RESTITUTION = 1e-3, 8.0, 0.8
SCHEMES = ("velocity", "dzonou-monteiro-marques", "paoli-schatzman")
#: What ``granular run double_pendulum_wall`` integrates: the velocity scheme (no wall
#: crossing, impact losses within 0.6% of Moreau's law; like every first-order scheme
#: here its energy drifts by O(dt) between impacts).
DEFAULTS = dict(duration=DURATION, dt=DT, record_every=10, scheme="velocity")


def build() -> gr.ConstrainedSystem:
    return double_pendulum_wall(theta=(0.0, 0.0), omega=(3.0, 4.0), restitution=RESTITUTION)


def impacts(trajectory):
    """(first frame with an impulse, first free frame after it) for every impact."""
    touching = np.array([c.impulse.sum() > 0.0 for c in trajectory.contacts]).astype(int)
    starts = np.flatnonzero(np.diff(touching) == 1) + 1
    ends = np.flatnonzero(np.diff(touching) == -1) + 1
    return [(a, ends[ends > a][0]) for a in starts if np.any(ends > a)]


def moreau_loss(system, q, u) -> float:
    """Kinetic energy Moreau's law removes from ``u`` at ``q`` (J)."""
    n = system.gradients(0.0, q)[0]
    M = pendulum_mass_matrix(q, (1.0, 1.0), (1.0, 1.0))
    return 0.5 * (1.0 - RESTITUTION**2) * (n @ u) ** 2 / (n @ np.linalg.solve(M, n))


def report(name: str, system, trajectory) -> None:
    energy = trajectory.total_energy
    gaps = np.array([system.gaps(t, q)[0] for t, q in zip(trajectory.t, trajectory.positions)])
    normal_speed = max(
        abs(system.gradients(t, q)[0] @ u) for t, q, u in zip(trajectory.t, trajectory.positions, trajectory.velocities)
    )
    clusters = impacts(trajectory)
    print(
        f"  {name}: E {energy[0]:.4f} -> {energy[-1]:.4f} J, {len(clusters)} impacts, deepest crossing "
        f"{max(0.0, -gaps.min()) * 1e3:.3f} mm (one step's travel {DT * normal_speed * 1e3:.3f} mm)"
    )
    previous_end = 0
    for start, end in clusters:
        lost = energy[start - 1] - energy[end]
        expected = moreau_loss(system, trajectory.positions[start - 1], trajectory.velocities[start - 1])
        rise = energy[previous_end:start].max() - energy[previous_end]
        print(
            f"      t = {trajectory.t[start]:.3f} s: lost {lost:.4f} J, Moreau {expected:.4f} J "
            f"(ratio {lost / expected:.4f}); energy rise before it {rise * 1e3:.3f} mJ"
        )
        previous_end = end


def main(out_dir: str = "outputs") -> dict:
    runs = {}
    print(f"double pendulum against a wall: e = {RESTITUTION}, dt = {DT} s, {DURATION} s")
    for name in SCHEMES:
        system = build()
        runs[name] = gr.Simulation(system, DT, scheme=name).run(duration=DURATION)
        report(name, system, runs[name])
    plot(runs, Path(out_dir))
    return runs


def plot(runs: dict, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    figure, (energy_axis, tip_axis) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for name, trajectory in runs.items():
        energy_axis.plot(trajectory.t, trajectory.total_energy, lw=1, label=name)
        tip = np.array([pendulum_tip(q, (1.0, 1.0)) for q in trajectory.positions])
        tip_axis.plot(trajectory.t, tip[:, 0], lw=1, label=name)
    description = runs["velocity"].system
    tip_axis.axhline(
        description["wall_x"] - description["bob_radius"], color="k", ls="--", lw=1, label="wall (tip bob centre)"
    )
    energy_axis.set(ylabel="kinetic + potential (J)", title="double pendulum against a wall")
    tip_axis.set(xlabel="t (s)", ylabel="tip x (m)")
    energy_axis.legend()
    tip_axis.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(out_dir / "double_pendulum_wall.png", dpi=120)
    draw_frames(runs["velocity"], out_dir / "double_pendulum_wall_frames.png")
    print(f"  wrote {out_dir / 'double_pendulum_wall.png'} and {out_dir / 'double_pendulum_wall_frames.png'}")


def draw_frames(trajectory, path: Path, count: int = 8) -> None:
    """Snapshots in the x-z plane from the system's drawing adapter (pure data)."""
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 6))
    frames = np.linspace(0, min(len(trajectory) - 1, int(0.6 / DT)), count).astype(int)
    for shade, k in zip(np.linspace(0.25, 1.0, count), frames):
        shapes = shapes_of(trajectory.system, trajectory.positions[k])
        for start, end in shapes.segments:
            axis.plot([start[0], end[0]], [start[2], end[2]], color=plt.cm.viridis(shade), lw=2)
        for centre, radius in zip(shapes.sphere_centres, shapes.sphere_radii):
            axis.add_patch(plt.Circle((centre[0], centre[2]), radius, color=plt.cm.viridis(shade)))
    point, normal, size = shapes.planes[0]
    axis.plot([point[0], point[0]], [point[2] - size, point[2] + size], "k", lw=3)
    axis.set(aspect="equal", xlabel="x (m)", ylabel="z (m)", title="first 0.6 s (velocity scheme)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def render(trajectory, out_dir: str = "outputs", fps: float = 25.0) -> None:
    """Animation in real time (one frame every ``1 / fps`` s of a run recorded every
    step) and a still of the first impact on the wall."""
    out_dir = Path(out_dir)
    every = max(1, int(round(1.0 / (fps * DT))))
    animate(
        trajectory,
        out_dir / "double_pendulum_wall.mp4",
        fps=fps,
        every=every,
        size=(384, 384),
        title=f"e = {RESTITUTION}",
    )
    start, _ = impacts(trajectory)[0]
    snapshot(trajectory, start, out_dir / "double_pendulum_wall_still.png", size=(384, 384), title="first impact")
    print(f"  wrote {out_dir / 'double_pendulum_wall.mp4'} and {out_dir / 'double_pendulum_wall_still.png'}")


if __name__ == "__main__":
    render(main()["velocity"])
