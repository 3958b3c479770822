"""Struck balls: a cue strikes billiard balls at different heights; they slide, turn and roll.

Five pool balls (radius 28.575 mm, 170 g, J = 2/5 m r^2) on a cloth (Coulomb
friction mu = 0.2 by default) in parallel lanes, each struck horizontally along x
at a height ``b`` above its centre by the same cue impulse ``P``: it leaves with
``v0 = P / m`` and the spin ``omega0 = P b / J = 5 v0 b / (2 r^2)`` about the lane's
normal (backspin below the centre, topspin above). Friction at the contact point
opposes the slip ``v - r omega`` until it vanishes; the angular momentum about
the contact point, ``m r v + J omega``, is unchanged by it, so each ball ends
rolling at

    v_roll = (m r v0 + J omega0) / (m r + J / r) = 5/7 v0 (1 + b / r),

after ``t* = 2 |v0 - r omega0| / (7 mu g)``. ``b = 2r/5`` (the "natural" height, 7/10
of the ball's height from the cloth) rolls at once; ``b = 0`` (a stun shot) ends at
5/7 of its speed; a strike low enough (``b < 0``) slows the ball more, and below
``b = -r`` (not possible with a cue) it would come back. With rolling resistance
``mu_r`` the rolling balls then slow down at ``5 mu_r g / 7`` (`granular.contact.friction`).

Prints, per ball, the strike height, the analytic rolling speed and time and the
simulated ones (the slip falls below 1e-9 m/s), with ``mu_r = 0``. Writes
``outputs/struck_ball.mp4`` and ``outputs/struck_ball.png`` (balls drawn with a
band turned by their orientation).

    python -m granular.scenes.struck_ball
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.render import animate, snapshot

RADIUS = 0.028575  # m, a pool ball
MASS = 0.17  # kg
HEIGHTS = (-0.6, -0.3, 0.0, 0.4, 0.8)  # strike height b / r above the centre
LANE = 0.15  # m between lanes (along y)
G = 9.81  # m/s^2
DEFAULTS = dict(duration=1.0, dt=1e-3, record_every=10)
RENDERS = Path("outputs")  # under the working directory
PARAMETERS = dict(speed=2.0, friction=0.2, rolling_friction=0.0)
PARAMETER_HELP = dict(
    speed="speed v0 of every ball after the strike (m/s)",
    friction="Coulomb friction coefficient of the cloth (1)",
    rolling_friction="rolling resistance coefficient mu_r of the cloth (1)",
)


def build(speed: float = 2.0, friction: float = 0.2, rolling_friction: float = 0.0) -> gr.SphereWorld:
    """The struck balls on the cloth (a plane z = 0), just after the strikes."""
    n = len(HEIGHTS)
    positions = np.column_stack([np.zeros(n), LANE * np.arange(n), np.full(n, RADIUS)])
    velocities = np.column_stack([np.full(n, speed), np.zeros(n), np.zeros(n)])
    spins = np.column_stack([np.zeros(n), 5.0 * speed * np.array(HEIGHTS) / (2.0 * RADIUS), np.zeros(n)])
    cloth = gr.Plane([0, 0, 0], [0, 0, 1], friction=friction, rolling_friction=rolling_friction)
    return gr.SphereWorld(
        positions, RADIUS, masses=MASS, velocities=velocities, angular_velocities=spins, walls=[cloth]
    )


def analytic(speed: float = 2.0, friction: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Rolling speeds (m/s) and times (s) at which each ball starts to roll (mu_r = 0)."""
    b = np.array(HEIGHTS)
    slip = speed * (1.0 - 2.5 * b)  # v0 - r omega0
    return 5.0 / 7.0 * speed * (1.0 + b), 2.0 * np.abs(slip) / (7.0 * friction * G)


def summary(trajectory: gr.Trajectory) -> dict:
    """``speed_ratio``: the last frame's speeds over the analytic rolling speeds,
    smallest and largest (1 when the balls have rolled and mu_r = 0)."""
    speed = float(trajectory.meta.get("parameters", {}).get("speed", PARAMETERS["speed"]))
    friction = float(trajectory.meta.get("parameters", {}).get("friction", PARAMETERS["friction"]))
    ratios = np.asarray(trajectory.velocities[-1])[:, 0] / analytic(speed, friction)[0]
    return dict(speed_ratio_min=float(ratios.min()), speed_ratio_max=float(ratios.max()))


def run(
    duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"], record_every: int = 5, **parameters
) -> gr.Trajectory:
    """Run the scene; the trajectory keeps the balls' angular velocities and orientations."""
    return gr.Simulation(build(**parameters), dt).run(duration=duration, record_every=record_every)


def main(speed: float = 2.0, friction: float = 0.2, dt: float = DEFAULTS["dt"]) -> gr.Trajectory:
    start = time.perf_counter()
    trajectory = run(dt=dt, record_every=1, speed=speed, friction=friction)
    rolling_speed, rolling_time = analytic(speed, friction)
    omega = trajectory.angular_velocities[:, :, 1]
    slip = trajectory.velocities[:, :, 0] - RADIUS * omega
    print(
        f"struck_ball: {len(HEIGHTS)} pool balls (r = {RADIUS} m, m = {MASS} kg), v0 = {speed} m/s, "
        f"mu = {friction}, dt = {dt:g} s ({time.perf_counter() - start:.1f} s)"
    )
    print(f"  {'b / r':>6}{'v_roll (m/s)':>15}{'simulated':>12}{'t* (s)':>10}{'simulated':>12}")
    for k, b in enumerate(HEIGHTS):
        rolled = np.flatnonzero(np.abs(slip[:, k]) <= 1e-9)
        when = trajectory.t[rolled[0]] if rolled.size else float("nan")
        print(
            f"  {b:6.2f}{rolling_speed[k]:15.6f}{trajectory.velocities[-1, k, 0]:12.6f}"
            f"{rolling_time[k]:10.4f}{when:12.4f}"
        )
    return trajectory


if __name__ == "__main__":
    trajectory = main()

    view = (0.3, -1.0, 0.6)
    animate(
        trajectory,
        RENDERS / "struck_ball.mp4",
        fps=25,
        every=8,
        size=(640, 400),
        view=view,
        color_by="speed",
        title="struck balls: b/r = -0.6 ... 0.8",
    )
    snapshot(trajectory, len(trajectory) // 4, RENDERS / "struck_ball.png", size=(640, 400), view=view)
    print(f"  wrote {RENDERS / 'struck_ball.mp4'} and {RENDERS / 'struck_ball.png'}")
