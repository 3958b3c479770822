"""Coulomb friction (Paoli's 2017 study of Moreau's contact dynamics with Coulomb
friction, REFERENCES.md): the discrete contact law, the block on an incline,
Proposition 1, and mu = 0 against Maury's frictionless step."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import granular as gr
from granular.constraints import ConstraintSet
from granular.contact_laws import RowLaws
from granular.contact.friction import project_frictional
from granular.contact.problem import ContactProblem
from granular.errors import InvalidInputError
from support.reference import reference_contact_law
from granular.metric import DenseMetric
from granular.contact.projection import project
from granular.systems.frictional import block_on_incline
from granular.tolerances import FRICTION_TOLERANCE

G_EARTH = 9.81
#: Impulses and velocities from Lemke's pivoting are exact up to round-off.
ROUNDOFF = 1e-10


def random_contacts(rng, d: int, m: int, s: int, mu_max: float = 1.5, approach: bool = True):
    """A random constraint set on ``d`` coordinates: ``m`` contacts with ``s`` unit
    tangents each, random SPD metric, a prediction violating some rows."""
    A = rng.normal(size=(d, d))
    metric = DenseMetric(A @ A.T + 0.2 * np.eye(d))
    G = rng.normal(size=(m, d))
    tangents = rng.normal(size=(m, s, d))
    gaps = rng.uniform(0.0, 0.02, m)
    predicted = rng.normal(size=d)
    if approach:  # make the first row approach so that the law acts
        predicted -= G[0] * (G[0] @ predicted + 1.0) / (G[0] @ G[0])
    friction = rng.uniform(0.0, mu_max, m)
    minus = -np.ones(m, dtype=np.int64)
    constraints = ConstraintSet(
        gap=gaps,
        jacobian=sp.csr_matrix(G),
        laws=RowLaws(np.zeros(m), friction),
        i=np.arange(m),
        j=minus,
        wall=minus,
        normal=G,
        tangents=tangents,
    )
    return metric, constraints, predicted


def check_law(metric, constraints, predicted, h, answer, tolerance):
    """The Coulomb-Maury law (N)-(T) and Proposition 1 of the 2017 study, checked directly."""
    G = constraints.jacobian.toarray()
    T = np.asarray(constraints.tangents)
    mu = constraints.laws.friction
    u, l_n, l_t = answer.velocities, answer.impulses, answer.tangential_impulses
    scale = max(1.0, float(np.abs(predicted).max()), float(np.abs(l_n).max()))
    # momentum balance: r = M (u - v) = G^T l_N + T^T l_T, and r in R(q) (Proposition 1)
    r = metric.apply(u - predicted)
    assert np.allclose(r, G.T @ l_n + np.einsum("ksd,ks->d", T, l_t), atol=tolerance * scale)
    assert np.all(l_n >= -tolerance * scale)
    assert np.all(np.linalg.norm(l_t, axis=1) <= mu * l_n + tolerance * scale)
    # (N): admissible, and no push where the contact separates
    normal_velocity = G @ u + constraints.gap / h
    assert np.all(normal_velocity >= -tolerance * scale)
    assert np.all(np.abs(l_n * normal_velocity) <= tolerance * scale**2)
    # (T): stick inside the cone, slide against the impulse on its boundary
    sliding_velocity = np.einsum("ksd,d->ks", T, u)
    for k in range(mu.size):
        if l_n[k] <= tolerance * scale:
            continue
        if np.linalg.norm(l_t[k]) < mu[k] * l_n[k] * (1.0 - 1e-6):
            assert np.linalg.norm(sliding_velocity[k]) <= tolerance * scale
        elif np.linalg.norm(sliding_velocity[k]) > tolerance * scale:
            cosine = sliding_velocity[k] @ l_t[k] / (np.linalg.norm(sliding_velocity[k]) * np.linalg.norm(l_t[k]))
            assert cosine <= -1.0 + 1e-6
    # Proposition 1: <u, r> = -l_N . D / h + sum l_T . T u <= 0 (gaps D >= 0), hence the
    # kinetic norm does not grow past the prediction's, |u|_M <= |v|_M
    assert u @ r <= tolerance * scale**2
    assert metric.kinetic_energy(u) <= metric.kinetic_energy(predicted) * (1.0 + tolerance) + tolerance


# -- mu = 0 is Maury's step ------------------------------------------------------------------


@pytest.mark.exact
def test_friction_zero_runs_the_frictionless_step_bit_for_bit():
    """A world with ``friction=0`` and planes with ``friction=0.0`` never reaches the
    frictional solver, so its trajectory is the frictionless one exactly."""
    rng = np.random.default_rng(4)
    positions = np.array([[0.05 * i, 0.0, 0.1 + 0.03 * i] for i in range(6)]) + rng.uniform(-0.002, 0.002, (6, 3))
    plain = gr.SphereWorld(positions, 0.01, walls=[gr.Box([-0.05, -0.05, 0], [0.35, 0.05, 1], open_top=True)])
    zero = gr.SphereWorld(
        positions, 0.01, friction=0.0, walls=[gr.Box([-0.05, -0.05, 0], [0.35, 0.05, 1], open_top=True, friction=0.0)]
    )
    a = gr.Simulation(plain, 1e-3).run(steps=300)
    b = gr.Simulation(zero, 1e-3).run(steps=300)
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)


@pytest.mark.parametrize("s", [1, 2])
def test_frictional_solvers_at_mu_zero_agree_with_maurys_projection(s):
    """With every coefficient 0 the LCP (plane) and the conic fixed point (3D) solve
    Maury's projection: same velocities as the QP of `granular.contact.projection`."""
    rng = np.random.default_rng(10 + s)
    h = 1e-2
    for _ in range(20):
        metric, constraints, predicted = random_contacts(rng, d=6, m=4, s=s)
        constraints = ConstraintSet(
            constraints.gap,
            constraints.jacobian,
            RowLaws(constraints.laws.restitution, np.zeros(4)),
            constraints.i,
            constraints.j,
            constraints.wall,
            constraints.normal,
            constraints.tangents,
        )
        frictional = project_frictional(ContactProblem.from_constraints(metric, constraints, predicted, h))
        maury = project(ContactProblem(metric, constraints.jacobian, predicted, -constraints.gap / h))
        scale = float(np.abs(predicted).max())
        assert np.allclose(frictional.velocities, maury.velocities, atol=1e-6 * scale, rtol=0)
        assert np.all(frictional.tangential_impulses == 0.0)


# -- the law itself on random contacts ---------------------------------------------------------


@pytest.mark.parametrize("s", [1, 2])
def test_coulomb_law_and_proposition_1_on_random_frictional_contacts(s):
    """Random SPD metrics, 1-4 contacts, mu in [0, 1.5], gaps in [0, 2 cm]: the answer
    satisfies (N), (T), the momentum balance and Proposition 1."""
    rng = np.random.default_rng(20 + s)
    tolerance = ROUNDOFF if s == 1 else 10 * FRICTION_TOLERANCE
    for trial in range(40):
        m = 1 + trial % 4
        metric, constraints, predicted = random_contacts(rng, d=7, m=m, s=s, mu_max=1.5 if s == 1 else 1.0)
        answer = project_frictional(ContactProblem.from_constraints(metric, constraints, predicted, 1e-2))
        check_law(metric, constraints, predicted, 1e-2, answer, tolerance)


def test_planar_law_is_seed_002_projection_for_one_contact():
    """For one contact that the prediction violates, the answer is the 2017 study's
    S(q, v): the kinetic-metric projection of 0 onto (v + M^-1 R) cap T, computed
    independently with cvxpy, for random M (Painleve coupling included)."""
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(5)
    for _ in range(30):
        metric, constraints, predicted = random_contacts(rng, d=4, m=1, s=1, mu_max=3.0)
        constraints = ConstraintSet(
            np.zeros(1),
            constraints.jacobian,
            constraints.laws,
            constraints.i,
            constraints.j,
            constraints.wall,
            constraints.normal,
            constraints.tangents,
        )
        answer = project_frictional(ContactProblem.from_constraints(metric, constraints, predicted, 1e-2))
        reference = reference_contact_law(
            metric.matrix(),
            constraints.jacobian.toarray()[0],
            constraints.tangents[0],
            float(constraints.laws.friction[0]),
            predicted,
        )
        assert np.allclose(answer.velocities, reference, atol=1e-6 * np.abs(predicted).max())


def test_3d_law_is_seed_002_projection_when_friction_does_not_move_the_normal():
    """In 3D the law and the 2017 study's projection coincide when G M^-1 T^T = 0 (the
    rotation-free spheres): tangents chosen M^-1-orthogonal to the normal row."""
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(6)
    for _ in range(15):
        metric, constraints, predicted = random_contacts(rng, d=5, m=1, s=2, mu_max=1.0)
        G = constraints.jacobian.toarray()[0]
        direction = metric.solve(G)
        tangents = constraints.tangents[0] - np.outer(constraints.tangents[0] @ direction, G) / (G @ direction)
        constraints = ConstraintSet(
            np.zeros(1),
            constraints.jacobian,
            constraints.laws,
            constraints.i,
            constraints.j,
            constraints.wall,
            constraints.normal,
            tangents[None],
        )
        answer = project_frictional(ContactProblem.from_constraints(metric, constraints, predicted, 1e-2))
        reference = reference_contact_law(metric.matrix(), G, tangents, float(constraints.laws.friction[0]), predicted)
        # the fixed point stops when sigma moves by FRICTION_TOLERANCE x scale; converging at a
        # linear rate rho, it is then within rho / (1 - rho) of that (rho <= 0.99 here)
        assert np.allclose(answer.velocities, reference, atol=100 * FRICTION_TOLERANCE * np.abs(predicted).max())


@pytest.mark.exact
def test_a_prediction_that_does_not_approach_is_kept():
    """The 2017 study: S(q, v) = v when v is admissible, even where Painleve's coupling
    would allow a jump (Moreau's choice)."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        metric, constraints, predicted = random_contacts(rng, d=4, m=2, s=1, mu_max=3.0, approach=False)
        G = constraints.jacobian.toarray()
        predicted = predicted + G.T @ np.linalg.solve(G @ G.T, np.abs(G @ predicted) + 1.0)
        answer = project_frictional(ContactProblem.from_constraints(metric, constraints, predicted, 1e-2))
        assert np.array_equal(answer.velocities, predicted) and answer.status == "unconstrained"


# -- block on an incline -----------------------------------------------------------------------


@pytest.mark.parametrize("tan_theta, mu", [(0.45, 0.5), (0.2, 0.25), (0.99, 1.0)])
def test_block_sticks_below_the_friction_threshold(tan_theta, mu):
    """tan theta <= mu: the block released at rest does not move in 1 s."""
    trajectory = gr.Simulation(block_on_incline(np.arctan(tan_theta), mu), 1e-3).run(duration=1.0)
    assert np.abs(trajectory.positions).max() < 1e-9


@pytest.mark.parametrize("tan_theta, mu", [(0.6, 0.5), (1.0, 0.3), (0.3, 0.1)])
def test_block_slides_with_the_analytic_acceleration(tan_theta, mu):
    """tan theta > mu: down-slope acceleration g (sin theta - mu cos theta) within 1%,
    fitted on the positions along the slope; the block stays on the incline and the
    friction impulse is mu times the normal one, against the motion."""
    theta = np.arctan(tan_theta)
    dt = 1e-3
    trajectory = gr.Simulation(block_on_incline(theta, mu), dt).run(duration=1.0)
    slope = np.array([np.cos(theta), np.sin(theta)])
    distance = -trajectory.positions @ slope
    fitted = 2.0 * np.polyfit(trajectory.t, distance, 2)[0]
    exact = G_EARTH * (np.sin(theta) - mu * np.cos(theta))
    assert abs(fitted - exact) < 0.01 * exact
    normal = np.array([-np.sin(theta), np.cos(theta)])
    assert np.abs(trajectory.positions @ normal).max() < 1e-12
    last = trajectory.contacts[-1]
    assert last.tangential_impulse[0, 0] == pytest.approx(mu * last.impulse[0], rel=1e-9)  # up the slope


def test_block_launched_up_the_slope_stops_and_stays():
    """Up-slope launch at 2 m/s on tan theta = 0.3 < mu = 0.5: decelerates at
    g (sin + mu cos), stops at the predicted distance, then sticks."""
    theta, mu, speed = np.arctan(0.3), 0.5, 2.0
    trajectory = gr.Simulation(block_on_incline(theta, mu, velocity=speed), 1e-4).run(duration=1.0)
    slope = np.array([np.cos(theta), np.sin(theta)])
    travelled = trajectory.positions @ slope
    deceleration = G_EARTH * (np.sin(theta) + mu * np.cos(theta))
    assert travelled[-1] == pytest.approx(speed**2 / (2 * deceleration), rel=2e-3)
    stop = speed / deceleration
    assert np.ptp(travelled[trajectory.t > stop + 0.01]) < 1e-12


# -- spheres ---------------------------------------------------------------------------------


def test_sphere_sliding_on_a_rough_floor_decelerates_at_mu_g_and_stops():
    """A sphere that does not turn (``rotation=False``, a frictional point) sliding at
    2.5 m/s in a slanted direction on a floor with mu = 0.5: its speed falls at mu g
    along a fixed direction, it stops at v0 / (mu g) and stays; the friction impulse
    is mu times the normal one while sliding. (A turning sphere rolls on at 5/7 of
    its speed instead: tests/test_rotation.py.)"""
    mu, v0 = 0.5, np.array([2.0, 1.5, 0.0])
    world = gr.SphereWorld(
        [[0, 0, 0.1]],
        0.1,
        masses=2.0,
        velocities=[v0],
        rotation=False,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=mu)],
    )
    trajectory = gr.Simulation(world, 1e-3).run(duration=0.8)
    speed = np.linalg.norm(trajectory.velocities[:, 0, :2], axis=1)
    stop = np.linalg.norm(v0) / (mu * G_EARTH)
    sliding = (trajectory.t > 0.01) & (trajectory.t < stop - 0.01)
    expected = np.linalg.norm(v0) - mu * G_EARTH * trajectory.t[sliding]
    assert np.allclose(speed[sliding], expected, atol=1e-6)
    directions = trajectory.velocities[sliding, 0, :2] / speed[sliding, None]
    assert np.allclose(directions, v0[:2] / np.linalg.norm(v0), atol=1e-9)
    assert np.all(speed[trajectory.t > stop + 0.01] < 1e-9)
    contact = trajectory.contacts[10]
    assert np.linalg.norm(contact.tangential_impulse[0]) == pytest.approx(mu * contact.impulse[0], rel=1e-6)


def test_sphere_tangents_are_orthonormal_to_the_normals():
    from granular.spheres.assembly import tangent_basis

    rng = np.random.default_rng(8)
    normals = rng.normal(size=(50, 3))
    normals[:3] = np.eye(3)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    frames = np.concatenate([tangent_basis(normals), normals[:, None, :]], axis=1)
    assert np.allclose(frames @ frames.transpose(0, 2, 1), np.eye(3), atol=1e-12)


def test_sphere_on_a_tilted_rough_plane_sticks_or_slides():
    """A sphere that does not turn (``rotation=False``) resting on a plane tilted by
    tan theta = 0.3 stays with mu = 0.4 and slides with mu = 0.2 by g (sin theta -
    mu cos theta) t^2 / 2 in 0.5 s. (A turning sphere rolls: tests/test_rotation.py.)"""
    theta = np.arctan(0.3)
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    for mu, moves in ((0.4, False), (0.2, True)):
        world = gr.SphereWorld(
            [0.05 * normal], 0.05, masses=1.0, rotation=False, walls=[gr.Plane([0, 0, 0], normal, friction=mu)]
        )
        trajectory = gr.Simulation(world, 1e-3).run(duration=0.5)
        travelled = np.linalg.norm(trajectory.positions[-1, 0] - trajectory.positions[0, 0])
        expected = 0.5 * G_EARTH * (np.sin(theta) - mu * np.cos(theta)) * 0.5**2 if moves else 0.0
        assert travelled == pytest.approx(expected, rel=1e-2, abs=1e-9)


# -- input errors -------------------------------------------------------------------------


def test_bad_friction_input_is_refused_with_a_clear_error():
    with pytest.raises(gr.InvalidInputError, match="friction"):
        gr.Constraint(gap=lambda t, q: q[0], friction=-0.1)
    with pytest.raises(gr.InvalidInputError, match="friction"):
        gr.Plane([0, 0, 0], [0, 0, 1], friction=-1.0)
    with pytest.raises(gr.InvalidInputError, match="friction"):
        gr.Box([0, 0, 0], [1, 1, 1], friction=-1.0)
    with pytest.raises(gr.InvalidInputError, match="friction"):
        gr.SphereWorld([[0, 0, 1]], 0.1, friction=-0.5)
    no_tangent = gr.ConstrainedSystem(
        [0.0],
        [0.0],
        mass=[[1.0]],
        force=lambda t, q, u: np.array([-1.0]),
        constraints=[gr.Constraint(gap=lambda t, q: q[0], friction=0.3, gradient=lambda t, q: np.ones(1))],
    )
    with pytest.raises(gr.InvalidInputError, match="friction but no tangent"):
        gr.Simulation(no_tangent, 1e-3).step()
    with pytest.raises(gr.InvalidInputError, match="no Coulomb friction"):
        gr.Simulation(block_on_incline(0.3, 0.5), 1e-3, scheme="paoli-schatzman")


def test_a_frictional_row_without_a_tangent_is_refused_by_name():
    """A frictional contact whose tangent rows are all zero cannot carry friction: the
    problem is refused naming that contact, whether the tangents come dense or sparse;
    a zero tangent on a frictionless contact is fine."""
    rng = np.random.default_rng(3)
    metric, constraints, predicted = random_contacts(rng, d=6, m=4, s=2)
    tangents = np.array(constraints.tangents)
    tangents[2] = 0.0

    def with_friction(friction, given):
        return ConstraintSet(
            gap=constraints.gap,
            jacobian=constraints.jacobian,
            laws=RowLaws(np.zeros(4), np.array(friction)),
            i=np.arange(4),
            j=constraints.j,
            wall=constraints.wall,
            normal=constraints.normal,
            tangents=given,
        )

    for given in (tangents, sp.csr_matrix(tangents.reshape(8, 6))):
        with pytest.raises(InvalidInputError, match="constraint 2 has friction 0.3 but a zero tangent"):
            ContactProblem.from_constraints(metric, with_friction([0.3, 0.3, 0.3, 0.3], given), predicted, 1e-2)
        ContactProblem.from_constraints(metric, with_friction([0.3, 0.3, 0.0, 0.3], given), predicted, 1e-2)
