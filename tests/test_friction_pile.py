"""Friction in the N-sphere world (granular/scenes/sand_pile.py on a small pile): the Coulomb
conditions at every contact of every step of a pour, checked independently of the
solver, and a frictional heap that stands steeper than a frictionless one."""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from support.scenes import load_scene as load
from granular.tolerances import FRICTION_SWEEP_TOLERANCE
from granular.spheres.assembly import tangent_basis

DT = 1e-3
GRAVITY = 9.81


@pytest.fixture(scope="module")
def scene():
    return load("sand_pile")


def pour(scene, friction: float, n: int = 40, duration: float = 0.6, rotation: bool = False):
    """Every step of a small pour: (world, [(u before, StepResult)]); ``rotation``: the
    spheres turn. The column is 0.1 m wide (the scene's is wider, for 300 spheres), so
    that 40 spheres stand as a column 0.09 m tall and build a heap, on a 0.5 m floor."""
    world = scene.build(friction, n=n, rotation=rotation, width=0.1, floor_half_width=0.25)
    simulation = gr.Simulation(world, DT)
    steps, before = [], world.u0.reshape(-1, 3)
    for _ in range(int(round(duration / DT))):
        result = simulation.step()
        steps.append((before, result))
        before = result.velocities
    return world, steps


@pytest.fixture(scope="module")
def piles(scene):
    return {mu: pour(scene, mu) for mu in (0.0, 0.6)}


@pytest.fixture(scope="module")
def rolling_pile(scene):
    return pour(scene, 0.6, rotation=True)


def contact_velocities(contacts, velocities, omega=None, radii=None):
    """Local velocities (m, 3): normal ``n . (u_j - u_i)`` (or ``n . u_i`` on a wall),
    then the two tangents of `tangent_basis`, for sphere velocities (N, 3). With
    angular velocities ``omega`` (N, 3) and ``radii`` (N,), the tangential ones are
    those of the material points at the contact: ``u_i + omega_i x (r_i n)`` for i
    (``x (-r_i n)`` on a wall, whose normal points into the sphere) and ``u_j +
    omega_j x (-r_j n)`` for j (rigid-body kinematics, independent of the solver's rows)."""
    on_wall = contacts.wall >= 0
    n = contacts.normal
    point_i, point_j = velocities[contacts.i], velocities[contacts.j]
    if omega is not None:
        arm_i = np.where(on_wall[:, None], -1.0, 1.0) * radii[contacts.i, None] * n
        point_i = point_i + np.cross(omega[contacts.i], arm_i)
        point_j = point_j + np.cross(omega[contacts.j], -radii[contacts.j, None] * n)
    relative = np.where(on_wall[:, None], point_i, point_j - point_i)
    frames = np.concatenate([n[:, None, :], tangent_basis(n)], axis=1)
    return np.einsum("kad,kd->ka", frames, relative)


@pytest.mark.parametrize("rotation", [False, True], ids=["points", "turning"])
def test_coulomb_conditions_hold_at_every_contact_of_every_step(piles, rolling_pile, rotation):
    """At every contact of every step of the mu = 0.6 pour (spheres that do not turn,
    and spheres that do: then the sliding velocity is that of the material points at
    the contact, with the recorded angular velocities), rebuilt from the recorded
    impulses and velocities (not from the solver's own residual): the cone
    ``|l_T| <= mu l_N`` and ``l_N >= 0`` to round-off; no penetration velocity, no
    push while separating, no slip inside the cone and slip against the impulse on
    its boundary, each to the solver's stated tolerance (`granular.contact.friction.sweep_tolerance`):
    ``FRICTION_SWEEP_TOLERANCE`` times the step's velocity scale (bounded by 2 sqrt(3)
    times the fastest sphere), or the gap mismatch inherited by contacts that stayed
    closed if larger."""
    world, steps = rolling_pile if rotation else piles[0.6]
    frictions = np.array([world.friction if plane.friction is None else plane.friction for plane in world.planes])
    checked = sliding = sticking = 0
    active_before = set()
    for before, result in steps:
        contacts = result.contacts
        keys = list(zip(contacts.i.tolist(), contacts.j.tolist(), contacts.wall.tolist()))
        if not len(contacts):
            active_before = set()
            continue
        scale = 2.0 * np.sqrt(3.0) * (np.linalg.norm(before, axis=1).max() + GRAVITY * DT)
        # `granular.contact.friction.sweep_tolerance`: the gap mismatch of contacts active at the
        # previous step that the prediction v = u + h g pushes together again
        persisting = np.array([key in active_before for key in keys])
        pushed = contact_velocities(contacts, before + DT * world.gravity)[:, 0] + contacts.gap / DT < 0.0
        inherited = float(np.abs(contacts.gap[persisting & pushed]).max(initial=0.0)) / DT
        tolerance = max(FRICTION_SWEEP_TOLERANCE * scale, inherited)
        active_before = {key for key, impulse in zip(keys, contacts.impulse) if impulse > 0.0}
        mu = np.where(contacts.wall >= 0, frictions[np.maximum(contacts.wall, 0)], world.friction)
        U = contact_velocities(contacts, result.velocities, result.angular_velocities, result.radii)
        normal_velocity = U[:, 0] + contacts.gap / DT
        l_n, l_t = contacts.impulse, contacts.tangential_impulse
        size = np.linalg.norm(l_t, axis=1)
        assert np.all(l_n >= 0.0)
        assert np.all(size <= mu * l_n * (1.0 + 1e-12) + 1e-18), f"cone at t = {result.t}"
        assert normal_velocity.min() >= -tolerance, f"penetration at t = {result.t}"
        pushing = l_n > 0.0
        assert np.all(normal_velocity[pushing] <= tolerance), f"push while separating at t = {result.t}"
        slip = np.linalg.norm(U[:, 1:], axis=1)
        inside = pushing & (size < mu * l_n * (1.0 - 1e-6))
        assert np.all(slip[inside] <= tolerance), f"slip inside the cone at t = {result.t}"
        boundary = pushing & ~inside & (mu > 0.0)
        direction = l_t[boundary] / size[boundary, None]
        against = np.maximum(-np.einsum("ka,ka->k", U[boundary, 1:], direction), 0.0)
        misaligned = np.linalg.norm(U[boundary, 1:] + against[:, None] * direction, axis=1)
        assert np.all(misaligned <= tolerance), f"slip not against friction at t = {result.t}"
        checked += int(pushing.sum())
        sticking += int((inside & (mu > 0.0)).sum())
        sliding += int((boundary & (slip > tolerance)).sum())
    assert checked > 5000 and sticking > 1000 and sliding > 100  # the pour exercises both regimes


def test_friction_builds_a_steeper_heap(scene, piles):
    """Frictionless points spread into a layer; with mu = 0.6 the same pour stands
    as a heap: its top is at least two mean diameters higher and its base narrower."""
    tops, widths = {}, {}
    for mu, (world, steps) in piles.items():
        final = steps[-1][1]
        top = final.positions[:, 2] + final.radii
        tops[mu] = top.max()
        widths[mu] = np.ptp(final.positions[:, 0])
    diameter = 2.0 * float(np.mean(piles[0.6][1][-1][1].radii))
    assert tops[0.6] >= tops[0.0] + 2.0 * diameter
    assert widths[0.6] < widths[0.0]


def crowd(seed: int, friction: float = 0.5):
    """Twelve spheres (radius 1 cm, 1 mm apart, three layers on a rough floor) thrown
    together at about 1 m/s: ``(world, constraint set of the first step, prediction
    v, step h)``."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(np.arange(2), np.arange(2), np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    positions = 0.021 * grid + np.array([0.0, 0.0, 0.0105])
    centre = positions.mean(axis=0)
    velocities = -20.0 * (positions - centre) + rng.normal(0.0, 0.3, positions.shape)
    world = gr.SphereWorld(
        positions,
        0.01,
        masses=rng.uniform(0.5, 2.0, 12),
        velocities=velocities,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        friction=friction,
    )
    h = 1e-2
    # the generalised prediction (u + h f / m, omega) of a rotating world: omega = 0
    u0 = np.concatenate([world.u0, np.zeros(3 * world.n)])
    predicted = u0 + h * world.force(0.0, world.q0, u0) / world.metric(h, world.q0).diagonal
    constraints = world.constraints(h, world.q0, h, 2.0 * float(np.abs(predicted).max()))
    return world, constraints, predicted, h


@pytest.mark.parametrize("seed", range(6))
def test_sweeps_meet_the_coulomb_law_on_random_sphere_crowds(seed):
    """Spheres thrown together on a rough floor (random masses and velocities,
    mu = 0.5): the sphere path is taken and `coulomb_residuals` of its answer are
    within its stated tolerance at every contact; the cone and l_N >= 0 hold to
    round-off; the momentum balance holds."""
    assert_the_crowd_meets_the_coulomb_law(seed)


@pytest.mark.parametrize("near", [0.0, 1.0, np.inf], ids=["violated-and-warm-rows", "closing-rows", "every-row"])
def test_the_answer_meets_the_law_whichever_rows_the_sweeps_start_from(near, monkeypatch):
    """The sweeps' first working set is a guess (`granular.contact.friction.NEAR_CONTACT`):
    with only the rows the prediction violates, with every row closing slower than
    the velocity scale, or with every row, the answer meets the Coulomb law at every
    contact of the crowd, rows outside the set included."""
    import granular.contact.friction

    monkeypatch.setattr(granular.contact.friction, "NEAR_CONTACT", near)
    for seed in range(3):
        assert_the_crowd_meets_the_coulomb_law(seed)


def assert_the_crowd_meets_the_coulomb_law(seed):
    from granular.contact.friction import coulomb_residuals, project_frictional
    from granular.contact.problem import ContactProblem, tangential_jacobian

    world, constraints, predicted, h = crowd(seed)
    answer = project_frictional(ContactProblem.from_constraints(world.metric(h, world.q0), constraints, predicted, h))
    assert answer.status == "gauss_seidel" and np.count_nonzero(answer.impulses) >= 5
    G = constraints.jacobian
    scale = max(
        float(-(G @ predicted + constraints.gap / h).min()),
        float((abs(G) @ np.abs(predicted)).max()),
        float((abs(tangential_jacobian(constraints)[0]) @ np.abs(predicted)).max()),
    )
    residuals = coulomb_residuals(constraints, h, answer.velocities, answer.impulses, answer.tangential_impulses)
    assert residuals["cone"].max() <= 1e-12 * answer.impulses.max() and residuals["negative_normal"].max() == 0.0
    for name in ("penetration", "stick_slip", "sliding_alignment"):
        assert residuals[name].max() <= FRICTION_SWEEP_TOLERANCE * scale, name
    assert residuals["separation_with_impulse"].max() <= FRICTION_SWEEP_TOLERANCE * scale * answer.impulses.max()
    masses = world.metric(h, world.q0).diagonal  # (m .., J ..) of the generalised velocity
    T = tangential_jacobian(constraints)[0]
    balance = G.T @ answer.impulses + T.T @ answer.tangential_impulses.reshape(-1)
    assert np.allclose(masses * (answer.velocities - predicted), balance, atol=1e-12 * np.abs(balance).max())


def test_sweeps_that_do_not_converge_raise_naming_time_and_contact():
    """One sweep allowed: ConvergenceError naming the worst contact and its spheres,
    and the time of the step that calls them (`solver_errors_at`). It counts the two
    sweeps made: the one allowed, and the one after the repair at the stop."""
    from granular.contact import coulomb_rows, friction_gauss_seidel
    from granular.contact.problem import check_friction
    from granular.errors import solver_errors_at

    world, constraints, predicted, h = crowd(0)
    mu, T, _ = check_friction(constraints)
    rows = coulomb_rows.sweep_rows(world.metric(h, world.q0), constraints.jacobian, T, mu, -constraints.gap / h)
    with pytest.raises(gr.ConvergenceError, match=r"did not converge in 2 sweeps at t = 0\.01 s: contact \d+"):
        with solver_errors_at(0.01):
            friction_gauss_seidel.solve(rows, predicted, np.zeros((constraints.size, 3)), 1e-12, 1)
