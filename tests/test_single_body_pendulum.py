"""The double pendulum against a wall: M(q) depends on the configuration,
the impact law acts in its kinetic metric.

Coordinates (theta1, theta2), unit links and masses, wall at x = 1.2 for the tip
bob (radius 0.06). From theta = (0.2, 0.4), omega = (2, 3) rad/s the tip hits the
wall at t = 0.136 s and again near t = 2.14 s.
"""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.systems.examples import GRAVITY, double_pendulum_wall, pendulum_mass_matrix

THETA, OMEGA, RESTITUTION = (0.2, 0.4), (2.0, 3.0), 0.8
LENGTHS, MASSES = (1.0, 1.0), (1.0, 1.0)
DT = 1e-3
VARIANTS = {
    "velocity": ("velocity", {}),
    "dzonou-monteiro-marques": ("dzonou-monteiro-marques", {}),
    "dzonou-monteiro-marques-implicit": ("dzonou-monteiro-marques", {"force_update": "implicit"}),
    "paoli-schatzman": ("paoli-schatzman", {}),
}


def pendulum():
    return double_pendulum_wall(theta=THETA, omega=OMEGA, lengths=LENGTHS, masses=MASSES, restitution=RESTITUTION)


def run(variant: str, dt: float, duration: float):
    scheme, options = VARIANTS.get(variant, ("velocity", {"force_update": "implicit"}))
    system = pendulum()
    return system, gr.Simulation(system, dt, scheme=scheme, **options).run(duration=duration)


def impact_clusters(trajectory):
    """(first frame with an impulse, first free frame after it) of every impact."""
    touching = np.array([c.impulse.sum() > 0.0 for c in trajectory.contacts]).astype(int)
    starts = np.flatnonzero(np.diff(touching) == 1) + 1
    ends = np.flatnonzero(np.diff(touching) == -1) + 1
    return [(a, ends[ends > a][0]) for a in starts if np.any(ends > a)]


def normal_speeds(system, trajectory) -> np.ndarray:
    """``|grad g(q) . u|`` at every frame (m/s): the tip's speed towards the wall."""
    return np.array(
        [
            abs(system.gradients(t, q)[0] @ u)
            for t, q, u in zip(trajectory.t, trajectory.positions, trajectory.velocities)
        ]
    )


def gravity_power(trajectory) -> np.ndarray:
    """``|grad V . u|`` at every frame (W)."""
    q, u = trajectory.positions, trajectory.velocities
    (l1, l2), (m1, m2) = LENGTHS, MASSES
    grad = np.stack([(m1 + m2) * GRAVITY * l1 * np.sin(q[:, 0]), m2 * GRAVITY * l2 * np.sin(q[:, 1])], axis=1)
    return np.abs(np.sum(grad * u, axis=1))


@pytest.fixture(scope="module")
def runs():
    return {variant: run(variant, DT, 2.4) for variant in VARIANTS}


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_impact_loses_the_energy_of_moreaus_law_in_the_metric_of_M_q(runs, variant):
    """Across an impact E drops by (1 - e^2) (grad g . u)^2 / (2 grad g M(q)^-1 grad g),
    the kinetic energy of the normal part of u in the metric of M(q): within 3%
    (the schemes evaluate M, the gradient and u up to one step off the contact)."""
    system, trajectory = runs[variant]
    clusters = impact_clusters(trajectory)
    assert len(clusters) >= 2
    energy = trajectory.total_energy
    for start, end in clusters:
        q, u = trajectory.positions[start - 1], trajectory.velocities[start - 1]
        n = system.gradients(trajectory.t[start - 1], q)[0]
        M = pendulum_mass_matrix(q, LENGTHS, MASSES)
        expected = 0.5 * (1.0 - RESTITUTION**2) * (n @ u) ** 2 / (n @ np.linalg.solve(M, n))
        lost = energy[start - 1] - energy[end]
        assert lost > 0.0
        assert lost == pytest.approx(expected, rel=0.03)


@pytest.mark.parametrize("variant", VARIANTS)
def test_energy_never_increases(runs, variant):
    """E(t) <= E(0) + h P (1 + t / tau), P = max |grad V . u| the largest power of
    gravity, tau = sqrt(l / g): a first-order step errs in energy by O(h^2 P / tau)
    (the force changes on the time scale tau), which adds up to h P t / tau, plus
    the O(h P) oscillation of the modified energy. Contact impulses must not add
    energy: over every impact the dissipation is positive, and for the one-step
    schemes it is in every step."""
    system, trajectory = runs[variant]
    energy = trajectory.total_energy
    tau = np.sqrt(min(LENGTHS) / GRAVITY)
    allowance = DT * gravity_power(trajectory).max() * (1.0 + trajectory.t / tau)
    assert np.all(energy <= energy[0] + allowance), (energy - energy[0] - allowance).max()
    dissipated = np.diff(trajectory.dissipated_energy)
    for start, end in impact_clusters(trajectory):
        assert dissipated[start - 1 : end].sum() > 0.0
    if variant != "paoli-schatzman":  # its impact spans two steps (see its module docstring)
        assert dissipated.min() >= -1e-12 * np.abs(energy).max()


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_wall_is_never_crossed_beyond_one_steps_travel(runs, variant):
    """gap >= -(h max|grad g . u| + h^2 |u|^2 max(l) / 2): Dzonou-Monteiro-Marques and Paoli-Schatzman
    cross by at most one step's travel towards the wall before they reflect; the
    velocity scheme keeps the linearised gap, so only the curvature term
    h^2 u^T Hess(g) u / 2 (|Hess g| <= max(l)) is left for it."""
    system, trajectory = runs[variant]
    gaps = np.array([system.gaps(t, q)[0] for t, q in zip(trajectory.t, trajectory.positions)])
    curvature = 0.5 * DT**2 * max(LENGTHS) * np.max(np.sum(trajectory.velocities**2, axis=1))
    travel = DT * normal_speeds(system, trajectory).max()
    bound = curvature if variant == "velocity" else travel + curvature
    assert gaps.min() >= -bound, (gaps.min(), bound)
    if variant != "velocity":
        assert gaps.min() < 0.0  # they do cross: the bound is what keeps them honest


_PAIRS = [
    ("dzonou-monteiro-marques", "dzonou-monteiro-marques-implicit"),
    ("velocity", "dzonou-monteiro-marques"),
    ("velocity", "paoli-schatzman"),
    ("dzonou-monteiro-marques", "paoli-schatzman"),
]


@pytest.fixture(scope="module")
def window_runs():
    """Every variant on [0, 0.5] s (one impact, before chaos) at dt, dt/2, dt/4."""
    dts = (2e-3, 1e-3, 5e-4)
    return dts, {(variant, dt): run(variant, dt, 0.5)[1].positions for variant in VARIANTS for dt in dts}


@pytest.mark.parametrize("first, second", _PAIRS)
def test_variants_converge_to_the_same_trajectory(window_runs, first, second):
    """The largest angle difference over the window halves (at least, up to 10%)
    with every halving of dt: all variants are first order, so they converge to
    the same trajectory, through the impact."""
    dts, positions = window_runs
    differences = np.array([np.abs(positions[first, dt] - positions[second, dt]).max() for dt in dts])
    assert np.all(differences[:-1] / differences[1:] >= 1.8), differences
    assert differences[-1] < 0.02  # rad


@pytest.mark.long
def test_velocity_scheme_explicit_and_implicit_converge_to_the_same_trajectory():
    dts = (2e-3, 1e-3, 5e-4)
    differences = np.array(
        [
            np.abs(run("velocity", dt, 0.5)[1].positions - run("velocity-implicit", dt, 0.5)[1].positions).max()
            for dt in dts
        ]
    )
    assert np.all(differences[:-1] / differences[1:] >= 1.8), differences


def test_finite_difference_gradient_gives_the_analytic_run():
    """A constraint given without its gradient gets central differences (step 1e-7
    max(1, |q|), error O(step^2 g''') ~ 1e-14 here plus round-off eps |g| / step ~
    1e-9): the gradient matches the analytic one to 1e-8, and a run through the
    first impact stays within the same relative error of the analytic run."""
    analytic = pendulum()
    wall = analytic.constraint_list[0]
    numeric = gr.ConstrainedSystem(
        list(THETA),
        list(OMEGA),
        mass=analytic.mass,
        force=analytic.force_callable,
        constraints=[gr.Constraint(gap=wall.gap, name="wall")],
        restitution=RESTITUTION,
    )
    rng = np.random.default_rng(0)
    for q in rng.uniform(-1.5, 1.5, (20, 2)):
        exact = wall.grad(0.0, q)
        assert np.abs(numeric.constraint_list[0].grad(0.0, q) - exact).max() <= 1e-8 * np.abs(exact).max()
    runs = [gr.Simulation(system, DT).run(duration=0.3) for system in (analytic, numeric)]
    assert sum(c.impulse.sum() > 0.0 for c in runs[0].contacts) > 0, "no impact in the window"
    assert np.abs(runs[1].positions - runs[0].positions).max() <= 1e-7
    assert np.abs(runs[1].velocities - runs[0].velocities).max() <= 1e-6 * np.abs(OMEGA).max()
