"""The Dzonou-Monteiro-Marques and Paoli-Schatzman schemes' own contracts: momentum balance of the
reported impulses, resting contacts, the two-step memory of Paoli-Schatzman,
convergence failures, moving obstacles, mixed restitution, drawing adapters."""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.drawing.adapters import shapes_of
from granular.schemes.paoli_schatzman import PaoliSchatzmanScheme
from granular.schemes.dzonou_monteiro_marques import DzonouMonteiroMarquesScheme
from granular.systems.examples import (
    GRAVITY,
    bouncing_ball,
    double_pendulum_wall,
    impact_oscillator,
    pendulum_mass_matrix,
    pendulum_tip,
)

VIBRO = ("dzonou-monteiro-marques", "paoli-schatzman")


@pytest.mark.parametrize("scheme", VIBRO)
def test_impulses_satisfy_the_discrete_momentum_balance_with_M_q(scheme):
    """M (u_{n+1} - p) = G^T lambda on every step of a pendulum impact, with M at
    q_{n+1} (Dzonou-Monteiro-Marques) or at the start of the step q_n (Paoli-Schatzman)."""
    system = double_pendulum_wall(theta=(0.2, 0.4), omega=(2.0, 3.0))
    sim = gr.Simulation(system, 1e-3, scheme=scheme)
    seen = 0
    for _ in range(200):
        q_start = sim.positions
        result = sim.step()
        where = result.positions if scheme == "dzonou-monteiro-marques" else q_start
        M = pendulum_mass_matrix(where, (1.0, 1.0), (1.0, 1.0))
        impulse = result.contacts.normal.T @ result.contacts.impulse
        residual = M @ (result.velocities - result.predicted) - impulse
        assert np.abs(residual).max() <= 1e-9 * max(1.0, np.abs(impulse).max())
        assert np.all(result.contacts.impulse >= 0.0)
        seen += result.contacts.impulse.sum() > 0.0
    assert seen >= 1


@pytest.mark.exact
@pytest.mark.parametrize("scheme", VIBRO)
def test_a_ball_at_rest_on_the_floor_stays_exactly_at_rest(scheme):
    """No hopping: positions stay on the floor to a few ulps (Paoli-Schatzman
    re-projects every step, so round-off cannot accumulate) and the velocity to
    those ulps over h."""
    h = 1e-3
    system = bouncing_ball(height=0.0, restitution=0.9)
    trajectory = gr.Simulation(system, h, scheme=scheme).run(steps=2000)
    ulps = 8.0 * np.spacing(0.1)
    assert np.abs(trajectory.positions[:, 0] - 0.1).max() <= ulps
    assert np.abs(trajectory.velocities[:, 0]).max() <= 2.0 * ulps / h
    # The floor carries the weight: impulse m g h per step.
    impulses = np.array([c.impulse.sum() for c in trajectory.contacts[1:]])
    assert impulses == pytest.approx(GRAVITY * 1e-3, rel=1e-12)


@pytest.mark.parametrize("scheme", VIBRO)
def test_a_plastic_impact_stops_the_ball_within_one_steps_travel(scheme):
    dt = 1e-3
    trajectory = gr.Simulation(bouncing_ball(height=1.0, restitution=0.0), dt, scheme=scheme).run(duration=0.6)
    after = trajectory.t > 0.46
    gap = trajectory.positions[after, 0] - 0.1
    assert np.all(trajectory.velocities[after, 0] == 0.0)
    assert np.all(gap == gap[0])
    assert -dt * np.sqrt(2.0 * GRAVITY) <= gap[0] <= 0.0


@pytest.mark.exact
def test_paoli_schatzman_keeps_the_previous_position_between_its_own_steps():
    """Free flight: U^{m+1} = 2 U^m - U^{m-1} + h^2 F (1.16 with P_K = identity);
    a state it did not return restarts with (1.14), the Taylor point."""
    h = 1e-2
    system = bouncing_ball(height=1.0)
    scheme = PaoliSchatzmanScheme(system, h)
    t0, q0, u0 = system.initial_state()
    first = scheme.step(t0, q0, u0)
    assert first.positions[0] == pytest.approx(q0[0] - 0.5 * GRAVITY * h * h, abs=1e-15)
    second = scheme.step(first.t, first.positions, first.velocities)
    assert second.positions[0] == pytest.approx(2 * first.positions[0] - q0[0] - GRAVITY * h * h, abs=1e-15)
    # A foreign state (same position, another velocity) restarts the scheme.
    restarted = scheme.step(second.t, second.positions, np.array([1.0]))
    expected = second.positions[0] + h * 1.0 - 0.5 * GRAVITY * h * h
    assert restarted.positions[0] == pytest.approx(expected, abs=1e-15)
    fresh = PaoliSchatzmanScheme(system, h).step(second.t, second.positions, np.array([1.0]))
    assert np.array_equal(restarted.positions, fresh.positions)


def test_dzonou_monteiro_marques_implicit_force_raises_convergence_error_without_contraction():
    """f = -c u with c h / m = 5: u -> u - h c u_{k}/m is no contraction."""
    system = gr.ConstrainedSystem(
        [1.0],
        [1.0],
        mass=[[1.0]],
        force=lambda t, q, u: -5000.0 * u,
        constraints=[gr.Constraint(gap=lambda t, q: q[0], gradient=lambda t, q: np.array([1.0]))],
    )
    sim = gr.Simulation(
        system, 1e-3, scheme="dzonou-monteiro-marques", force_update="implicit", fixed_point_iterations=30
    )
    with pytest.raises(gr.ConvergenceError, match=r"t = 0.001 s") as caught:
        sim.step()
    assert caught.value.t == pytest.approx(1e-3)
    # The explicit update is defined (if unstable) and the implicit one contracts for c h / m < 1.
    gr.Simulation(system, 1e-3, scheme="dzonou-monteiro-marques").step()
    gr.Simulation(system, 1e-4, scheme="dzonou-monteiro-marques", force_update="implicit").step()


def test_paoli_schatzman_linearisation_failure_raises_convergence_error():
    """g = cbrt(z): Newton on a cube root overshoots to -2x, so the successive
    linearisations cycle; the gradient is unbounded at the boundary (not C^1)."""
    system = gr.ConstrainedSystem(
        [0.01],
        [-1.0],
        mass=[[1.0]],
        force=lambda t, q, u: np.array([-GRAVITY]),
        constraints=[
            gr.Constraint(gap=lambda t, q: np.cbrt(q[0]), gradient=lambda t, q: np.array([np.cbrt(q[0]) ** -2 / 3.0]))
        ],
    )
    sim = gr.Simulation(system, 1e-2, scheme="paoli-schatzman")
    with pytest.raises(gr.ConvergenceError, match=r"did not converge in 50 linearisations at t = "):
        for _ in range(5):
            sim.step()


def test_paoli_schatzman_nonlinear_projection_lands_on_the_boundary():
    """A ball inside a circular bowl (K = {|q| <= R}, curved boundary): every
    projected point P_K(W) has gap 0 to round-off once the successive
    linearisations have converged."""
    R = 1.0
    system = gr.ConstrainedSystem(
        [0.3, 0.0],
        [2.0, -1.0],
        mass=np.diag([1.0, 2.0]),
        force=lambda t, q, u: np.array([0.0, -GRAVITY]),
        constraints=[
            gr.Constraint(gap=lambda t, q: R - np.hypot(q[0], q[1]), gradient=lambda t, q: -q / np.hypot(q[0], q[1]))
        ],
        restitution=0.5,
    )
    sim = gr.Simulation(system, 1e-3, scheme="paoli-schatzman")
    active = 0
    for _ in range(1500):
        contacts = sim.step().contacts
        if contacts.impulse[0] > 0.0:
            active += 1
            assert abs(contacts.gap[0]) <= 1e-12
    assert active >= 3


@pytest.mark.exact
def test_dzonou_monteiro_marques_reverses_the_relative_velocity_at_a_moving_obstacle():
    """Floor z = w t moving up at w: u+ - w = -e (u- - w) (the gap's rate enters V)."""
    w, e, dt = 0.5, 0.7, 1e-3
    system = gr.ConstrainedSystem(
        [0.01],
        [-2.0],
        mass=[[1.0]],
        constraints=[gr.Constraint(gap=lambda t, q: q[0] - w * t, gradient=lambda t, q: np.array([1.0]))],
        restitution=e,
    )
    sim = gr.Simulation(system, dt, scheme="dzonou-monteiro-marques")
    velocities = [sim.step().velocities[0] for _ in range(10)]
    assert velocities[-1] - w == pytest.approx(-e * (-2.0 - w), rel=1e-12)


@pytest.mark.parametrize("scheme", VIBRO)
def test_mixed_restitution_uses_the_smallest_coefficient(scheme):
    """Two constraints closing together with e = 0.2 and 0.9: Moreau's cone law with
    e = 0.2, which cannot create energy (0.9 on one row could)."""
    dt = 1e-3
    G = np.array([[1.0, 0.3], [0.2, 1.0]])
    u0 = np.array([-1.0, -1.5])
    offsets = 0.3 * dt * np.abs(G @ u0)
    constraints = [
        gr.Constraint(gap=lambda t, q, n=n, c=c: n @ q + c, gradient=lambda t, q, n=n: n, restitution=r)
        for n, c, r in zip(G, offsets, (0.2, 0.9))
    ]
    M = np.array([[2.0, 0.5], [0.5, 1.0]])
    system = gr.ConstrainedSystem([0.0, 0.0], u0, mass=M, constraints=constraints)
    sim = gr.Simulation(system, dt, scheme=scheme)
    u = [sim.step() for _ in range(8)][-1].velocities
    # Both rows active in the cone projection here: P_C u0 has G v = 0.
    W = G @ np.linalg.solve(M, G.T)
    mu = np.linalg.solve(W, -G @ u0)
    assert np.all(mu > 0.0)
    expected = u0 + 1.2 * np.linalg.solve(M, G.T @ mu)
    assert np.abs(u - expected).max() <= 1e-6 * np.abs(u0).max()


@pytest.mark.parametrize(
    "options, error",
    [
        ({"force_update": "later"}, "force_update"),
        ({"fixed_point_iterations": 0}, "fixed_point_iterations"),
        ({"fixed_point_tolerance": -1.0}, "fixed_point_tolerance"),
    ],
)
def test_dzonou_monteiro_marques_rejects_bad_options(options, error):
    with pytest.raises(gr.InvalidInputError, match=error):
        DzonouMonteiroMarquesScheme(bouncing_ball(), 1e-3, **options)


@pytest.mark.parametrize(
    "options, error", [({"max_iterations": 0}, "max_iterations"), ({"tolerance": 0.0}, "tolerance")]
)
def test_paoli_schatzman_rejects_bad_options(options, error):
    with pytest.raises(gr.InvalidInputError, match=error):
        PaoliSchatzmanScheme(bouncing_ball(), 1e-3, **options)


def test_examples_reject_inconsistent_geometry():
    with pytest.raises(gr.InvalidInputError, match="wall_x"):
        double_pendulum_wall(wall_x=0.9)
    with pytest.raises(gr.OverlapError):
        double_pendulum_wall(theta=(1.2, 1.2))
    with pytest.raises(gr.InvalidInputError, match="frequency"):
        impact_oscillator(frequency=0.0)


@pytest.mark.exact
def test_drawing_adapters_place_the_bodies_where_the_coordinates_say():
    ball = bouncing_ball(height=0.5, radius=0.1)
    shapes = shapes_of(ball.describe(), np.array([0.6]))
    assert shapes.sphere_centres[0] == pytest.approx([0.0, 0.0, 0.6])
    assert shapes.sphere_radii[0] == 0.1
    point, normal, _ = shapes.planes[0]
    assert normal @ (shapes.sphere_centres[0] - point) - shapes.sphere_radii[0] == pytest.approx(0.5)

    pendulum = double_pendulum_wall(wall_x=1.2, bob_radius=0.06)
    # A configuration touching the wall: sin(theta) = 1.14 / 2 for both links.
    angle = np.arcsin(0.57)
    q = np.array([angle, angle])
    assert pendulum.gaps(0.0, q)[0] == pytest.approx(0.0, abs=1e-12)
    shapes = shapes_of(pendulum.describe(), q)
    tip = shapes.sphere_centres[1]
    assert tip[[0, 2]] == pytest.approx(pendulum_tip(q, (1.0, 1.0)))
    point, normal, _ = shapes.planes[0]
    assert normal @ (tip - point) - shapes.sphere_radii[1] == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(shapes.segments[1], [shapes.sphere_centres[0], tip])

    oscillator = impact_oscillator(stop=0.2, radius=0.1)
    shapes = shapes_of(oscillator.describe(), np.array([0.2]))
    point, normal, _ = shapes.planes[0]
    assert normal @ (shapes.sphere_centres[0] - point) - shapes.sphere_radii[0] == pytest.approx(0.0)


@pytest.mark.exact
def test_a_paoli_schatzman_trajectory_round_trips_through_a_file(tmp_path):
    system = double_pendulum_wall(theta=(0.2, 0.4), omega=(2.0, 3.0))
    trajectory = gr.Simulation(system, 2e-3, scheme="paoli-schatzman").run(duration=0.3, record_every=5)
    loaded = gr.Trajectory.load(trajectory.save(tmp_path / "pendulum.h5"))
    assert np.array_equal(loaded.positions, trajectory.positions)
    assert loaded.meta["scheme"] == "paoli-schatzman"
    assert any(len(c) and c.impulse.sum() > 0.0 for c in loaded.contacts)
