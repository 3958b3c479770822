"""Block on an incline: a frictional block sticks when tan theta <= mu and slides at
g (sin theta - mu cos theta) otherwise.

A point mass on a plane inclined by theta, released at rest, Coulomb coefficient
mu (`granular.systems.frictional.block_on_incline`; planar, solved exactly by the
LCP of `granular.contact.friction`). For a few (theta, mu) pairs on both sides of the
threshold tan theta = mu, prints the distance slid in 1 s, the acceleration
fitted on the positions and its error against g (sin theta - mu cos theta); then
renders ``outputs/block_on_incline.mp4`` (tan theta = 0.6, mu = 0.5: the block
slides at 0.84 m/s^2; 1.4 s shown four times slower than real time) and a still
``outputs/block_on_incline.png`` of its last frame.

    python -m granular.scenes.block_on_incline
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import granular as gr
from granular.systems.frictional import block_on_incline
from granular.render import animate, snapshot

GRAVITY = 9.81
DEFAULTS = dict(duration=1.0, dt=1e-3, record_every=1)
CASES = ((0.45, 0.5), (0.99, 1.0), (0.6, 0.5), (1.0, 0.3))  # (tan theta, mu)
RENDERS = Path("outputs")  # under the working directory


def build(tan_theta: float = 0.6, friction: float = 0.5) -> gr.ConstrainedSystem:
    return block_on_incline(np.arctan(tan_theta), friction, gravity=GRAVITY)


def run(
    tan_theta: float,
    friction: float,
    duration: float = DEFAULTS["duration"],
    dt: float = DEFAULTS["dt"],
    record_every: int = 1,
) -> gr.Trajectory:
    """The block released at rest, every ``record_every``-th step recorded."""
    return gr.Simulation(build(tan_theta, friction), dt).run(duration=duration, record_every=record_every)


def slide(
    tan_theta: float, friction: float, duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"]
) -> tuple[float, float, float]:
    """Distance slid down the slope (m), fitted and exact accelerations (m/s^2)."""
    theta = np.arctan(tan_theta)
    trajectory = run(tan_theta, friction, duration, dt)
    down = -trajectory.positions @ np.array([np.cos(theta), np.sin(theta)])
    fitted = 2.0 * np.polyfit(trajectory.t, down, 2)[0]
    exact = max(GRAVITY * (np.sin(theta) - friction * np.cos(theta)), 0.0)
    return float(down[-1]), float(fitted), exact


def main() -> list:
    print(f"block on an incline, released at rest, dt = {DEFAULTS['dt']} s, {DEFAULTS['duration']} s")
    rows = []
    for tan_theta, friction in CASES:
        distance, fitted, exact = slide(tan_theta, friction)
        state = "sticks" if tan_theta <= friction else "slides"
        error = abs(fitted - exact) / exact if exact > 0 else abs(fitted)
        print(
            f"  tan theta = {tan_theta:4.2f}, mu = {friction:4.2f} ({state}): slid {distance:.3e} m, "
            f"a = {fitted:.6f} m/s^2, exact {exact:.6f}, "
            + (f"relative error {error:.1e}" if exact > 0 else f"|a| {error:.1e}")
        )
        rows.append((tan_theta, friction, distance, fitted, exact))
    return rows


def render(
    out_dir: Path = RENDERS,
    tan_theta: float = 0.6,
    friction: float = 0.5,
    duration: float = 1.4,
    slow_motion: float = 4.0,
) -> None:
    """Animation of one sliding case (25 frames per second, ``slow_motion`` times slower
    than real time) and a still of its last frame, seen along the incline's axis."""
    out_dir, fps = Path(out_dir), 25.0
    every = max(1, int(round(1.0 / (fps * slow_motion * DEFAULTS["dt"]))))
    trajectory = run(tan_theta, friction, duration, record_every=every)
    exact = GRAVITY * (np.sin(np.arctan(tan_theta)) - friction * np.cos(np.arctan(tan_theta)))
    title = f"tan theta = {tan_theta:g}, mu = {friction:g}, a = {exact:.2f} m/s^2 ({slow_motion:g}x slower)"
    view = (0.0, -1.0, 0.1)  # from the side: the incline is a slope
    animate(trajectory, out_dir / "block_on_incline.mp4", fps=fps, size=(512, 320), view=view, title=title)
    snapshot(trajectory, -1, out_dir / "block_on_incline.png", size=(512, 320), view=view, title=title)
    print(f"  wrote {out_dir / 'block_on_incline.mp4'} and {out_dir / 'block_on_incline.png'}")


if __name__ == "__main__":
    main()
    render()
