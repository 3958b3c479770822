"""Block on an incline: a frictional block sticks when tan theta <= mu and slides at g (sin theta - mu cos theta) otherwise.

A point mass on a plane inclined by theta, released at rest, Coulomb coefficient
mu (`granular.systems.frictional.block_on_incline`; planar, solved exactly by the
LCP of `granular.friction`). For a few (theta, mu) pairs on both sides of the
threshold tan theta = mu, prints the distance slid in 1 s, the acceleration
fitted on the positions and its error against g (sin theta - mu cos theta).

    python scenes/block_on_incline.py
"""
from __future__ import annotations

import numpy as np

import granular as gr
from granular.systems.frictional import block_on_incline

GRAVITY = 9.81
DEFAULTS = dict(duration=1.0, dt=1e-3, record_every=1)
CASES = ((0.45, 0.5), (0.99, 1.0), (0.6, 0.5), (1.0, 0.3))  # (tan theta, mu)


def build(tan_theta: float = 0.6, friction: float = 0.5) -> gr.ConstrainedSystem:
    return block_on_incline(np.arctan(tan_theta), friction, gravity=GRAVITY)


def slide(tan_theta: float, friction: float, duration: float = DEFAULTS["duration"],
          dt: float = DEFAULTS["dt"]) -> tuple[float, float, float]:
    """Distance slid down the slope (m), fitted and exact accelerations (m/s^2)."""
    theta = np.arctan(tan_theta)
    trajectory = gr.Simulation(build(tan_theta, friction), dt).run(duration=duration)
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
        print(f"  tan theta = {tan_theta:4.2f}, mu = {friction:4.2f} ({state}): slid {distance:.3e} m, "
              f"a = {fitted:.6f} m/s^2, exact {exact:.6f}, "
              + (f"relative error {error:.1e}" if exact > 0 else f"|a| {error:.1e}"))
        rows.append((tan_theta, friction, distance, fitted, exact))
    return rows


if __name__ == "__main__":
    main()
