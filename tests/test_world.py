"""The N-sphere world under Maury's velocity projection, physics first.

Scheme (DESIGN section 2): v = u^n + h M^-1 f; constraints D_k(t_{n+1}, q^n) + h G_k u >= 0;
u^{n+1} = argmin |u - v|_M over them; q^{n+1} = q^n + h u^{n+1}. Tolerances come from
`granular.tolerances`; gaps are measured here independently of the engine (a plain
k-d tree over the final positions, and the planes' own formula).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.spatial import cKDTree

import granular as gr
from granular.tolerances import COMPLEMENTARITY_TOLERANCE, OVERLAP_TOLERANCE, VELOCITY_TOLERANCE

EPS = np.finfo(float).eps
GRAVITY = np.array([0.0, 0.0, -9.81])


# -- helpers ----------------------------------------------------------------------------------


def smallest_gap(world: gr.SphereWorld, positions: np.ndarray, t: float) -> float:
    """The smallest sphere-sphere or sphere-wall gap at ``(t, positions)`` (m), found
    without the engine's search (no periodic worlds here)."""
    radii = world.radii_at(t)
    pairs = cKDTree(positions).query_pairs(2.0 * radii.max(), output_type="ndarray")
    gaps = (
        np.linalg.norm(positions[pairs[:, 1]] - positions[pairs[:, 0]], axis=1)
        - radii[pairs[:, 0]]
        - radii[pairs[:, 1]]
    )
    smallest = float(gaps.min(initial=np.inf))
    for plane in world.planes:
        smallest = min(smallest, float(((positions - plane.point) @ plane.normal - radii).min()))
    return smallest


def jacobian_from_contacts(contacts: gr.Contacts, n: int) -> np.ndarray:
    """G (m x 3N) rebuilt from the contact records alone: a pair row is -normal on
    sphere i and +normal on sphere j, a wall row +normal on sphere i."""
    G = np.zeros((len(contacts), 3 * n))
    for k in range(len(contacts)):
        i = contacts.i[k]
        if contacts.wall[k] < 0:
            G[k, 3 * i : 3 * i + 3] = -contacts.normal[k]
            G[k, 3 * contacts.j[k] : 3 * contacts.j[k] + 3] = contacts.normal[k]
        else:
            G[k, 3 * i : 3 * i + 3] = contacts.normal[k]
    return G


def lattice(n_side, layers, spacing, offset, rng, jitter):
    grid = np.stack(np.meshgrid(np.arange(n_side), np.arange(n_side), np.arange(layers), indexing="ij"), -1)
    positions = grid.reshape(-1, 3) * spacing + np.asarray(offset)
    return positions + rng.uniform(-jitter, jitter, positions.shape)


def pour_world(n_side: int, layers: int, seed: int = 1, radius: float = 0.01) -> gr.SphereWorld:
    """``n_side^2 * layers`` slightly polydisperse spheres (0.9-1 r) on a jittered
    lattice just above the floor of an open box, random velocities, e = 0."""
    rng = np.random.default_rng(seed)
    spacing = 2.4 * radius
    positions = lattice(n_side, layers, spacing, [1.2 * radius, 1.2 * radius, 1.5 * radius], rng, 0.0)
    positions[:, :2] += rng.uniform(-0.15, 0.15, (len(positions), 2)) * radius
    side = n_side * spacing + 0.4 * radius
    return gr.SphereWorld(
        positions,
        radius * rng.uniform(0.9, 1.0, len(positions)),
        velocities=rng.normal(0.0, 0.1, positions.shape),
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [side, side, 1.0], open_top=True)],
    )


# -- free flight ------------------------------------------------------------------------------


def free_flight(h: float, duration: float):
    """Two spheres far apart, masses 2.5 and 1/3 kg, gravity only; every step's state."""
    q0 = np.array([[0.0, 0.0, 10.0], [5.0, 0.0, 10.0]])
    u0 = np.array([[1.0, -2.0, 3.0], [-0.5, 0.25, 7.0]])
    sim = gr.Simulation(gr.SphereWorld(q0, 0.1, masses=[2.5, 1.0 / 3.0], velocities=u0), h)
    n = int(round(duration / h))
    steps = [sim.step() for _ in range(n)]
    return q0, u0, steps


@pytest.mark.exact
def test_free_flight_is_symplectic_euler_exactly():
    """u_n = u0 + n h g exactly, q_n = q0 + n h u0 + n(n+1)/2 h^2 g, to round-off;
    nothing is projected (no constraint rows at all)."""
    h = 1e-3
    q0, u0, steps = free_flight(h, 1.0)
    for n, result in enumerate(steps, start=1):
        assert result.t == pytest.approx(n * h, abs=1e-15)
        u_exact = u0 + n * h * GRAVITY
        q_discrete = q0 + n * h * u0 + 0.5 * n * (n + 1) * h * h * GRAVITY
        assert np.abs(result.velocities - u_exact).max() <= 4 * n * EPS * 10.0
        assert np.abs(result.positions - q_discrete).max() <= 4 * n * EPS * 20.0
        assert len(result.contacts) == 0 and result.solver.status == "unconstrained"


def test_free_flight_position_error_is_half_g_h_t_first_order():
    """Against the exact parabola q0 + u0 t + g t^2 / 2 the error is exactly g h t / 2
    (from the recurrence above), so the order in h is 1."""
    errors = []
    for h in (4e-3, 2e-3, 1e-3):
        q0, u0, steps = free_flight(h, 1.0)
        for result in steps[::50]:
            t = result.t
            error = result.positions - (q0 + u0 * t + 0.5 * GRAVITY * t * t)
            np.testing.assert_allclose(
                error, np.broadcast_to(0.5 * GRAVITY * h * t, error.shape), rtol=1e-8, atol=1e-12
            )
        final = steps[-1]
        errors.append(np.linalg.norm(final.positions[0] - (q0[0] + u0[0] + 0.5 * GRAVITY)))
    slope = np.polyfit(np.log([4e-3, 2e-3, 1e-3]), np.log(errors), 1)[0]
    assert abs(slope - 1.0) < 1e-6


# -- two spheres, masses 1 and 3 ------------------------------------------------------------------


def test_plastic_head_on_impact_of_masses_1_and_3_gives_the_common_velocity():
    """m = 1 at +2 m/s meets m = 3 at -1 m/s (e = 0): both leave at the momentum
    velocity (1*2 + 3*(-1)) / 4 = -0.25 m/s. The impulse is the reduced mass times
    the approach speed, 3/4 * 3 = 2.25 N s; momentum is kept at every step."""
    r, h = 0.02, 1e-3
    world = gr.SphereWorld(
        [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]],
        r,
        masses=[1.0, 3.0],
        velocities=[[2.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
        gravity=(0, 0, 0),
    )
    sim = gr.Simulation(world, h)
    tolerance = COMPLEMENTARITY_TOLERANCE * 3.0  # the projection's tolerance on this velocity scale
    impulse, touched = 0.0, None
    for n in range(1, 81):
        result = sim.step()
        u = result.velocities
        assert u[0, 0] + 3.0 * u[1, 0] == pytest.approx(-1.0, abs=8 * EPS)
        assert np.all(u[:, 1:] == 0.0) and np.all(result.positions[:, 1:] == 0.0)
        assert result.positions[1, 0] - result.positions[0, 0] - 2 * r >= -OVERLAP_TOLERANCE * r
        impulse += result.contacts.impulse.sum()
        if touched is None and result.contacts.impulse.sum() > tolerance:
            touched = n
    # The 0.06 m gap closes at 3 m/s in exactly 20 steps: the free motion of step 20
    # meets D + h G u >= 0 with equality (any impulse there is round-off), and the
    # impact is step 21, where D = 0 requires G u >= 0.
    assert touched == 21
    assert u[:, 0] == pytest.approx([-0.25, -0.25], abs=tolerance)
    assert impulse == pytest.approx(2.25, abs=tolerance)


# -- momentum and energy in a dense cloud -------------------------------------------------------------


@pytest.fixture(scope="module")
def dense_cloud_run():
    """1,000 spheres (radii 0.8-1 r, masses 1-3 kg), lattice spacing 2.3 r, random
    velocities of 1 m/s with a drift: no gravity, no walls, e = 0; 100 steps."""
    rng = np.random.default_rng(0)
    r = 0.01
    positions = lattice(10, 10, 2.3 * r, [0, 0, 0], rng, 0.1 * r)
    masses = rng.uniform(1.0, 3.0, len(positions))
    velocities = rng.normal(0.0, 1.0, positions.shape) + np.array([0.3, -0.2, 0.1])
    world = gr.SphereWorld(
        positions, r * rng.uniform(0.8, 1.0, len(positions)), masses=masses, velocities=velocities, gravity=(0, 0, 0)
    )
    record = dict(
        momentum=[],
        scale=[],
        kinetic=[world.kinetic_energy(0.0, world.q0, world.u0)],
        dissipated=[],
        active=0,
        smallest_gap=np.inf,
    )

    def watch(step, n_steps, result):
        record["momentum"].append((masses[:, None] * result.velocities).sum(axis=0))
        record["scale"].append(float((masses[:, None] * np.abs(result.velocities)).sum()))
        record["kinetic"].append(result.kinetic_energy)
        record["dissipated"].append(result.dissipated_energy)
        record["active"] += int(np.count_nonzero(result.contacts.impulse > 0.0))
        record["smallest_gap"] = min(record["smallest_gap"], smallest_gap(world, result.positions, result.t))

    gr.Simulation(world, 1e-3).run(steps=100, record_every=100, progress=watch)
    record["initial_momentum"] = (masses[:, None] * velocities).sum(axis=0)
    record["initial_scale"] = float((masses[:, None] * np.abs(velocities)).sum())
    record["r"] = r
    return record


def test_momentum_is_conserved_to_round_off_in_a_dense_cloud(dense_cloud_run):
    """Every contact row applies equal and opposite impulses: the total momentum only
    moves by round-off, ~eps sum_i m_i |u_i| per step."""
    run = dense_cloud_run
    assert run["active"] > 5000  # many collisions: thousands of active contact-steps
    drift = np.abs(np.array(run["momentum"]) - run["initial_momentum"]).max()
    scale = max(run["initial_scale"], max(run["scale"]))
    assert drift <= len(run["momentum"]) * EPS * scale
    assert run["smallest_gap"] >= -OVERLAP_TOLERANCE * run["r"]


def test_kinetic_energy_never_increases_with_e0_and_no_forces(dense_cloud_run):
    """KE_{n+1} <= KE_n at every step (up to the projection's tolerance), collisions
    really remove energy, and the reported dissipation is the KE lost."""
    run = dense_cloud_run
    kinetic = np.array(run["kinetic"])
    increase = np.diff(kinetic) / kinetic[:-1]
    assert increase.max() <= COMPLEMENTARITY_TOLERANCE
    assert kinetic[-1] < 0.5 * kinetic[0]
    dissipated = np.array(run["dissipated"])
    np.testing.assert_allclose(kinetic[:-1] - kinetic[1:], dissipated, rtol=0, atol=1e-9 * kinetic[0])
    assert dissipated.min() >= -1e-9 * kinetic[0]


def test_kinetic_energy_never_increases_in_a_closed_box():
    """The same with walls: 125 spheres shaken in a closed box, e = 0, no gravity."""
    rng = np.random.default_rng(4)
    r = 0.01
    positions = lattice(5, 5, 2.5 * r, [1.5 * r] * 3, rng, 0.1 * r)
    side = 5 * 2.5 * r + 0.5 * r
    world = gr.SphereWorld(
        positions,
        r,
        masses=rng.uniform(1.0, 2.0, len(positions)),
        velocities=rng.normal(0.0, 2.0, positions.shape),
        gravity=(0, 0, 0),
        walls=[gr.Box([0, 0, 0], [side] * 3)],
    )
    trajectory = gr.Simulation(world, 1e-3).run(steps=150)
    kinetic = trajectory.kinetic_energy
    assert (np.diff(kinetic) / kinetic[:-1]).max() <= COMPLEMENTARITY_TOLERANCE
    assert kinetic[-1] < 0.2 * kinetic[0]
    assert any(np.any((c.wall >= 0) & (c.impulse > 0)) for c in trajectory.contacts)


# -- resting column -----------------------------------------------------------------------------------


def test_a_resting_column_of_five_spheres_stays_put_for_10000_steps():
    """Five touching spheres stacked on the floor: over 10,000 steps no sphere moves
    or sinks by more than 1e-9 r, and the contacts carry the weight above them:
    floor 5 m g h, contact k-(k+1) (4 - k) m g h per step."""
    r, h = 0.01, 1e-3
    start = np.array([[0.0, 0.0, r + 2 * r * k] for k in range(5)])
    world = gr.SphereWorld(start, r, density=2500.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    weight_impulse = world.masses_at(0.0)[0] * 9.81 * h
    worst = dict(drift=0.0, speed=0.0, gap=np.inf)

    def watch(step, n_steps, result):
        worst["drift"] = max(worst["drift"], float(np.abs(result.positions - start).max()))
        worst["speed"] = max(worst["speed"], float(np.abs(result.velocities).max()))
        z = result.positions[:, 2]
        worst["gap"] = min(worst["gap"], float(z[0] - r), float((np.diff(z) - 2 * r).min()))
        if step % 1000 == 0:
            contacts = result.contacts
            floor = contacts.impulse[contacts.wall == 0].sum()
            assert floor == pytest.approx(5 * weight_impulse, rel=COMPLEMENTARITY_TOLERANCE)
            for k in range(4):
                row = (contacts.i == k) & (contacts.j == k + 1)
                assert contacts.impulse[row].sum() == pytest.approx(
                    (4 - k) * weight_impulse, rel=COMPLEMENTARITY_TOLERANCE
                )

    trajectory = gr.Simulation(world, h).run(steps=10_000, record_every=10_000, progress=watch)
    assert trajectory.t[-1] == pytest.approx(10.0)
    assert worst["drift"] <= OVERLAP_TOLERANCE * r
    assert worst["gap"] >= -OVERLAP_TOLERANCE * r
    assert worst["speed"] <= OVERLAP_TOLERANCE * r / h


# -- pours --------------------------------------------------------------------------------------------


def pour(n_side: int, layers: int, steps: int) -> dict:
    world = pour_world(n_side, layers)
    r_min = float(world.radii_at(0.0).min())
    worst = dict(gap=np.inf, active=0)

    def watch(step, n_steps, result):
        worst["gap"] = min(worst["gap"], smallest_gap(world, result.positions, result.t) / r_min)
        worst["active"] = max(worst["active"], int(np.count_nonzero(result.contacts.impulse > 0.0)))

    clock = time.perf_counter()
    trajectory = gr.Simulation(world, 1e-3).run(steps=steps, record_every=steps, progress=watch)
    worst.update(seconds=time.perf_counter() - clock, n=world.n, trajectory=trajectory)
    return worst


def test_pour_of_200_spheres_never_overlaps():
    """200 spheres fall into an open box and pile up: the smallest gap over every step
    is >= -1e-9 radii, and a pile with hundreds of contacts forms."""
    outcome = pour(5, 8, 400)
    assert outcome["n"] == 200
    assert outcome["gap"] >= -1e-9
    assert outcome["active"] > 300
    assert outcome["trajectory"].kinetic_energy[-1] < 0.05 * outcome["trajectory"].kinetic_energy.max()


@pytest.mark.long
def test_pour_of_1000_spheres_never_overlaps():
    """The same pour at 1,000 spheres: the same bound on the gaps with over 2,000 active
    contacts. Kept out of the default suite (`long`): the 200-sphere pour above checks
    the same law in half the time."""
    outcome = pour(10, 10, 600)
    assert outcome["n"] == 1000
    assert outcome["gap"] >= -1e-9
    assert outcome["active"] > 2000


# -- growing radii --------------------------------------------------------------------------------------


@pytest.mark.exact
@pytest.mark.parametrize("seed", [0, 1, 2, 6])
def test_growing_spheres_never_overlap_and_jam_with_a_packing_fraction(seed):
    """27 spheres near the nodes of a 3x3x3 lattice in a closed cube of side L, radii
    r0 (1 + 3 t), no gravity: at every step the gaps with the radii of that time are
    >= -1e-9 r, growth is resisted by contacts, and the rows of three spheres jam when
    6 r(t) > L (packing fraction pi/6): the step ending at the first such t raises
    JammingError with that time and packing fraction, and the simulation stays at the
    last good state."""
    rng = np.random.default_rng(seed)
    side, r0, rate, n, h = 0.1, 0.01, 3.0, 27, 1e-3
    grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = (grid + 0.5) * side / 3 + rng.uniform(-0.05, 0.05, grid.shape) * side / 3

    def radii(t):
        return np.full(n, r0 * (1.0 + rate * t))

    world = gr.SphereWorld(
        positions,
        radii,
        masses=rng.uniform(0.5, 2.0, n),
        velocities=rng.normal(0.0, 0.05, (n, 3)),
        gravity=(0, 0, 0),
        walls=[gr.Box([0, 0, 0], [side] * 3)],
    )
    sim = gr.Simulation(world, h)
    worst, pushed = np.inf, 0
    with pytest.raises(gr.JammingError) as caught:
        for _ in range(1000):
            result = sim.step()
            worst = min(worst, smallest_gap(world, result.positions, result.t) / result.radii[0])
            pushed += int(np.count_nonzero(result.contacts.impulse > 0.0))
    jam = caught.value
    assert worst >= -1e-9
    assert pushed > 100  # growth was resisted by contacts long before the jam
    times = h * np.arange(1, 1001)
    assert jam.t == pytest.approx(times[6 * r0 * (1 + rate * times) > side][0], abs=1e-12)
    assert sim.t == pytest.approx(jam.t - h)  # the state is the last good one
    assert jam.packing_fraction == pytest.approx(world.packing_fraction(jam.t))
    assert np.pi / 6 < jam.packing_fraction < np.pi / 6 * (1 + 3 * 3 * rate * h)
    assert f"t = {jam.t:.6g} s" in str(jam) and f"packing fraction {jam.packing_fraction:.4f}" in str(jam)


@pytest.mark.exact
def test_a_row_of_growing_spheres_jams_when_the_diameters_exceed_the_box():
    """Four spheres on a line between x = 0 and x = L, r(t) = r0 (1 + t): they fit
    while 8 r(t) <= L, i.e. t <= L / (8 r0) - 1 = 0.25 s. The step ending at the first
    t with 8 r(t) > L raises JammingError; every earlier step is admissible."""
    n, length, r0, h = 4, 0.1, 0.01, 1e-3
    positions = [[length * (k + 0.5) / n, 0.05, 0.05] for k in range(n)]
    world = gr.SphereWorld(
        positions,
        lambda t: np.full(n, r0 * (1.0 + t)),
        masses=1.0,
        gravity=(0, 0, 0),
        walls=[gr.Box([0, 0, 0], [length, 0.1, 0.1])],
    )
    sim = gr.Simulation(world, h)
    with pytest.raises(gr.JammingError) as caught:
        for _ in range(1000):
            result = sim.step()
            assert smallest_gap(world, result.positions, result.t) >= -OVERLAP_TOLERANCE * r0
    times = h * np.arange(1, 1001)
    first_misfit = times[2 * n * r0 * (1.0 + times) > length][0]
    assert caught.value.t == pytest.approx(first_misfit, abs=1e-12)
    assert caught.value.packing_fraction == pytest.approx(world.packing_fraction(first_misfit))


def test_the_growing_spheres_scene_ends_in_a_jamming_error_with_its_packing_fraction():
    """The scene with its defaults (80 spheres, radii r0 (1 + 0.8 t), closed box) used
    to stop at t = 0.887 s with a plain SolverError: the step admits velocities, but
    only of about 1e4 m/s (13 m of travel in a 10 cm box in one step), which no
    solver reached. A step that needs a sphere to cross more than its radius is a
    jam of Maury's linearised scheme: JammingError, with time and packing fraction,
    and the simulation keeps the last good state."""
    from support.scenes import load_scene

    scene = load_scene("growing_spheres")
    world = scene.build()
    sim = gr.Simulation(world, scene.DEFAULTS["dt"])
    with pytest.raises(gr.SolverError) as caught:
        for _ in range(int(scene.DEFAULTS["duration"] / scene.DEFAULTS["dt"])):
            sim.step()
    assert isinstance(caught.value, gr.JammingError)
    assert caught.value.t == pytest.approx(sim.t + sim.dt)
    assert caught.value.packing_fraction == pytest.approx(world.packing_fraction(caught.value.t))


# -- momentum balance and contact records ------------------------------------------------------------


@pytest.mark.exact
@pytest.mark.parametrize("restitution", [0.0, 0.3])
def test_every_step_satisfies_the_discrete_momentum_balance_and_its_records_are_its_rows(restitution):
    """A pile of 48 spheres landing in a box, every step: the contact records
    (i, j, wall, gap, normal, impulse) rebuild G and D independently; then
    M (u^{n+1} - v) = G^T lambda to round-off, lambda >= 0, and (e = 0) Maury's
    constraints D + h G u >= 0 hold with lambda_k > 0 only on closed rows."""
    rng = np.random.default_rng(7)
    r, h = 0.01, 1e-3
    positions = lattice(4, 3, 2.3 * r, [1.3 * r, 1.3 * r, 1.2 * r], rng, 0.1 * r)
    world = gr.SphereWorld(
        positions,
        r * rng.uniform(0.9, 1.0, len(positions)),
        masses=rng.uniform(0.5, 2.0, len(positions)),
        velocities=rng.normal(0.0, 0.3, positions.shape),
        walls=[gr.Box([0, 0, 0], [4 * 2.3 * r + 0.3 * r] * 2 + [1.0], open_top=True)],
        restitution=restitution,
    )
    mass = np.repeat(world.masses_at(0.0), 3)
    sim = gr.Simulation(world, h)
    active = 0
    for _ in range(150):
        q = sim.positions
        result = sim.step()
        c = result.contacts
        radii = world.radii_at(result.t)
        pair = c.wall < 0
        # the records describe the rows: gaps D(t_{n+1}, q^n) and normals at q^n
        vectors = q[c.j[pair]] - q[c.i[pair]]
        np.testing.assert_allclose(
            c.gap[pair], np.linalg.norm(vectors, axis=1) - radii[c.i[pair]] - radii[c.j[pair]], rtol=0, atol=1e-15
        )
        np.testing.assert_allclose(c.normal[pair], vectors / np.linalg.norm(vectors, axis=1)[:, None], atol=1e-15)
        for k in np.flatnonzero(~pair):
            plane = world.planes[c.wall[k]]
            assert c.j[k] == -1
            np.testing.assert_array_equal(c.normal[k], plane.normal)
            assert c.gap[k] == pytest.approx(plane.normal @ (q[c.i[k]] - plane.point) - radii[c.i[k]], abs=1e-15)
        G = jacobian_from_contacts(c, world.n)
        u, v = result.velocities.reshape(-1), result.predicted.reshape(-1)
        contact_impulse = G.T @ c.impulse
        assert np.abs(mass * (u - v) - contact_impulse).max() <= 1e-12 * max(np.abs(mass * v).max(), 1.0)
        assert np.all(c.impulse >= 0.0)
        active += int(np.count_nonzero(c.impulse > 0.0))
        if restitution == 0.0 and len(c):
            scale = max(float((-(c.gap / h) - G @ v).max()), float((np.abs(G) @ np.abs(v)).max()))
            slack = c.gap / h + G @ u  # velocity units
            assert slack.min() >= -VELOCITY_TOLERANCE * scale
            W_diagonal = (G**2 / mass).sum(axis=1)
            assert np.abs(np.minimum(W_diagonal * c.impulse, slack)).max() <= COMPLEMENTARITY_TOLERANCE * scale
    assert active > 1000


@pytest.mark.exact
def test_a_step_whose_prediction_is_admissible_returns_it_bit_for_bit():
    """Two touching spheres separating, and a sphere 1e-4 m above the floor moving
    up: rows exist (the gaps are within the margin) but the prediction
    satisfies them, so u^{n+1} is v exactly, with zero impulses."""
    r = 0.01
    world = gr.SphereWorld(
        [[0.0, 0.0, 0.5], [2 * r, 0.0, 0.5], [0.5, 0.0, r + 1e-4]],
        r,
        masses=[1.0, 3.0, 2.0],
        velocities=[[-0.1 / 3, 0.2, 0.0], [0.7 / 3, 0.0, 0.0], [0.3, 0.1, 1.0 / 3]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
    )
    result = gr.Simulation(world, 1e-3).step()
    assert np.any((result.contacts.i == 0) & (result.contacts.j == 1))
    assert np.any((result.contacts.i == 2) & (result.contacts.wall == 0))
    assert result.velocities.tobytes() == result.predicted.tobytes()
    assert np.all(result.contacts.impulse == 0.0)
    assert result.solver.status == "unconstrained"


# -- the reference solver ---------------------------------------------------------------------------------


@pytest.mark.exact
def test_cvxpy_solver_gives_the_osqp_trajectory_on_a_small_pile():
    """27 spheres settling in a box, 150 steps with each solver: both solve every
    step's projection to the same tolerances, so per step the velocities may differ by
    about COMPLEMENTARITY_TOLERANCE times the velocity scale V (the speeds of the
    run) and positions by the sum of h times that; no chaotic growth in 150 steps."""
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(2)
    r, steps, h = 0.01, 150, 1e-3
    positions = lattice(3, 3, 2.3 * r, [1.2 * r] * 3, rng, 0.0)
    positions[:, :2] += rng.uniform(-0.1, 0.1, (27, 2)) * r

    def run(solver):
        world = gr.SphereWorld(
            positions,
            r * np.linspace(0.9, 1.0, 27),
            density=2500.0,
            walls=[gr.Box([0, 0, 0], [7 * r, 7 * r, 1.0], open_top=True)],
        )
        return gr.Simulation(world, h, solver=solver).run(steps=steps)

    osqp, cvxpy = run("osqp"), run("cvxpy")
    speed = max(np.abs(osqp.velocities).max(), 9.81 * h)
    velocity_tolerance = COMPLEMENTARITY_TOLERANCE * speed * np.arange(steps + 1)[:, None, None]
    position_tolerance = h * np.cumsum(velocity_tolerance, axis=0)
    assert np.all(np.abs(osqp.velocities - cvxpy.velocities) <= velocity_tolerance + 1e-15)
    assert np.all(np.abs(osqp.positions - cvxpy.positions) <= position_tolerance + 1e-15)
    assert sum(int(np.count_nonzero(c.impulse > 0)) for c in osqp.contacts) > 1000
    for a, b in zip(osqp.contacts, cvxpy.contacts):
        assert len(a) == len(b)
        np.testing.assert_array_equal(a.i, b.i)
        np.testing.assert_array_equal(a.wall, b.wall)
