"""Chung and Ooi's impact benchmarks in the rigid-body limit: frictional impacts with restitution.

Chung and Ooi, *Benchmark tests for verifying discrete element modelling codes at
particle impact level*, Granular Matter 13 (2011) 643-656, propose eight tests of a
single impact. Their rigid-body limit is Newton's impact law with Coulomb friction
(`granular.contact.impact`): for a contact of reduced mass ``m*`` (``m`` on a wall),
approach speed ``v_n`` and contact-point slip ``s``,

    P_N = (1 + e) m* v_n,   P_T = -2/7 m* s  if  2/7 m* |s| <= mu P_N  (sticks, s+ = 0),
                            P_T = -mu P_N s / |s|                     (slides),

from ``U_N^+ = -e U_N^-`` and the slip's jump ``7 / (2 m*)`` per unit tangential
impulse (solid spheres, inertia 2/5 m R^2). This scene runs:

- test 3: normal impact on a wall, e = 0.2 to 1: rebound ``e v``;
- test 4: alumina sphere (R = 2.5 mm, 4000 kg/m^3) on a wall at 3.9 m/s, incidence
  5-85 degrees from the normal, mu = 0.092, e = 0.98: ``v_t^+ / v_t = 5/7`` while it
  sticks, ``1 - mu (1 + e) / tan theta`` when it slides, ``omega^+ R / v = 5/7 sin theta``
  then ``5/2 mu (1 + e) cos theta``; the change at ``tan theta = 7/2 mu (1 + e)``;
- test 6: R = 0.1 m, v_n = 0.2 m/s, mu = 0.4, e = 0.5, initial spin -10 to 10 rad/s:
  the contact point's slip after, ``s^- - sign(s^-) min(|s^-|, 7/2 mu (1 + e) v_n)``;
- test 7: two identical spheres (R = 0.1 m) head on at 0.2 m/s each, both spinning at
  ``omega`` about the same axis (their surfaces slip at ``2 omega R``): the spin after,
  ``2/7 omega`` while it sticks (``omega R <= 7/2 mu (1 + e) v``), ``omega - 5/2 mu (1 + e)
  v / R`` beyond;
- test 8: spheres of radii 0.1 and 0.05 m (masses 8 : 1), the small one arriving at
  0.5 m/s with a tangential speed 0-3 m/s: its tangential speed after.

Every simulated value is one step of the velocity scheme from touching spheres without
gravity; the script prints the largest deviation from the analytic curve per test and
plots each test with its curve to ``outputs/chung_ooi_test{3,4,6,7,8}.png`` (the
README shows copies of them).

    python -m granular.scenes.chung_ooi
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import granular as gr

OUTPUTS = Path("outputs")  # under the working directory
#: The alumina sphere of test 4 (Chung and Ooi, 2011).
RADIUS, DENSITY, SPEED, FRICTION, RESTITUTION = 2.5e-3, 4000.0, 3.9, 0.092, 0.98
#: One step holds the impact; the sphere travels 4 um (0.002 R) in it.
DEFAULTS = dict(duration=1e-5, dt=1e-6, record_every=1)
PARAMETERS = dict(angle=30.0, friction=FRICTION, restitution=RESTITUTION, tangential_restitution=0.0)
PARAMETER_HELP = dict(
    angle="incidence angle from the wall's normal (degrees)",
    friction="Coulomb coefficient mu of the wall (1)",
    restitution="coefficient of restitution e (1)",
    tangential_restitution="tangential coefficient of restitution e_t (1)",
)
Z = np.array([0.0, 0.0, 1.0])


def build(
    angle: float = 30.0,
    friction: float = FRICTION,
    restitution: float = RESTITUTION,
    tangential_restitution: float = 0.0,
) -> gr.SphereWorld:
    """Test 4: the alumina sphere touching the wall z = 0, arriving at 3.9 m/s at
    ``angle`` degrees from the normal, no gravity."""
    theta = np.radians(angle)
    return _on_plane(
        [SPEED * np.sin(theta), 0.0, -SPEED * np.cos(theta)],
        [0.0, 0.0, 0.0],
        RADIUS,
        DENSITY,
        friction,
        restitution,
        tangential_restitution,
    )


def summary(trajectory: gr.Trajectory) -> dict:
    """Rebound ``velocity`` (m/s) and ``angular_velocity`` (rad/s) at the last frame."""
    return dict(
        velocity=np.asarray(trajectory.velocities[-1][0]).tolist(),
        angular_velocity=np.asarray(trajectory.angular_velocities[-1][0]).tolist(),
    )


def _on_plane(v, omega, radius, density, friction, restitution, tangential_restitution=0.0) -> gr.SphereWorld:
    return gr.SphereWorld(
        [[0.0, 0.0, radius]],
        radius,
        density=density,
        velocities=[v],
        angular_velocities=[omega],
        gravity=(0, 0, 0),
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        friction=friction,
        restitution=restitution,
        tangential_restitution=tangential_restitution,
    )


def _impact(world: gr.SphereWorld):
    """``(velocities (N, 3), angular velocities (N, 3))`` after one step of 1e-6 s."""
    result = gr.Simulation(world, DEFAULTS["dt"]).step()
    return result.velocities, result.angular_velocities


def test3() -> tuple:
    """Rebound speed against e (both m/s): simulated and ``e v``."""
    e = np.linspace(0.2, 1.0, 9)
    simulated = np.array(
        [_impact(_on_plane([0, 0, -SPEED], [0, 0, 0], RADIUS, DENSITY, FRICTION, k))[0][0, 2] for k in e]
    )
    return e, simulated, e * SPEED


def test4() -> tuple:
    """Angles (deg); simulated and analytic ``v_t^+ / v_t`` and ``omega^+ R / v``."""
    angles = np.linspace(5.0, 85.0, 33)
    ratio, spin = [], []
    for angle in angles:
        v, omega = _impact(build(angle))
        ratio.append(v[0, 0] / (SPEED * np.sin(np.radians(angle))))
        spin.append(omega[0, 1] * RADIUS / SPEED)
    theta = np.radians(angles)
    limit = 3.5 * FRICTION * (1 + RESTITUTION)
    sticks = np.tan(theta) <= limit
    ratio_exact = np.where(sticks, 5.0 / 7.0, 1.0 - FRICTION * (1 + RESTITUTION) / np.tan(theta))
    spin_exact = np.where(sticks, 5.0 / 7.0 * np.sin(theta), 2.5 * FRICTION * (1 + RESTITUTION) * np.cos(theta))
    return angles, np.array(ratio), ratio_exact, np.array(spin), spin_exact


def test6() -> tuple:
    """Initial spins (rad/s); simulated and analytic contact-point slip after (m/s)."""
    radius, v_n, mu, e = 0.1, 0.2, 0.4, 0.5
    spins = np.linspace(-10.0, 10.0, 41)
    slip = []
    for spin in spins:
        v, omega = _impact(_on_plane([0, 0, -v_n], [0, spin, 0], radius, 2700.0, mu, e))
        slip.append(v[0, 0] - omega[0, 1] * radius)
    before = -spins * radius
    exact = before - np.sign(before) * np.minimum(np.abs(before), 3.5 * mu * (1 + e) * v_n)
    return spins, np.array(slip), exact


def test7() -> tuple:
    """Initial spin (rad/s, both spheres, same axis); simulated spins after (sphere 0
    and 1) and the analytic one."""
    radius, speed, mu, e = 0.1, 0.2, 0.4, 0.5
    spins = np.linspace(0.0, 20.0, 41)
    after = []
    for spin in spins:
        world = gr.SphereWorld(
            [[-radius, 0, 0], [radius, 0, 0]],
            radius,
            density=2700.0,
            velocities=[[speed, 0, 0], [-speed, 0, 0]],
            angular_velocities=[[0, 0, spin], [0, 0, spin]],
            gravity=(0, 0, 0),
            friction=mu,
            restitution=e,
        )
        after.append(_impact(world)[1][:, 2])
    limit = 3.5 * mu * (1 + e) * speed / radius
    exact = np.where(spins <= limit, 2.0 / 7.0 * spins, spins - 2.5 * mu * (1 + e) * speed / radius)
    return spins, np.array(after), exact


def test8() -> tuple:
    """Tangential speed of the small sphere before (m/s); simulated and analytic after.

    Large sphere (R = 0.1 m) at rest, small one (0.05 m, mass 1/8) at 0.5 m/s along the
    normal, no spin: ``m* = m_2 / (1 + 1/8)``, slip ``s = v_t``; sticking ``v_t^+ = v_t -
    2/7 m* v_t / m_2``, sliding ``v_t^+ = v_t - mu (1 + e) m* v_n / m_2``."""
    r1, r2, v_n, mu, e = 0.1, 0.05, 0.5, 0.4, 0.5
    tangential = np.linspace(0.0, 3.0, 31)
    after = []
    for v_t in tangential:
        world = gr.SphereWorld(
            [[0, 0, 0], [r1 + r2, 0, 0]],
            [r1, r2],
            density=2700.0,
            velocities=[[0, 0, 0], [-v_n, v_t, 0]],
            gravity=(0, 0, 0),
            friction=mu,
            restitution=e,
        )
        after.append(_impact(world)[0][1, 1])
    share = 1.0 / (1.0 + (r2 / r1) ** 3)  # m* / m_2
    stick = 2.0 / 7.0 * share * tangential
    slide = mu * (1 + e) * share * v_n
    return tangential, np.array(after), tangential - np.minimum(stick, slide)


def _plot(path: Path, x, curves, xlabel: str, ylabel: str, title: str) -> Path:
    """One small figure: simulated points against the analytic line(s)."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.0, 3.4), dpi=100)
    for label, simulated, exact in curves:
        (line,) = axes.plot(x, exact, "-", lw=1.2, label=f"{label} (analytic)")
        axes.plot(x, simulated, "o", ms=3.5, mfc="none", color=line.get_color(), label=f"{label} (simulated)")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


def main(out_dir: Path = OUTPUTS) -> dict:
    """Runs the five tests, prints the largest deviation of each from its analytic
    curve (in the curve's unit) and writes the plots."""
    out_dir = Path(out_dir)
    deviations = {}
    e, rebound, exact = test3()
    deviations["test 3 rebound speed (m/s)"] = np.abs(rebound - exact).max()
    _plot(
        out_dir / "chung_ooi_test3.png",
        e,
        [("rebound speed", rebound, exact)],
        "coefficient of restitution e",
        "rebound speed (m/s)",
        "Test 3: normal impact at 3.9 m/s",
    )
    angles, ratio, ratio_exact, spin, spin_exact = test4()
    deviations["test 4 v_t+/v_t (1)"] = np.abs(ratio - ratio_exact).max()
    deviations["test 4 omega+ R / v (1)"] = np.abs(spin - spin_exact).max()
    _plot(
        out_dir / "chung_ooi_test4.png",
        angles,
        [("v_t+ / v_t", ratio, ratio_exact), ("omega+ R / v", spin, spin_exact)],
        "incidence angle (deg)",
        "ratio",
        "Test 4: alumina on a wall, mu = 0.092, e = 0.98",
    )
    spins, slip, slip_exact = test6()
    deviations["test 6 contact-point slip (m/s)"] = np.abs(slip - slip_exact).max()
    _plot(
        out_dir / "chung_ooi_test6.png",
        spins,
        [("slip after", slip, slip_exact)],
        "initial spin (rad/s)",
        "contact-point slip after (m/s)",
        "Test 6: R = 0.1 m, v_n = 0.2 m/s, mu = 0.4, e = 0.5",
    )
    spins7, after7, exact7 = test7()
    deviations["test 7 spin after (rad/s)"] = np.abs(after7 - exact7[:, None]).max()
    _plot(
        out_dir / "chung_ooi_test7.png",
        spins7,
        [("sphere 1", after7[:, 0], exact7), ("sphere 2", after7[:, 1], exact7)],
        "initial spin of both (rad/s)",
        "spin after (rad/s)",
        "Test 7: identical spheres head on, same spins",
    )
    tangential, after8, exact8 = test8()
    deviations["test 8 tangential speed after (m/s)"] = np.abs(after8 - exact8).max()
    _plot(
        out_dir / "chung_ooi_test8.png",
        tangential,
        [("small sphere", after8, exact8)],
        "tangential speed before (m/s)",
        "tangential speed after (m/s)",
        "Test 8: radii 0.1 and 0.05 m, v_n = 0.5 m/s, mu = 0.4, e = 0.5",
    )
    print("Chung and Ooi (2011), rigid-body limit: largest deviation from the analytic curve")
    for name, value in deviations.items():
        print(f"  {name:40s} {value:.3g}")
    print(f"  plots: {out_dir}/chung_ooi_test{{3,4,6,7,8}}.png")
    return deviations


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUTS)
